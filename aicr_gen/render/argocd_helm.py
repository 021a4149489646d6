"""The ``argocd-helm`` deployer: the bundle is a Helm chart whose templates are the Argo CD Applications.

Install-time settings (repository, revision, name prefix, destination, project, per-component values)
are chart values checked by ``values.schema.json``, so one bundle serves many clusters.

Component values never enter a template: they are data in ``static/<unit>.yaml``, read with
``.Files.Get`` and merged with the install-time values inside the template, so ``{{ }}`` in a value
reaches the child chart literally. Local charts stay in their ``NNN-<unit>/`` folders, which child
Applications read from the Git repository and ``.helmignore`` keeps out of this chart.
"""

from __future__ import annotations

import json
import re

from aicr_gen.bundle import Bundle
from aicr_gen.errors import InvalidInputError
from aicr_gen.render import argocd, charts, readme
from aicr_gen.render.options import Options
from aicr_gen.render.plan import KUSTOMIZE, LOCAL, Plan, Unit
from aicr_gen.yaml import dump, dump_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CHART_NAME = "aicr-bundle"
CHART_VERSION = "1.0.0"
PARENT_TEMPLATE = "templates/aicr-stack.yaml"
_INSTALL_KEYS = ("repoURL", "targetRevision", "deployer")
_PREFIX_PATTERN = "^([a-z0-9][-a-z0-9]*)?$"
_REPO = '{{ required "repoURL is empty: set it to the Git repository holding this bundle" .Values.repoURL | quote }}'
# Placeholders dumped as plain data, then swapped for template actions (see _template).
_ACTIONS = {
    "@@name@@": "{{ $name | quote }}",
    "@@project@@": "{{ .Values.deployer.project | quote }}",
    "@@server@@": "{{ .Values.deployer.destinationServer | quote }}",
    "@@repo@@": _REPO,
    "@@revision@@": "{{ .Values.targetRevision | quote }}",
}
_OCI_REPO_TOKEN = "@@ocirepo@@"
_OCI_REPO = ('{{ printf "%s/%s" (required "repoURL is empty: set it to the registry path this chart is published '
             'under (oci://REGISTRY/PATH, without the chart name)" .Values.repoURL | trimSuffix "/") .Chart.Name '
             '| quote }}')
"""A published chart's own address: the registry path in ``repoURL`` and the chart's name, as Helm joins them."""
_BLOCKS = {"@@values@@": ("|", "toYaml $values"), "@@all@@": ("", "toYaml .Values")}
_PLACEHOLDER_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z]+): '(?P<token>@@[a-z]+@@)'$", re.MULTILINE)


def value_key(component: str) -> str:
    """The install-time values key of a component: its name without '-', usable in ``--set``."""
    return component.replace("-", "")


def value_keys(plan: Plan) -> dict[str, str]:
    """Component -> values key, for components with values; clashes are refused."""
    keys: dict[str, str] = {}
    for unit in plan.units:
        if unit.kind == KUSTOMIZE or unit.component in keys:
            continue
        key = value_key(unit.component)
        owner = next((name for name, taken in keys.items() if taken == key), None)
        if owner is not None or key in _INSTALL_KEYS:
            clash = f"component {owner!r}" if owner else "an install-time setting"
            raise InvalidInputError(
                f"component {unit.component!r} would use values key {key!r}, already taken by {clash}; "
                "rename one component in the catalog")
        keys[unit.component] = key
    return keys


def published(options: Options) -> bool:
    """Whether the chart is published to an OCI registry (``bundle --output oci://REGISTRY/PATH/NAME:VERSION``):
    Argo CD then reads it, local charts included, from there."""
    return options.repo.startswith("oci://")


def identity(options: Options) -> tuple[str, str, str]:
    """``(name, version, repoURL default)`` of the chart: a published one is named and versioned by its
    reference (the tag's one ``_`` is Helm's ``+``), its ``repoURL`` the registry path above it, as AICR's."""
    if published(options):
        parent, _, name = options.repo.rpartition("/")
        return name, options.revision.replace("_", "+", 1), parent
    return CHART_NAME, CHART_VERSION, options.repo


def _repo_token(options: Options) -> str:
    return _OCI_REPO_TOKEN if published(options) else "@@repo@@"


def _template(document: dict[str, Any]) -> str:
    """``document`` as YAML with each placeholder replaced by its template action."""
    text = dump(document)
    if "{{" in text:
        raise InvalidInputError(
            "a chart repository, namespace, path or version contains '{{', which Helm would read as a template "
            "action; fix the recipe")

    def block(match: re.Match[str]) -> str:
        indicator, expression = _BLOCKS[match["token"]]
        head = f"{match['indent']}{match['key']}: {indicator}".rstrip()
        return f"{head}\n{{{{- {expression} | nindent {len(match['indent']) + 2} }}}}"

    text = _PLACEHOLDER_LINE.sub(lambda m: block(m) if m["token"] in _BLOCKS else m[0], text)
    for token, action in _ACTIONS.items():
        text = text.replace(f"'{token}'", action)
    return text.replace(f"'{_OCI_REPO_TOKEN}'", _OCI_REPO)


def _guards(unit: Unit, options: Options) -> str:
    """Template lines that compute the child's name and fail the install when it is unusable."""
    return "".join([
        f'{{{{- $name := printf "%s%s" .Values.deployer.namePrefix {json.dumps(unit.name)} }}}}\n',
        f"{{{{- if gt (len $name) {argocd.MAX_NAME} }}}}\n",
        '{{- fail (printf "Application name %q is %d characters long; Argo CD uses it as the Helm release name, '
        f'which may not exceed {argocd.MAX_NAME}: shorten deployer.namePrefix" $name (len $name)) }}}}\n',
        "{{- end }}\n",
        f"{{{{- if eq $name {json.dumps(options.app_name)} }}}}\n",
        '{{- fail (printf "Application name %q is also the parent Application name: change deployer.namePrefix" '
        "$name) }}\n",
        "{{- end }}\n",
    ])


def child_template(unit: Unit, options: Options, key: str | None) -> bytes:
    """``templates/<unit>.yaml``: the unit's Application with install-time settings and values."""
    lines = [f"{{{{- /* Generated by aicr-gen: {unit.role} unit of {unit.component}. */}}}}\n",
             _guards(unit, options)]
    placeholders = options.replace(project="@@project@@", destination_server="@@server@@")
    if unit.kind == KUSTOMIZE:
        source = argocd.kustomize_source(unit)
    elif unit.kind == LOCAL:
        nest = unit.chart if unit.vendored is not None else unit.component  # where the local chart reads them
        lines.append(f"{{{{- $values := dict {json.dumps(nest)} "
                     f"(index .Values {json.dumps(key)} | default dict) }}}}\n")
        source = {"repoURL": _repo_token(options), "targetRevision": "@@revision@@",
                  "path": argocd.repo_path(options, unit.folder), "helm": {"values": "@@values@@"}}
    else:
        lines.append(f"{{{{- $static := .Files.Get {json.dumps(static_path(unit))} | fromYaml | default dict }}}}\n")
        lines.append(f"{{{{- $values := mustMergeOverwrite $static (index .Values {json.dumps(key)} | default dict) "
                     "}}\n")
        source = {**argocd.chart_source(unit), "helm": {"values": "@@values@@"}}
    document = argocd.application("@@name@@", placeholders, unit, [source])
    lines.append(_template(document))
    return "".join(lines).encode()


def parent_template(options: Options) -> bytes:
    """``templates/aicr-stack.yaml``: the Application that keeps this chart synced from Git.

    It passes the install-time values on, so Argo CD renders the same children that ``helm`` did.
    """
    document = argocd.app_of_apps(options.replace(project="@@project@@"))
    document["spec"]["source"] = {"repoURL": _repo_token(options), "targetRevision": "@@revision@@",
                                  "path": argocd.repo_path(options), "helm": {"valuesObject": "@@all@@"}}
    return ("{{- /* Generated by aicr-gen: the parent Application, rendered when deployer.includeRootApp is "
            "true. */}}\n{{- if .Values.deployer.includeRootApp }}\n" + _template(document) + "{{- end }}\n").encode()


def static_path(unit: Unit) -> str:
    """Where an upstream unit's baked values live inside the chart."""
    return f"static/{unit.name}.yaml"


def values_document(options: Options, keys: dict[str, str], plan: Plan | None = None) -> bytes:
    """``values.yaml``: install-time defaults, then one key per component for overrides: empty, or the
    component's install-time values (``--dynamic``) with the recipe's defaults."""
    header = (
        charts.GENERATED
        + "# Install-time settings of this chart; values.schema.json checks them.\n"
        "#   repoURL, targetRevision  the Git repository and revision holding this bundle; local charts and the\n"
        "#                            parent Application are read from there\n"
        "#   deployer.namePrefix      prepended to every child Application name (at most 53 characters in all)\n"
        "#   deployer.destinationServer, deployer.project  where and under which project the children deploy\n"
        "#   deployer.includeRootApp  render the parent Application that keeps this chart synced from Git\n"
        "#   <component>              values merged over the component's baked values (static/*.yaml for\n"
        "#                            charts, the NNN-*/values.yaml folder for local charts); maps merge,\n"
        "#                            lists are replaced; paths left to install time (aicr-gen bundle\n"
        "#                            --dynamic) are listed with the recipe's value, or '' to fill in\n"
    )
    document: dict[str, Any] = {
        "repoURL": identity(options)[2], "targetRevision": options.revision,
        "deployer": {"namePrefix": options.name_prefix, "destinationServer": options.destination_server,
                     "project": options.project, "includeRootApp": options.include_root_app},
    }
    document.update({key: {} for key in keys.values()})
    for unit in plan.units if plan is not None else ():
        if unit.dynamic:  # a vendored unit's sit under its chart's name: listed as the component's own
            document[keys[unit.component]] = dict(unit.dynamic[unit.chart] if unit.vendored else unit.dynamic)
    return (header + dump(document)).encode()


def schema_document(plan: Plan, keys: dict[str, str], options: Options) -> bytes:
    """``values.schema.json`` (draft-07, which Helm 3 and 4 both check): unknown keys are refused."""
    shortest = min((len(unit.name) for unit in plan.units), default=0)
    name = identity(options)[0]
    repo: dict[str, Any] = {"type": "string", "description": (
        f"registry path {name} is published under (oci://REGISTRY/PATH)" if published(options)
        else "Git repository URL holding this bundle")}
    conditions: list[dict[str, Any]] = []
    if any(unit.kind == LOCAL for unit in plan.units):
        repo["minLength"] = 1
    else:
        conditions.append({"if": {"properties": {"deployer": {"properties": {"includeRootApp": {"const": True}}}}},
                           "then": {"properties": {"repoURL": {"minLength": 1}}}})
    components = {
        key: {"type": "object", "description": f"values of {component}, merged over the baked values"}
        for component, key in keys.items()}
    schema: dict[str, Any] = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": f"{name} install-time values",
        "type": "object",
        "additionalProperties": False,
        "required": list(_INSTALL_KEYS),
        "properties": {
            "repoURL": repo,
            "targetRevision": {"type": "string", "minLength": 1,
                               "description": "branch, tag or commit of repoURL"},
            "deployer": {
                "type": "object", "additionalProperties": False,
                "required": ["namePrefix", "destinationServer", "project", "includeRootApp"],
                "properties": {
                    "namePrefix": {"type": "string", "pattern": _PREFIX_PATTERN,
                                   "maxLength": max(argocd.MAX_NAME - shortest, 0),
                                   "description": "prepended to every child Application name"},
                    "destinationServer": {"type": "string", "minLength": 1,
                                          "description": "API server URL of the cluster the children deploy to"},
                    "project": {"type": "string", "minLength": 1, "description": "Argo CD project of the Applications"},
                    "includeRootApp": {"type": "boolean",
                                       "description": "render the parent Application that syncs this chart"},
                },
            },
            **components,
        },
    }
    if conditions:
        schema["allOf"] = conditions
    return dump_json(schema).encode()


def chart_document(plan: Plan, options: Options) -> bytes:
    """``Chart.yaml`` of the bundle chart."""
    criteria = ", ".join(f"{key}={value}" for key, value in (plan.recipe.get("criteria") or {}).items())
    name, version, _ = identity(options)
    chart = {"apiVersion": "v2", "name": name,
             "description": f"Argo CD Applications of a GPU stack ({criteria or 'any cluster'}), made by aicr-gen",
             "type": "application", "version": version}
    return (charts.GENERATED + dump(chart)).encode()


HELMIGNORE = b"""# Generated by aicr-gen
# Unit folders are charts of their own, read from Git by the child Applications; packing them (and the
# bundle's bookkeeping files) into this chart would only bloat the release.
[0-9][0-9][0-9]-*/
bundle-info.yaml
checksums.txt
recipe.yaml
"""


def _readme(plan: Plan, options: Options, keys: dict[str, str]) -> bytes:
    """README.md: push, then either bootstrap the parent Application or let Helm own the children."""
    where = f"`{argocd.repo_path(options)}` of" if options.path.strip("/") else "the root of"
    example = next(iter(keys.values()), "")
    name, version, _ = identity(options)
    if published(options):
        first = f"1. `aicr-gen bundle --output {options.repo}:{options.revision}` published this chart."
        chart, source = f"{options.repo} --version {version}", "from the registry"
    else:
        first = f"1. Commit this folder to {where} `{options.repo}` on `{options.revision}` and push it."
        chart, source = ".", "from Git"
    install = [
        first,
        "2. Either let Argo CD own everything: create only the parent Application, which renders this chart "
        f"{source} with the same values,", "",
        "```bash",
        f"helm template {name} {chart} --show-only {PARENT_TEMPLATE} "
        f"| kubectl apply --namespace {options.argocd_namespace} -f -",
        "```", "",
        "   or let Helm own the child Applications (no parent):", "",
        "```bash",
        f"helm install {name} {chart} --namespace {options.argocd_namespace} --set deployer.includeRootApp=false",
        "```", "",
        "Settings go in with `--set` or `-f` on either command (see `values.yaml`), e.g. `--set repoURL=URL`, "
        "`--set deployer.namePrefix=team-a-`"
        + (f", `--set {example}.replicaCount=2`" if example else "") + ".",
    ]
    uninstall = [
        "With the parent Application:", "",
        *argocd.uninstall_steps(plan, options, options.app_name), "",
        "Without it: `helm uninstall " + name + f" --namespace {options.argocd_namespace}` removes the "
        "Applications; their resources stay unless the Applications carry Argo CD's resources finalizer.",
    ]
    return readme.render(plan, "argocd-helm", install, uninstall)


ENTRYPOINT = "Chart.yaml"
"""What ``bundle-info.yaml`` names as the chart a user installs."""


def release_files(unit: Unit) -> tuple[str, str]:
    """``bundle-info.yaml``'s path and manifest of ``unit``: the folder of its local chart (``templates``
    for the others, whose values are ``static/<unit>.yaml``) and its Application template."""
    return unit.folder if unit.kind == LOCAL else "templates", f"templates/{unit.name}.yaml"


def render(plan: Plan, options: Options) -> Bundle:
    """The argocd-helm bundle (without the shared recipe.yaml and checksums)."""
    argocd.check_options(options)
    keys = value_keys(plan)
    files: dict[str, bytes] = {
        "Chart.yaml": chart_document(plan, options),
        "values.yaml": values_document(options, keys, plan),
        "values.schema.json": schema_document(plan, keys, options),
        ".helmignore": HELMIGNORE,
        PARENT_TEMPLATE: parent_template(options),
    }
    bundle = Bundle(files)
    for unit in plan.units:
        argocd.application_name(options, unit)
        if f"templates/{unit.name}.yaml" == PARENT_TEMPLATE:
            raise InvalidInputError(f"unit name {unit.name!r} is reserved for the parent Application template")
        unit_files: dict[str, bytes] = {f"templates/{unit.name}.yaml": child_template(unit, options,
                                                                                     keys.get(unit.component))}
        if unit.kind == LOCAL:
            bundle = bundle.merge(charts.local_chart(unit).under(unit.folder))
        elif unit.kind != KUSTOMIZE:
            unit_files[static_path(unit)] = charts.values_file(unit)
        bundle = bundle.merge(unit_files)
    return bundle.merge({"README.md": _readme(plan, options, keys)})
