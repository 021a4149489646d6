"""``scripts/corpus.py``, the byte-identity corpus: on one leaf of the embedded catalog, two runs give the same
manifest, and ``--compare`` names a changed byte and a missing file (exit 1) but passes a corpus against
itself (exit 0)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEAF = "leaf/embedded/h100-kind-ubuntu-inference-dynamo"


def corpus(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "scripts/corpus.py"), *args], capture_output=True,
                          text=True, env=env, check=False)


def test_two_runs_are_identical_and_compare_finds_a_changed_byte(tmp_path: Path) -> None:
    for name in ("a", "b"):
        run = corpus("--out", str(tmp_path / name), "--only", LEAF, "--shared", str(tmp_path / "no-shared"),
                     "--jobs", "2")
        assert run.returncode == 0, run.stderr
        assert "1 scenarios, 13 commands" in run.stdout
    manifest = (tmp_path / "a/MANIFEST").read_text()
    assert manifest == (tmp_path / "b/MANIFEST").read_text()
    paths = [line.split("  ", 1)[1] for line in manifest.splitlines()]
    assert paths == sorted(paths)
    assert f"{LEAF}/01-recipe.exit" in paths
    assert f"{LEAF}/04-bundle-helm.stderr" in paths
    assert f"{LEAF}/05-bundle-helm/checksums.txt" in paths
    assert (tmp_path / f"a/{LEAF}/06-verify-helm.exit").read_text() == "0\n"

    same = corpus("--compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert (same.returncode, same.stdout.splitlines()[-1]) == (0, f"{len(paths)} vs {len(paths)} entries: "
                                                                   "0 differ, 0 only in A, 0 only in B")

    readme, gone = f"{LEAF}/05-bundle-helm/README.md", f"{LEAF}/04-bundle-helm.stderr"
    data = bytearray((tmp_path / "b" / readme).read_bytes())
    data[-2] ^= 1
    (tmp_path / "b" / readme).write_bytes(bytes(data))
    (tmp_path / "b" / gone).unlink()
    lines = [f"{hashlib.sha256(data).hexdigest()}  {readme}" if line.endswith(f"  {readme}") else line
             for line in manifest.splitlines() if not line.endswith(f"  {gone}")]
    (tmp_path / "b/MANIFEST").write_text("\n".join(lines) + "\n")
    differ = corpus("--compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert differ.returncode == 1
    assert f"differs: {LEAF}/05-bundle-helm/README.md" in differ.stdout
    assert f"only in {tmp_path / 'a'}: {LEAF}/04-bundle-helm.stderr" in differ.stdout
    assert "1 differ, 1 only in A, 0 only in B" in differ.stdout
