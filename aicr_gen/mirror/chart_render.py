"""Charts rendered as the deployer renders them, for ``plan``: the real ``helm template`` of the exact chart version,
pulled once and cached by digest.

- **Where a chart comes from**, first found: ``--charts DIR`` (vendored ``<chart>-<version>.tgz``, as ``helm pull``
  names them, with or without the version's ``v``), the cache, then the repository or OCI registry through
  ``pull.pull`` (its checks and bounds: no loopback or private hosts unless allowed, bounded reads, credentials only
  to their own origin). ``offline`` skips the last.
- **Cache** (``cache_dir``, default ``<aicr-gen cache>/charts``): ``charts/<sha256>.tgz`` by content digest,
  ``refs/<key>`` naming the digest a repository, chart and version gave, ``renders/<key>.yaml`` the output of one
  ``helm template`` by chart digest, release, namespace, values and Kubernetes version — a fleet of 1,000 clusters
  on one chart version with the same values renders it once. Entries are written atomically.
- **Render**: ``helm template RELEASE CHART --namespace NS --values FILE --include-crds --kube-version V
  [--api-versions GV]...`` (Argo CD renders with ``--include-crds``, the cluster's version and its API versions;
  Flux installs ``crds/`` too). Without ``api_versions`` a chart sees Helm's built-in APIs only, so objects it
  renders only when a CRD's API is served (a ServiceMonitor) are left out at both sides. A local chart folder is
  rendered the same way from a temporary copy.

A chart that cannot be had or rendered is not an error of ``plan``: a render returns None and the reason, and the
plan says which application was not rendered and why.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from aicr_gen.errors import AicrGenError

TEMPLATE_TIMEOUT = 120.0
OUTPUT_LIMIT = 64 * 1024 * 1024
Rendered = tuple[str | None, str]
"""The objects as helm printed them (None when not rendered) and why not."""


def default_cache() -> Path | None:
    """``<aicr-gen cache folder>/charts``, or None when caching is off."""
    from aicr_gen.edges.cache import folder

    where = folder()
    return Path(where, "charts") if where else None


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ChartRenderer:
    """Renders charts for one ``plan`` run (module docstring); remembers every chart and render it made."""

    def __init__(self, *, charts_dir: Path | None = None, cache_dir: Path | None = None, offline: bool = False,
                 helm: str | None = None, api_versions: tuple[str, ...] = ()) -> None:
        self.charts_dir = charts_dir
        self.api_versions = api_versions
        self.cache_dir = cache_dir
        self.offline = offline
        self.helm = helm if helm is not None else shutil.which("helm")
        self._charts: dict[tuple[str, str, str], tuple[Path | None, str]] = {}
        self._crds: dict[tuple[str, str, str], tuple[str, ...] | None] = {}
        self._scratch = tempfile.TemporaryDirectory(prefix="aicr-gen-charts-")

    def close(self) -> None:
        self._scratch.cleanup()

    def _vendored(self, chart: str, version: str) -> Path | None:
        if self.charts_dir is None:
            return None
        for name in dict.fromkeys((f"{chart}-{version}.tgz", f"{chart}-{version.removeprefix('v')}.tgz")):
            if (self.charts_dir / name).is_file():
                return self.charts_dir / name
        return None

    def _stored(self, data: bytes) -> Path:
        digest = hashlib.sha256(data).hexdigest()
        base = self.cache_dir or Path(self._scratch.name)
        path = base / "charts" / f"{digest}.tgz"
        if not path.is_file():
            _write(path, data)
        return path

    def chart(self, repository: str, chart: str, version: str) -> tuple[Path | None, str]:
        """The chart package and '' (or None and why it cannot be had)."""
        key = (repository, chart, version)
        if key not in self._charts:
            self._charts[key] = self._find(repository, chart, version)
        return self._charts[key]

    def _find(self, repository: str, chart: str, version: str) -> tuple[Path | None, str]:
        found = self._vendored(chart, version)
        if found is not None:
            return found, ""
        ref = self.cache_dir / "refs" / _key(repository, chart, version) if self.cache_dir else None
        if ref is not None and ref.is_file():
            cached = self.cache_dir / "charts" / f"{ref.read_text().strip()}.tgz" if self.cache_dir else None
            if cached is not None and cached.is_file():
                return cached, ""
        if self.offline:
            return None, f"{chart} {version} is not in --charts or the cache (--offline)"
        if self.helm is None:
            return None, "helm is not on PATH (install helm to render remote charts)"
        from aicr_gen.mirror.pull import pull

        try:
            pulled = pull(self.helm, chart, chart, version, repository)
        except AicrGenError as err:
            return None, str(err).removeprefix("--vendor-charts: ")
        path = self._stored(pulled.data)
        if ref is not None:
            _write(ref, path.stem.encode())
        return path, ""

    def remote(self, repository: str, chart: str, version: str, *, release: str, namespace: str, values: str,
               kube_version: str) -> Rendered:
        """``helm template`` of a chart of a repository or OCI registry."""
        package, why = self.chart(repository, chart, version)
        if package is None:
            return None, why
        return self._template(package, package.stem, release=release, namespace=namespace, values=values,
                              kube_version=kube_version)

    def crds(self, repository: str, chart: str, version: str) -> tuple[str, ...] | None:
        """The names of the CRDs in the chart package's own ``crds/`` folder (what Helm installs once and never
        updates); None when the chart cannot be had."""
        key = (repository, chart, version)
        if key not in self._crds:
            package, _why = self.chart(repository, chart, version)
            self._crds[key] = None if package is None else _crd_names(package)
        return self._crds[key]


    def local(self, files: Mapping[str, bytes], *, release: str, namespace: str, values: str,
              kube_version: str) -> Rendered:
        """``helm template`` of a chart folder of the tree (``files``: its files, relative to the folder)."""
        digest = hashlib.sha256()
        for name in sorted(files):
            digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
        folder = Path(self._scratch.name, "local", digest.hexdigest())
        if not folder.is_dir():
            for name, data in files.items():
                target = folder / name
                if ".." in Path(name).parts or Path(name).is_absolute():
                    return None, f"chart file {name!r} is outside its folder"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        return self._template(folder, digest.hexdigest(), release=release, namespace=namespace, values=values,
                              kube_version=kube_version)

    def _template(self, chart: Path, identity: str, *, release: str, namespace: str, values: str,
                  kube_version: str) -> Rendered:
        key = _key(identity, release, namespace, values, kube_version, *self.api_versions)
        cached = self.cache_dir / "renders" / f"{key}.yaml" if self.cache_dir else None
        if cached is not None and cached.is_file():
            return cached.read_text(), ""
        if self.helm is None:
            return None, "helm is not on PATH (install helm to render charts)"
        values_file = Path(self._scratch.name, f"values-{_key(values)}.yaml")
        values_file.write_text(values)
        args = [self.helm, "template", release, str(chart), "--namespace", namespace, "--values", str(values_file),
                "--include-crds", *(["--kube-version", kube_version] if kube_version else []),
                *(arg for version in self.api_versions for arg in ("--api-versions", version))]
        try:
            done = subprocess.run(args, capture_output=True, check=False, timeout=TEMPLATE_TIMEOUT,
                                  stdin=subprocess.DEVNULL, env={**os.environ, "HELM_NO_PLUGINS": "1"})
        except subprocess.TimeoutExpired:
            return None, f"helm template took longer than {TEMPLATE_TIMEOUT:.0f} s"
        except OSError as err:
            return None, f"cannot run {self.helm}: {err}"
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            return None, f"helm template failed: {message[-1] if message else f'exit {done.returncode}'}"
        if len(done.stdout) > OUTPUT_LIMIT:
            return None, f"helm template printed more than {OUTPUT_LIMIT} bytes"
        text = done.stdout.decode(errors="replace")
        if cached is not None:
            _write(cached, text.encode())
        return text, ""


def _crd_names(package: Path) -> tuple[str, ...]:
    """The CRD names of a chart package's ``crds/`` folder."""
    import tarfile

    from aicr_gen.yaml.foreign import load_all

    names: set[str] = set()
    with tarfile.open(package) as archive:
        for member in archive.getmembers():
            parts = member.name.split("/")
            if not (member.isfile() and len(parts) == 3 and parts[1] == "crds" and member.size <= OUTPUT_LIMIT
                    and parts[2].endswith((".yaml", ".yml", ".json"))):
                continue
            data = archive.extractfile(member)
            try:
                names |= {str((doc.get("metadata") or {}).get("name", "")) for doc in load_all(data.read())
                          if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"} \
                    if data is not None else set()
            except Exception:  # helm would refuse the chart too; its render says so
                continue
    return tuple(sorted(names - {""}))
