"""Drift between two AICR snapshots, or between a recipe (desired) and a snapshot (live). Pure: data in, data out.

Both sides are first normalised into a flat mapping ``{path: scalar}``:

* only ``measurements`` count; ``metadata`` (timestamp, source-node, version) and ``fingerprint`` (advisory,
  recomputed) are dropped, as are timestamp-like keys and kernel counters that change on every read
  (``VOLATILE``);
* ``<Type>.<subtype>.<key>`` for data, ``<Type>.<subtype>.context.<key>`` for context;
* ``items`` are matched by their context, not their position:
  ``<Type>.<subtype>.items[<k>=<v>,...].data.<key>`` (context keys sorted; a repeated context gets ``#2``...);
* node lists (NodeTopology ``label``/``taint`` values ``[effect|]value|node1,node2``) and any other list of
  scalars become one entry per member: ``<path>[<node>]`` whose value is the label/taint value (or the member
  itself), so a node that joined is ``added``, one that left ``removed``, and one whose value changed
  ``modified``.

Snapshot vs snapshot first drops what is equal on both sides before building paths (``normalise_pair``): a
subtype reading, or an item matched by context, whose value is the same on both sides (same type too: ``1`` is
not ``true``) cannot drift. The flat mappings are then compared by key (cheap even for a million entries): the
entries that differ, node lists split into members, become AICR's change list. Every value is a scalar by then,
so a key-by-key comparison is the whole diff (no DeepDiff: importing it cost more than the comparison).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple  # typing costs a diff more than its comparison

NODE_SUBTYPES = {("NodeTopology", "label"), ("NodeTopology", "taint")}
"""Subtypes whose values end in ``|node1,node2``."""

VOLATILE = re.compile(
    r"(^|[./_-])(timestamp|collectedat|collected-at|capturedat|creationtimestamp|lasttransitiontime|"
    r"lastupdated?|updatedat|createdat|uptime)$"
    r"|^/proc/sys/kernel/random/"  # boot_id, uuid, entropy_avail: new on every read
    r"|^/proc/sys/fs/(dentry-state|file-nr|inode-nr|inode-state|aio-nr)$",  # live counters
    re.IGNORECASE)
"""Data keys never compared: they change between two captures of an unchanged cluster."""

GPU_STACK = re.compile(r"gpu-operator|network-operator|nvidia-dra|dra-driver|nvidia[-.]driver|^GPU\.|"
                       r"kernel/osrelease|^OS\.kmod\.|^NVIDIADriver\.", re.IGNORECASE)
"""Change paths that touch the GPU stack (drivers, operators, kernel) and call for node re-validation."""

GPU_LABEL = "nvidia.com/gpu.present"

_NO_NODE = frozenset({""})
"""What splitting an empty node list (or ``a,,b``) yields besides node names."""


# Value records are NamedTuples rather than dataclasses: importing dataclasses (it imports inspect) costs a
# diff more than building the records (and ``aicr_gen.records`` builds them without importing typing).


class Members(NamedTuple):
    """A list value kept unexpanded until it differs: ``value`` is what each member maps to (None: itself)."""

    value: Any
    members: frozenset[str]


class _Encoded(NamedTuple):
    """A NodeTopology value ``[effect|]value|node1,node2``, compared raw and split only when it differs."""

    raw: str

    def split(self, known: dict[str, frozenset[str]] | None = None) -> Members:
        """The value and its node set (taken from, or added to, ``known``: node list -> set)."""
        value, _, nodes = self.raw.rpartition("|")
        members = None if known is None else known.get(nodes)
        if members is None:
            members = frozenset(nodes.split(",")) - _NO_NODE
            if known is not None:
                known[nodes] = members
        return Members(value, members)


# ---------------------------------------------------------------- normalise


def normalise(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The flat ``{path: value}`` mapping of a snapshot's measurements (node lists still packed)."""
    flat: dict[str, Any] = {}
    for base, nodes, sub in _subtypes(snapshot):
        _put_subtype(flat, base, nodes, sub, data=sub.get("data"), items=_items(sub))
    return flat


def _subtypes(snapshot: Mapping[str, Any]) -> Iterator[tuple[str, bool, Mapping[str, Any]]]:
    """``(path prefix, holds node lists, subtype)`` for each subtype, in document order."""
    for measurement in _list(snapshot.get("measurements")):
        if not isinstance(measurement, Mapping):
            continue
        mtype = str(measurement.get("type", ""))
        for sub in _list(measurement.get("subtypes")):
            if isinstance(sub, Mapping):
                name = str(sub.get("subtype", sub.get("name", "")))
                yield f"{mtype}.{name}", (mtype, name) in NODE_SUBTYPES, sub


def _items(sub: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(key, data)`` of a subtype's items, keyed by context; a repeated context gets ``#2``..."""
    keys: list[str] = []
    data: list[Any] = []
    for item in _list(sub.get("items")):
        if _is_mapping(item):
            keys.append(item_key(item.get("context")))
            data.append(item.get("data"))
    if len(set(keys)) < len(keys):
        seen: dict[str, int] = {}
        for index, key in enumerate(keys):
            count = seen[key] = seen.get(key, 0) + 1
            if count > 1:
                keys[index] = f"{key}#{count}"
    return list(zip(keys, data, strict=True))


def item_key(context: Any) -> str:
    """The stable key of an item: its context as sorted ``k=v`` pairs."""
    if type(context) is dict:
        try:
            # the usual case, all keys and values strings, in C: each key is once in a mapping, so sorting the
            # pairs sorts the keys and never compares values; "=".join refuses anything but strings
            return ",".join(map("=".join, sorted(context.items())))
        except TypeError:
            pass
    elif not isinstance(context, Mapping):
        return ""
    return ",".join([f"{key}={_text(context[key])}" for key in sorted(context, key=str)])


def _is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, quick for the dicts the loaders build (the ABC check is slow per item)."""
    return type(value) is dict or isinstance(value, Mapping)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _put(flat: dict[str, Any], base: str, data: Any, nodes: bool) -> None:
    if not isinstance(data, Mapping):
        return
    for raw_key, value in data.items():
        key = raw_key if type(raw_key) is str else str(raw_key)
        if VOLATILE.search(key):
            continue
        path = f"{base}.{key}"
        if isinstance(value, str):
            flat[path] = _Encoded(value) if nodes and "|" in value else value
        elif isinstance(value, Mapping):
            _put(flat, path, value, nodes)
        elif isinstance(value, list):
            flat[path] = Members(None, frozenset(_text(member) for member in value))
        else:
            flat[path] = value


def _text(value: Any) -> str:
    if type(value) is str:
        return value
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------- equality pre-pass

_SCALARS = (str, int, float, bool, type(None))
"""Reading types the pre-pass compares; a subtype holding anything else (a mapping, ...) is normalised whole."""
_SCALAR_TYPES = frozenset(_SCALARS)
_PLAIN_VALUES = frozenset({*_SCALARS, list})
_TEXT = frozenset({str})

_RESERVED = ("context", "items[")
"""A data key starting so could share a path with the subtype's context or items."""


def normalise_pair(baseline: Mapping[str, Any], target: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``normalise`` of both snapshots less entries equal on both sides, so ``compare`` finds the same changes.

    Skipped: readings of a subtype present on both sides, and the data of items with the same context key, equal
    in value and type (``1`` is not ``true``). Skipping is exact only when no two entries share a path, so
    whatever could make them share one (a repeated subtype, a subtype path that is a dotted prefix of another,
    a data key ``context...`` or ``items[...``, a nested or non-string key, ``]`` in an item key) is normalised
    whole."""
    left_subs, right_subs = list(_subtypes(baseline)), list(_subtypes(target))
    if not _disjoint([base for base, _, _ in left_subs], [base for base, _, _ in right_subs]):
        return normalise(baseline), normalise(target)
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    olds = {base: sub for base, _, sub in left_subs}
    news = {base: sub for base, _, sub in right_subs}
    for base, nodes, sub in left_subs:
        new = news.get(base)
        old_data, new_data, old_items, new_items = _unequal(sub, new) if new is not None else (
            sub.get("data"), None, _items(sub), [])
        _put_subtype(left, base, nodes, sub, data=old_data, items=old_items)
        if new is not None:
            _put_subtype(right, base, nodes, new, data=new_data, items=new_items)
    for base, nodes, sub in right_subs:
        if base not in olds:
            _put_subtype(right, base, nodes, sub, data=sub.get("data"), items=_items(sub))
    return left, right


def _put_subtype(flat: dict[str, Any], base: str, nodes: bool, sub: Mapping[str, Any], *, data: Any,
                 items: list[tuple[str, Any]]) -> None:
    _put(flat, base, data, nodes)
    _put(flat, f"{base}.context", sub.get("context"), False)
    for key, value in items:
        _put(flat, f"{base}.items[{key}].data", value, nodes)


def _disjoint(left: list[str], right: list[str]) -> bool:
    """Each subtype path once per side, none a dotted prefix of another (``K8s.helm`` of ``K8s.helm.x``): then
    the paths of one subtype never meet another's."""
    if len(set(left)) < len(left) or len(set(right)) < len(right):
        return False
    names = sorted({f"{base}." for base in left} | {f"{base}." for base in right})
    # sorted, every name extending a prefix follows it directly or after others extending it
    return not any(later.startswith(earlier) for earlier, later in itertools.pairwise(names))


def _unequal(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[Any, Any, list[tuple[str, Any]],
                                                                       list[tuple[str, Any]]]:
    """Data and items of one subtype on both sides, less what is equal on both (or all of it when unsafe)."""
    old_data, new_data = old.get("data"), new.get("data")
    old_items, new_items = _items(old), _items(new)
    if not (_plain(old_data) and _plain(new_data)):
        return old_data, new_data, old_items, new_items
    if isinstance(old_data, Mapping) and isinstance(new_data, Mapping):
        # kept: what is not an equal reading of the same type (lists are left to ``compare``)
        kept = {key: value for key, value in old_data.items()
                if type(other := new_data.get(key, _MISSING)) is not type(value) or type(value) is list
                or value != other}
        new_data = {key: value for key, value in new_data.items() if key in kept or key not in old_data}
        old_data = kept
    old_by_key, new_by_key = dict(old_items), dict(new_items)
    if len(old_by_key) < len(old_items) or len(new_by_key) < len(new_items) \
            or "]" in "".join(old_by_key) or "]" in "".join(new_by_key):
        return old_data, new_data, old_items, new_items
    equal = {key for key, value in old_items if key in new_by_key and _same_data(value, new_by_key[key])}
    return (old_data, new_data, [entry for entry in old_items if entry[0] not in equal],
            [entry for entry in new_items if entry[0] not in equal])


def _plain(data: Any) -> bool:
    """Not a mapping, or one whose keys are strings that cannot meet context/items paths and values are
    readings or lists (nothing nested that could flatten onto another key)."""
    if not isinstance(data, Mapping):
        return True
    # type checks through ``issuperset(map(type, ...))`` run in C: a subtype may hold thousands of readings
    return (_TEXT.issuperset(map(type, data.keys())) and _PLAIN_VALUES.issuperset(map(type, data.values()))
            and not any(map(str.startswith, data.keys(), itertools.repeat(_RESERVED))))


def _same_data(old: Any, new: Any) -> bool:
    """Item data that normalises to the same entries: neither a mapping, or the same string keys with equal
    readings of the same type."""
    if not _is_mapping(old) or not _is_mapping(new):
        return not _is_mapping(old) and not _is_mapping(new)
    if old.keys() != new.keys():
        return False
    for key, value in old.items():
        other = new[key]
        if type(key) is not str or type(value) is not type(other) or type(value) not in _SCALAR_TYPES \
                or value != other:
            return False
    return True


# ---------------------------------------------------------------- compare


def compare(baseline: Mapping[str, Any], target: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The changes between two flat mappings, sorted by path."""
    nodes = _NodeSets()
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    for path in baseline.keys() - target.keys():
        left.update(_expand(path, nodes.unpack(baseline[path])))
    for path in target.keys() - baseline.keys():
        right.update(_expand(path, nodes.unpack(target[path])))
    for path in baseline.keys() & target.keys():
        old, new = baseline[path], target[path]
        if type(old) is not type(new) or old != new:
            old, new = nodes.unpack(old), nodes.unpack(new)
            if isinstance(old, Members) and isinstance(new, Members) and old.value == new.value:
                # same value: only the members that joined or left differ
                old, new = nodes.moved(old, new)
            left.update(_expand(path, old))
            right.update(_expand(path, new))
    return sort(_changes(left, right))


def _changes(left: dict[str, Any], right: dict[str, Any]) -> list[dict[str, Any]]:
    """The change entries between two flat mappings of readings: a path on one side only is removed or added;
    on both, modified when the values differ in type (``1`` is not ``true``, nor ``1.0``) or value. The same
    object on both sides is equal (a shared NaN), as it was when DeepDiff compared them; unlike DeepDiff, which
    skipped keys starting with ``__``, every path counts."""
    changes = [change("removed", path, baseline=left[path]) for path in left.keys() - right.keys()]
    changes += [change("added", path, target=right[path]) for path in right.keys() - left.keys()]
    for path in left.keys() & right.keys():
        old, new = left[path], right[path]
        if old is not new and (type(old) is not type(new) or old != new):
            changes.append(change("modified", path, baseline=old, target=new))
    return changes


_RECENT = 2
"""Node lists ``_NodeSets`` compares in place before looking one up: the two sides of a diff."""


class _NodeSets:
    """Node lists split once: many labels and taints of a cluster share one node list, so the same list (and
    the same pair of lists) is split and subtracted once per diff, not once per label."""

    def __init__(self) -> None:
        self._sets: dict[str, frozenset[str]] = {}
        self._moved: dict[tuple[frozenset[str], frozenset[str]], tuple[frozenset[str], frozenset[str]]] = {}
        self._recent: list[tuple[str, frozenset[str]]] = []
        """The node lists split last (at most ``_RECENT``, newest first), and their sets."""

    def unpack(self, value: Any) -> Any:
        if not isinstance(value, _Encoded):
            return value
        raw = value.raw
        # Values in a row mostly end in one of a few lists of thousands of nodes (the baseline's, the target's):
        # comparing the tail in place costs less than cutting it out and hashing it again. A node list holds no
        # "|", so when raw ends in "|" + nodes, that "|" is its last one.
        for nodes, members in self._recent:
            cut = len(raw) - len(nodes) - 1
            if cut >= 0 and raw[cut] == "|" and raw.endswith(nodes):
                return Members(raw[:cut], members)
        split = value.split(self._sets)
        self._recent = [(raw[len(split.value) + 1:], split.members), *self._recent[:_RECENT - 1]]
        return split

    def moved(self, old: Members, new: Members) -> tuple[Members, Members]:
        """The members that left and those that joined."""
        key = (old.members, new.members)
        moved = self._moved.get(key)
        if moved is None:
            moved = self._moved[key] = (old.members - new.members, new.members - old.members)
        return Members(old.value, moved[0]), Members(new.value, moved[1])


def _expand(path: str, value: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(value, Members):
        for member in value.members:
            yield f"{path}[{member}]", member if value.value is None else value.value
    else:
        yield path, value


_MISSING = object()


def change(kind: str, path: str, *, baseline: Any = _MISSING, target: Any = _MISSING) -> dict[str, Any]:
    """One AICR change entry."""
    entry: dict[str, Any] = {"kind": kind, "severity": "info", "path": path}
    if baseline is not _MISSING:
        entry["baseline"] = baseline
    if target is not _MISSING:
        entry["target"] = target
    return entry


def sort(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(changes, key=lambda entry: (entry["path"], entry["kind"]))


def result(baseline_source: str, target_source: str, changes: list[dict[str, Any]]) -> dict[str, Any]:
    """AICR's diff result document."""
    counts = {kind: sum(1 for entry in changes if entry["kind"] == kind) for kind in ("added", "removed", "modified")}
    return {"baselineSource": baseline_source, "targetSource": target_source, "changes": changes,
            "summary": {**counts, "total": len(changes)}}


def diff_snapshots(baseline: Mapping[str, Any], target: Mapping[str, Any], baseline_source: str = "baseline",
                   target_source: str = "target") -> dict[str, Any]:
    """Snapshot vs snapshot."""
    return result(baseline_source, target_source, compare(*normalise_pair(baseline, target)))


def readings(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """Every reading of a snapshot the diff compares, node lists (and other lists of scalars) split into one path
    per member as ``compare`` splits those that differ: what ``diff --format deepdiff`` gives DeepDiff, so that
    DeepDiff finds the changes ``compare`` lists, by the same paths."""
    nodes = _NodeSets()
    out: dict[str, Any] = {}
    for path, value in normalise(snapshot).items():
        out.update(_expand(path, nodes.unpack(value)))
    return out


# ---------------------------------------------------------------- recipe vs snapshot


def helm_releases(snapshot: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``K8s.helm`` data as ``{release: {chart, version, namespace}}``."""
    releases: dict[str, dict[str, Any]] = {}
    prefix = "K8s.helm."
    # only the subtypes whose paths can start with the prefix are normalised (a fleet reads thousands)
    flat: dict[str, Any] = {}
    for base, nodes, sub in _subtypes(snapshot):
        if base == prefix[:-1] or base.startswith(prefix):
            _put_subtype(flat, base, nodes, sub, data=sub.get("data"), items=_items(sub))
    for path, value in flat.items():
        if path.startswith(prefix):
            release, _, field = path[len(prefix):].rpartition(".")
            if release and field in ("chart", "version", "namespace"):
                releases.setdefault(release, {})[field] = value
    return releases


def _version(value: Any) -> str:
    text = _text(value).strip()
    return text[1:] if text[:1] in ("v", "V") else text


def same_version(want: Any, have: Any) -> bool:
    """Whether a recipe's version and a deployed one agree: equal without a leading ``v``."""
    return _version(want) == _version(have)


def flux_release_name(name: str, target_namespace: str, release: str = "") -> str:
    """The Helm release a HelmRelease ``name`` installs: ``release`` (``spec.releaseName``), else
    ``<targetNamespace>-<name>``, shortened past 53 characters to 40 and 12 hex digits of its sha256
    (helm-controller api/v2 ``GetReleaseName``, internal/release/name.go ``ShortenName``)."""
    full = release or (f"{target_namespace}-{name}" if target_namespace else name)
    if len(full) <= 53:
        return full
    import hashlib  # here: it loads OpenSSL (~2 ms), and most names are short

    return f"{full[:40]}-{hashlib.sha256(full.encode()).hexdigest()[:12]}"


def diff_recipe(recipe: Mapping[str, Any], snapshot: Mapping[str, Any], baseline_source: str = "recipe",
                target_source: str = "target") -> dict[str, Any]:
    """Recipe (desired) vs snapshot (live), in the same change shape; baseline = recipe, target = live: the changes
    between ``recipe_readings``.

    * ``removed K8s.helm.<component>``: a componentRef with no Helm release in the cluster
      (baseline: the recipe's version, or chart when unversioned);
    * ``modified K8s.helm.<component>.version|namespace|chart``: deployed at another version (compared without
      a leading ``v``), in another namespace, or from another chart;
    * ``added K8s.helm.<release>``: a release the recipe does not know (target: its version or chart).

    A component's release is named like it, or ``<namespace>-<component>`` as Flux names the release of a
    HelmRelease without ``releaseName`` (AICR's flux bundles).
    """
    left, right = recipe_readings(recipe, helm_releases(snapshot))
    return result(baseline_source, target_source, sort(_changes(left, right)))


def recipe_readings(recipe: Mapping[str, Any],
                    live: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The readings ``diff_recipe`` compares (desired, live), flat and with its rules applied: a live value equal
    to the recipe's by those rules (a version without its ``v``, a namespace or chart as text) is the recipe's, a
    field either side leaves unset is not read, a component with no release is one reading of the recipe's side,
    and a release no component names one of the live side (``live``: ``helm_releases`` of the snapshot)."""
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    known: set[str] = set()
    for ref in _list(recipe.get("componentRefs")):
        if not isinstance(ref, Mapping) or not ref.get("name"):
            continue
        name = str(ref["name"])
        known.add(name)
        path = f"K8s.helm.{name}"
        flux = flux_release_name(name, str(ref.get("namespace") or ""))  # as Flux names an AICR flux bundle's
        release = live.get(name) or live.get(flux)
        known.add(flux if name not in live else name)
        if release is None:
            left[path] = ref.get("version") or ref.get("chart") or name
            continue
        want, have = ref.get("version"), release.get("version")
        if want:
            left[f"{path}.version"], right[f"{path}.version"] = want, want if same_version(want, have) else have
        for field in ("namespace", "chart"):
            want, have = ref.get(field), release.get(field)
            if want and have:
                left[f"{path}.{field}"], right[f"{path}.{field}"] = want, want if _text(want) == _text(have) else have
    for name in live.keys() - known:
        release = live[name]
        right[f"K8s.helm.{name}"] = release.get("version") or release.get("chart")
    return left, right


# ---------------------------------------------------------------- GPU stack


def touches_gpu_stack(changes: Iterable[Mapping[str, Any]]) -> list[str]:
    """The paths of changes that touch the GPU stack."""
    return [str(entry["path"]) for entry in changes if GPU_STACK.search(str(entry["path"]))]


def gpu_nodes(snapshot: Mapping[str, Any]) -> list[str]:
    """Nodes labelled ``nvidia.com/gpu.present`` (not ``false``) in NodeTopology, else every node listed there."""
    flat = normalise(snapshot)
    gpu: set[str] = set()
    every: set[str] = set()
    for path, value in flat.items():
        if not path.startswith("NodeTopology."):
            continue
        members = value.split() if isinstance(value, _Encoded) else value
        if not isinstance(members, Members):
            continue
        every |= members.members
        key = path.split(".", 2)[2] if path.count(".") >= 2 else ""
        if path.startswith("NodeTopology.label.") and (key == GPU_LABEL or key.startswith(f"{GPU_LABEL}=")) \
                and _text(members.value).lower() != "false":
            gpu |= members.members
    return sorted(gpu or every)
