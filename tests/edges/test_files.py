"""One symlink-refusing walk (``edges/files.walk_entries``) under the catalog scan (links resolved, linked
folders not entered) and the output folder check (a link refused): each caller answers as it did at 3d48356."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aicr_gen.catalog.load import _scan
from aicr_gen.edges.files import walk_entries
from aicr_gen.edges.output import _existing
from aicr_gen.errors import InvalidInputError


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "top.yaml").write_text("x")
    (root / "a" / "one.yaml").write_text("x")
    (root / "a" / "b" / "two.yaml").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "three.yaml").write_text("x")
    (root / "linked").symlink_to(tmp_path / "outside")
    (root / "a" / "escape.yaml").symlink_to(tmp_path / "outside" / "three.yaml")
    (root / "a" / "inner.yaml").symlink_to(root / "top.yaml")
    os.mkfifo(root / "pipe")
    return root


def test_a_link_is_yielded_never_entered(tree: Path) -> None:
    found = {rel: entry.is_symlink() for rel, entry in walk_entries(str(tree))}
    assert found == {"top.yaml": False, "a": False, "a/one.yaml": False, "a/b": False, "a/b/two.yaml": False,
                     "linked": True, "a/escape.yaml": True, "a/inner.yaml": True, "pipe": False}


def test_the_catalog_scan_resolves_file_links_and_skips_folder_links(tree: Path) -> None:
    layer = _scan(str(tree))
    assert layer.files == {"top.yaml", "a/one.yaml", "a/b/two.yaml", "a/escape.yaml", "a/inner.yaml", "pipe"}
    assert layer.plain == {"top.yaml", "a/one.yaml", "a/b/two.yaml"}
    assert layer.escaping == {"a/escape.yaml": os.path.realpath(tree.parent / "outside" / "three.yaml")}


def test_the_output_folder_refuses_a_link(tree: Path) -> None:
    with pytest.raises(InvalidInputError, match=r": a symlink inside the output folder; remove it \(aicr-gen never "
                                                r"follows links there\)$"):
        _existing(str(tree))
    for link in ("linked", "a/escape.yaml", "a/inner.yaml"):
        (tree / link).unlink()
    files, folders = _existing(str(tree))
    assert folders == {"a", "a/b"}
    assert files == {rel: str(tree / rel) for rel in ("top.yaml", "a/one.yaml", "a/b/two.yaml", "pipe")}
