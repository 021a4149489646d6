"""The ``helmfile`` deployer: ``helmfile.yaml`` lists one sub-helmfile per dependency level, in order (a recipe
of one level has its releases in ``helmfile.yaml`` itself, as AICR writes it).

Helmfile applies the sub-helmfiles one after the other, so a level starts only once every release of the
levels before it is installed; that is how dependencies between components are kept. Inside a level,
releases install in parallel except where ``needs`` orders them, which is only within a component
(``<c>-pre`` -> ``<c>`` -> ``<c>-post``). ``helmfile destroy`` walks the same graph in reverse.

Release settings follow AICR's helmfile deployer (``release_rules``): ``wait: false`` and a longer timeout for
asynchronous components, ``createNamespace: false`` where the unit's manifests hold the Namespace, and
``disableValidation`` only where the registry says helm-diff cannot know the objects' kinds yet.

Values stay in ``NNN-<unit>/values.yaml`` files, never inline: helmfile renders only ``.gotmpl`` files as
templates, so ``{{ ... }}`` in a value reaches the chart literally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aicr_gen.bundle import Bundle
from aicr_gen.errors import InvalidInputError
from aicr_gen.render import charts, readme, release_rules
from aicr_gen.render.names import hashed, url_name
from aicr_gen.render.options import Options
from aicr_gen.render.plan import KUSTOMIZE, LOCAL, UPSTREAM, Plan, Unit
from aicr_gen.yaml import dump

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HELM_DEFAULTS = {"wait": True, "timeout": release_rules.TIMEOUT, "createNamespace": True}
_OCI = "oci://"


def repository_names(units: Sequence[Unit]) -> dict[str, str]:
    """A helmfile repository name for each upstream repository URL, unique across the bundle.

    Two URLs that sanitise alike (``https://`` and ``oci://`` of one host, a trailing slash) get a
    short hash of the URL appended, so neither release silently pulls from the other's repository.
    """
    names: dict[str, str] = {}
    taken: set[str] = set()
    for url in dict.fromkeys(unit.repository for unit in units if unit.kind == UPSTREAM):
        name = url_name(url, fallback="charts")
        if name in taken:
            name = hashed(name, url)
        taken.add(name)
        names[url] = name
    return names


def _repository(url: str, name: str) -> dict[str, Any]:
    """Helmfile's OCI form is the URL without its scheme plus ``oci: true``; it pulls ``oci://<url>/<chart>``."""
    if url.startswith(_OCI):
        return {"name": name, "url": url.removeprefix(_OCI).rstrip("/"), "oci": True}
    return {"name": name, "url": url}


def _release(unit: Unit, by_name: Mapping[str, Unit], names: Mapping[str, str]) -> dict[str, Any]:
    release: dict[str, Any] = {"name": unit.name, "namespace": unit.namespace}
    if unit.kind == LOCAL:
        release["chart"] = f"./{unit.folder}"
    else:
        release["chart"] = f"{names[unit.repository]}/{unit.chart}"
        if unit.version:
            release["version"] = unit.version
    release["values"] = [f"./{unit.folder}/values.yaml"]
    if unit.dynamic:
        release["values"].append(f"./{unit.folder}/{charts.CLUSTER_VALUES}")
    # Components in earlier levels are already installed; only a component's own units need ordering.
    needs = [_needs(unit, by_name[dep]) for dep in unit.depends_on if by_name[dep].component == unit.component]
    if needs:
        release["needs"] = needs
    if release_rules.is_async(unit):
        release["wait"] = False
    if release_rules.timeout(unit) != release_rules.TIMEOUT:
        release["timeout"] = release_rules.timeout(unit)
    if not release_rules.creates_namespace(unit):
        release["createNamespace"] = False
    if release_rules.disables_validation(unit):
        release["disableValidation"] = True
    return release


def _needs(unit: Unit, dep: Unit) -> str:
    """Helmfile finds a bare release name only in the needing release's namespace; another one is named."""
    return dep.name if dep.namespace == unit.namespace else f"{dep.namespace}/{dep.name}"


def level_file(units: Sequence[Unit], by_name: Mapping[str, Unit], names: Mapping[str, str]) -> bytes:
    """One sub-helmfile: the repositories its releases use, the shared defaults and the releases."""
    used = dict.fromkeys(unit.repository for unit in units if unit.kind == UPSTREAM)
    state: dict[str, Any] = {}
    if used:
        state["repositories"] = sorted((_repository(url, names[url]) for url in used), key=lambda repo: repo["name"])
    state["helmDefaults"] = HELM_DEFAULTS
    state["releases"] = [_release(unit, by_name, names) for unit in units]
    return (charts.GENERATED + dump(state)).encode()


ENTRYPOINT = "helmfile.yaml"
"""What ``bundle-info.yaml`` names as the file a user runs."""


def release_files(unit: Unit) -> tuple[str, str]:
    """``bundle-info.yaml``'s path and manifest of ``unit``: its folder (values.yaml), no manifest."""
    return unit.folder, ""


def render(plan: Plan, options: Options) -> Bundle:
    """The helmfile bundle (without the shared recipe.yaml and checksums)."""
    del options  # the helmfile layout has no deployer settings
    for unit in plan.units:
        if unit.kind == KUSTOMIZE:
            raise InvalidInputError(
                f"component {unit.component!r} is a Kustomize source; helmfile needs it built into a local chart "
                "first, which aicr-gen does not do yet (use the argocd deployer, or drop it with --set "
                f"{unit.component}:enabled=false)")
    by_name = {unit.name: unit for unit in plan.units}
    names = repository_names(plan.units)
    levels = plan.levels()
    if len(levels) <= 1:  # one level: the releases in helmfile.yaml itself, as AICR writes it
        bundle = Bundle({"helmfile.yaml": level_file(plan.units, by_name, names)})
    else:
        index = {"helmfiles": [{"path": f"level-{level}.yaml"} for level in range(len(levels))]}
        bundle = Bundle({"helmfile.yaml": (charts.GENERATED + dump(index)).encode()})
    for level, units in enumerate(levels if len(levels) > 1 else []):
        bundle = bundle.merge({f"level-{level}.yaml": level_file(units, by_name, names)})
    for unit in plan.units:
        files = charts.release_folder(unit)
        bundle = bundle.merge(files.under(unit.folder))
    install = ["Run in this folder; needs helmfile, helm and the helm-diff plugin",
               "(`helm plugin install https://github.com/databus23/helm-diff`).", "",
               "```bash", "helmfile diff     # preview", "helmfile apply    # install or upgrade, level by level",
               "```"]
    uninstall = ["```bash", "helmfile destroy  # in reverse: last level first", "```"]
    return bundle.merge({"README.md": readme.render(plan, "helmfile", install, uninstall)})
