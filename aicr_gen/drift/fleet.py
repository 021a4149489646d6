"""Fleet drift: per cluster, the Helm components its recipe wants against the releases its snapshot recorded, as
one cluster x component matrix. Pure: the loaded recipes and snapshots in, the matrix out.

A cell (one component of one cluster) is

* ``ok``: deployed as desired (the version equal without a leading ``v``; namespace and chart, when both sides
  name one, equal), as ``aicr-gen diff --baseline RECIPE`` compares them;
* ``drifted``: deployed at another version, in another namespace or from another chart;
* ``missing``: desired, but no release of that name was recorded;
* ``unknown``: a release the cluster's recipe does not name;
* ``unreachable``: desired, but the cluster's snapshot could not be read.

Desired components are the recipe's enabled Helm componentRefs (a snapshot records Helm releases only). A release
recorded as ``<namespace>/<name>`` (a name deployed in several namespaces) answers for component ``name`` in its
namespace. A cluster is ``drifted`` when any cell is neither ``ok`` nor empty, ``unreachable`` when its snapshot
could not be read, else ``ok``; unknown releases count, as they do for ``aicr-gen diff``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from aicr_gen.drift.diff import same_version

KIND = "FleetDrift"
OK, DRIFTED, MISSING, UNKNOWN, UNREACHABLE = "ok", "drifted", "missing", "unknown", "unreachable"
FIELDS = ("version", "namespace", "chart")


class Cluster(NamedTuple):
    """What one cluster brings: its name, spec file, snapshot source, the recipe's componentRefs and the Helm
    releases of its snapshot (``diff.helm_releases``), or None with ``error`` when the snapshot was unreachable."""

    name: str
    spec: str
    source: str
    refs: Sequence[Mapping[str, Any]]
    releases: Mapping[str, Mapping[str, Any]] | None
    error: str | None = None


def desired(refs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str | None]]:
    """The enabled Helm components of a recipe: name -> version, namespace, chart (None when unset)."""
    from aicr_gen.resolve.refs import is_enabled

    wanted: dict[str, dict[str, str | None]] = {}
    for ref in refs:
        name = ref.get("name")
        if name and ref.get("type", "Helm") == "Helm" and is_enabled(ref):
            wanted[str(name)] = _fields(ref)
    return wanted


def _fields(found: Mapping[str, Any]) -> dict[str, str | None]:
    return {field: None if found.get(field) in (None, "") else str(found[field]) for field in FIELDS}


def _status(want: Mapping[str, str | None], have: Mapping[str, str | None]) -> str:
    if want["version"] and not same_version(want["version"], have["version"]):
        return DRIFTED
    for field in ("namespace", "chart"):
        if want[field] and have[field] and want[field] != have[field]:
            return DRIFTED
    return OK


def cells(cluster: Cluster) -> list[dict[str, Any]]:
    """The cells of one cluster, sorted by component: ``{component, status, desired, live}``."""
    wanted = desired(cluster.refs)
    if cluster.releases is None:
        return [_cell(name, UNREACHABLE, want, None) for name, want in sorted(wanted.items())]
    live = {name: _fields(release) for name, release in cluster.releases.items()}
    out: list[dict[str, Any]] = []
    claimed: set[str] = set()
    for name, want in wanted.items():
        key = f"{want['namespace']}/{name}"
        if key not in live:
            key = name
        have = live.get(key)
        if have is None:
            out.append(_cell(name, MISSING, want, None))
            continue
        claimed.add(key)
        out.append(_cell(name, _status(want, have), want, have))
    out += [_cell(name, UNKNOWN, None, have) for name, have in live.items() if name not in claimed]
    return sorted(out, key=lambda cell: cell["component"])


def _cell(component: str, status: str, want: Mapping[str, str | None] | None,
          have: Mapping[str, str | None] | None) -> dict[str, Any]:
    return {"component": component, "status": status, "desired": None if want is None else dict(want),
            "live": None if have is None else dict(have)}


def cluster_status(cluster: Cluster, found: Sequence[Mapping[str, Any]]) -> str:
    if cluster.releases is None:
        return UNREACHABLE
    return OK if all(cell["status"] == OK for cell in found) else DRIFTED


def matrix(clusters: Iterable[Cluster]) -> dict[str, Any]:
    """The fleet drift document (``aicr-gen diff --fleet --format json``): clusters sorted by name, each with its
    cells; ``components`` the columns (every component some cluster's recipe wants, sorted); ``others`` the
    releases no cluster's recipe names (their cells are all ``unknown``)."""
    rows: list[dict[str, Any]] = []
    wanted: set[str] = set()
    recorded: set[str] = set()
    for cluster in sorted(clusters, key=lambda cluster: (cluster.name, cluster.spec)):
        found = cells(cluster)
        wanted.update(cell["component"] for cell in found if cell["desired"] is not None)
        recorded.update(cell["component"] for cell in found if cell["status"] == UNKNOWN)
        rows.append({"name": cluster.name, "spec": cluster.spec, "source": cluster.source,
                     "status": cluster_status(cluster, found), "error": cluster.error, "components": found})
    counts = {status: sum(1 for row in rows if row["status"] == status) for status in (OK, DRIFTED, UNREACHABLE)}
    return {"kind": KIND, "summary": {"clusters": len(rows), **counts}, "components": sorted(wanted),
            "others": sorted(recorded - wanted), "clusters": rows}
