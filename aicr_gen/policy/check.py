"""Policy files and their evaluation.

A policy file is one YAML document::

    apiVersion: aicr-gen.dev/v1alpha1
    kind: Policy
    metadata: {name: my-policy}
    spec:
      description: what it enforces
      severity: error            # or warning (reported, exit code unaffected)
      target: component          # recipe | spec | component | pool
      match: "component.type == 'Helm'"   # optional CEL filter (component target: per componentRef)
      rule: "has(component.version)"      # CEL that must be true
      path: "recipe.componentRefs[{name}].version"
      message: "{name} has no version"

Variables: ``recipe`` (the resolved RecipeResult), ``spec`` (the whole ClusterSpec document), ``deployed``
(the names of the components the cluster deploys: enabled in the recipe and not switched off with
``NAME:enabled=false`` in spec.overrides.set), for the ``component`` target ``component`` (one componentRef)
and for the ``pool`` target ``pool`` (one of spec.pools, so a policy can hold per GPU node pool: e.g. every
training pool has thresholds). Besides CEL's functions and ext.Strings, ``realThreshold(key, expression)`` says
whether an NVCRE threshold is a real floor (``certify.thresholds.real``). ``{field}`` in
``path`` and ``message`` is a field of the component or pool (``{index}`` the pool's position; one it does not
have reads ``(none)``) and ``{cluster}`` the spec's metadata.name.

Folders are read in order (the shipped ``policies/`` first); ``*.yaml``/``*.yml`` files sorted by name; a
policy whose name was seen in an earlier folder replaces it. A rule that fails at run time (a missing
field, a limit) is a finding of the policy's severity: policies fail closed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from aicr_gen.cel import CelCompileError, CelError, CelLimitError, Environment, Program, to_cel
from aicr_gen.errors import InvalidInputError
from aicr_gen.modelcheck import Strict as _Strict
from aicr_gen.policy import environment
from aicr_gen.policy.shipped import shipped_root
from aicr_gen.text.kube_names import DNS_LABEL
from aicr_gen.yaml import Document

if TYPE_CHECKING:
    from aicr_gen.spec.cluster import ClusterSpec

Target = Literal["recipe", "spec", "component", "pool"]
_VARIABLES: dict[str, tuple[str, ...]] = {
    "recipe": ("recipe", "spec", "deployed"),
    "spec": ("recipe", "spec", "deployed"),
    "component": ("component", "recipe", "spec", "deployed"),
    "pool": ("pool", "recipe", "spec", "deployed"),
}
_DEFAULT_PATH = {"recipe": "recipe", "spec": "spec", "component": "recipe.componentRefs[{name}]",
                 "pool": "spec.pools.{index}"}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = f"^{DNS_LABEL.pattern}$"


class _Metadata(_Strict):
    name: str = Field(pattern=_NAME, max_length=63, description="Policy name: a DNS label")


class _Spec(_Strict):
    description: str = Field("", description="What the policy enforces")
    severity: Literal["error", "warning"] = Field("error", description="error: exit 1; warning: reported only")
    target: Target = Field(description="recipe, spec, component (once per componentRef) or pool (once per "
                                        "spec.pools entry)")
    match: str | None = Field(None, description="CEL filter: the rule applies only where it is true")
    rule: str = Field(min_length=1, description="CEL expression that must be true")
    path: str | None = Field(None, description="Path template of a finding, e.g. recipe.componentRefs[{name}]")
    message: str = Field(min_length=1, description="Finding message; {field} is replaced")


class _PolicyFile(_Strict):
    apiVersion: Literal["aicr-gen.dev/v1alpha1"]
    kind: Literal["Policy"]
    metadata: _Metadata
    spec: _Spec


@dataclass(frozen=True)
class Policy:
    """A compiled policy."""

    name: str
    source: str
    description: str
    severity: str
    target: str
    match: Program | None
    rule: Program
    path: str
    message: str


@dataclass(frozen=True)
class Finding:
    """One violation: the policy, its severity, where, and why."""

    policy: str
    severity: str
    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"policy": self.policy, "severity": self.severity, "path": self.path, "message": self.message}


def _compile(doc: Document, env: Environment, key: str, text: str) -> Program:
    try:
        return env.compile(text)
    except (CelCompileError, CelLimitError, CelError) as err:
        raise doc.error(("spec", key), f"the CEL expression does not compile: {err}") from None


def load_policy(path: Path) -> Policy:
    """Read, validate and compile one policy file; problems are InvalidInputError at ``file:line``."""
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.modelcheck import check
    from aicr_gen.yaml import load_bytes

    source = str(path)
    doc = load_bytes(read_input(source, "policy"), source)
    parsed = check(doc, _PolicyFile)
    spec = parsed.spec
    env = environment.policy(_VARIABLES[spec.target])
    match = _compile(doc, env, "match", spec.match) if spec.match is not None else None
    rule = _compile(doc, env, "rule", spec.rule)
    return Policy(parsed.metadata.name, source, spec.description, spec.severity, spec.target, match, rule,
                  spec.path or _DEFAULT_PATH[spec.target], spec.message)


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise InvalidInputError(f"{folder}: not a folder of policy files")
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml"))


def load_policies(folders: list[Path], files: list[Path] | None = None) -> list[Policy]:
    """Policies of ``folders`` then ``files``, in order; a later policy of the same name replaces an earlier
    one. Two policies of one name within one folder are an error. Sorted by name."""
    found: dict[str, Policy] = {}
    groups: list[list[Path]] = [_files(folder) for folder in folders] + [[f] for f in files or []]
    for group in groups:
        seen: dict[str, str] = {}
        for path in group:
            policy = load_policy(path)
            if policy.name in seen:
                raise InvalidInputError(f"{path}: policy {policy.name!r} is also defined in {seen[policy.name]}; "
                                        "names are unique within a folder")
            seen[policy.name] = policy.source
            found[policy.name] = policy
    return [found[name] for name in sorted(found)]


def _fill(template: str, fields: dict[str, Any]) -> str:
    """``template`` with each ``{field}`` replaced: a scalar as written, a field the component or pool does not
    have (or null) as ``(none)``, a map or list as compact JSON, so no message shows a placeholder."""
    import json

    from aicr_gen.yaml import shorten

    def one(found: re.Match[str]) -> str:
        value = fields.get(found.group(1))
        if value is None:
            return "(none)"
        if isinstance(value, (dict, list)):
            return shorten(json.dumps(value, sort_keys=True, separators=(",", ":")), 80)
        return str(value).lower() if isinstance(value, bool) else str(value)

    return _PLACEHOLDER.sub(one, template)


def _holds(program: Program, activation: dict[str, Any]) -> bool | str:
    """True/False, or the error text when the program fails or is not a bool."""
    try:
        value = program.evaluate(activation)
    except (CelError, CelLimitError) as err:
        return f"evaluation failed: {err}"
    if not isinstance(value, bool):
        return f"evaluation failed: the expression gave a {type(value).__name__}, not a bool"
    return value


def _check(policy: Policy, activation: dict[str, Any], fields: dict[str, Any]) -> Finding | None:
    if policy.match is not None:
        matched = _holds(policy.match, activation)
        if matched is False:
            return None
        if isinstance(matched, str):
            return Finding(policy.name, policy.severity, _fill(policy.path, fields), f"match {matched}")
    held = _holds(policy.rule, activation)
    if held is True:
        return None
    message = held if isinstance(held, str) else _fill(policy.message, fields)
    return Finding(policy.name, policy.severity, _fill(policy.path, fields), message)


def deployed(recipe: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """The components the cluster deploys: enabled in ``recipe`` (``resolve.refs.is_enabled``) and not switched
    off by ``NAME:enabled=false`` in the spec's overrides.set."""
    from aicr_gen.resolve.refs import is_enabled

    switched = set(((spec.get("spec") or {}).get("overrides") or {}).get("set") or [])
    return [str(ref.get("name")) for ref in recipe.get("componentRefs") or []
            if is_enabled(ref) and f"{ref.get('name')}:enabled=false" not in switched]


def evaluate(policies: list[Policy], recipe: dict[str, Any], spec: dict[str, Any]) -> list[Finding]:
    """Every finding of ``policies`` over the resolved ``recipe`` and the ClusterSpec document ``spec``,
    sorted by policy, path and message."""
    recipe_cel = to_cel(recipe)
    spec_cel = to_cel(spec)
    deployed_cel = to_cel(deployed(recipe, spec))
    cluster = str((spec.get("metadata") or {}).get("name", ""))
    findings: list[Finding] = []
    for policy in policies:
        base = {"recipe": recipe_cel, "spec": spec_cel, "deployed": deployed_cel}
        if policy.target == "pool":
            for index, pool in enumerate((spec.get("spec") or {}).get("pools") or []):
                found = _check(policy, {**base, "pool": to_cel(pool)}, {**pool, "index": index, "cluster": cluster})
                findings += [found] if found else []
            continue
        if policy.target != "component":
            found = _check(policy, base, {"cluster": cluster})
            findings += [found] if found else []
            continue
        for component in recipe.get("componentRefs") or []:
            fields = {**component, "cluster": cluster}
            found = _check(policy, {**base, "component": to_cel(component)}, fields)
            findings += [found] if found else []
    return sorted(findings, key=lambda f: (f.policy, f.path, f.message))


def findings_for(cluster: ClusterSpec, base: Path, folders: list[Path], recipe: dict[str, Any]) -> tuple[
        list[Policy], list[Finding]]:
    """The policies that apply to ``cluster`` (shipped, ``folders``, then the spec's own files relative to
    ``base``) and their findings over its resolved ``recipe``."""
    from aicr_gen.spec.validate import check_present
    check_present(cluster, base, "policies")
    policies = load_policies([shipped_root(), *folders], [base / name for name in cluster.spec.policies])
    return policies, evaluate(policies, recipe, cluster.model_dump(mode="json"))
