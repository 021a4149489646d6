"""Manifests rendered as AICR renders them: Go's text/template semantics, AICR's function map and yaml.v3 output,
Helm hook stripping, and an oracle run of AICR's own binary over every leaf of its catalog."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.errors import InvalidInputError
from aicr_gen.render import gotemplate, goyaml
from aicr_gen.render.gofmt import GoStruct, format_float, sprintf
from aicr_gen.render.hooks import strip_hooks
from aicr_gen.render.manifests import FUNCS, RenderInput, render_manifest, render_template
from tests.conftest import AICR_CATALOG, ROOT, needs, run_process

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
VALUES = {"a": 1, "f": 1.0, "n": None, "s": "str", "m": {"x": "y", "b": [1, "two", None]}, "l": [3, "b", None],
          "off": False, "empty": ""}


def render(text: str, values: dict[str, Any] | None = None) -> str:
    """``text`` rendered for component ``c`` in namespace ``ns``, chart ``chart`` v1.2.3."""
    source = f"components/c/manifests/t{abs(hash(text))}.yaml"
    return render_template(text.encode(), source, RenderInput("c", "ns", "chart", "v1.2.3",
                                                              VALUES if values is None else values))


def refused(text: str, *fragments: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        render(text)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)


@pytest.mark.parametrize(("template", "expected"), [
    ('{{ .Release.Namespace }}/{{ .Release.Service }}/{{ .Chart.Name }}/{{ .Chart.Version }}', "ns/Helm/chart/1.2.3"),
    ('{{ $v := index .Values "c" }}{{ $v.a }} {{ $v.f }} {{ $v.s }} {{ $v.off }}', "1 1 str false"),
    # a missing key prints Go's <no value>, and following it further gives no value either
    ('{{ $v := index .Values "c" }}{{ $v.zz }} {{ $v.zz.deeper }} {{ $v.n }}', "<no value> <no value> <no value>"),
    ('{{ (index .Values "c").m }} {{ (index .Values "c").l }}', "map[b:[1 two <nil>] x:y] [3 b <nil>]"),
    ("a \n {{- 1 -}} \n b", "a1b"),
    ("x {{- /* a comment */ -}} y{{/* another */}}", "xy"),
    ("{{-3}} {{ 0x1F }} {{ 1e3 }} {{ 017 }} {{ 'a' }} {{ 1_000 }}", "-3 31 1000 15 97 1000"),
    ('{{ range $k, $v := (index .Values "c").m }}{{ $k }}={{ $v }};{{ end }}', "b=[1 two <nil>];x=y;"),
    ('{{ range $i, $e := (index .Values "c").l }}{{ $i }}:{{ $e }} {{ end }}', "0:3 1:b 2:<no value> "),
    ('{{ range (index .Values "c").zz }}x{{ else }}none{{ end }}', "none"),
    ('{{ range $i, $e := (index .Values "c").l }}{{ if eq $i 1 }}{{ break }}{{ end }}{{ $e }}{{ end }}', "3"),
    ('{{ range $i, $e := (index .Values "c").l }}{{ if eq $i 0 }}{{ continue }}{{ end }}{{ $i }}{{ end }}', "12"),
    ("{{ if and 1 0 }}a{{ else if or 0 \"\" }}b{{ else if not 0 }}c{{ else }}d{{ end }}", "c"),
    ('{{ with (index .Values "c").s }}{{ . }}{{ else }}none{{ end }}', "str"),
    ('{{ with (index .Values "c").empty }}{{ . }}{{ else with 5 }}{{ . }}{{ end }}', "5"),
    ("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ end }}{{ $x }}", "2"),
    ('{{ define "t" }}[{{ . }}]{{ end }}{{ template "t" 5 }}{{ block "b" "x" }}<{{ . }}>{{ end }}', "[5]<x>"),
    ('{{ printf "%s-%s" .Chart.Name .Chart.Version | replace "." "_" | trunc 8 | trimSuffix "_" }}', "chart-1"),
    ('{{ printf "%d|%5s|%-3d|%q|%v|%s" 7 "ab" 1 "q\\"" 2.5 3 }}', '7|   ab|1  |"q\\""|2.5|%!s(int=3)'),
    ('{{ print "a" 1 2 "b" }} {{ println 1 2 }}', "a1 2b 1 2\n"),
    ('{{ len "héllo" }} {{ len (index .Values "c").l }} {{ index "abc" 1 }} {{ slice "hello" 1 3 }}', "6 3 98 el"),
    ('{{ lt 1 2 }} {{ le 2 2 }} {{ gt "b" "a" }} {{ ge 1.5 2.5 }} {{ ne "a" "b" }} {{ eq 1 2 3 1 }}',
     "true true true false true true"),
    ('{{ eq (index .Values "c").zz "x" }} {{ not (index .Values "c").zz }}', "false true"),
    ('{{ html "<a href=\'x\'>" }} {{ js "a\'b<" }} {{ urlquery "a b&c" }}',
     "&lt;a href=&#39;x&#39;&gt; a\\'b\\u003C a+b%26c"),
    # AICR's functions: default replaces only nil and "", never false; toString prints Go's %v
    ('{{ $v := index .Values "c" }}{{ $v.zz | default "d" }} {{ $v.empty | default "d" }} {{ $v.off | default "d" }}',
     "d d false"),
    ('{{ $v := index .Values "c" }}{{ toString $v.zz }} {{ toString $v.off }} {{ toString $v.m }}',
     "<nil> false map[b:[1 two <nil>] x:y]"),
    ('{{ $v := index .Values "c" }}{{ quote $v.s $v.zz 1 }} {{ $v.zz | quote }}', '"str" "1" '),
    ('{{ $v := index .Values "c" }}x:{{ toYaml $v.m | nindent 2 }}',
     'x:\n  b:\n    - 1\n    - two\n    - null\n  x: "y"'),
    ('{{ toYaml (index .Values "c").zz }}|{{ toYaml "" }}|{{ toYaml "yes" }}|{{ toYaml 1.5 }}', 'null|""|"yes"|1.5'),
    ('{{ trunc -3 "abcdef" }} {{ trunc 10 "ab" }}', "def ab"),
])
def test_go_template_semantics(template: str, expected: str) -> None:
    assert render(template) == expected


@pytest.mark.parametrize(("template", "fragments"), [
    # a field of a YAML null is Go's nil pointer error, with the file and line
    ('\n{{ $v := index .Values "c" }}{{ $v.n.x }}', (":2: executing at <$v.n.x>",
                                                     "nil pointer evaluating interface {}.x")),
    ("{{ .Nope }}", ("can't evaluate field Nope in type manifest.templateData",)),
    ("{{ $y }}", ('undefined variable "$y"',)),
    ("{{ nofunc 1 }}", ('function "nofunc" not defined',)),
    ("{{ if 1 }}", ("unexpected EOF",)),
    ("{{ end }}", ("unexpected {{end}}",)),
    ("{{ if }}{{ end }}", ("missing value for if",)),
    ("{{ 1 | 2 }}", ("non executable command in pipeline stage 2",)),
    ("{{ break }}", ("{{break}} outside {{range}}",)),
    ("{{ eq 1 1.0 }}", ("error calling eq: incompatible types for comparison",)),
    ('{{ index (index .Values "c").zz "x" }}', ("error calling index: index of untyped nil",)),
    ('{{ (index .Values "c").zz | nindent 2 }}', ("invalid value; expected string",)),
    ('{{ nindent 2 (index .Values "c").a }}', ("wrong type for value; expected string; got int",)),
    ('{{ nindent "2" "x" }}', ("expected integer; found \"2\"",)),
    ("{{ trimSuffix 1 }}", ("wrong number of args for trimSuffix: want 2 got 1",)),
    ('{{ template "missing" }}', ('no such template "missing"',)),
    ("{{ .x", ("unclosed action",)),
    ("{{ /* x */ }}", ("unexpected",)),
    ("{{/* x }}", ("unclosed comment",)),
])
def test_go_template_errors_name_the_file_line_and_problem(template: str, fragments: tuple[str, ...]) -> None:
    refused(template, "components/c/manifests/", *fragments)


def test_templates_are_parsed_once_per_content() -> None:
    first = gotemplate.parse("{{ 1 }}", "a.yaml", FUNCS)
    assert gotemplate.parse("{{ 1 }}", "a.yaml", FUNCS) is first
    assert gotemplate.parse("{{ 2 }}", "a.yaml", FUNCS) is not first


def test_root_data_prints_like_a_go_struct() -> None:
    data = GoStruct("t", {"A": {"k": 1}, "B": GoStruct("u", {"N": "x"})})
    assert gotemplate.parse("{{ . }}", "x", None).execute(data) == "{map[k:1] {x}}"


@pytest.mark.parametrize(("value", "text"), [
    (1.0, "1"), (1.5, "1.5"), (100000.0, "100000"), (1e6, "1e+06"), (1234567.0, "1.234567e+06"),
    (0.0001, "0.0001"), (0.00001, "1e-05"), (-2.5, "-2.5"), (float("inf"), "+Inf"),
])
def test_floats_print_as_go_prints_them(value: float, text: str) -> None:
    assert format_float(value) == text


def test_printf_mistakes_print_as_go_prints_them() -> None:
    assert sprintf("%s %s", "a") == "a %!s(MISSING)"
    assert sprintf("%s", "a", 2) == "a%!(EXTRA int=2)"
    assert sprintf("%d", "a") == "%!d(string=a)"


def test_to_yaml_writes_yaml_v3_with_sorted_keys() -> None:
    value = {"z": [1, {"b": "x", "a": ["p"]}, [1, 2], [], {}], "a": {"text": "one\ntwo\n", "lead": "\n x",
                                                                   "t": "yes", "num": "123", "colon": "a: b",
                                                                   "tab": "a\tb", "y": None}}
    assert goyaml.marshal(value) == (
        'a:\n  colon: \'a: b\'\n  lead: |2-\n     x\n  num: "123"\n  t: "yes"\n  tab: "a\\tb"\n'
        '  text: |\n    one\n    two\n  "y": null\n'
        'z:\n  - 1\n  - a:\n      - p\n    b: x\n  - - 1\n    - 2\n  - []\n  - {}\n')


HOOKED = """\
# header
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  annotations:
    helm.sh/hook: pre-install,post-delete
    helm.sh/hook-weight: "5"
---
# only a comment
---
apiVersion: v1
kind: Secret
metadata:
  name: b
  annotations:
    helm.sh/hook: " post-install , post-upgrade "
    helm.sh/hook-delete-policy: before-hook-creation
    keep: "true"
---
~
"""


def test_hooks_sync_phases_go_delete_phases_stay() -> None:
    assert strip_hooks(HOOKED, "x.yaml") == """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  annotations:
    helm.sh/hook: post-delete
    helm.sh/hook-weight: "5"
---
apiVersion: v1
kind: Secret
metadata:
  name: b
  annotations:
    keep: "true"
"""


def test_hooks_text_without_documents_is_returned_unchanged() -> None:
    assert strip_hooks("# only\n---\n", "x.yaml") == "# only\n---\n"
    with pytest.raises(InvalidInputError, match=r"x\.yaml:2: the rendered manifest is not valid YAML"):
        strip_hooks("a: 1\n b: [\n", "x.yaml")


def test_a_manifest_with_no_object_left_is_not_written() -> None:
    target = RenderInput("c", "ns", "", "", {"on": False})
    text = b'# license\n{{- if (index .Values "c").on }}\nkind: A\n{{- end }}\n'
    assert render_manifest(text, "t.yaml", target) is None
    assert render_manifest(text, "t.yaml", target._replace(values={"on": True})) == b"kind: A\n"


def test_every_manifest_of_both_catalogs_parses() -> None:
    folders = [ROOT / "overlays" / "components", AICR_CATALOG / "components"]
    files = [path for folder in folders if folder.is_dir() for path in sorted(folder.glob("*/manifests/*.yaml"))]
    assert files
    for path in files:
        gotemplate.parse(path.read_text(), str(path), FUNCS)


def test_our_overlay_manifests_render_with_their_values() -> None:
    for path in sorted((ROOT / "overlays" / "components").glob("*/manifests/*.yaml")):
        component = path.parent.parent.name
        values = yaml.load((path.parent.parent / "values.yaml").read_text(), Loader=LOADER) or {}
        rendered = render_manifest(path.read_bytes(), str(path), RenderInput(component, "ns", component, "1.0",
                                                                              values))
        assert rendered is not None and b"{{" not in rendered, path


# ---------------------------------------------------------------------------------------------------- oracle

SELECTORS = ("--accelerated-node-toleration", "nvidia.com/gpu=present:NoSchedule",
             "--accelerated-node-selector", "nodeGroup=gpu-nodes", "--workload-selector", "app=train")


@pytest.fixture(scope="session")
def aicr_bin(aicr: Path) -> str:
    """AICR's Go binary (the shared ``aicr`` fixture), as a command word."""
    return str(aicr)


@pytest.fixture(scope="session")
def aicr_bundles(aicr_bin: str, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path]]:
    """(leaf/variant, folder) of AICR's ``bundle -d helm`` output for every leaf AICR bundles, its recipe.yaml
    beside the folder."""
    listed = run_process("recipe", "list", "--catalog", str(AICR_CATALOG), "--format", "json")
    assert listed.code == 0, listed.err
    root = tmp_path_factory.mktemp("aicr-oracle")

    def bundle(index: int, leaf: dict[str, Any]) -> tuple[str, Path] | None:
        criteria = [arg for key, value in leaf["criteria"].items() for arg in (f"--{key}", value)]
        folder = root / leaf["name"]
        folder.mkdir()
        made = subprocess.run([aicr_bin, "recipe", *criteria, "-o", str(folder / "recipe.yaml")],
                              capture_output=True, check=False)
        if made.returncode:  # a leaf AICR cannot resolve alone (monitoring-hpa: intent any only)
            return None
        # every other leaf with node selectors and tolerations (which the templates write with toYaml); AKS
        # refuses the defaults' wildcard toleration, so it always gets them
        variants = [("defaults", ()), ("selectors", SELECTORS)]
        for variant, extra in variants[index % 2:]:
            done = subprocess.run([aicr_bin, "bundle", "-r", str(folder / "recipe.yaml"), "-d", "helm",
                                   "-o", str(folder / variant), *extra], capture_output=True, check=False)
            if done.returncode == 0:
                return f"{leaf['name']}/{variant}", folder / variant
        return None

    from concurrent.futures import ThreadPoolExecutor

    leaves = json.loads(listed.out)
    with ThreadPoolExecutor(max_workers=4) as pool:  # the binary mostly waits: run a few at once
        return [pair for pair in pool.map(bundle, range(len(leaves)), leaves) if pair is not None]


def _documents(text: str) -> list[Any]:
    """The documents' data, read alike on both sides (yaml-rs when installed: the CRDs are large)."""
    try:
        from yaml_rs import loads
    except ImportError:
        return [doc for doc in yaml.load_all(text, Loader=LOADER) if doc is not None]
    docs = loads(text, parse_datetime=False)
    return [doc for doc in (docs if isinstance(docs, list) and text.count("\n---") else [docs]) if doc is not None]


def _without_comments(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip() and not line.lstrip().startswith("#")]


@needs(AICR_CATALOG)
def test_manifests_render_as_aicr_renders_them(aicr_bundles: list[tuple[str, Path]]) -> None:
    """Every templates/*.yaml AICR wrote into a local chart is what render_manifest makes of the catalog file
    with the values AICR used (the folder's values.yaml): the same data, written the same way apart from the
    comments yaml.v3 keeps; and every manifest AICR skipped as empty renders to None."""
    compared = skipped = 0
    problems: list[str] = []
    for name, bundle in aicr_bundles:
        recipe = yaml.load((bundle.parent / "recipe.yaml").read_text(), Loader=LOADER)
        refs = {ref["name"]: ref for ref in recipe["componentRefs"]}
        for folder in sorted(path for path in bundle.iterdir() if (path / "Chart.yaml").exists()):
            unit = folder.name[4:]
            component = next((unit.removesuffix(s) for s in ("-pre", "-post") if unit.removesuffix(s) in refs
                              and unit.endswith(s)), unit)
            ref = refs[component]
            if unit == component and ref.get("source"):
                continue  # an upstream chart: AICR renders none of its templates
            files = ref.get("preManifestFiles" if unit.endswith("-pre") and unit != component else "manifestFiles",
                            [])
            values = yaml.load((folder / "values.yaml").read_text(), Loader=LOADER) or {}
            target = RenderInput(component, ref.get("namespace", ""), ref.get("chart") or component,
                                 str(ref.get("version", "")), values)
            for rel in files:
                got = render_manifest((AICR_CATALOG / rel).read_bytes(), rel, target)
                written = folder / "templates" / Path(rel).name
                where = f"{name}: {folder.name}/templates/{written.name}"
                if got is None:
                    skipped += 1
                    if written.exists():
                        problems.append(f"{where}: AICR wrote it, we render nothing")
                    continue
                if not written.exists():
                    problems.append(f"{where}: AICR wrote nothing, we render objects")
                    continue
                compared += 1
                want = written.read_text()
                if _documents(got.decode()) != _documents(want):
                    problems.append(f"{where}: different data")
                elif _without_comments(got.decode()) != _without_comments(want):
                    problems.append(f"{where}: same data, written differently")
    assert not problems, "\n".join(problems)
    assert len(aicr_bundles) >= 40 and compared >= 100 and skipped >= 1, (len(aicr_bundles), compared, skipped)
