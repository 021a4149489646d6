"""Read a bundle folder of either tool (aicr-gen or AICR) and any deployer into one deployment model.

A bundle is compared by what it deploys, never by its files: the ordered units (release, chart,
repository, version, namespace, create-namespace, the values the deployer passes and, for a chart inside
the bundle, the objects ``helm template`` renders from it), the install order as a partial order, and the
deployer's own settings. Each reader follows its deployer's semantics, not either tool's file layout:

- helm: ``deploy.sh`` picks the folders and their order and the wait arguments; each ``install.sh`` holds
  one ``helm upgrade --install`` whose ``-f`` files merge as Helm merges them (AICR: values.yaml then
  cluster-values.yaml).
- argocd: the root Application's directory source picks the child Applications; sync waves order them.
- argocd-helm: the bundle is a chart; ``helm template`` renders the Applications, read as argocd's.
- flux: ``kustomization.yaml`` lists the objects; HelmReleases, their sources and ``dependsOn``.
- helmfile: ``helmfile.yaml`` and its sub-helmfiles in sequence, ``needs``, ``helmDefaults``.

Local charts are rendered with the real helm (``tests.consumers.helm_template``), so a chart whose
templates are still Helm templates (aicr-gen keeps the catalog's) and one rendered at bundle time (AICR)
compare as objects. Durations become seconds so ``600``, ``10m`` and ``10m0s`` are equal.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from tests.consumers import K8S_VERSION, _isolated_env, _K8sLoader, tool_path

ObjectKey = tuple[str, str, str, str]
"""(apiVersion, kind, namespace, name) of a rendered object; namespace is "" where the template sets none."""

DEPLOYERS = ("helm", "argocd", "argocd-helm", "flux", "helmfile")
HELM = "helm4"
"""The helm binary local charts are rendered with (``tests.consumers.HELM_VERSIONS``)."""


@dataclass(frozen=True)
class Unit:
    """One deployable unit: what one Helm release installs, and how the deployer installs it."""

    name: str
    release: str
    namespace: str
    create_namespace: bool
    chart: str
    repository: str
    """Canonical chart repository: ``https://...`` or ``oci://...``; "" for a chart inside the bundle."""
    version: str
    values: Mapping[str, Any]
    """The values the deployer passes (files and inline values merged as the deployer merges them)."""
    objects: Mapping[ObjectKey, Mapping[str, Any]] | None
    """For a chart inside the bundle, what ``helm template`` renders from it with ``values``."""
    settings: Mapping[str, Any]
    """Per-unit deployer settings (wait, timeout, sync wave options, Flux intervals, ...)."""
    render_error: str = ""
    """Why ``helm template`` could not render the local chart (``objects`` is then empty)."""

    @property
    def local(self) -> bool:
        return self.objects is not None


@dataclass(frozen=True)
class Deployment:
    deployer: str
    units: tuple[Unit, ...]
    before: frozenset[tuple[str, str]]
    """(a, b): unit ``a`` is installed, and ready where the deployer waits, before ``b`` starts (closed
    transitively)."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Deployer settings for the whole bundle (the Argo CD root Application, Flux's Git source, ...)."""

    def unit(self, name: str) -> Unit | None:
        return next((u for u in self.units if u.name == name), None)


def read_bundle(root: Path, deployer: str, *, repo: str) -> Deployment:
    """The deployment a bundle folder describes. ``repo`` is the Git URL the bundle was rendered for (the
    URL its Applications and GitRepository name): sources pointing there read files of ``root``."""
    readers: dict[str, Callable[[Path, str], Deployment]] = {
        "helm": _read_helm, "argocd": _read_argocd, "argocd-helm": _read_argocd_helm,
        "flux": _read_flux, "helmfile": _read_helmfile,
    }
    if deployer not in readers:
        raise ValueError(f"unknown deployer {deployer!r}; known: {', '.join(DEPLOYERS)}")
    return readers[deployer](root, repo)


# ------------------------------------------------------------------------------------------- values


class _Loader(yaml.CSafeLoader):
    """YAML as Kubernetes tooling reads it (``tests.consumers``'s rules: YAML 1.1, timestamps stay strings,
    y/n are booleans), parsed by libyaml: bundles are read, not validated, and the pure-Python parser
    would take most of the harness's time."""


_Loader.yaml_implicit_resolvers = _K8sLoader.yaml_implicit_resolvers
_Loader.bool_values = _K8sLoader.bool_values


def load_text(text: str) -> list[Any]:
    """The non-empty YAML documents of a text."""
    return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]


def load_documents(path: Path) -> list[Any]:
    """The non-empty YAML documents of a file."""
    return load_text(path.read_text(encoding="utf-8"))


def load_mapping(path: Path) -> dict[str, Any]:
    """A values file: its one mapping document, or {} when it holds only comments."""
    docs = load_documents(path)
    if len(docs) > 1 or (docs and not isinstance(docs[0], dict)):
        raise ValueError(f"{path}: expected one mapping document")
    return dict(docs[0]) if docs else {}


def merge_values(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's merge of a later values file over an earlier one: maps merge key by key, the rest replaces."""
    merged = dict(base)
    for key, value in over.items():
        old = merged.get(key)
        merged[key] = merge_values(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
    return merged


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def seconds(value: Any) -> Any:
    """A Go duration (``1h35m0s``) or a number of seconds as seconds; anything else unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        parts = _DURATION.findall(text)
        if parts and "".join(n + u for n, u in parts) == text:
            total = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
            return int(total) if total == int(total) else total
    return value


def _durations(node: Any, keys: Iterable[str] = ("interval", "timeout", "retryInterval", "duration",
                                                    "maxDuration")) -> Any:
    keys = tuple(keys)
    if isinstance(node, Mapping):
        return {k: seconds(v) if k in keys else _durations(v, keys) for k, v in node.items()}
    if isinstance(node, list):
        return [_durations(v, keys) for v in node]
    return node


def canonical_source(repository: str, chart: str) -> tuple[str, str]:
    """(repository, chart) with OCI written as ``oci://host/path`` and no trailing slash; a chart given as a
    full ``oci://.../name`` reference is split into its repository and name."""
    if chart.startswith("oci://"):
        repository, _, chart = chart.rpartition("/")
    repository = repository.rstrip("/")
    return repository, chart


# ---------------------------------------------------------------------------------------- rendering


_render_cache: dict[str, dict[ObjectKey, Mapping[str, Any]]] = {}
_render_lock = threading.Lock()


def render_chart(chart_dir: Path, values: Mapping[str, Any], *, release: str,
                 namespace: str) -> dict[ObjectKey, Mapping[str, Any]]:
    """The objects a chart inside a bundle installs (CRDs of ``crds/`` included, hooks kept), by key. Cached
    by what the render depends on: the chart's files but its values.yaml, the values merged over it, the
    release and namespace. So the chart of one unit renders once for all deployers that pass the same values
    by different means (values.yaml alone, or with cluster-values.yaml)."""
    defaults = chart_dir / "values.yaml"
    values = merge_values(load_mapping(defaults), values) if defaults.exists() else dict(values)
    digest = hashlib.sha256()
    for path in sorted(p for p in chart_dir.rglob("*") if p.is_file() and p != defaults):
        digest.update(str(path.relative_to(chart_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(json.dumps([values, release, namespace], sort_keys=True, default=str).encode())
    key = digest.hexdigest()
    with _render_lock:
        if key in _render_cache:
            return _render_cache[key]
    objects: dict[ObjectKey, Mapping[str, Any]] = {}
    for obj in helm_template(chart_dir, values, release=release, namespace=namespace, extra=("--include-crds",)):
        meta = obj.get("metadata") or {}
        objects[(str(obj.get("apiVersion", "")), str(obj.get("kind", "")), str(meta.get("namespace") or ""),
                 str(meta.get("name", "")))] = obj
    with _render_lock:
        _render_cache[key] = objects
    return objects


def helm_template(chart_dir: Path, values: Mapping[str, Any], *, release: str, namespace: str,
                  extra: Iterable[str] = ()) -> list[Mapping[str, Any]]:
    """``helm template`` with the real helm (``tests.consumers``'s, in its isolated environment); raises
    AssertionError with helm's message when the chart does not render."""
    with tempfile.TemporaryDirectory(prefix="parity-helm-") as scratch:
        values_file = Path(scratch) / "values.json"  # JSON is YAML, and needs no quoting rules
        values_file.write_text(json.dumps(values, default=str), encoding="utf-8")
        command = [str(tool_path(HELM)), "template", release, str(chart_dir), "--namespace", namespace,
                   "--kube-version", f"v{K8S_VERSION}.0", "--values", str(values_file), *extra]
        proc = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300,
                              env=_isolated_env(Path(scratch)))
    if proc.returncode != 0:
        raise AssertionError(" ".join(line.strip() for line in proc.stderr.splitlines()
                                      if line.strip() and not line.startswith("Use --debug")))
    return [doc for doc in load_text(proc.stdout) if isinstance(doc, Mapping)]


def _chart_meta(chart_dir: Path) -> tuple[str, str]:
    meta = load_mapping(chart_dir / "Chart.yaml")
    return str(meta.get("name", "")), str(meta.get("version", ""))


def _local_unit(name: str, chart_dir: Path, values: Mapping[str, Any], *, release: str, namespace: str,
                create_namespace: bool, settings: Mapping[str, Any]) -> Unit:
    chart, version = _chart_meta(chart_dir)
    try:
        objects, error = render_chart(chart_dir, values, release=release, namespace=namespace), ""
    except AssertionError as exc:  # helm's message: the install would fail the same way
        objects, error = {}, str(exc)
    return Unit(name=name, release=release, namespace=namespace, create_namespace=create_namespace, chart=chart,
                repository="", version=version, values=values, objects=objects, settings=settings,
                render_error=error)


def closure(edges: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    """The transitive closure of a "before" relation."""
    after: dict[str, set[str]] = {}
    for a, b in edges:
        after.setdefault(a, set()).add(b)
    result: set[tuple[str, str]] = set()
    for start in list(after):
        stack, seen = list(after[start]), set[str]()
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            result.add((start, node))
            stack.extend(after.get(node, ()))
    return frozenset(result)


def _chain(names: list[str]) -> frozenset[tuple[str, str]]:
    return frozenset((a, b) for i, a in enumerate(names) for b in names[i + 1:])


def _ranked(rank: Mapping[str, int]) -> frozenset[tuple[str, str]]:
    return frozenset((a, b) for a, ra in rank.items() for b, rb in rank.items() if ra < rb)


# --------------------------------------------------------------------------------------------- helm


_FOLDER = re.compile(r"^\d{3}-(.+)$")
_WAIT = "\0wait"
_FORCE = "\0force-conflicts"
_VALUED_FLAGS = {"--repo", "--version", "--namespace", "-n", "-f", "--values", "--timeout", "--set",
                 "--set-string", "--set-json", "--set-file", "--post-renderer", "--kube-version"}


def _read_helm(root: Path, repo: str) -> Deployment:
    script = (root / "deploy.sh").read_text(encoding="utf-8")
    listed = re.findall(r"^install_unit (\S+) ", script, re.M)  # aicr-gen: one line per unit, in order
    folders = listed or sorted(p.name for p in root.iterdir() if p.is_dir() and _FOLDER.match(p.name))
    waits = _deploy_waits(script)
    units = [_helm_unit(root / folder, waits) for folder in folders]
    return Deployment("helm", tuple(units), _chain([u.name for u in units]))


def _deploy_waits(script: str) -> Callable[[str], tuple[list[str], int]]:
    """Per unit name, the wait arguments and retries deploy.sh runs its install.sh with."""
    if "COMPONENT_WAIT_ARGS" in script:  # AICR: a global timeout, per-name case arms, async components
        timeout = _assigned(script, "HELM_TIMEOUT")
        retries = int(_assigned(script, "MAX_RETRIES") or 0)
        asynchronous = (_assigned(script, "ASYNC_COMPONENTS") or "").split()
        arms: list[tuple[str, dict[str, str]]] = []
        case = re.search(r'case "\$\{name\}" in\n(.*?)\n\s*esac', script, re.S)
        for pattern, body in re.findall(r"^\s*([^\s#()]+)\)\n(.*?);;", case.group(1) if case else "", re.M | re.S):
            arms.append((pattern, dict(re.findall(r'^\s*(COMPONENT_\w+)="([^"]*)"', body, re.M))))

        def aicr(name: str) -> tuple[list[str], int]:
            unit_timeout, unit_retries, pinned = timeout, retries, ""
            for pattern, sets in arms:
                if fnmatch.fnmatchcase(name, pattern):
                    unit_timeout = sets.get("COMPONENT_HELM_TIMEOUT", unit_timeout)
                    unit_retries = int(sets.get("COMPONENT_MAX_RETRIES", unit_retries))
                    pinned = sets.get("COMPONENT_WAIT_ARGS", "")
                    break
            if pinned:
                args = pinned.replace("${COMPONENT_HELM_TIMEOUT}", unit_timeout or "")
            else:
                args = f"--timeout {unit_timeout}" if name in asynchronous else f"--wait --timeout {unit_timeout}"
            return shlex.split(args), unit_retries

        return aicr
    # aicr-gen: each install.sh holds its wait arguments (\0wait is left for _helm_unit to read there);
    # deploy.sh retries a unit `retries` times, an `async` one at most once
    retries = int(_assigned(script, "retries") or 0)
    once = set(re.findall(r"^install_unit \d{3}-(\S+) \S+ async$", script, re.M))
    return lambda name: ([_WAIT], min(retries, 1) if name in once else retries)


def _assigned(script: str, var: str) -> str | None:
    found = re.search(rf'^{var}=("[^"]*"|\'[^\']*\'|\S*)', script, re.M)
    return shlex.split(found.group(1))[0] if found and found.group(1) else (None if not found else "")


def _helm_unit(folder: Path, waits: Callable[[str], tuple[list[str], int]]) -> Unit:
    match = _FOLDER.match(folder.name)
    if not match:
        raise ValueError(f"{folder}: not a NNN-<name> unit folder")
    name = match.group(1)
    script = (folder / "install.sh").read_text(encoding="utf-8").replace("\\\n", " ")
    env = _upstream_env(folder / "upstream.env")
    commands = [line for line in script.splitlines() if re.match(r"\s*helm upgrade ", line)]
    if len(commands) != 1:
        raise ValueError(f"{folder}/install.sh: expected one `helm upgrade --install`, found {len(commands)}")
    tokens = shlex.split(_expand(commands[0], env, folder))
    wait_args, retries = waits(name)
    if wait_args == [_WAIT]:  # aicr-gen: install.sh's own default wait arguments
        assigned = re.search(r"^wait_args=\(([^)]*)\)", script, re.M)
        wait_args = shlex.split(assigned.group(1)) if assigned else []
    if _WAIT in tokens:
        at = tokens.index(_WAIT)
        tokens[at:at + 1] = wait_args
    force = ""
    if _FORCE in tokens:  # AICR adds --force-conflicts on helm 4 only (helm 3 lacks the flag)
        tokens.remove(_FORCE)
        force = "helm>=4"
    positional, flags, value_files = _helm_args(tokens[tokens.index("upgrade") + 1:])
    if flags.pop("install", None) is not True or len(positional) != 2:
        raise ValueError(f"{folder}/install.sh: not `helm upgrade --install RELEASE CHART`: {tokens}")
    release, chart_ref = positional
    namespace = str(flags.pop("namespace", flags.pop("n", "default")))
    create_namespace = bool(flags.pop("create-namespace", False))
    if "force-conflicts" in flags:
        force = "always"
        flags.pop("force-conflicts")
    values: dict[str, Any] = {}
    for file in value_files:
        values = merge_values(values, load_mapping(folder / file))
    settings = {"wait": bool(flags.pop("wait", False)), "timeout": seconds(flags.pop("timeout", "5m")),
                "retries": retries, "force_conflicts": force or "never",
                **{f"flag:{k}": v for k, v in sorted(flags.items()) if k not in ("repo", "version")}}
    chart_dir = (folder / chart_ref).resolve()
    if chart_dir.is_dir():
        return _local_unit(name, chart_dir, values, release=release, namespace=namespace,
                           create_namespace=create_namespace, settings=settings)
    repository, chart = canonical_source(str(flags.get("repo", "")), chart_ref)
    return Unit(name=name, release=release, namespace=namespace, create_namespace=create_namespace, chart=chart,
                repository=repository, version=str(flags.get("version", "")), values=values, objects=None,
                settings=settings)


def _upstream_env(path: Path) -> dict[str, str]:
    """AICR's upstream.env: CHART, REPO and VERSION as shell assignments."""
    env: dict[str, str] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                key, _, value = line.partition("=")
                env[key.strip()] = shlex.split(value)[0] if value.strip() else ""
    return env


def _helm_args(rest: list[str]) -> tuple[list[str], dict[str, Any], list[str]]:
    """Positional arguments, flags and ``-f`` files of a helm command line."""
    positional: list[str] = []
    flags: dict[str, Any] = {}
    value_files: list[str] = []
    while rest:
        token = rest.pop(0)
        if token in ("-f", "--values"):
            value_files.append(rest.pop(0))
        elif token in _VALUED_FLAGS:
            flags[token.lstrip("-")] = rest.pop(0)
        elif token.startswith("--") and "=" in token:
            key, _, value = token.partition("=")
            flags[key.lstrip("-")] = value
        elif token.startswith("-"):
            flags[token.lstrip("-")] = True
        else:
            positional.append(token)
    return positional, flags, value_files


def _expand(command: str, env: Mapping[str, str], folder: Path) -> str:
    """The command line with the shell expansions both tools' install.sh use replaced by their values."""
    command = re.sub(r'\$\{wait_args\[@\]\+"\$\{wait_args\[@\]\}"\}', _WAIT, command)
    command = command.replace('"${wait_args[@]}"', _WAIT)
    command = command.replace('${force[@]+"${force[@]}"}', _FORCE)  # aicr-gen: --force-conflicts on helm 4
    command = command.replace("${COMPONENT_WAIT_ARGS:-}", _WAIT).replace("${FORCE_CONFLICTS_FLAG}", _FORCE)
    command = re.sub(r"\$(?:\{here\}|here\b|\{SCRIPT_DIR\}|SCRIPT_DIR\b)", lambda _: str(folder), command)

    def plus(match: re.Match[str]) -> str:  # ${VAR:+WORD}: WORD when VAR is set and not empty
        return re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), match.group(2)) if env.get(
            match.group(1)) else ""

    command = re.sub(r"\$\{(\w+):\+((?:[^{}]|\$\{\w+\})*)\}", plus, command)
    return re.sub(r"\$\{(\w+)(?::-[^}]*)?\}", lambda m: env.get(m.group(1), ""), command)


# ------------------------------------------------------------------------------------------- Argo CD


_SYNC_WAVE = "argocd.argoproj.io/sync-wave"
_SEMVER = re.compile(r"^v?\d+\.\d+\.\d+(?:[-+].*)?$")


def _read_argocd(root: Path, repo: str) -> Deployment:
    parent = load_mapping(root / "app-of-apps.yaml")
    source = parent["spec"]["source"]
    base = root / str(source.get("path", "."))
    directory = source.get("directory") or {}
    files = base.rglob("*") if directory.get("recurse") else base.glob("*")
    children = [doc for path in sorted(p for p in files if p.is_file() and p.suffix in (".yaml", ".yml", ".json")
                                       and _included(p.relative_to(base), directory))
                for doc in load_documents(path)]
    return _applications(root, parent, children, repo, "argocd")


def _included(path: PurePosixPath | Path, directory: Mapping[str, Any]) -> bool:
    relative = PurePosixPath(path.as_posix())
    include, exclude = directory.get("include"), directory.get("exclude")
    return ((not include or any(relative.match(p) for p in _globs(include)))
            and not (exclude and any(relative.match(p) for p in _globs(exclude))))


def _globs(patterns: str) -> list[str]:
    """Argo CD's include/exclude: one glob or ``{a,b}``."""
    patterns = patterns.strip()
    return patterns[1:-1].split(",") if patterns.startswith("{") and patterns.endswith("}") else [patterns]


def _read_argocd_helm(root: Path, repo: str) -> Deployment:
    """The bundle is an umbrella chart of Applications, installed with ``repoURL`` set to where it lives."""
    defaults = load_mapping(root / "values.yaml")
    values: dict[str, Any] = {} if defaults.get("repoURL") else {"repoURL": repo}
    chart = load_mapping(root / "Chart.yaml")
    if _SEMVER.match(str(chart.get("version", ""))):
        rendered = helm_template(root, values, release="aicr-bundle", namespace="argocd")
    else:  # a development build of AICR stamps "main-<commit>", which helm refuses as a chart version
        with tempfile.TemporaryDirectory(prefix="parity-chart-") as scratch:
            copy = Path(scratch) / root.name
            shutil.copytree(root, copy)
            (copy / "Chart.yaml").write_text(yaml.safe_dump({**chart, "version": "0.0.0"}), encoding="utf-8")
            values.setdefault("targetRevision", defaults.get("targetRevision") or str(chart["version"]))
            rendered = helm_template(copy, values, release="aicr-bundle", namespace="argocd")
    apps = [doc for doc in rendered if doc.get("kind") == "Application"]
    bundle_chart, _ = _chart_meta(root)
    parents = [app for app in apps if str((app["spec"].get("source") or {}).get("repoURL", "")).startswith(repo)
               and ((app["spec"]["source"]).get("path") == "." or app["spec"]["source"].get("chart") == bundle_chart)]
    if len(parents) != 1:
        raise ValueError(f"{root}: expected one root Application, found {[a['metadata']['name'] for a in parents]}")
    children = [app for app in apps if app is not parents[0]]
    return _applications(root, parents[0], children, repo, "argocd-helm")


def _applications(root: Path, parent: Mapping[str, Any], children: list[Any], repo: str,
                  deployer: str) -> Deployment:
    units: list[Unit] = []
    waves: dict[str, int] = {}
    for app in children:
        if not isinstance(app, Mapping) or app.get("kind") != "Application":
            continue
        unit = _application_unit(root, app, repo)
        units.append(unit)
        waves[unit.name] = int((app["metadata"].get("annotations") or {}).get(_SYNC_WAVE, 0))
    units.sort(key=lambda u: (waves[u.name], u.name))
    spec = dict(parent["spec"])
    source = {k: v for k, v in (spec.pop("source", None) or {}).items() if k != "helm"}
    settings = {"root": {"name": parent["metadata"]["name"], "namespace": parent["metadata"].get("namespace"),
                         "project": spec.get("project"), "destination": spec.get("destination"),
                         "syncPolicy": spec.get("syncPolicy"), "source": source,
                         "finalizers": parent["metadata"].get("finalizers")}}
    return Deployment(deployer, tuple(units), _ranked(waves), settings)


def _application_unit(root: Path, app: Mapping[str, Any], repo: str) -> Unit:
    spec = app["spec"]
    sources = list(spec.get("sources") or [spec["source"]])
    refs = {s["ref"]: s for s in sources if s.get("ref")}
    charts = [s for s in sources if not s.get("ref")]
    if len(charts) != 1:
        raise ValueError(f"Application {app['metadata']['name']}: expected one chart source, found {len(charts)}")
    source = charts[0]
    helm = source.get("helm") or {}
    repo_url = str(source["repoURL"])
    # a path in the bundle's own repository (argocd-helm: in the chart it is pushed as) is a local chart;
    # a path in an oci:// repository is an OCI chart artifact (Argo CD's native OCI source)
    local_dir = root / str(source["path"]) if "path" in source and repo_url.startswith(repo) else None
    values: dict[str, Any] = {}
    for file in helm.get("valueFiles") or []:
        ref, _, rest = str(file).partition("/")
        if ref.startswith("$") and ref[1:] in refs:
            path = root / rest
        elif local_dir is not None:
            path = local_dir / file
        else:
            raise ValueError(f"Application {app['metadata']['name']}: value file {file} has no source")
        values = merge_values(values, load_mapping(path))
    if helm.get("values"):
        inline = helm["values"]
        values = merge_values(values, (load_text(inline) or [{}])[0] if isinstance(inline, str)
                              else inline)
    if helm.get("valuesObject"):
        values = merge_values(values, helm["valuesObject"])
    name = str(app["metadata"]["name"])
    destination = spec.get("destination") or {}
    policy = dict(spec.get("syncPolicy") or {})
    options = [str(o) for o in policy.pop("syncOptions", None) or []]
    create_namespace = "CreateNamespace=true" in options
    settings = {"project": spec.get("project"), "destination.server": destination.get("server"),
                "destination.name": destination.get("name"),
                "syncOptions": sorted(o for o in options if not o.startswith("CreateNamespace=")),
                "syncPolicy": _durations(policy) or None, "ignoreDifferences": spec.get("ignoreDifferences"),
                "finalizers": app["metadata"].get("finalizers"),
                "helm": {k: v for k, v in helm.items() if k not in ("values", "valuesObject", "valueFiles",
                                                                     "releaseName")} or None,
                "sourceKind": "path" if local_dir is not None else "chart",
                "multiSource": "sources" in spec}
    release = str(helm.get("releaseName") or name)
    namespace = str(destination.get("namespace", ""))
    if local_dir is not None:
        return _local_unit(name, local_dir, values, release=release, namespace=namespace,
                           create_namespace=create_namespace, settings=settings)
    if "chart" in source:
        repository, chart = str(source["repoURL"]), str(source["chart"])
        if "://" not in repository:  # Argo CD's Helm OCI repositories are given without a scheme
            repository = f"oci://{repository}"
        if repository.startswith("oci://") and repository.endswith(f"/{chart}"):
            repository = repository[: -len(chart) - 1]
        settings["sourceKind"] = "chart"
    else:
        repository, _, chart = repo_url.rstrip("/").rpartition("/")
        settings["sourceKind"] = "oci-artifact"
    repository, chart = canonical_source(repository, chart)
    return Unit(name=name, release=release, namespace=namespace, create_namespace=create_namespace, chart=chart,
                repository=repository, version=str(source.get("targetRevision", "")), values=values, objects=None,
                settings=settings)


# ---------------------------------------------------------------------------------------------- Flux


_FLUX_SPEC_KEYS = ("chart", "chartRef", "values", "valuesFrom", "dependsOn", "targetNamespace", "releaseName")


def _kustomize_docs(directory: Path) -> list[Mapping[str, Any]]:
    """The objects a kustomization.yaml lists (resources, recursively through folders)."""
    kustomization = load_mapping(directory / "kustomization.yaml")
    docs: list[Mapping[str, Any]] = []
    for resource in kustomization.get("resources") or []:
        path = directory / str(resource)
        docs.extend(_kustomize_docs(path) if path.is_dir() else
                    [d for d in load_documents(path) if isinstance(d, Mapping)])
    return docs


def _read_flux(root: Path, repo: str) -> Deployment:
    docs = _kustomize_docs(root)
    by_kind: dict[tuple[str, str], Mapping[str, Any]] = {
        (str(d["kind"]), str(d["metadata"]["name"])): d for d in docs}
    releases = [d for d in docs if d["kind"] == "HelmRelease"]
    units = [_helm_release_unit(root, hr, by_kind) for hr in releases]
    edges = [(str(dep["name"]), str(hr["metadata"]["name"]))
             for hr in releases for dep in hr["spec"].get("dependsOn") or []]
    git = [d for d in docs if d["kind"] == "GitRepository"]
    settings = {
        "gitRepository": [_durations({k: v for k, v in g["spec"].items() if k != "url"}) for g in git],
        "extraObjects": sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs if d["kind"] not in (
            "HelmRelease", "HelmRepository", "OCIRepository", "GitRepository", "HelmChart")),
    }
    before = closure(edges)
    units.sort(key=lambda u: (sum(1 for a, b in before if b == u.name), u.name))
    return Deployment("flux", tuple(units), before, settings)


def _flux_release_name(hr: Mapping[str, Any]) -> str:
    spec = hr["spec"]
    name = str(spec.get("releaseName") or (f"{spec['targetNamespace']}-{hr['metadata']['name']}"
                                          if spec.get("targetNamespace") else hr["metadata"]["name"]))
    if len(name) > 53:  # helm-controller shortens to 40 characters, a dash and 12 hex digits of the SHA-256
        name = f"{name[:40]}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return name


def _generated_chart(root: Path, artifact: str, objects: Mapping[tuple[str, str], Mapping[str, Any]]) -> Path:
    """The bundle folder an ArtifactGenerator copies into ExternalArtifact ``artifact``: the chart of a published
    bundle (source-watcher's ``copy``: ``@<alias>/<folder>/**`` of the bundle's own OCIRepository)."""
    for (kind, _), generator in objects.items():
        if kind != "ArtifactGenerator":
            continue
        for output in generator["spec"]["artifacts"]:
            if output["name"] == artifact:
                (copy,) = output["copy"]
                folder = str(copy["from"]).split("/", 1)[1].removesuffix("/**")
                return root / PurePosixPath(folder)
    raise ValueError(f"ExternalArtifact {artifact}: no ArtifactGenerator of the bundle makes it")


def _helm_release_unit(root: Path, hr: Mapping[str, Any],
                       objects: Mapping[tuple[str, str], Mapping[str, Any]]) -> Unit:
    spec = hr["spec"]
    name = str(hr["metadata"]["name"])
    namespace = str(spec.get("targetNamespace") or hr["metadata"].get("namespace", "default"))
    values: dict[str, Any] = {}
    for ref in spec.get("valuesFrom") or []:
        source = objects.get((str(ref["kind"]), str(ref["name"])))
        if source is None:
            raise ValueError(f"HelmRelease {name}: valuesFrom {ref['kind']}/{ref['name']} is not in the bundle")
        data = source.get("data") or source.get("stringData") or {}
        values = merge_values(values, (load_text(data[ref.get("valuesKey", "values.yaml")]) or [{}])[0])
    values = merge_values(values, spec.get("values") or {})
    install = dict(spec.get("install") or {})
    create_namespace = bool(install.pop("createNamespace", False))
    rest = {k: v for k, v in spec.items() if k not in _FLUX_SPEC_KEYS}
    rest["install"] = install or None
    rest.setdefault("timeout", "5m")
    rest.setdefault("storageNamespace", hr["metadata"].get("namespace", "default"))
    rest["namespace"] = hr["metadata"].get("namespace")
    settings: dict[str, Any] = _durations(rest)
    release = _flux_release_name(hr)
    if "chartRef" in spec and spec["chartRef"]["kind"] == "ExternalArtifact":
        chart_dir = _generated_chart(root, str(spec["chartRef"]["name"]), objects)
        settings["source"] = {"kind": "ExternalArtifact"}
        return _local_unit(name, chart_dir, values, release=release, namespace=namespace,
                           create_namespace=create_namespace, settings=settings)
    if "chartRef" in spec:
        ref = spec["chartRef"]
        source = objects[(str(ref["kind"]), str(ref["name"]))]
        if ref["kind"] != "OCIRepository":
            raise ValueError(f"HelmRelease {name}: chartRef to a {ref['kind']} is not read here")
        settings["source"] = _durations({"kind": "OCIRepository", **{
            k: v for k, v in source["spec"].items() if k not in ("url", "ref")}})
        repository, chart = canonical_source(str(source["spec"]["url"]), "")
        repository, _, chart = repository.rpartition("/")
        ref_spec = source["spec"].get("ref") or {}
        version = str(ref_spec.get("tag") or ref_spec.get("semver") or ref_spec.get("digest") or "")
        return Unit(name=name, release=release, namespace=namespace, create_namespace=create_namespace,
                    chart=chart, repository=repository, version=version, values=values, objects=None,
                    settings=settings)
    chart_spec = dict(spec["chart"]["spec"])
    source_ref = chart_spec.pop("sourceRef")
    source = objects[(str(source_ref["kind"]), str(source_ref["name"]))]
    chart_ref = str(chart_spec.pop("chart"))
    version = str(chart_spec.pop("version", ""))
    settings["source"] = _durations({"kind": source_ref["kind"], "chart": chart_spec, **{
        k: v for k, v in source["spec"].items() if k not in ("url", "ref")}})
    if source_ref["kind"] == "GitRepository":
        chart_dir = root / PurePosixPath(chart_ref)
        for file in chart_spec.get("valuesFiles") or []:
            values = merge_values(load_mapping(chart_dir / file), values)
        return _local_unit(name, chart_dir, values, release=release, namespace=namespace,
                           create_namespace=create_namespace, settings=settings)
    url = str(source["spec"]["url"])
    repository, chart = canonical_source(url, chart_ref)
    return Unit(name=name, release=release, namespace=namespace, create_namespace=create_namespace, chart=chart,
                repository=repository, version=version, values=values, objects=None, settings=settings)


# ------------------------------------------------------------------------------------------ helmfile


def _read_helmfile(root: Path, repo: str) -> Deployment:
    units: list[Unit] = []
    stages: list[list[str]] = []
    edges: list[tuple[str, str]] = []
    _helmfile(root / "helmfile.yaml", {}, units, stages, edges)
    for i, stage in enumerate(stages):  # sub-helmfiles run one after the other
        edges.extend((a, b) for later in stages[i + 1:] for a in stage for b in later)
    return Deployment("helmfile", tuple(units), closure(edges))


def _helmfile(path: Path, inherited: Mapping[str, Any], units: list[Unit], stages: list[list[str]],
              edges: list[tuple[str, str]]) -> None:
    doc = load_mapping(path)
    for entry in doc.get("helmfiles") or []:
        sub = entry["path"] if isinstance(entry, Mapping) else entry
        _helmfile(path.parent / str(sub), inherited, units, stages, edges)
    releases = doc.get("releases") or []
    if not releases:
        return
    repositories = {str(r["name"]): r for r in doc.get("repositories") or []}
    defaults = {**inherited, **(doc.get("helmDefaults") or {})}
    stage: list[str] = []
    for release in releases:
        if release.get("installed") is False:
            continue
        name = str(release["name"])
        namespace = str(release.get("namespace", "default"))
        values: dict[str, Any] = {}
        for entry in release.get("values") or []:
            values = merge_values(values, load_mapping(path.parent / entry) if isinstance(entry, str) else entry)
        create_namespace = bool(release.get("createNamespace", defaults.get("createNamespace", True)))
        settings = {key: release.get(key, defaults.get(key)) for key in (
            "wait", "waitForJobs", "timeout", "atomic", "force", "disableValidation", "disableOpenAPIValidation",
            "skipDeps", "syncReleaseLabels", "historyMax", "cleanupOnFail", "recreatePods")}
        settings = {k: seconds(v) for k, v in settings.items() if v is not None}
        settings["set"] = release.get("set")
        for need in release.get("needs") or []:
            edges.append((str(need).rpartition("/")[2], name))
        stage.append(name)
        chart_ref = str(release["chart"])
        if chart_ref.startswith(("./", "../", "/")):
            units.append(_local_unit(name, path.parent / chart_ref, values, release=name, namespace=namespace,
                                     create_namespace=create_namespace, settings=settings))
            continue
        prefix, _, chart = chart_ref.partition("/")
        if prefix in repositories:
            repo_entry = repositories[prefix]
            url = str(repo_entry["url"])
            repository = f"oci://{url}" if repo_entry.get("oci") and not url.startswith("oci://") else url
        else:
            repository, chart = canonical_source("", chart_ref)
        repository, chart = canonical_source(repository, chart)
        units.append(Unit(name=name, release=name, namespace=namespace, create_namespace=create_namespace,
                          chart=chart, repository=repository, version=str(release.get("version", "")),
                          values=values, objects=None, settings=settings))
    stages.append(stage)
