"""Interrupted and concurrent syncs (issue 24): real ``aicr-gen sync`` processes stopped by real signals at every
step (``AICR_GEN_TEST_PAUSE_AT``, see ``aicr_gen.gitops.commit.journal``), two syncs racing for one branch, git's own
index lock held, a full disk (a small tmpfs), a read-only repository or folder (read-only mounts), a folder even
root cannot write (``chattr +i``), a repository another user owns and a machine with no git identity. After
each: the exit code and message, and the repository consistent — as before, or at the new commit with its index
and files, or finished by the next sync without --force — with the user's own files untouched.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from tests.conftest import ROOT, Result
from tests.gitops.test_sync import EXAMPLE, MANAGED

SPEC = "specs/cluster.yaml"
RECORD = f".aicr-gen/inputs/{MANAGED}.json"
MANAGED_PATHS = (MANAGED, ".aicr-gen")
STEPS_BEFORE = ("committed",)
"""Steps before the critical section: the branch has not moved."""
STEPS_CRITICAL = ("locked", "recorded", "moved", "indexed", "temporary", "writing", "written")
"""Steps inside it, in order: the branch moves between 'recorded' and 'moved'."""
TIMEOUT = 30


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=check, capture_output=True, text=True).stdout


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    proc = subprocess.run([sys.executable, "-m", "aicr_gen", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=ROOT, check=False, timeout=120)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def changed_spec() -> str:
    """The example spec with a change that modifies and deletes files of its tree."""
    data = yaml.safe_load(EXAMPLE.read_text())
    data["spec"]["sentinel"]["dryRun"] = True
    del data["spec"]["certification"]
    return yaml.safe_dump(data)


class Template(NamedTuple):
    repo: Path
    tree: str
    """The tree of the commit an uninterrupted sync of the changed spec makes."""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """A repository holding the example spec and its synced tree; the tree syncing the changed spec gives."""
    repo = tmp_path_factory.mktemp("template") / "gitops"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("hello\n")
    (repo / SPEC).parent.mkdir()
    (repo / SPEC).write_text(EXAMPLE.read_text())
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    assert run("sync", str(repo / SPEC), "--repo", str(repo)).code == 0
    reference = tmp_path_factory.mktemp("reference") / "gitops"
    shutil.copytree(repo, reference, symlinks=True)
    (reference / SPEC).write_text(changed_spec())
    assert run("sync", str(reference / SPEC), "--repo", str(reference)).code == 0
    return Template(repo, git(reference, "rev-parse", "HEAD^{tree}").strip())


class Case(NamedTuple):
    repo: Path
    base: str
    status: str
    """``git status`` before the interrupted sync."""
    tree: str


def case(template: Template, folder: Path) -> Case:
    """A copy of the template with the spec changed and the user's own files: one untracked, one staged."""
    repo = folder / "gitops"
    shutil.copytree(template.repo, repo, symlinks=True)
    (repo / SPEC).write_text(changed_spec())
    (repo / "notes.txt").write_text("mine, untracked\n")
    (repo / "staged.txt").write_text("mine, staged\n")
    git(repo, "add", "staged.txt")
    return Case(repo, head(repo), status(repo), template.tree)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def status(repo: Path) -> str:
    return git(repo, "status", "--porcelain", "--untracked-files=all")


def start(spec: Path, repo: Path, step: str, marker: Path, *extra: str) -> subprocess.Popen[str]:
    """A sync that pauses at ``step`` (in its own process group, as a terminal's foreground job is)."""
    env = {**os.environ, "AICR_GEN_TEST_PAUSE_AT": step, "AICR_GEN_TEST_PAUSE_FILE": str(marker)}
    return subprocess.Popen([sys.executable, "-m", "aicr_gen", "sync", str(spec), "--repo", str(repo), *extra],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            process_group=0)


def paused(proc: subprocess.Popen[str], marker: Path) -> None:
    """Wait (bounded) until the sync reached its pause step."""
    deadline = time.monotonic() + TIMEOUT
    while not marker.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the sync ended (exit {proc.returncode}) before its pause step: {out}{err}")
        assert time.monotonic() < deadline, "the sync never reached its pause step"
        time.sleep(0.01)


def killed_at(item: Case, folder: Path, step: str) -> None:
    """A sync of the case's spec stopped by SIGKILL at ``step``."""
    proc = start(item.repo / SPEC, item.repo, step, folder / "paused")
    paused(proc, folder / "paused")
    proc.kill()
    assert proc.wait(TIMEOUT) == -signal.SIGKILL


def finish(proc: subprocess.Popen[str]) -> Result:
    out, err = proc.communicate(timeout=TIMEOUT)
    return Result(proc.returncode, out, err)


def assert_clean(result: Result) -> None:
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err


def assert_consistent(item: Case, *, moved: bool | None = None) -> None:
    """The repository as before the sync, or at its one new commit with a matching index and work tree; the
    user's files untouched; nothing of the sync's own left in the git folder or the work tree."""
    repo = item.repo
    now = head(repo)
    if moved is not None:
        assert (now != item.base) == moved
    if now != item.base:
        assert git(repo, "rev-list", "--count", f"{item.base}..HEAD").strip() == "1"
        assert git(repo, "rev-parse", "HEAD^{tree}").strip() == item.tree
        assert status(repo) == "A  staged.txt\n?? notes.txt\n"
    else:
        assert status(repo) == item.status
    assert git(repo, "diff-index", "--cached", "HEAD", "--", *MANAGED_PATHS) == ""
    assert git(repo, "diff-files", "--", *MANAGED_PATHS) == ""
    assert (repo / "notes.txt").read_text() == "mine, untracked\n"
    assert (repo / "staged.txt").read_text() == "mine, staged\n"
    assert not (repo / ".git" / "aicr-gen-sync").exists()
    assert not list(repo.rglob(".aicr-gen-tmp-*"))
    subprocess.run(["git", "-C", str(repo), "fsck", "--no-dangling", "--no-progress"], check=True,
                   capture_output=True)


def sync_again(item: Case, *extra: str) -> Result:
    result = run("sync", str(item.repo / SPEC), "--repo", str(item.repo), *extra)
    assert result.code == 0, result
    assert_clean(result)
    assert_consistent(item, moved=True)
    return result


# ------------------------------------------------------------------------------------------ signals


@pytest.mark.parametrize("step", STEPS_BEFORE + STEPS_CRITICAL)
def test_sigkill_at_any_step_is_finished_by_the_next_sync_without_force(template: Template, tmp_path: Path,
                                                                        step: str) -> None:
    item = case(template, tmp_path)
    killed_at(item, tmp_path, step)
    journal = item.repo / ".git" / "aicr-gen-sync"
    moved = step not in {*STEPS_BEFORE, "locked", "recorded"}
    assert (head(item.repo) != item.base) == moved
    assert journal.exists() == (moved or step == "recorded")
    if step == "temporary":  # killed between writing a file beside its target and renaming it: never half a file
        assert list(item.repo.rglob(".aicr-gen-tmp-*"))
    if step == "moved":  # what used to be left: HEAD on the new commit, index and files of the old one
        assert git(item.repo, "diff-index", "--cached", "--name-only", "HEAD", "--", MANAGED)
    result = sync_again(item)
    if moved:
        assert "finished an interrupted sync" in result.out
        assert "up to date" in result.out
    else:
        assert "committed" in result.out


def test_a_fleet_sync_killed_while_writing_is_finished(tmp_path: Path) -> None:
    """Many trees in one commit (a fleet-wide pin bump): killed half-way through the files, finished by the next
    sync of the same specs."""
    from tests.gitops.test_sync_specs import bump, fleet_repo

    repo = fleet_repo(tmp_path / "gitops", 4)
    specs = repo / "specs" / "*.yaml"
    assert run("sync", str(specs), "--repo", str(repo)).code == 0
    base = head(repo)
    bump(repo)
    proc = start(specs, repo, "writing", tmp_path / "paused")
    paused(proc, tmp_path / "paused")
    proc.kill()
    proc.wait(TIMEOUT)
    assert head(repo) != base and git(repo, "diff", "--name-only", "HEAD")  # what used to be left
    again = run("sync", str(specs), "--repo", str(repo))
    assert again.code == 0, again
    assert "finished an interrupted sync" in again.out and "every tree is up to date" in again.out
    assert git(repo, "rev-list", "--count", f"{base}..HEAD").strip() == "1"
    assert status(repo) == ""
    assert not list(repo.rglob(".aicr-gen-tmp-*"))
    subprocess.run(["git", "-C", str(repo), "fsck", "--no-dangling", "--no-progress"], check=True, capture_output=True)


def test_a_recovery_killed_half_way_is_finished_by_the_next(template: Template, tmp_path: Path) -> None:
    """Finishing is itself restartable: the journal stays until the index and files follow the branch."""
    item = case(template, tmp_path)
    killed_at(item, tmp_path, "moved")
    (tmp_path / "again").mkdir()
    killed_at(item, tmp_path / "again", "writing")  # in the recovery's own writing of the files
    assert (item.repo / ".git" / "aicr-gen-sync").exists()
    assert "finished an interrupted sync" in sync_again(item).out


def test_sync_repair_alone_finishes_it(template: Template, tmp_path: Path) -> None:
    item = case(template, tmp_path)
    killed_at(item, tmp_path, "writing")
    result = run("sync", "--repair", "--repo", str(item.repo))
    assert result.code == 0, result
    assert result.out.startswith("aicr-gen: finished an interrupted sync: the index and files follow refs/heads/main")
    assert_consistent(item, moved=True)
    assert run("sync", "--repair", "--repo", str(item.repo)).out == "aicr-gen: no interrupted sync to finish\n"
    assert "up to date" in sync_again(item).out
    assert run("sync", str(item.repo / SPEC), "--repo", str(item.repo), "--check").code == 0


@pytest.mark.parametrize("step", ["committed", "recorded", "moved", "temporary", "written"])
def test_sigterm_is_deferred_until_the_repository_is_consistent(template: Template, tmp_path: Path,
                                                                step: str) -> None:
    item = case(template, tmp_path)
    proc = start(item.repo / SPEC, item.repo, step, tmp_path / "paused")
    paused(proc, tmp_path / "paused")
    proc.send_signal(signal.SIGTERM)
    result = finish(proc)
    assert result.code == -signal.SIGTERM
    assert_clean(result)
    if step in STEPS_BEFORE:  # outside the critical section: it stops at once, nothing changed
        assert result.err == ""
        assert_consistent(item, moved=False)
        sync_again(item)
        return
    assert result.err == ("aicr-gen: SIGTERM arrived while committing; waited until the repository was consistent "
                          f"(refs/heads/main is at the new commit {head(item.repo)[:12]}, and so are its index and "
                          "files); stopping\n")
    assert_consistent(item, moved=True)
    assert "up to date" in sync_again(item).out


def test_a_push_stopped_by_sigterm_is_made_by_the_next_sync(template: Template, tmp_path: Path) -> None:
    item = case(template, tmp_path)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(item.repo, "remote", "add", "origin", str(remote))
    git(item.repo, "push", "-q", "origin", "main")
    proc = start(item.repo / SPEC, item.repo, "written", tmp_path / "paused", "--push")
    paused(proc, tmp_path / "paused")
    proc.send_signal(signal.SIGTERM)
    assert finish(proc).code == -signal.SIGTERM
    assert git(remote, "rev-parse", "main").strip() == item.base  # stopped after committing, before pushing
    assert "up to date" in sync_again(item, "--push").out
    assert git(remote, "rev-parse", "main").strip() == head(item.repo) != item.base


@pytest.mark.parametrize("step", ["committed", "writing"])
def test_ctrl_c_to_the_process_group(template: Template, tmp_path: Path, step: str) -> None:
    """A terminal's ^C reaches the whole foreground process group."""
    item = case(template, tmp_path)
    proc = start(item.repo / SPEC, item.repo, step, tmp_path / "paused")
    paused(proc, tmp_path / "paused")
    os.killpg(proc.pid, signal.SIGINT)
    result = finish(proc)
    assert result.code == 130, result
    assert_clean(result)
    assert result.err.endswith("aicr-gen: interrupted\n")
    assert_consistent(item, moved=step != "committed")
    sync_again(item)


def test_ctrl_c_while_git_writes_the_index_does_not_kill_git(template: Template, tmp_path: Path) -> None:
    """The git commands of the critical section inherit the blocked signals: a ^C to the process group while
    ``update-index`` runs reaches neither it nor aicr-gen until the repository is consistent."""
    item = case(template, tmp_path)
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    marker = tmp_path / "in-update-index"
    real = shutil.which("git") or "git"
    (wrappers / "git").write_text(  # Python, as a shell would unblock the signals it inherits
        f"#!{sys.executable} -S\n"
        "import os, sys, time\n"
        "if 'GIT_INDEX_FILE' not in os.environ and sys.argv[1:4] == ['update-index', '-z', '--index-info']:\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        f"    while os.path.exists({str(marker)!r}):\n"
        "        time.sleep(0.01)\n"
        f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n")
    (wrappers / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{wrappers}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen([sys.executable, "-m", "aicr_gen", "sync", str(item.repo / SPEC), "--repo",
                             str(item.repo)], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, process_group=0)
    paused(proc, marker)
    os.killpg(proc.pid, signal.SIGINT)
    marker.unlink()  # git goes on (a git killed by the ^C would never see this)
    result = finish(proc)
    assert result.code == 130, result
    assert "SIGINT arrived while committing" in result.err
    assert_consistent(item, moved=True)


# ---------------------------------------------------------------------------------------- races


def race(item: Case, folder: Path, first_step: str, second_step: str) -> tuple[Result, Result]:
    """A paused at ``first_step`` (holding the lock), then B at ``second_step``; B goes on first, then A."""
    first = start(item.repo / SPEC, item.repo, first_step, folder / "a")
    paused(first, folder / "a")
    second = start(item.repo / SPEC, item.repo, second_step, folder / "b")
    paused(second, folder / "b")
    (folder / "b").unlink()
    (folder / "a").unlink()
    won = finish(first)
    assert won.code == 0, won
    return won, finish(second)


def test_two_syncs_the_loser_says_the_branch_moved(template: Template, tmp_path: Path) -> None:
    """B read the branch before A committed, then waits for A's critical section: it loses, with exit 3."""
    item = case(template, tmp_path)
    _won, lost = race(item, tmp_path, "locked", "committed")
    assert lost.code == 3, lost
    assert_clean(lost)
    assert lost.err == (f"aicr-gen: error: refs/heads/main moved while syncing (another sync, or a commit?): it was "
                        f"at {item.base[:12]} and is at {head(item.repo)[:12]} now; nothing was changed: rerun the "
                        "sync\n")
    assert_consistent(item, moved=True)


def test_a_sync_started_during_another_ones_critical_section_waits_for_it(template: Template,
                                                                          tmp_path: Path) -> None:
    """B starts while A's index has moved but its files have not: B never takes A's half-moved files for
    uncommitted changes; it waits for A, then finds its tree up to date."""
    item = case(template, tmp_path)
    _won, waited = race(item, tmp_path, "indexed", "waiting")  # B paused while waiting for the lock A holds
    assert waited.code == 0, waited
    assert "up to date" in waited.out
    assert_consistent(item, moved=True)


def test_a_commit_while_the_journal_is_written_makes_the_sync_lose(template: Template, tmp_path: Path) -> None:
    """The ref moves between the sync's last look and its update-ref: update-ref's old value refuses it."""
    item = case(template, tmp_path)
    proc = start(item.repo / SPEC, item.repo, "recorded", tmp_path / "paused")
    paused(proc, tmp_path / "paused")
    theirs = git(item.repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "someone else's commit").strip()
    git(item.repo, "update-ref", "refs/heads/main", theirs)
    (tmp_path / "paused").unlink()
    result = finish(proc)
    assert result.code == 3, result
    assert "refs/heads/main moved while syncing" in result.err and "rerun the sync" in result.err
    assert head(item.repo) == theirs
    assert status(item.repo) == item.status
    assert not (item.repo / ".git" / "aicr-gen-sync").exists()


def test_a_branch_created_meanwhile_makes_a_branch_sync_lose(template: Template, tmp_path: Path) -> None:
    item = case(template, tmp_path)
    proc = start(item.repo / SPEC, item.repo, "committed", tmp_path / "paused", "--branch", "update")
    paused(proc, tmp_path / "paused")
    git(item.repo, "branch", "update")
    (tmp_path / "paused").unlink()
    result = finish(proc)
    assert result.code == 3, result
    assert "refs/heads/update moved while syncing" in result.err
    assert f"it was absent and is at {item.base[:12]} now" in result.err
    assert head(item.repo) == git(item.repo, "rev-parse", "update").strip() == item.base


def test_user_changes_after_a_kill_are_never_touched(template: Template, tmp_path: Path) -> None:
    item = case(template, tmp_path)
    killed_at(item, tmp_path, "moved")
    values = item.repo / MANAGED / "sentinel" / "values.yaml"  # changed by the commit
    values.write_text("# mine now\n")
    result = run("sync", str(item.repo / SPEC), "--repo", str(item.repo))
    assert result.code == 1, result  # the recovery left it, and the sync refuses to overwrite it without --force
    assert f"left 1 file(s) changed since: {MANAGED}/sentinel/values.yaml" in result.out
    assert f"{MANAGED}/sentinel/values.yaml" in result.err and "--force" in result.err
    assert values.read_text() == "# mine now\n"
    git(item.repo, "checkout", "--", str(values))
    assert "up to date" in sync_again(item).out


@pytest.mark.parametrize("left", [
    ("index.lock", "", 3, "{repo}: another git process is writing the repository (it holds {path}); rerun when it "
                          "is done, or remove that file if no git process is running"),
    ("aicr-gen-sync", "{{not json", 2, "{path}: an interrupted sync's journal that does not parse (not written by "
                                       "this aicr-gen?); check 'git status', then remove the file"),
])
def test_a_file_left_in_the_git_folder_is_named(template: Template, tmp_path: Path,
                                                left: tuple[str, str, int, str]) -> None:
    """git's index lock held by another process (exit 3: rerun), or a journal that is not ours (exit 2)."""
    name, content, code, says = left
    item = case(template, tmp_path)
    path = item.repo / ".git" / name
    path.write_text(content.format())
    result = run("sync", str(item.repo / SPEC), "--repo", str(item.repo))
    assert result.code == code, result
    assert result.err == f"aicr-gen: error: {says.format(repo=item.repo, path=path)}\n"
    path.unlink()
    assert_consistent(item, moved=False)
    sync_again(item)


# ------------------------------------------------------------------------------- full disk, read-only


def mount(*args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if proc.returncode:
        pytest.skip(f"mount {' '.join(args)} failed ({proc.stderr.strip()}): these cases need root and mount(8)")


@pytest.fixture
def mounts() -> Iterator[list[Path]]:
    """Mount points to unmount after the test (last first)."""
    if os.geteuid() != 0:
        pytest.skip("a real full disk, read-only mounts, immutable folders and other owners need root (mount -t "
                    "tmpfs, mount --bind -o ro, chattr +i, chown)")
    points: list[Path] = []
    yield points
    for point in reversed(points):
        subprocess.run(["umount", "-l", str(point)], check=False, capture_output=True)


def on_tmpfs(template: Template, folder: Path, mounts: list[Path], size: str) -> Case:
    folder.mkdir()
    mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
    mounts.append(folder)
    return case(template, folder)


def fill(folder: Path) -> Path:
    """Fill the file system of ``folder`` until not one more byte fits."""
    filler = folder / "filler"
    handle = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    os.write(handle, b"\0" * size)
            except OSError as err:
                assert err.errno == errno.ENOSPC
    finally:
        os.close(handle)
    return filler


def read_only(folder: Path, mounts: list[Path]) -> None:
    mount("--bind", str(folder), str(folder))
    mounts.append(folder)
    mount("-o", "remount,bind,ro", str(folder))


def test_disk_full_before_the_sync(template: Template, tmp_path: Path, mounts: list[Path]) -> None:
    item = on_tmpfs(template, tmp_path / "disk", mounts, "16m")
    filler = fill(tmp_path / "disk")
    result = run("sync", str(item.repo / SPEC), "--repo", str(item.repo))
    assert result.code == 2, result
    assert_clean(result)
    assert result.err.startswith(f"aicr-gen: error: {item.repo}: no space left on the device (or quota exceeded); "
                                 "free some space and rerun (git: ")
    assert "\n" not in result.err.rstrip("\n")
    filler.unlink()
    assert_consistent(item, moved=False)
    sync_again(item)


def test_disk_full_while_writing_files(template: Template, tmp_path: Path, mounts: list[Path]) -> None:
    """The disk fills up after the branch moved: the sync cannot even roll back; it says so, and once there is
    space, --repair finishes it."""
    item = on_tmpfs(template, tmp_path / "disk", mounts, "16m")
    proc = start(item.repo / SPEC, item.repo, "writing", tmp_path / "paused")
    paused(proc, tmp_path / "paused")
    filler = fill(tmp_path / "disk")
    (tmp_path / "paused").unlink()
    result = finish(proc)
    assert result.code == 2, result
    assert_clean(result)
    assert "no space left on the device" in result.err
    assert f"run 'aicr-gen sync --repair --repo {item.repo}' to finish it" in result.err
    filler.unlink()
    repaired = run("sync", "--repair", "--repo", str(item.repo))
    assert repaired.code == 0, repaired
    assert "an interrupted sync" in repaired.out
    sync_again(item)


def test_read_only_repository(template: Template, tmp_path: Path, mounts: list[Path]) -> None:
    """A read-only checkout: a sync with nothing to commit is up to date; one with changes says why it cannot
    (nothing changed)."""
    item = case(template, tmp_path)
    (item.repo / SPEC).write_text(EXAMPLE.read_text())
    read_only(item.repo, mounts)
    same = run("sync", str(item.repo / SPEC), "--repo", str(item.repo))
    assert same.code == 0, same
    assert "up to date" in same.out
    subprocess.run(["umount", str(mounts.pop())], check=True)
    (item.repo / SPEC).write_text(changed_spec())
    read_only(item.repo, mounts)
    result = run("sync", str(item.repo / SPEC), "--repo", str(item.repo))
    assert result.code == 2, result
    assert_clean(result)
    assert result.err.startswith(f"aicr-gen: error: {item.repo}: the file system is read-only; sync needs a "
                                 "writable clone (")
    assert status(item.repo) == item.status and head(item.repo) == item.base


@pytest.mark.parametrize("how", ["read-only mount", "immutable folder"])
def test_an_unwritable_managed_folder_rolls_back(template: Template, tmp_path: Path, mounts: list[Path],
                                                 how: str) -> None:
    """The branch and index move, then a file cannot be written (EROFS, or EPERM even for root): all of it
    is moved back, with one message."""
    item = case(template, tmp_path)
    folder = item.repo / MANAGED / "sentinel"  # written after other files of the tree (sorted)
    if how == "read-only mount":
        read_only(folder, mounts)
    elif subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode:
        pytest.skip(f"chattr +i is not supported on the file system of {tmp_path}")
    try:
        result = run("sync", str(item.repo / SPEC), "--repo", str(item.repo))
    finally:
        if how == "immutable folder":
            subprocess.run(["chattr", "-i", str(folder)], check=True)
    assert result.code == 2, result
    assert_clean(result)
    fix = "the file system is read-only" if how == "read-only mount" else "permission denied; run as a user who can"
    assert result.err.startswith(f"aicr-gen: error: {item.repo}: {fix}")
    assert "--repair" not in result.err and "\n" not in result.err.rstrip("\n")
    assert_consistent(item, moved=False)


def test_a_repository_another_user_owns(template: Template, tmp_path: Path, mounts: list[Path]) -> None:
    """git's safe.directory rule, as CI containers meet it: one message with git's own way out."""
    item = case(template, tmp_path)
    subprocess.run(["chown", "-R", "65534:65534", str(item.repo)], check=True)
    result = run("sync", str(item.repo / SPEC), "--repo", str(item.repo), env={"GIT_CONFIG_GLOBAL": os.devnull})
    assert result.code == 2, result
    assert result.err == (f"aicr-gen: error: --repo {item.repo}: git refuses to work in {item.repo}, which another "
                          "user owns (safe.directory); if you trust it: git config --global --add safe.directory "
                          f"{item.repo}\n")


def test_killed_while_rolling_back_is_finished_later(template: Template, tmp_path: Path,
                                                     mounts: list[Path]) -> None:
    item = case(template, tmp_path)
    read_only(item.repo / MANAGED, mounts)
    killed_at(item, tmp_path, "rolling-back")
    subprocess.run(["umount", str(item.repo / MANAGED)], check=True)
    mounts.pop()
    assert "finished an interrupted sync" in sync_again(item).out


# ------------------------------------------------------------------------------------------ identity


def test_no_git_identity_is_refused_before_rendering(template: Template, tmp_path: Path) -> None:
    item = case(template, tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GIT_", "EMAIL", "XDG_CONFIG"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1")
    proc = subprocess.run([sys.executable, "-m", "aicr_gen", "sync", str(tmp_path / "no-such-spec.yaml"),
                           "--repo", str(item.repo)], capture_output=True, text=True, env=env, cwd=ROOT,
                          check=False, timeout=60)
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    assert proc.stderr.startswith("aicr-gen: error: git has no identity to commit as (")
    assert "git config --global user.name 'NAME'" in proc.stderr and "GIT_COMMITTER_EMAIL" in proc.stderr
    assert "no-such-spec" not in proc.stderr  # nothing was read before
    assert status(item.repo) == item.status and head(item.repo) == item.base
    git(item.repo, "config", "user.name", "Repo Owner")
    git(item.repo, "config", "user.email", "owner@example.com")
    proc = subprocess.run([sys.executable, "-m", "aicr_gen", "sync", str(item.repo / SPEC), "--repo",
                           str(item.repo)], capture_output=True, text=True, env=env, cwd=ROOT, check=False,
                          timeout=60)
    assert proc.returncode == 0, proc
    assert git(item.repo, "log", "-1", "--format=%an <%ae>").strip() == "Repo Owner <owner@example.com>"
