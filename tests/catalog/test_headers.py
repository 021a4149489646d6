"""Both AICR header generations (ADR-022), wherever a user hands us an AICR file, and AICR's newer bundle files.

A user with AICR <= 0.21 has alpha headers (``aicr.run/v1alpha2``, ``v1alpha3``); one with AICR >= 0.22 has
the 1.0 ones (``aicr.run/v1``, ``v1beta1``, ``v1beta2``). Oracles: AICR's reference catalog rewritten with
the 1.0 headers must resolve to exactly the recipes the alpha one does over the compatibility corpus; the
headers are the only bytes a conversion changes, both ways; every bundle records itself in
``bundle-info.yaml`` with AICR's fields, listed in ``checksums.txt``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.catalog import headers
from aicr_gen.catalog.load import Catalog, load
from aicr_gen.catalog.vocabulary import ALPHA, STABLE
from aicr_gen.drift.load import load_document, load_snapshot
from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve import recipe
from aicr_gen.resolve.criteria import normalise
from tests.conftest import AICR_CATALOG, Result, assert_refused, needs_reference
from tests.resolve.test_aicr_compat import DIMS, GOLDEN

TO_1_0 = {"aicr.run/v1alpha2": "aicr.run/v1beta1", "aicr.run/v1alpha3": "aicr.run/v1beta2"}
CUJ2 = ("--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu", "--platform", "dynamo")
DEPLOYERS = ("helm", "argocd", "argocd-helm", "flux", "helmfile")
REPO = "https://git.example.com/platform/gitops.git"


def _rewrite(source: Path, target: Path, only: tuple[str, ...] = ("",)) -> Path:
    """A copy of catalog ``source`` whose documents under ``only`` (path prefixes) carry the 1.0 headers."""
    shutil.copytree(source, target)
    for path in sorted(target.glob("*.yaml")) + sorted(target.glob("*/*.yaml")):
        rel = path.relative_to(target).as_posix()
        if rel.startswith(only) and path.parent.name in (target.name, "overlays", "mixins"):
            text = path.read_text(encoding="utf-8")
            for old, new in TO_1_0.items():
                text = text.replace(f"apiVersion: {old}\n", f"apiVersion: {new}\n")
            path.write_text(text, encoding="utf-8")
    return target


def _headers_of(root: Path) -> set[str]:
    return {yaml.safe_load(path.read_text())["apiVersion"]
            for path in [root / "registry.yaml", *root.glob("overlays/*.yaml"), *root.glob("mixins/*.yaml")]}


def _outcome(catalog: Catalog, query: dict[str, str], options: recipe.Options) -> Any:
    """The recipe, or the refusal with the catalog folder taken out of it."""
    try:
        return recipe.resolve(catalog, query, options)
    except InvalidInputError as err:
        return str(err).replace(catalog.describe(), "<catalog>")


def _corpus(catalog: Catalog) -> list[tuple[dict[str, str], recipe.Options]]:
    """test_aicr_compat's queries: every leaf by its own criteria (each profile value and Slurm accounting mode
    it offers), and AICR's coverage golden tuples."""
    queries: list[tuple[dict[str, str], recipe.Options]] = []
    known = {dim: {value for overlay in catalog.overlays.values()
                   for value in [(overlay["spec"].get("criteria") or {}).get(dim)] if value} for dim in DIMS}
    for name in recipe.leaf_overlays(catalog):
        query = normalise(catalog.overlays[name]["spec"]["criteria"], known)
        queries.append((query, recipe.Options()))
        for overlay in recipe.chain(catalog, name):
            declared = catalog.overlays[overlay]["spec"].get("profile")
            for value in (declared or {}).get("values", {}):
                queries.append((query, recipe.Options(profile=(declared["name"], value))))
        if query["platform"] == "slurm":
            queries += [(query, recipe.Options(accounting_mode=mode)) for mode in ("customer-managed", "aicr-provided")]
    queries += [(normalise(dict(zip(DIMS, criteria, strict=True))), recipe.Options()) for criteria, _ in GOLDEN]
    return queries


@needs_reference
def test_the_reference_catalog_with_1_0_headers_resolves_exactly_as_the_alpha_one(tmp_path: Path) -> None:
    rewritten = _rewrite(AICR_CATALOG, tmp_path / "recipes")
    assert _headers_of(AICR_CATALOG) == {"aicr.run/v1alpha2", "aicr.run/v1alpha3"}
    assert _headers_of(rewritten) == {"aicr.run/v1beta1", "aicr.run/v1beta2"}
    alpha, stable = load([AICR_CATALOG]), load([rewritten])
    corpus = _corpus(alpha)
    assert len(corpus) > 60
    outcomes = [(_outcome(alpha, query, options), _outcome(stable, query, options)) for query, options in corpus]
    assert all(old == new for old, new in outcomes), next(pair for pair in outcomes if pair[0] != pair[1])
    assert sum(isinstance(old, dict) for old, _ in outcomes) > 50  # mostly recipes, not refusals
    profiled = [old for old, _ in outcomes if isinstance(old, dict) and "selectedProfile" in old["metadata"]]
    assert profiled and {result["apiVersion"] for result in profiled} == {"aicr.run/v1beta2"}


@needs_reference
def test_a_catalog_mixing_both_generations_across_and_within_layers(tmp_path: Path) -> None:
    """Layer 1: the alpha catalog. Layer 2: its eks chain with the 1.0 headers. And one folder half and half."""
    upper = tmp_path / "upper"
    (upper / "overlays").mkdir(parents=True)
    for name in ("eks", "eks-inference", "h100-eks-inference"):
        text = (AICR_CATALOG / f"overlays/{name}.yaml").read_text(encoding="utf-8")
        (upper / f"overlays/{name}.yaml").write_text(text.replace("aicr.run/v1alpha2", "aicr.run/v1beta1"))
    mixed = _rewrite(AICR_CATALOG, tmp_path / "mixed", only=("registry.yaml", "mixins/", "overlays/h100", "overlays/a"))
    assert _headers_of(mixed) == {"aicr.run/v1alpha2", "aicr.run/v1alpha3", "aicr.run/v1beta1", "aicr.run/v1beta2"}
    query = normalise(dict(zip(DIMS, CUJ2[1::2], strict=True)))
    expected = recipe.resolve(load([AICR_CATALOG]), query)
    assert recipe.resolve(load([AICR_CATALOG, upper]), query) == expected
    assert recipe.resolve(load([mixed]), query) == expected


@needs_reference
@pytest.mark.parametrize(("args", "stable", "alpha"), [
    (CUJ2, "aicr.run/v1", "aicr.run/v1alpha2"),
    (("--service", "aks", "--accelerator", "h100", "--intent", "training"), "aicr.run/v1beta2", "aicr.run/v1alpha3"),
    (("--service", "eks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu", "--platform", "slurm"),
     "aicr.run/v1beta2", "aicr.run/v1alpha3"),
], ids=["plain", "profile", "slurm-configuration"])
def test_recipe_headers_default_to_1_0_and_round_trip_losslessly(cli: Any, args: tuple[str, ...], stable: str,
                                                                alpha: str) -> None:
    default = cli("recipe", "--catalog", str(AICR_CATALOG), *args)
    old = cli("recipe", "--catalog", str(AICR_CATALOG), *args, "--api-version", "aicr.run/v1alpha2")
    assert default.code == old.code == 0, (default.err, old.err)
    assert yaml.safe_load(default.out)["apiVersion"] == stable and yaml.safe_load(old.out)["apiVersion"] == alpha
    assert old.out == default.out.replace(f"apiVersion: {stable}\n", f"apiVersion: {alpha}\n", 1)
    recipe_1_0 = yaml.safe_load(default.out)
    assert headers.convert(headers.convert(recipe_1_0, "RecipeResult", ALPHA), "RecipeResult", STABLE) == recipe_1_0
    assert list(headers.convert(recipe_1_0, "RecipeResult", ALPHA)) == list(recipe_1_0)  # key order kept


def _write_recipe(cli: Any, path: Path, *extra: str) -> Path:
    result = cli("recipe", "--catalog", str(AICR_CATALOG), *CUJ2, "-o", str(path), *extra)
    assert result.code == 0, result.err
    return path


@needs_reference
def test_bundles_of_either_generation_differ_only_in_the_recipe_they_carry(cli: Any, tmp_path: Path) -> None:
    recipes = {generation: _write_recipe(cli, tmp_path / f"{name}.yaml", "--api-version", generation)
               for name, generation in (("stable", STABLE), ("alpha", ALPHA))}
    for deployer in ("helm", "flux"):
        trees = {}
        for generation, path in recipes.items():
            out = tmp_path / f"{deployer}-{path.stem}"
            result = cli("bundle", "--recipe", str(path), "--deployer", deployer, "--output", str(out),
                         "--catalog", str(AICR_CATALOG), "--repo", REPO)
            assert result.code == 0, result.err
            trees[generation] = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
            assert trees[generation]["recipe.yaml"] == path.read_bytes()  # carried as given, header and all
        differing = {rel for rel in trees[STABLE] if trees[STABLE][rel] != trees[ALPHA].get(rel)}
        # README.md names the recipe's apiVersion
        assert differing == {"recipe.yaml", "bundle-info.yaml", "README.md", "checksums.txt"}, deployer


@needs_reference
def test_every_deployer_records_itself_in_bundle_info(cli: Any, tmp_path: Path) -> None:
    recipe_file = _write_recipe(cli, tmp_path / "recipe.yaml")
    plan = yaml.safe_load(recipe_file.read_text())
    for deployer in DEPLOYERS:
        out = tmp_path / deployer
        args = ("bundle", "--recipe", str(recipe_file), "--deployer", deployer, "--output", str(out),
                "--catalog", str(AICR_CATALOG), "--repo", REPO)
        assert cli(*args).code == 0
        raw = (out / "bundle-info.yaml").read_bytes()
        info = yaml.safe_load(raw)
        assert list(info) == ["apiVersion", "kind", "metadata", "build", "layout"]
        assert (info["apiVersion"], info["kind"]) == ("aicr.run/v1", "BundleInfo")
        assert info["metadata"]["version"].startswith("aicr-gen ")
        build = info["build"]
        assert build["deployer"] == deployer
        assert build["recipe"] == {"path": "recipe.yaml", "version": plan["metadata"]["version"],
                                   "digest": "sha256:" + hashlib.sha256((out / "recipe.yaml").read_bytes()).hexdigest()}
        assert build["settings"]["checksums"] is True and build["settings"]["attested"] is False
        assert ("repoURL" in build["settings"]) == (deployer in ("argocd", "argocd-helm", "flux"))
        layout = info["layout"]
        assert (out / layout["entrypoint"]).is_file()
        releases = layout["releases"]
        assert {release["component"] for release in releases} == set(plan["deploymentOrder"])
        for release in releases:
            assert (out / release["path"]).is_dir(), (deployer, release)
            assert "manifest" not in release or (out / release["manifest"]).is_file(), (deployer, release)
        if deployer != "flux":  # flux orders by dependsOn, a graph; the others install in folder order
            folders = [release["path"] for release in releases if release["path"][:3].isdigit()]
            assert folders == sorted(folders)
        listed = dict(line.split("  ", 1)[::-1] for line in (out / "checksums.txt").read_text().splitlines())
        assert listed["bundle-info.yaml"] == hashlib.sha256(raw).hexdigest()
        assert cli("verify", str(out)).code == 0
        again = tmp_path / f"{deployer}-again"
        assert cli(*args[:6], str(again), *args[7:]).code == 0
        assert (again / "bundle-info.yaml").read_bytes() == raw  # nothing that varies between runs


# ------------------------------------------------------------------ refusals name what is accepted


@needs_reference
@pytest.mark.parametrize(("rel", "old", "new", "fragments"), [
    ("overlays/eks.yaml", "apiVersion: aicr.run/v1alpha2\n", "", (
        "eks.yaml:1: apiVersion is missing; a RecipeMetadata needs one of 'aicr.run/v1beta1', 'aicr.run/v1alpha2', "
        "'aicr.run/v1beta2', 'aicr.run/v1alpha3' (aicr.run/v1beta1 for AICR >= 0.22)",)),
    ("registry.yaml", "apiVersion: aicr.run/v1alpha2", "apiVersion: aicr.run/v1", (
        "registry.yaml:", "apiVersion: value 'aicr.run/v1' is not allowed for a ComponentRegistry; use one of "
        "'aicr.run/v1beta1', 'aicr.run/v1alpha2'")),
    ("mixins/os-ubuntu.yaml", "apiVersion: aicr.run/v1alpha2", "apiVersion: aicr.nvidia.com/v1alpha1", (
        "os-ubuntu.yaml:", "value 'aicr.nvidia.com/v1alpha1' is not allowed for a RecipeMixin")),
    ("overlays/aks.yaml", "apiVersion: aicr.run/v1alpha3", "apiVersion: aicr.run/v1beta1", (
        "aks.yaml:", "declares spec.profile exactly when its apiVersion is aicr.run/v1beta2 (or aicr.run/v1alpha3)",
        "write apiVersion: aicr.run/v1beta2")),
], ids=["missing", "foreign-registry", "pre-rename-mixin", "profile-under-v1beta1"])
def test_a_missing_or_foreign_catalog_header_is_refused(cli: Any, tmp_path: Path, *, rel: str, old: str, new: str,
                                                        fragments: tuple[str, ...]) -> None:
    root = tmp_path / "catalog"
    shutil.copytree(AICR_CATALOG, root)
    text = (root / rel).read_text(encoding="utf-8")
    assert old in text
    (root / rel).write_text(text.replace(old, new, 1), encoding="utf-8")
    assert_refused(cli("recipe", "--catalog", str(root), "--service", "eks"), *fragments)


@needs_reference
def test_recipe_files_of_either_generation_are_read_and_foreign_ones_refused(cli: Any, tmp_path: Path) -> None:
    stable = _write_recipe(cli, tmp_path / "recipe.yaml")
    text = stable.read_text()
    for header, fragments in (
            ("aicr.run/v1alpha1", ("recipe-bad.yaml:", "value 'aicr.run/v1alpha1' is not allowed for a RecipeResult",
                                   "'aicr.run/v1', 'aicr.run/v1alpha2', 'aicr.run/v1beta2', 'aicr.run/v1alpha3'")),
            ("aicr.run/v1beta2", ("declares a selected profile or a configuration exactly when its apiVersion is "
                                  "aicr.run/v1beta2", "write apiVersion: aicr.run/v1"))):
        bad = tmp_path / "recipe-bad.yaml"
        bad.write_text(text.replace("apiVersion: aicr.run/v1\n", f"apiVersion: {header}\n", 1))
        assert_refused(cli("bundle", "--recipe", str(bad), "--deployer", "helm", "--output", str(tmp_path / "o"),
                           "--catalog", str(AICR_CATALOG)), *fragments)
        with pytest.raises(InvalidInputError, match=r"recipe-bad\.yaml:2: apiVersion"):
            load_document(str(bad))  # the recipe side of diff and validate
    assert load_document(str(stable))[0] == "RecipeResult"


def test_criteria_files_of_either_generation(cli: Any, tmp_path: Path) -> None:
    spec = "spec:\n  service: eks\n  accelerator: h100\n  intent: training\n  os: ubuntu\n  nodes: 4\n"
    outputs = []
    for header in ("aicr.run/v1", "aicr.run/v1alpha2"):
        path = tmp_path / "criteria.yaml"
        path.write_text(f"kind: RecipeCriteria\napiVersion: {header}\n{spec}", encoding="utf-8")
        result = cli("recipe", "--criteria", str(path), "--format", "json")
        assert result.code == 0, result.err
        outputs.append(json.loads(result.out))
    assert outputs[0] == outputs[1] and outputs[0]["criteria"]["nodes"] == 4
    overridden = json.loads(cli("recipe", "--criteria", str(path), "--intent", "inference", "--format", "json").out)
    assert overridden["criteria"]["intent"] == "inference"
    path.write_text(f"kind: RecipeCriteria\napiVersion: aicr.run/v1beta1\n{spec}", encoding="utf-8")
    assert_refused(cli("recipe", "--criteria", str(path)), "criteria.yaml:2: apiVersion: value 'aicr.run/v1beta1' is "
                   "not allowed for a RecipeCriteria; use one of 'aicr.run/v1', 'aicr.run/v1alpha2'")
    path.write_text(f"kind: RecipeCriteria\n{spec}", encoding="utf-8")
    assert_refused(cli("recipe", "--criteria", str(path)), "criteria.yaml:1: apiVersion is missing")


# ------------------------------------------------------------------ snapshots


def _snapshot_text(header: str | None) -> str:
    head = "kind: Snapshot\n" + (f"apiVersion: {header}\n" if header else "")
    return head + ("measurements:\n  - type: K8s\n    subtypes:\n      - subtype: server\n"
                   "        data: {version: v1.33.0}\n")


def test_snapshots_of_either_generation_load_from_files_and_stdin(tmp_path: Path) -> None:
    loaded = {}
    for header in ("aicr.run/v1", "aicr.run/v1alpha2", None):
        text = _snapshot_text(header)
        path = tmp_path / "snapshot.yaml"
        path.write_text(text, encoding="utf-8")
        as_json = tmp_path / "snapshot.json.gz"  # the JSON fast path, gzip'ed
        as_json.write_bytes(gzip.compress(json.dumps(yaml.safe_load(text)).encode()))
        from_stdin = load_snapshot("-", stdin=io.BytesIO(text.encode()))
        assert load_snapshot(str(path)) == load_snapshot(str(as_json)) == from_stdin
        loaded[header] = {key: value for key, value in from_stdin.items() if key != "apiVersion"}
    assert loaded["aicr.run/v1"] == loaded["aicr.run/v1alpha2"] == loaded[None]
    for text in (_snapshot_text("aicr.run/v1beta1"), json.dumps(yaml.safe_load(_snapshot_text("aicr.run/v2")))):
        with pytest.raises(InvalidInputError, match=r"bad:[23]: apiVersion: value 'aicr.run/v\w+' is not allowed; use "
                                                    r"one of 'aicr.run/v1' or 'aicr.run/v1alpha2'"):
            path = tmp_path / "bad"
            path.write_text(text if text.startswith("kind") else json.dumps(json.loads(text), indent=1))
            load_snapshot(str(path))


def test_captured_snapshots_write_the_chosen_header() -> None:
    from aicr_gen.drift import capture
    from tests.drift.test_capture import NOW, SECRETS, _recorded

    objects = (_recorded("version.json"), _recorded("nodes.json")["items"], SECRETS["items"], [])
    stable = capture.build_snapshot(*objects, NOW)
    alpha = capture.build_snapshot(*objects, NOW, api_version="aicr.run/v1alpha2")
    assert (stable["apiVersion"], alpha["apiVersion"]) == ("aicr.run/v1", "aicr.run/v1alpha2")
    assert {**alpha, "apiVersion": "aicr.run/v1"} == stable


def test_cm_snapshots_of_either_generation(control_plane: Any, cli: Any, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.cluster.envtest import apply_json
    from tests.kubeapi import without_proxies

    without_proxies(monkeypatch)
    kubeconfig = str(control_plane.kubeconfig)
    apply_json(control_plane, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "formats"}}])
    for name, header in (("stable", "aicr.run/v1"), ("alpha", "aicr.run/v1alpha2")):
        (tmp_path / "snapshot.yaml").write_text(_snapshot_text(header), encoding="utf-8")
        control_plane.kubectl("create", "configmap", name, "--namespace=formats",
                              f"--from-file={tmp_path / 'snapshot.yaml'}")
        assert load_snapshot(f"cm://formats/{name}", kubeconfig=kubeconfig)["apiVersion"] == header
    written: Result = cli("snapshot", "--kubeconfig", kubeconfig, "-o", "cm://formats/captured",
                          "--api-version", "aicr.run/v1alpha2")
    assert written.code == 0, written.err
    assert load_snapshot("cm://formats/captured", kubeconfig=kubeconfig)["apiVersion"] == "aicr.run/v1alpha2"


# ------------------------------------------------------------------ criteria vocabulary, schemas


def test_new_criteria_values_are_accepted_and_named_where_nothing_covers_them(cli: Any) -> None:
    for args, value in ((("--service", "generic"), "service 'generic'"),
                        (("--service", "eks", "--accelerator", "vr200"), "accelerator 'vr200'")):
        assert_refused(cli("recipe", *args), f"no recipe provides {value} for criteria(")


def test_schemas_accept_both_generations(cli: Any) -> None:
    for kind, values in (("recipe", {"aicr.run/v1", "aicr.run/v1beta2", "aicr.run/v1alpha2", "aicr.run/v1alpha3"}),
                         ("overlay", {"aicr.run/v1beta1", "aicr.run/v1beta2", "aicr.run/v1alpha2",
                                      "aicr.run/v1alpha3"}),
                         ("mixin", {"aicr.run/v1beta1", "aicr.run/v1alpha2"}),
                         ("registry", {"aicr.run/v1beta1", "aicr.run/v1alpha2"}),
                         ("criteria", {"aicr.run/v1", "aicr.run/v1alpha2"})):
        schema = json.loads(cli("schema", kind).out)
        assert set(schema["properties"]["apiVersion"]["enum"]) == values, kind
    spec = json.loads(cli("schema", "clusterspec").out)["$defs"]["Spec"]["properties"]["aicrApiVersion"]
    assert (spec["enum"], spec["default"]) == (["aicr.run/v1", "aicr.run/v1alpha2"], "aicr.run/v1")


# ------------------------------------------------------------------ sync trees


@pytest.mark.parametrize("header", [None, "aicr.run/v1alpha2"])
def test_a_sync_tree_writes_the_spec_header_and_every_bundle_records_itself(tmp_path: Path, header: str | None) -> None:
    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.spec.load import load_spec
    from tests.conftest import ROOT

    data = yaml.safe_load((ROOT / "examples" / "eks-h100-inference-dynamo.yaml").read_text())
    data["spec"]["deployers"] = list(DEPLOYERS)
    if header:
        data["spec"]["aicrApiVersion"] = header
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    tree = dict(render_tree(load_spec(path), tmp_path))
    listed = {line.split("  ", 1)[1] for line in tree["checksums.txt"].decode().splitlines()}
    assert yaml.safe_load(tree["recipe.yaml"])["apiVersion"] == (header or "aicr.run/v1")
    for deployer in DEPLOYERS:
        assert tree[f"{deployer}/recipe.yaml"] == tree["recipe.yaml"]
        info = yaml.safe_load(tree[f"{deployer}/bundle-info.yaml"])
        assert info["build"]["deployer"] == deployer
        assert info["build"]["recipe"]["digest"] == "sha256:" + hashlib.sha256(tree["recipe.yaml"]).hexdigest()
        assert {f"{deployer}/bundle-info.yaml", f"{deployer}/recipe.yaml"} <= listed
