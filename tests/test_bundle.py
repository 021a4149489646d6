"""The bundle core: the Bundle value, values and --set, the one atomic writer, verify, and the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.bundle import Bundle
from aicr_gen.edges.output import write_bundle
from aicr_gen.errors import InvalidInputError
from aicr_gen.render import values
from aicr_gen.spec import overrides as override_grammar
from tests.conftest import AICR_CATALOG, REFERENCE, assert_refused, needs_reference

QUERY = ("--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu", "--platform", "dynamo")


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ Bundle


@pytest.mark.parametrize("path", ["", "/etc/passwd", "../x", "a/../b", "a/./b", "a//b", "a\\b", "a\0b", "a/"])
def test_bundle_refuses_unsafe_paths(path: str) -> None:
    with pytest.raises(InvalidInputError, match="not a plain relative path"):
        Bundle({path: b"x"})


def test_bundle_is_sorted_immutable_and_checksummed() -> None:
    bundle = Bundle({"b/x.yaml": b"2", "a.yaml": b"1"}).with_checksums()
    assert list(bundle) == ["a.yaml", "b/x.yaml", "checksums.txt"]
    lines = bundle["checksums.txt"].decode().splitlines()
    assert [line.split("  ")[1] for line in lines] == ["a.yaml", "b/x.yaml"]
    with pytest.raises(TypeError):
        bundle["a.yaml"] = b"3"  # type: ignore[index]
    with pytest.raises(InvalidInputError, match="differently"):
        bundle.merge({"a.yaml": b"other"})


# ------------------------------------------------------------------ values


@pytest.mark.parametrize(("text", "expected"), [
    ("true", True), ("false", False), ("null", "null"), ("42", 42), ("-7", -7), ("+7", 7), ("012", 12),
    ("1.5", 1.5), ("580.105.08", "580.105.08"), (".5", 0.5), ("5.", 5.0), ("1e3", 1000.0), ("-Inf", float("-inf")),
    ("0x1p-2", 0.25), ("0x10", "0x10"), ("1e400", "1e400"), ("9223372036854775808", 9.223372036854776e18),
    ("1_000", "1_000"), ("yes", "yes"), ("True", "True"), ("v1.2", "v1.2"), ("", ""),
])
def test_set_values_are_typed_like_aicr(text: str, expected: Any) -> None:
    """AICR's pkg/component ConvertMapValue: exact true/false, a base-10 int64, then Go's ParseFloat, else the
    string (null included: AICR writes the string, it does not delete the key)."""
    assert override_grammar.typed(text) == expected
    assert type(override_grammar.typed(text)) is type(expected)


def test_set_and_set_json_apply_in_order() -> None:
    base = {"driver": {"enabled": True, "args": ["a"]}, "keep": 1}
    overrides = [override_grammar.parse("--set", "c:driver.enabled=false"),
                 override_grammar.parse("--set-json", 'c:driver={"args": ["b"], "version": "580"}'),
                 override_grammar.parse("--set", "c:list[1].name=x")]
    result = values.apply(base, overrides)
    assert result == {"driver": {"enabled": False, "args": ["b"], "version": "580"}, "keep": 1,
                      "list": [None, {"name": "x"}]}
    assert base == {"driver": {"enabled": True, "args": ["a"]}, "keep": 1}


@pytest.mark.parametrize("text", ["nocolon=1", "c:=1", ":a=1", "c:a", "c:a..b=1", "c:a[x]=1"])
def test_malformed_set_is_refused(text: str) -> None:
    with pytest.raises(InvalidInputError):
        override_grammar.parse("--set", text)


def test_set_json_must_be_json() -> None:
    with pytest.raises(InvalidInputError, match="not JSON"):
        override_grammar.parse("--set-json", "c:a={broken")


# ------------------------------------------------------------------ the writer


def test_writer_creates_then_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_bundle(Bundle({"a.yaml": b"1"}).with_checksums(), str(out), force=False)
    assert _tree(out).keys() == {"a.yaml", "checksums.txt"}
    with pytest.raises(InvalidInputError, match="not empty; pass --force"):
        write_bundle(Bundle({"a.yaml": b"2"}).with_checksums(), str(out), force=False)
    assert (out / "a.yaml").read_bytes() == b"1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_force_replaces_only_what_the_previous_bundle_wrote(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_bundle(Bundle({"a.yaml": b"1", "old/b.yaml": b"2"}).with_checksums(), str(out), force=False)
    (out / "NOTES.md").write_text("mine")
    (out / "old" / "mine.txt").write_text("also mine")
    write_bundle(Bundle({"a.yaml": b"new", "c.yaml": b"3"}).with_checksums(), str(out), force=True)
    tree = _tree(out)
    assert tree["a.yaml"] == b"new" and tree["c.yaml"] == b"3"
    assert "old/b.yaml" not in tree
    assert tree["NOTES.md"] == b"mine" and tree["old/mine.txt"] == b"also mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _modes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mode for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("change", ["nothing", "content", "mode", "folder mode", "empty folder", "missing file"])
def test_force_with_the_same_bundle_leaves_what_a_rewrite_would(tmp_path: Path, change: str) -> None:
    bundle = Bundle({"a.yaml": b"1", "d/e/run.sh": b"#!/bin/sh\n", "d/f.yaml": b"2"}).with_checksums()
    rewritten, out = tmp_path / "rewritten", tmp_path / "out"
    write_bundle(bundle, str(rewritten), force=False)
    write_bundle(bundle, str(out), force=False)
    (out / "NOTES.md").write_text("mine")
    (rewritten / "NOTES.md").write_text("mine")
    if change == "content":
        (out / "d/f.yaml").write_bytes(b"3")
    elif change == "mode":
        (out / "d/e/run.sh").chmod(0o600)
    elif change == "folder mode":
        (out / "d").chmod(0o700)
    elif change == "empty folder":
        (out / "d/g").mkdir()
    elif change == "missing file":
        (out / "a.yaml").unlink()
    inode = out.stat().st_ino
    write_bundle(bundle, str(out), force=True)
    assert (_tree(out), _modes(out)) == (_tree(rewritten), _modes(rewritten))
    assert (out.stat().st_ino == inode) == (change == "nothing")  # only an unchanged folder is not replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "rewritten"]


def test_force_refuses_to_overwrite_a_file_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.yaml").write_text("hand-written")
    with pytest.raises(InvalidInputError, match="not from a previous bundle"):
        write_bundle(Bundle({"a.yaml": b"1"}).with_checksums(), str(out), force=True)
    assert (out / "a.yaml").read_text() == "hand-written"


def test_a_symlink_planted_in_the_output_is_never_followed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_bundle(Bundle({"a.yaml": b"1"}).with_checksums(), str(out), force=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / "b.yaml").symlink_to(victim)
    before = _tree(out)
    with pytest.raises(InvalidInputError, match="symlink inside the output folder"):
        write_bundle(Bundle({"a.yaml": b"2", "b.yaml": b"x"}).with_checksums(), str(out), force=True)
    assert victim.read_text() == "precious"
    assert _tree(out) == before


def test_an_output_folder_reached_through_a_symlink_is_fine(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    write_bundle(Bundle({"a.yaml": b"1"}).with_checksums(), str(link), force=False)
    assert (real / "a.yaml").read_bytes() == b"1"
    assert link.is_symlink()


def test_a_failure_midway_leaves_the_target_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_bundle(Bundle({"a.yaml": b"1"}).with_checksums(), str(out), force=False)
    (out / "keep.txt").write_text("kept")
    before = _tree(out)

    def broken_link(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "link", broken_link)
    with pytest.raises(InvalidInputError, match="No space left"):
        write_bundle(Bundle({"a.yaml": b"2"}).with_checksums(), str(out), force=True)
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_existing_file_is_not_an_output_folder(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(InvalidInputError, match="existing file"):
        write_bundle(Bundle({"a.yaml": b"1"}), str(target), force=True)
    assert target.read_text() == "x"


# ------------------------------------------------------------------ the CLI, verify


@pytest.fixture
def recipe_file(cli: Any, tmp_path: Path) -> Path:
    path = tmp_path / "recipe.yaml"
    assert cli("recipe", *QUERY, "-o", str(path)).code == 0
    return path


def test_bundle_then_verify_then_tamper(cli: Any, recipe_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    result = cli("bundle", "--recipe", str(recipe_file), "--deployer", "helm", "-o", str(out))
    assert result.code == 0, result.err
    assert cli("verify", str(out)).code == 0
    (out / "deploy.sh").write_text("#!/bin/sh\necho owned\n")
    (out / "extra.txt").write_text("x")
    (out / "README.md").unlink()
    result = cli("verify", str(out))
    assert result.code == 1
    assert "changed: deploy.sh" in result.err and "unlisted: extra.txt" in result.err
    assert "missing: README.md" in result.err
    assert cli("verify", str(tmp_path)).code == 2


def test_bundle_applies_set_and_drops_disabled_components(cli: Any, recipe_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    result = cli("bundle", "--recipe", str(recipe_file), "--deployer", "helm", "-o", str(out),
                 "--set", "gpuoperator:driver.version=580.105.08", "--set-json", 'gpu-operator:toolkit={"env": []}',
                 "--set", "nvidia-dra-driver-gpu:enabled=false")
    assert result.code == 0, result.err
    gpu = next(out.glob("*-gpu-operator/values.yaml"))
    values_file = yaml.safe_load(gpu.read_text())
    assert values_file["driver"]["version"] == "580.105.08"
    assert values_file["toolkit"]["env"] == []
    assert not list(out.glob("*-nvidia-dra-driver-gpu"))
    assert "nvidia-dra-driver-gpu" not in (out / "deploy.sh").read_text()


@pytest.mark.parametrize(("args", "message"), [
    (("--set", "nope:a=1"), "component 'nope' is not in the recipe"),
    (("--set", "gpu-operator:enabled=maybe"), "enabled takes true or false"),
    (("--deployer-typo",), "unrecognized arguments"),
    (("--set", "deployer:bogus=1"), "deployer settings are"),
])
def test_bad_overrides_write_nothing(cli: Any, recipe_file: Path, tmp_path: Path, args: tuple[str, ...],
                                     message: str) -> None:
    out = tmp_path / "bundle"
    result = cli("bundle", "--recipe", str(recipe_file), "--deployer", "helm", "-o", str(out), *args)
    assert result.code == 2
    assert message in result.err
    assert not out.exists()


def _hostile_recipe(recipe_file: Path, tmp_path: Path, name: str) -> Path:
    recipe = yaml.safe_load(recipe_file.read_text())
    recipe["componentRefs"][0]["name"] = name
    recipe["deploymentOrder"] = [name if item == recipe["componentRefs"][0]["name"] else item
                                 for item in recipe["deploymentOrder"]]
    target = tmp_path / "hostile.yaml"
    target.write_text(json.dumps(recipe))
    return target


@pytest.mark.parametrize("name", ["a;rm -rf", "../escape", "x/y", "UPPER", "a$(id)"])
def test_hostile_component_names_are_refused(cli: Any, recipe_file: Path, tmp_path: Path, name: str) -> None:
    recipe = yaml.safe_load(recipe_file.read_text())
    first = recipe["componentRefs"][0]["name"]
    recipe["componentRefs"][0]["name"] = name
    recipe["deploymentOrder"] = [name if item == first else item for item in recipe["deploymentOrder"]]
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(recipe))
    out = tmp_path / "bundle"
    result = cli("bundle", "--recipe", str(hostile), "--deployer", "helm", "-o", str(out))
    assert_refused(result, "does not match ^[a-z0-9]")
    assert not out.exists()


def test_a_recipe_with_unknown_fields_is_refused(cli: Any, recipe_file: Path, tmp_path: Path) -> None:
    text = recipe_file.read_text().replace("deploymentOrder:", "deploymentOrdr:", 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    assert_refused(cli("bundle", "--recipe", str(bad), "--deployer", "helm", "-o", str(tmp_path / "o")),
                   "unknown field 'deploymentOrdr'", "did you mean 'deploymentOrder'")


@needs_reference
def test_a_recipe_written_by_aicr_is_valid_input(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    result = cli("bundle", "--recipe", str(REFERENCE / "aicr/examples/recipes/eks-training.yaml"),
                 "--deployer", "helm", "-o", str(out), "--catalog", str(AICR_CATALOG))
    assert result.code == 0, result.err
    gpu = yaml.safe_load(next(out.glob("*-gpu-operator/values.yaml")).read_text())
    assert gpu["cdi"]["enabled"] is True  # the overlay values file, merged over the base values.yaml
    assert "driver" in gpu


def _ref(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "type": "Helm", "source": "https://charts.example.com", "chart": name, "version": "1.0.0",
            **fields}


@pytest.mark.parametrize(("refs", "order", "message"), [
    ([_ref("web", dependencyRefs=["db"]), _ref("db")], ["web", "db"], "puts 'web' before its dependency 'db'"),
    ([_ref("web", namespace="Bad/NS")], ["web"], "namespace 'Bad/NS' is not a DNS label"),
    ([_ref("web", version="")], ["web"], "has no version; pin one"),
    ([_ref("web", manifestFiles=["m.yaml"]), _ref("web-post")], ["web", "web-post"], "two units are named 'web-post'"),
])
def test_plans_refuse_inconsistent_recipes(refs: list[dict[str, Any]], order: list[str], message: str) -> None:
    from aicr_gen.render.plan import build

    recipe = {"componentRefs": refs, "deploymentOrder": order}
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(")):
        build(recipe, {"m.yaml": b"kind: ConfigMap\n"}, [], {})


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
def test_gitops_deployers_need_the_repo_they_will_live_in(cli: Any, recipe_file: Path, tmp_path: Path,
                                                          deployer: str) -> None:
    out = tmp_path / "bundle"
    assert_refused(cli("bundle", "--recipe", str(recipe_file), "--deployer", deployer, "-o", str(out)),
                   "needs --repo URL")
    assert not out.exists()


def test_build_prints_what_flux_and_argocd_bundles_apply(cli: Any, recipe_file: Path) -> None:
    repo = ("--repo", "https://git.example.com/platform/gitops.git")
    flux = cli("bundle", "--recipe", str(recipe_file), "--deployer", "flux", "--build", *repo)
    assert flux.code == 0, flux.err
    kinds = {doc["kind"] for doc in yaml.safe_load_all(flux.out) if doc}
    assert {"HelmRelease", "HelmRepository", "OCIRepository"} <= kinds
    argocd = cli("bundle", "--recipe", str(recipe_file), "--deployer", "argocd", "--build", *repo)
    applications = [doc for doc in yaml.safe_load_all(argocd.out) if doc]
    assert {doc["kind"] for doc in applications} == {"Application"}
    assert len(applications) == 1 + len(yaml.safe_load(recipe_file.read_text())["deploymentOrder"]) + sum(
        1 for doc in applications if doc["metadata"]["name"].endswith(("-pre", "-post")))


@pytest.mark.parametrize(("args", "message"), [
    (("--deployer", "helm", "--build"), "flux or argocd"),
    (("--deployer", "helm"), "exactly one of --output DIR or --build"),
    (("--deployer", "flux", "--build", "-o", "x", "--repo", "https://g/x.git"), "exactly one of --output DIR"),
])
def test_build_and_output_go_one_at_a_time(cli: Any, recipe_file: Path, args: tuple[str, ...], message: str) -> None:
    assert_refused(cli("bundle", "--recipe", str(recipe_file), *args), message)
