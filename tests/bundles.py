"""Shared setup of the render tests (``test_render_*.py``): the recipes they render, the small catalog, and
helpers that resolve a recipe and render a bundle through the CLI, as users do.

Three recipes: AICR's CUJ2 (eks/h100/ubuntu/inference/dynamo, from AICR's own catalog, needs the reference
data), the embedded catalog's eks/h100/ubuntu/training/kubeflow, and ``small``, from ``SMALL_CATALOG``
written to a temporary folder. A test module that needs more of the small catalog passes *additions*: files
laid over it (see ``small_leaf``); they change only the small recipe.

What a bundle must contain is derived from recipe.yaml here (``Rendered.units``, ``depths``), never from
the renderer.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from tests.conftest import AICR_CATALOG, Result, needs_reference
from tests.consumers import helm_lint, helm_template, validate_objects

Cli = Callable[..., Result]
"""The ``cli`` fixture: ``cli("bundle", ...)`` runs aicr-gen in-process."""

Files = Mapping[str, str]
"""Catalog files: path inside the catalog -> text."""

CRITERIA: dict[str, tuple[str, ...]] = {
    "cuj2": ("--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu",
             "--platform", "dynamo"),
    "training": ("--service", "eks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu",
                 "--platform", "kubeflow"),
    "small": ("--service", "eks", "--accelerator", "h100"),
}
"""``aicr-gen recipe`` criteria of each recipe."""

RECIPES = [pytest.param("cuj2", marks=needs_reference), "training", "small"]
"""The recipes every bundle test runs on; cuj2 needs the AICR reference catalog."""

CHART_RECIPES = [pytest.param("cuj2", marks=needs_reference), "small"]
"""The recipes with local charts (manifests wrapped in a chart); the training recipe has none."""

HELMS = ("helm3", "helm4")

FOREIGN_KINDS = {("agentgateway.dev/v1alpha1", "AgentgatewayParameters"), ("gateway.networking.k8s.io/v1", "Gateway"),
                 ("skyhook.nvidia.com/v1alpha1", "Skyhook")}
"""CRs in CUJ2's local charts whose CRDs come with upstream charts, so no reference schema exists."""

HOSTILE = ("'; touch pwned #", "$(touch pwned)", "a\nb `touch pwned`")
"""Strings that would create a file ``pwned`` if they ever escaped their shell quoting."""

HOSTILE_FIELDS = {
    "api": {"chart": HOSTILE[1], "version": HOSTILE[0], "source": f"https://charts.example.com/{HOSTILE[2]}"},
    "web": {"version": f"1.0\n{HOSTILE[1]}", "chart": f"web{HOSTILE[0]}"},
}
"""Recipe fields that reach the bundle, each trying to end the quoting or run a command."""

KUSTOMIZE_API = {"api": {"type": "Kustomize", "source": "https://github.com/example/api.git", "path": "deploy",
                         "tag": "v1"}}
"""A recipe edit that makes the small recipe's ``api`` a remote Kustomize source."""


def local_kustomize_source(folder: Path) -> dict[str, dict[str, str]]:
    """A local Kustomize source (a ConfigMap whose data holds Helm-like braces) and the recipe edit that
    makes the small recipe's ``api`` build from it."""
    (folder / "deploy").mkdir(parents=True)
    (folder / "deploy" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [config.yaml]\n"
        "commonLabels: {app.kubernetes.io/part-of: api}\n", encoding="utf-8")
    (folder / "deploy" / "config.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: api-settings}\n"
        "data: {greeting: '{{ not a template }}'}\n", encoding="utf-8")
    return {"api": {"type": "Kustomize", "source": str(folder), "path": "deploy", "tag": ""}}

# ------------------------------------------------------------------ the small catalog

_CONFIG_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: {{{{ .Release.Namespace }}}}
data:
  {key}: {{{{ index .Values "{component}" "{key}" | quote }}}}
"""


def overlay(name: str, spec: str) -> str:
    """An overlay file: RecipeMetadata ``name`` whose spec is ``spec`` (YAML, without indentation)."""
    return (f"kind: RecipeMetadata\napiVersion: aicr.run/v1alpha2\nmetadata:\n  name: {name}\nspec:\n"
            + textwrap.indent(textwrap.dedent(spec), "  "))


_SMALL_CRITERIA = "criteria:\n  service: eks\n  accelerator: h100\n"
"""The small recipe's criteria (``CRITERIA["small"]``) as an overlay states them."""


def small_leaf(name: str, base: str, component_refs: str) -> dict[str, str]:
    """An addition to the small catalog: overlay ``name`` on ``base`` with the small recipe's criteria, so that
    it becomes the leaf the small recipe resolves to and adds ``component_refs`` (a YAML list) to it."""
    refs = textwrap.indent(textwrap.dedent(component_refs), "  ")
    return {f"overlays/{name}.yaml": overlay(name, f"base: {base}\n{_SMALL_CRITERIA}componentRefs:\n{refs}")}


def _registry_entry(name: str, body: str) -> str:
    """A registry component with its health check (``checks/<name>/health-check.yaml``) and ``body``."""
    return (f"  - name: {name}\n    healthCheck:\n      assertFile: checks/{name}/health-check.yaml\n"
            + textwrap.indent(textwrap.dedent(body), "    "))


_REGISTRY = "apiVersion: aicr.run/v1alpha2\nkind: ComponentRegistry\ncomponents:\n" + "".join([
    _registry_entry("platform-config", """\
        helm:
          defaultRepository: ""
          defaultNamespace: platform
        """),
    _registry_entry("web", """\
        helm:
          defaultRepository: oci://registry.example.com/charts
          defaultChart: web
          defaultVersion: v1.2.3
          defaultNamespace: web
        """),
    _registry_entry("api", """\
        helm:
          defaultRepository: https://registry.example.com/charts
          defaultChart: example/api
          defaultVersion: v0.9.0
          defaultNamespace: api
        """),
    _registry_entry("addon", """\
        kustomize:
          defaultSource: https://github.com/example/addon.git
          defaultPath: deploy/overlays/prod
          defaultTag: v0.3.0
        """),
])

SMALL_CATALOG: dict[str, str] = {
    "registry.yaml": _REGISTRY,
    "overlays/base.yaml": overlay("base", """\
        componentRefs:
          - name: platform-config
            type: Helm
            valuesFile: components/platform-config/values.yaml
            manifestFiles:
              - components/platform-config/manifests/settings.yaml
          - name: web
            type: Helm
            valuesFile: components/web/values.yaml
            preManifestFiles:
              - components/web/manifests/pre-settings.yaml
            manifestFiles:
              - components/web/manifests/greeting.yaml
            dependencyRefs:
              - platform-config
          - name: api
            type: Helm
            valuesFile: components/api/values.yaml
            dependencyRefs:
              - web
        """),
    "overlays/small.yaml": overlay("small", f"base: base\n{_SMALL_CRITERIA}"),
    "components/platform-config/values.yaml": "tier: gold\n",
    "components/web/values.yaml": "replicas: 2\ngreeting: hello\n",
    "components/api/values.yaml": "replicas: 1\nmode: 'on'\nlimits:\n  memory: 1Gi\n",
    "components/platform-config/manifests/settings.yaml":
        _CONFIG_MAP.format(name="platform-settings", component="platform-config", key="tier"),
    "components/web/manifests/pre-settings.yaml": _CONFIG_MAP.format(name="web-settings", component="web",
                                                                      key="replicas"),
    "components/web/manifests/greeting.yaml": _CONFIG_MAP.format(name="web-greeting", component="web",
                                                                  key="greeting"),
    **{f"checks/{name}/health-check.yaml": f"apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\n"
                                           f"metadata:\n  name: {name}-health\n"
       for name in ("platform-config", "web", "api", "addon")},
}
"""The small recipe deploys platform-config, manifest-only; ``web``, an OCI chart whose version keeps its v,
which becomes web-pre, web, web-post; and ``api``, an HTTPS chart with a v-version whose repository sanitises
to the same name as web's. The registry also knows ``addon``, a Kustomize source that only
``KUSTOMIZE_ADDON`` deploys (the helm and helmfile deployers refuse Kustomize sources)."""

KUSTOMIZE_ADDON = small_leaf("small-kustomize", "small", """\
    - name: addon
      type: Kustomize
      dependencyRefs:
        - platform-config
    """)
"""Adds ``addon``, a Kustomize source after platform-config, to the small recipe."""


def write_catalog(root: Path, *additions: Files) -> Path:
    """``SMALL_CATALOG`` with ``additions`` laid over it (a later file of the same path wins), in ``root``."""
    for rel, text in {key: value for files in (SMALL_CATALOG, *additions) for key, value in files.items()}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


# ------------------------------------------------------------------ recipes and bundles through the CLI


@dataclass(frozen=True)
class Recipe:
    """A recipe.yaml written by ``aicr-gen recipe``, and the --catalog arguments it was resolved with."""

    name: str
    file: Path
    catalog: tuple[str, ...]

    def load(self) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load(self.file.read_text(encoding="utf-8"))
        return loaded

    def edit(self, edits: Mapping[str, Mapping[str, str]]) -> Recipe:
        """Update componentRefs in the file: ``edits`` maps a component to the fields to set."""
        recipe = self.load()
        for ref in recipe["componentRefs"]:
            ref.update(edits.get(ref["name"], {}))
        self.file.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
        return self

    def run_bundle(self, cli: Cli, deployer: str, out: Path, *extra: str) -> Result:
        """``aicr-gen bundle`` of this recipe for ``deployer`` into ``out``, whatever it answers."""
        return cli("bundle", "--recipe", str(self.file), "--deployer", deployer, "-o", str(out), *self.catalog,
                   *extra)

    def bundle(self, cli: Cli, deployer: str, out: Path, *extra: str) -> Rendered:
        """``run_bundle``, which must succeed."""
        result = self.run_bundle(cli, deployer, out, *extra)
        assert result.code == 0, result.err
        return Rendered(self, self.load(), out)


def write_recipe(cli: Cli, name: str, folder: Path, *additions: Files) -> Recipe:
    """``aicr-gen recipe`` for one of CRITERIA into ``folder/recipe.yaml``; the small recipe resolves from
    ``SMALL_CATALOG`` with ``additions``, written to ``folder/catalog``."""
    folder.mkdir(parents=True, exist_ok=True)
    catalog: tuple[str, ...] = ()
    if name == "cuj2":
        catalog = ("--catalog", str(AICR_CATALOG))
    elif name == "small":
        catalog = ("--catalog", str(write_catalog(folder / "catalog", *additions)))
    recipe = Recipe(name, folder / "recipe.yaml", catalog)
    result = cli("recipe", *catalog, *CRITERIA[name], "-o", str(recipe.file))
    assert result.code == 0, result.err
    return recipe


@dataclass(frozen=True)
class Unit:
    """What a unit must be, derived from recipe.yaml alone."""

    folder: str
    name: str
    role: str
    ref: dict[str, Any]

    @property
    def kind(self) -> str:
        """``kustomize`` (a Kustomize source), ``local`` (a chart in the bundle) or ``upstream`` (a chart)."""
        if self.ref.get("type") == "Kustomize" and self.role == "main":
            return "kustomize"
        return "local" if self.role != "main" or not self.ref.get("source") else "upstream"

    @property
    def local(self) -> bool:
        return self.kind == "local"

    @property
    def namespace(self) -> str:
        return str(self.ref.get("namespace") or self.ref["name"])

    @property
    def chart(self) -> str:
        return str(self.ref.get("chart") or self.ref["name"])


@dataclass(frozen=True)
class Rendered:
    """A bundle written by the CLI, and the recipe it came from (as read when bundling)."""

    source: Recipe
    recipe: dict[str, Any]
    root: Path

    @property
    def name(self) -> str:
        return self.source.name

    def units(self) -> list[Unit]:
        """deploymentOrder, each component split into [-pre] main [-post], numbered from 001."""
        refs = {ref["name"]: ref for ref in self.recipe["componentRefs"]}
        split: list[tuple[str, str, dict[str, Any]]] = []
        for name in self.recipe["deploymentOrder"]:
            ref = refs[name]
            if ref.get("preManifestFiles"):
                split.append((f"{name}-pre", "pre", ref))
            split.append((name, "main", ref))
            if ref.get("manifestFiles") and ref.get("source"):
                split.append((f"{name}-post", "post", ref))
        return [Unit(f"{index:03d}-{name}", name, role, ref) for index, (name, role, ref) in enumerate(split, start=1)]


def render(cli: Cli, name: str, deployer: str, folder: Path, *extra: str, additions: Sequence[Files] = (),
           out: Path | None = None) -> Rendered:
    """Recipe ``name`` rendered for ``deployer`` through the CLI, into ``out`` (``folder/<deployer>`` unless
    given); ``extra`` are more ``aicr-gen bundle`` arguments."""
    recipe = write_recipe(cli, name, folder, *additions)
    return recipe.bundle(cli, deployer, out or folder / deployer, *extra)


class Renderings:
    """Bundles rendered once per test module: ``renderings(cli, name)`` renders recipe ``name`` on first use
    (the ``cli`` fixture is per test, so it is passed in)."""

    def __init__(self, factory: pytest.TempPathFactory, deployer: str, *extra: str,
                 additions: Sequence[Files] = ()) -> None:
        self._factory = factory
        self._deployer = deployer
        self._extra = extra
        self._additions = additions
        self._cache: dict[tuple[str, str], Rendered] = {}

    def __call__(self, cli: Cli, name: str, deployer: str = "") -> Rendered:
        key = (name, deployer or self._deployer)
        if key not in self._cache:
            self._cache[key] = render(cli, name, key[1], self._factory.mktemp(f"{name}-{key[1]}"), *self._extra,
                                      additions=self._additions)
        return self._cache[key]


def bundle_fixtures(deployer: str, *extra: str, additions: Sequence[Files] = (),
                    bundle: str = "bundle") -> tuple[Any, Any]:
    """The fixtures of a module's bundles, to assign at module level:

    - ``rendered`` (module scope): a ``Renderings`` for ``deployer``, rendering with ``extra`` arguments and
      the small catalog's ``additions``;
    - ``bundle`` (or the name given): each of RECIPES rendered, as a parameter of the test.
    """

    @pytest.fixture(scope="module", name="rendered")
    def rendered(tmp_path_factory: pytest.TempPathFactory) -> Renderings:
        return Renderings(tmp_path_factory, deployer, *extra, additions=additions)

    @pytest.fixture(params=RECIPES, name=bundle)
    def each(request: pytest.FixtureRequest, cli: Cli, rendered: Renderings) -> Rendered:
        return rendered(cli, request.param)

    return rendered, each


# ------------------------------------------------------------------ checks shared by the deployers


def depths(recipe: Mapping[str, Any]) -> dict[str, int]:
    """Dependency depth of every deployed component: 0 without dependencies, else 1 + the deepest one."""
    refs = {ref["name"]: ref for ref in recipe["componentRefs"]}
    deployed = set(recipe["deploymentOrder"])

    @cache
    def depth(name: str) -> int:
        deps = [dep for dep in refs[name].get("dependencyRefs") or [] if dep in deployed]
        return 1 + max((depth(dep) for dep in deps), default=-1)

    return {name: depth(name) for name in recipe["deploymentOrder"]}


def check_local_charts(bundle: Rendered, helm: str) -> list[Unit]:
    """helm lints every local chart and templates it as its unit's release: at least one object per manifest
    file, each valid. Returns the local units (there must be some)."""
    local = [unit for unit in bundle.units() if unit.local]
    assert local
    for unit in local:
        chart = bundle.root / unit.folder
        helm_lint(chart, helm)
        objects = helm_template(chart, helm, release=unit.name, namespace=unit.namespace)
        manifests = unit.ref["preManifestFiles" if unit.role == "pre" else "manifestFiles"]
        assert len(objects) >= len(manifests), unit.folder
        validate_objects(objects, unit.folder, unchecked_kinds=FOREIGN_KINDS)
    return local


class _TextSnapshot(SingleFileSnapshotExtension):
    """Snapshots stored as the literal text the bundle holds, reviewable in pull requests."""

    _write_mode = WriteMode.TEXT


class YAMLSnapshot(_TextSnapshot):
    file_extension = "yaml"


class ShellSnapshot(_TextSnapshot):
    file_extension = "sh"
