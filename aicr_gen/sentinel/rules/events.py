"""``--events``: HealthEvent files, normalised to what fault-quarantine's CEL sees."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from aicr_gen.cel import CelError, parse_instant
from aicr_gen.edges.inputs import read_input
from aicr_gen.errors import InvalidInputError
from aicr_gen.sentinel.rules.model import ENUMS, HEALTH_EVENT_FIELDS, MESSAGE_FIELDS, PROCESSING_STRATEGY, Event
from aicr_gen.sentinel.rules.source import (
    Where,
    _describe,
    _files,
    _parse_file,
    _suggest,
    _under,
)
from aicr_gen.yaml import FieldPath


def load_events(path: str) -> tuple[list[Event], list[str]]:
    """The HealthEvents under ``path`` (a file, or a folder read recursively, files sorted by name), as
    fault-quarantine's CEL sees them, and warnings about files that are not events. Files read before are
    not parsed again: the result is cached under a digest of every file's name and bytes (and of the code
    that normalises them), like a validated catalog; a set with a problem is never cached, so it is reported
    afresh."""
    from aicr_gen.edges import cache
    files = _files(Path(path), "--events")
    try:
        contents = [read_input(str(file), "--events") for _name, file in files]
    except InvalidInputError:  # read them in turn below, so the first problem is reported as ever
        contents = []
    key = _cache_key(files, contents) if contents and cache.folder() is not None else None
    cached = cache.get(key) if key is not None else None
    if cached is not None:
        return [Event(*item) for item in cached["events"]], cached["warnings"]
    events: list[Event] = []
    warnings: list[str] = []
    for position, (name, file) in enumerate(files):
        raw = contents[position] if contents else read_input(str(file), "--events")
        source = _parse_file(raw, str(file))
        found: list[tuple[FieldPath, Any]] = []
        others: list[str] = []
        for at, data in source.documents():
            if _is_other_object(data):
                others.append(f"{source.where(at) if source.multi else file}: a {data.get('kind')}, "
                              "not a HealthEvent")
            else:
                found += _raw_events(data, at)
        if others and len(files) == 1 and not found:
            raise InvalidInputError(others[0] + "; give HealthEvent JSON/YAML files")
        warnings += [f"{message}; skipped" for message in others]
        if not found and not others:
            raise InvalidInputError(f"{file}: no HealthEvent in the file")
        for index, (event_path, data) in enumerate(found):
            label = name if len(found) == 1 else f"{name}[{index}]"
            cel = normalise_event(data, _under(source.where, *event_path))
            events.append(Event(label, str(cel["nodeName"]), cel))
    if key is not None:
        cache.put(key, {"events": [[event.name, event.node_name, event.cel] for event in events],
                        "warnings": warnings})
    return events, warnings


def _cache_key(files: list[tuple[str, Path]], contents: list[bytes]) -> str:
    import hashlib

    from aicr_gen.edges import cache
    digest = cache.new_key("rules-events-v1")  # keyed on aicr-gen's code too: an edit to a normaliser misses
    for (name, file), data in zip(files, contents, strict=True):
        digest.update(f"\0{name}\0{file}\0".encode() + hashlib.sha256(data).digest())
    return digest.hexdigest()


def _is_other_object(data: Any) -> bool:
    return (isinstance(data, Mapping) and isinstance(data.get("kind"), str) and "apiVersion" in data
            and data["kind"] != "HealthEventResource")


def _raw_events(data: Any, root: FieldPath) -> Iterable[tuple[FieldPath, Any]]:
    """The events of one document (at ``root``): a list, ``events: [...]``, or one event."""
    if isinstance(data, list):
        for index, item in enumerate(data):
            yield from _unwrap_event(item, (*root, index))
        return
    if isinstance(data, Mapping) and isinstance(data.get("events"), list) and "agent" not in data:
        for index, item in enumerate(data["events"]):
            yield from _unwrap_event(item, (*root, "events", index))
        return
    yield from _unwrap_event(data, root)


def _unwrap_event(item: Any, path: FieldPath) -> Iterable[tuple[FieldPath, Any]]:
    if isinstance(item, Mapping):
        for wrapper in ("healthevent", "healthEvent"):
            if isinstance(item.get(wrapper), Mapping):
                yield (*path, wrapper), item[wrapper]
                return
        if item.get("kind") == "HealthEventResource" and isinstance(item.get("spec"), Mapping):
            yield (*path, "spec"), item["spec"]
            return
    yield path, item


def normalise_event(raw: Any, where: Where) -> dict[str, Any]:
    """A HealthEvent (protojson: camelCase, enums as names or numbers, RFC 3339 timestamps) as
    fault-quarantine's CEL sees it. Unknown fields and wrong types are input errors, as protojson makes them."""
    if not isinstance(raw, Mapping):
        raise InvalidInputError(f"{where(())}: a HealthEvent must be a mapping, not {_describe(raw)}")
    for key in raw:
        if key not in HEALTH_EVENT_FIELDS:
            raise InvalidInputError(f"{where((key,))}: HealthEvent has no field {key!r}"
                                    f"{_suggest(str(key), HEALTH_EVENT_FIELDS)} (fields: "
                                    f"{', '.join(HEALTH_EVENT_FIELDS)})")
    # ``where`` is only called to word an error: the 10,000 events of a big test build no per-field closures.
    event = {name: convert(name, raw.get(name), where) for name, convert in _CONVERTERS}
    if not event["nodeName"]:
        raise InvalidInputError(f"{where(('nodeName',))}: nodeName is required (the node the event is about)")
    if event["processingStrategy"] == 0:
        event["processingStrategy"] = float(PROCESSING_STRATEGY["EXECUTE_REMEDIATION"])
    return event


def _string_field(name: str, value: Any, where: Where) -> str:
    return _string(value, where, (name,))


def _bool_field(name: str, value: Any, where: Where) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidInputError(f"{where((name,))}: must be true or false, not {_describe(value)}")
    return value


def _uint32_field(name: str, value: Any, where: Where) -> float:
    number = _integer(value, where, (name,))
    if not 0 <= number < 2**32:
        raise InvalidInputError(f"{where((name,))}: {number} is out of the uint32 range")
    return float(number)


def _enum_field(name: str, value: Any, where: Where) -> float:
    return float(_enum(name, value, where))


def _strings_field(name: str, value: Any, where: Where) -> list[str] | None:
    items = _list(value, where, (name,))
    return [_string(item, where, (name, i)) for i, item in enumerate(items)] or None


def _entities_field(name: str, value: Any, where: Where) -> list[dict[str, Any]] | None:
    items = _list(value, where, (name,))
    return [_entity(item) or _message("entity", item, where, (name, i)) for i, item in enumerate(items)] or None


_ENTITY_TYPE, _ENTITY_VALUE = MESSAGE_FIELDS["entity"]


def _entity(item: Any) -> dict[str, str] | None:
    """An entity with both its fields strings and no other, as ``_message`` makes it but without its checks
    (events carry several each); None for any other, which ``_message`` then converts or refuses."""
    if type(item) is dict and len(item) == 2:
        kind, value = item.get(_ENTITY_TYPE), item.get(_ENTITY_VALUE)
        if type(kind) is str and type(value) is str:
            return {_ENTITY_TYPE: kind, _ENTITY_VALUE: value}
    return None


def _map_field(name: str, value: Any, where: Where) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{where((name,))}: must be a mapping of strings, not {_describe(value)}")
    return {str(key): _string(item, where, (name, key)) for key, item in value.items()} or None


def _overrides_field(name: str, value: Any, where: Where) -> dict[str, Any] | None:
    return None if value is None else _message("overrides", value, where, (name,))


def _timestamp_field(name: str, value: Any, where: Where) -> dict[str, float] | None:
    return _timestamp(value, where, (name,))


_CONVERT: dict[str, Callable[[str, Any, Where], Any]] = {
    "string": _string_field, "bool": _bool_field, "uint32": _uint32_field, "enum": _enum_field,
    "strings": _strings_field, "entities": _entities_field, "map": _map_field, "timestamp": _timestamp_field,
    "overrides": _overrides_field}
_CONVERTERS = tuple((name, _CONVERT[kind]) for name, kind in HEALTH_EVENT_FIELDS.items())


def _string(value: Any, where: Where, at: FieldPath) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        hint = f"; quote it: '{value}'" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
        raise InvalidInputError(f"{where(at)}: must be a string, not {_describe(value)}{hint}")
    return value


def _integer(value: Any, where: Where, at: FieldPath) -> int:
    if value is None:
        return 0
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{where(at)}: must be an integer, not {_describe(value)}")
    return value


def _enum(name: str, value: Any, where: Where) -> int:
    names = ENUMS[name]
    if isinstance(value, str) and not value.lstrip("-").isdigit():
        if value not in names:
            raise InvalidInputError(f"{where((name,))}: {value!r} is not a {name} (one of "
                                    f"{', '.join(f'{k}={v}' for k, v in names.items())})")
        return names[value]
    number = _integer(value, where, (name,))
    if not -(2**31) <= number < 2**31:
        raise InvalidInputError(f"{where((name,))}: {number} is out of the enum (int32) range")
    return number


def _list(value: Any, where: Where, at: FieldPath) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInputError(f"{where(at)}: must be a list, not {_describe(value)}")
    return value


def _message(kind: str, value: Any, where: Where, at: FieldPath) -> dict[str, Any]:
    fields = MESSAGE_FIELDS[kind]
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{where(at)}: must be a mapping ({', '.join(fields)}), not {_describe(value)}")
    for key in value:
        if key not in fields:
            raise InvalidInputError(f"{where((*at, key))}: no field {key!r}{_suggest(str(key), fields)} (fields: "
                                    f"{', '.join(fields)})")
    if kind == "entity":
        return {key: _string(value.get(key), where, (*at, key)) for key in fields}
    out: dict[str, Any] = {}
    for key in fields:
        item = value.get(key)
        if item is not None and not isinstance(item, bool):
            raise InvalidInputError(f"{where((*at, key))}: must be true or false, not {_describe(item)}")
        out[key] = bool(item)
    return out


def _timestamp(value: Any, where: Where, at: FieldPath) -> dict[str, float] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        for key in value:
            if key not in ("seconds", "nanos"):
                raise InvalidInputError(f"{where((*at, key))}: a timestamp has seconds and nanos, not {key!r}")
        return {"seconds": float(_integer(value.get("seconds"), where, (*at, "seconds"))),
                "nanos": float(_integer(value.get("nanos"), where, (*at, "nanos")))}
    if not isinstance(value, str):
        raise InvalidInputError(f"{where(at)}: must be an RFC 3339 time such as 2025-01-02T03:04:05Z, not "
                                f"{_describe(value)}")
    try:
        instant = parse_instant(value)
    except CelError as err:
        raise InvalidInputError(f"{where(at)}: {err}") from None
    seconds = int(instant.timestamp() // 1)
    fraction = value.partition(".")[2].rstrip("Zz").split("+")[0].split("-")[0]
    nanos = int(fraction[:9].ljust(9, "0")) if fraction.isdigit() else 0
    return {"seconds": float(seconds), "nanos": float(nanos)}
