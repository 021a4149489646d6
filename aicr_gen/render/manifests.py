"""A component's manifest rendered as AICR renders it at bundle time (``pkg/manifest/render.go``): a Go
template over ``{Values: {<component>: values}, Release: {Namespace, Service: "Helm"}, Chart: {Name, Version}}``
with AICR's small function map, then its Helm hooks stripped (``hooks.strip_hooks``). A manifest left with no
YAML object is not written at all.
"""

from __future__ import annotations

from aicr_gen.render import gofmt, gotemplate, goyaml
from aicr_gen.render.gotemplate import ANY, INT, STRING, Func
from aicr_gen.render.hooks import strip_hooks
from aicr_gen.render.manifest_text import has_objects
from aicr_gen.text.versions import chart_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple


def _to_yaml(value: Any) -> str:
    return goyaml.marshal(value).removesuffix("\n")


def _nindent(width: int, text: str) -> str:
    pad = " " * width
    return "\n" + "\n".join(pad + line if line else line for line in text.split("\n"))


def _default(fallback: Any, value: Any) -> Any:
    return fallback if value is None or value == "" else value


def _trunc(count: int, text: str) -> str:
    data = text.encode()  # Go slices the bytes
    if count < 0:
        return text if -count >= len(data) else data[len(data) + count:].decode(errors="replace")
    return text if count >= len(data) else data[:count].decode(errors="replace")


def _quote(*values: Any) -> str:
    return " ".join(gofmt.quote(gofmt.sprint_value(value)) for value in values if value is not None)


FUNCS: dict[str, Func] = {
    "toYaml": Func(_to_yaml, (ANY,)),
    "nindent": Func(_nindent, (INT, STRING)),
    "toString": Func(gofmt.sprint_value, (ANY,)),
    "default": Func(_default, (ANY, ANY)),
    "replace": Func(lambda old, new, text: text.replace(old, new), (STRING, STRING, STRING)),
    "trunc": Func(_trunc, (INT, STRING)),
    "trimSuffix": Func(lambda suffix, text: text.removesuffix(suffix), (STRING, STRING)),
    "quote": Func(_quote, (), ANY),
}
"""AICR's function map: Helm's names, but its own definitions (``default`` only replaces nil and "")."""


class RenderInput(NamedTuple):
    """What AICR renders a component's manifests with (``manifest.RenderInput``)."""

    component: str
    """The component's name: its values are ``.Values.<component>``."""
    namespace: str
    """``.Release.Namespace``: the component's namespace."""
    chart: str
    """``.Chart.Name``: the component's chart, else its name."""
    version: str
    """The component's version as the recipe gives it (``.Chart.Version`` drops a leading ``v``)."""
    values: Mapping[str, Any]
    """The component's merged values (base, overlay, recipe overrides, --set)."""


def render_template(raw: bytes, source: str, target: RenderInput, *, strict: bool = False) -> str:
    """The template alone, executed as AICR executes it (no hook stripping): what AICR checks for objects to
    decide whether a pre-manifest gets a folder. Errors name ``source`` (the manifest's path) and line.
    ``strict``: a value the template prints but the values lack is an error, not AICR's ``<no value>``."""
    from aicr_gen.yaml import decode

    template = gotemplate.parse(decode(raw, source), source, FUNCS)
    data = gofmt.GoStruct("manifest.templateData", {
        "Values": {target.component: dict(target.values or {})},
        "Release": gofmt.GoStruct("manifest.releaseData", {"Namespace": target.namespace, "Service": "Helm"}),
        "Chart": gofmt.GoStruct("manifest.chartData", {"Name": target.chart or target.component,
                                                        "Version": chart_version(target.version)}),
    })
    return template.execute(data, strict=strict)


def render_manifest(raw: bytes, source: str, target: RenderInput) -> bytes | None:
    """One manifest (``raw``, the catalog file ``source``) as AICR writes it into its component's local chart:
    rendered, sync-phase hooks stripped; None when no YAML object is left (AICR writes no file then)."""
    text = strip_hooks(render_template(raw, source, target), source)
    return text.encode() if has_objects(text) else None
