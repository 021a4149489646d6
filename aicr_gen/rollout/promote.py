"""``rollout advance`` and ``rollout rollback``: one commit that sets one wave's baseline in the fleet file and
syncs the fleet's trees with it (``sync_specs.commit_specs``), the evidence in its message.

Advance takes the step ``gates.status`` decides: the first wave behind the target gets the baseline of the wave
before it, only when every wave at the target passed every gate and the last of them soaked. Anything else
writes nothing: ``wait`` and ``complete`` are not errors, ``halt`` is (its reasons are the gates that failed).
Run again right after, it finds the moved wave not proven yet and waits: idempotent, and never two waves in one
run. The message lists each cluster's verdicts the step rests on and ends with the trailers ``Rollout-Fleet``,
``Rollout-Wave`` (the wave moved), ``Rollout-From`` and ``Rollout-Evidence`` (``sha256`` of those verdicts).

Rollback sets a wave's baseline back to what it was before the newest commit of the fleet file that changed it
(read from the file's history at HEAD, ``ROLLBACK_DEPTH`` commits at most), with the trailer
``Rollout-Rollback``. Rolling back the first wave moves the target itself, so ``advance`` then brings the waves
that had the new baseline back, wave by wave, through the same gates.

The fleet file is edited in place in the work tree (``yaml.edit``), which must hold it as HEAD does (no uncommitted
edit of it is ever committed or lost), and put back as it was when the commit is not made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_gen.errors import InvalidInputError

if TYPE_CHECKING:
    from aicr_gen.edges.git import Repo
    from aicr_gen.gitops.sync_specs import Outcome

ROLLBACK_DEPTH = 500
"""Commits of the fleet file's history ``rollback`` looks through."""


class Move(NamedTuple):
    """A wave set to a baseline: the wave's index and name, the value, the commit's title, preface and trailers."""

    position: int
    wave: str
    value: dict[str, Any]
    title: str
    preface: tuple[str, ...]
    trailers: tuple[str, ...]


def advance_move(fleet: str, fleet_name: str, waves: Sequence[Mapping[str, Any]],
                 document: Mapping[str, Any]) -> Move:
    """The move of an ``advance`` step (``document["next"]["action"] == "advance"``)."""
    from aicr_gen.rollout.gates import evidence_digest

    step = document["next"]
    index = next(number for number, wave in enumerate(waves) if wave["name"] == step["wave"])
    source = waves[index - 1]
    lines = [f"Rollout of fleet {fleet_name} ({fleet}): wave {step['wave']} gets the baseline of wave "
             f"{step['from']}, which every wave at it proved:"]
    for row in document["waves"]:
        if not row["atTarget"]:
            continue
        lines.append(f"- wave {row['name']}: {row['text']}")
        for item in row["clusters"]:
            lines.append(f"  - {item['name']}: " + "; ".join(f"{gate} {verdict['text']}"
                                                             for gate, verdict in item["gates"].items()))
    return Move(index, step["wave"], dict(source.get("spec") or {}),
                f"aicr-gen: rollout {fleet_name}: advance {step['wave']} (from {step['from']})", tuple(lines),
                (f"Rollout-Fleet: {fleet_name}", f"Rollout-Wave: {step['wave']}", f"Rollout-From: {step['from']}",
                 f"Rollout-Evidence: {evidence_digest(document)}"))


def rollback_move(repo: Repo, fleet_file: Path, fleet_name: str, waves: Sequence[Mapping[str, Any]],
                  name: str) -> Move:
    """The move that returns wave ``name`` to its baseline before the newest commit that changed it."""
    from aicr_gen.gitops.records.fingerprint import name_of
    from aicr_gen.yaml import load_bytes

    index = next((number for number, wave in enumerate(waves) if wave["name"] == name), None)
    if index is None:
        raise InvalidInputError(f"--wave {name!r}: the fleet {fleet_file} has no such wave (waves "
                                f"{', '.join(repr(wave['name']) for wave in waves)})")
    current = waves[index].get("spec") or {}
    rel = name_of(fleet_file, Path(repo.working_tree_dir).resolve())
    commits = repo.run("log", f"--max-count={ROLLBACK_DEPTH}", "--format=%H", "HEAD", "--", rel).split()

    def spec_at(commit: str) -> Any:
        raw = repo.run_bytes("cat-file", "blob", f"{commit}:{rel}", check=False)
        try:
            data = load_bytes(raw, f"{commit[:12]}:{rel}").data if raw else None
        except InvalidInputError:
            return None
        for wave in ((data or {}).get("rollout") or {}).get("waves") or []:
            if isinstance(wave, dict) and wave.get("name") == name:
                return wave.get("spec") or {}
        return None

    for commit in commits:
        before = spec_at(f"{commit}^") if repo.run("rev-list", "--parents", "-n1", commit).count(" ") else None
        if spec_at(commit) == current and before is not None and before != current:
            return Move(index, name, dict(before), f"aicr-gen: rollout {fleet_name}: roll back {name}",
                        (f"Rollout of fleet {fleet_name} ({rel}): wave {name} returns to its baseline before "
                         f"{commit[:12]}.",),
                        (f"Rollout-Fleet: {fleet_name}", f"Rollout-Rollback: {name}", f"Rollout-Reverts: {commit}"))
    raise InvalidInputError(f"--wave {name!r}: no commit of {rel} in the last {ROLLBACK_DEPTH} changed the wave's "
                            "baseline to what it is now; set rollout.waves[].spec by hand")


def commit_move(repo: Repo, fleet_file: Path, specs: Sequence[str], move: Move, *, push: bool) -> Outcome:
    """Edit the fleet file with ``move`` and sync ``specs`` as one commit; the file put back when no commit is
    made."""
    from aicr_gen.gitops import sync_specs
    from aicr_gen.gitops.records.fingerprint import name_of
    from aicr_gen.yaml.edit import set_value

    root = Path(repo.working_tree_dir).resolve()
    place = fleet_file.resolve()
    if not place.is_relative_to(root):
        raise InvalidInputError(f"{fleet_file}: the fleet file lies outside the repository {root}; a rollout "
                                "commits it with the trees")
    rel = name_of(place, root)
    if repo.run("status", "--porcelain", "--", rel):
        raise InvalidInputError(f"{fleet_file}: has changes not committed; commit or stash them first (a rollout "
                                "commits the fleet file as HEAD has it, with only the wave's baseline changed)")
    original = place.read_bytes()
    edited = set_value(original.decode("utf-8"), str(fleet_file), ("rollout", "waves", move.position, "spec"),
                       move.value).encode("utf-8")
    head = repo.run("rev-parse", "HEAD")
    _replace(place, edited)
    try:
        outcome = sync_specs.commit_specs(repo, specs, sync_specs.Options(
            title=move.title, push=push, preface=move.preface, trailers=move.trailers))
    except BaseException:
        if repo.run("rev-parse", "HEAD") == head:
            _replace(place, original)
        raise
    if outcome.result.commit is None:
        _replace(place, original)
    return outcome


def _replace(place: Path, data: bytes) -> None:
    """Write ``data`` to ``place`` at once (a temporary file beside it, renamed over it), keeping its mode."""
    temporary = place.with_name(f".{place.name}.aicr-gen-tmp")
    temporary.write_bytes(data)
    temporary.chmod(place.stat().st_mode & 0o7777)
    temporary.replace(place)
