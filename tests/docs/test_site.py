"""The docs site builds clean: ``mkdocs build --strict`` (every warning fails it: a page out of the nav, a link or
an anchor that leads nowhere), every page in the nav, Mermaid fenced for mkdocs-material to draw, the generated
reference holding every command of ``aicr_gen/cli/table.py`` and every schema kind, and the README's links into
the docs landing on a page and a heading that exist."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aicr_gen.cli.table import COMMANDS, build_parser, walk
from aicr_gen.commands.schema import KINDS, schema_of
from tests.conftest import ROOT

DOCS = ROOT / "docs"
GENERATED = {"reference/commands.md", "reference/schemas.md"}  # made by docs/hooks.py while the site builds


def _page(site: Path, page: str) -> str:
    """The HTML mkdocs wrote for ``page`` (a path under docs/), with its directory URLs."""
    stem = page.removesuffix(".md")
    folder = site if stem == "index" else site / stem.removesuffix("/index")
    return (folder / "index.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed: pip install -e '.[test]' (it is in the test extra)")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's notice about its successor
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    return out


def _nav_pages(nav: object) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from _nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _nav_pages(value)


def test_every_page_is_in_the_nav_once(site: Path) -> None:
    from mkdocs.config import load_config

    config = load_config(config_file=str(ROOT / "mkdocs.yml"))
    nav = list(_nav_pages(config["nav"]))
    assert len(nav) == len(set(nav)), nav
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert set(nav) == pages | GENERATED
    for page in nav:
        assert "<h1" in _page(site, page), page


def test_mermaid_survives_for_the_theme_to_draw(site: Path) -> None:
    for page in ("concepts.md", "architecture.md"):
        assert '<pre class="mermaid"><code>flowchart' in _page(site, page), page


def test_the_command_reference_holds_every_command_and_its_help(site: Path) -> None:
    text = _page(site, "reference/commands.md")
    paths = [path for path, _parser in walk(build_parser())]
    assert {path[0] for path in paths if path} == {name for name, _help, _module in COMMANDS}
    for path in paths:
        name = " ".join(("aicr-gen", *path))
        assert f'id="{name.replace(" ", "-")}"' in text, name
        assert html.escape(f"usage: {name}", quote=False) in text, name
    assert html.escape("--output FILE, -o FILE", quote=False) in text  # an option's line of `schema`, as printed


def test_the_schema_reference_holds_every_kind_and_its_file(site: Path) -> None:
    text = _page(site, "reference/schemas.md")
    for kind in KINDS:
        assert f'id="{kind}"' in text, kind
        assert f'href="{kind}.json"' in text or f'href="../schemas/{kind}.json"' in text, kind
        written = json.loads((site / "reference" / "schemas" / f"{kind}.json").read_text(encoding="utf-8"))
        assert written == schema_of(kind), kind


def test_the_readme_links_land_on_a_page_and_a_heading(site: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#([^)\s]+))?\)", readme)
    assert {"docs/index.md", "docs/concepts.md", "docs/examples.md", "docs/architecture.md"} <= {p for p, _ in links}
    for path, anchor in links:
        assert (ROOT / path).is_file(), path
        if anchor:
            assert f'id="{anchor}"' in _page(site, path.removeprefix("docs/")), f"{path}#{anchor}"
