"""The modules of the quick commands handle paths with ``os`` (pathlib costs ~8 ms to import): they name, split
and create paths as the pathlib code before them did."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aicr_gen.edges import cache
from aicr_gen.edges.output import write_text
from aicr_gen.text.paths import as_pathlib

SHAPES = ["a", "a/", "./a", "a/./b/", "/", "/a/b/", ".", "./", "", "a//b", "../x", "x/../y", "a/b/.", "./a/./b",
          "/.", "a/.."]


@pytest.mark.parametrize("text", SHAPES)
def test_paths_are_written_as_pathlib_writes_them(text: str) -> None:
    assert as_pathlib(text) == str(Path(text))


@pytest.mark.parametrize("name", ["new/sub/./f.yaml", "new/sub/f.yaml", "./new/f.yaml", "new/f.yaml/.", "f.yaml",
                                  "new//f.yaml"])
def test_a_file_lands_where_pathlib_put_it(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_text(name, "x: 1\n")
    written = tmp_path / Path(name)
    assert written.read_text() == "x: 1\n"
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.is_file()) == \
        [str(written.relative_to(tmp_path))]


def test_no_home_folder_means_no_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AICR_GEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # what it gives without $HOME or a passwd entry
    assert cache.folder() is None
    cache.put("k" * 64, {"a": 1})
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.folder() == str(tmp_path / "xdg" / "aicr-gen")


@pytest.mark.parametrize("root", [".", "/", "/a", "a/b", "..", "../a"])
def test_catalog_files_are_named_as_pathlib_joins_them(root: str) -> None:
    from aicr_gen.catalog.load import _join

    assert _join(root, "components/x/values.yaml") == str(Path(root) / "components/x/values.yaml")
