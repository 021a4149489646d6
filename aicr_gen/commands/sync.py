"""``aicr-gen sync``: render a ClusterSpec's whole tree and commit it to a Git repository (or ``--check`` it)."""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aicr_gen.errors import OK, FindingsError, InvalidInputError

if TYPE_CHECKING:
    from aicr_gen.gitops.changes import Changes
    from aicr_gen.gitops.git import Repo


def spec_inputs(repo: Repo, cluster: Any, spec_file: str, path: str) -> dict[str, bytes]:
    """Repository path -> content of the spec and every file it reads (its fleet, sentinel rules, policies,
    catalog folders) that lies inside the repository's work tree, as they are there now: committed with the
    tree, they make the commit self-consistent. One inside the managed folder is refused (the tree would
    replace it)."""
    from aicr_gen.gitops.spec import references

    root = Path(repo.working_tree_dir).resolve()
    spec_path = Path(spec_file).resolve()
    base = spec_path.parent
    named = [spec_path, *(base / text for _field, text in references(cluster) if text)]
    found: dict[str, bytes] = {}
    for item in (entry.resolve() for entry in named):
        if not item.is_relative_to(root) or not item.exists():
            continue
        rel = item.relative_to(root).as_posix()
        listed = repo.run("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", rel) \
            if item.is_dir() else rel
        for name in filter(None, listed.split("\0")):
            if name == path or name.startswith(f"{path}/"):
                raise InvalidInputError(f"{spec_file}: {name} lies inside the managed folder {path}, which sync "
                                        "replaces; keep specs and their files outside it")
            if (root / name).is_file():
                found[name] = (root / name).read_bytes()
    return found


def message(name: str, path: str, changes: Changes, recipe_bytes: bytes, *, title: str | None = None,
            inputs: Mapping[str, bytes] | None = None) -> str:
    """The commit message: a title (``--message``, else a summary), what changed for a reviewer, then the
    trailers."""
    sections: list[str] = ["Components:", *(f"- {item.describe()}" for item in changes.components)]
    if not changes.components:
        sections.append("- recipe changed (no component changes)" if "recipe.yaml" in changes.changed
                        else "- none changed")
    for heading, lines in (("NVSentinel:", changes.sentinel), ("Certification:", changes.certification)):
        if lines:
            sections += ["", heading, *(f"- {line}" for line in lines)]
    if inputs:
        sections += ["", "Inputs committed with the tree:", *(f"- {name}" for name in sorted(inputs))]
    folders: dict[str, Counter[str]] = {}
    for kind, names in (("added", changes.added), ("changed", changes.changed), ("removed", changes.removed)):
        for file in names:
            folder = f"{file.split('/')[0]}/" if "/" in file else "(top)"
            folders.setdefault(folder, Counter())[kind] += 1
    sections += ["", f"Files ({len(changes.added)} added, {len(changes.changed)} changed, "
                     f"{len(changes.removed)} removed):"]
    sections += [f"- {folder}: " + ", ".join(f"{count} {kind}" for kind, count in counts.items())
                 for folder, counts in sorted(folders.items())]
    listed = sorted([*(("added", f) for f in changes.added), *(("changed", f) for f in changes.changed),
                     *(("removed", f) for f in changes.removed)], key=lambda item: item[1])
    sections += ["", *(f"  {kind:<7} {path}/{file}" for kind, file in listed[:50])]
    if len(listed) > 50:
        sections.append(f"  ... and {len(listed) - 50} more")
    summary = title.strip() if title and title.strip() else f"aicr-gen: sync {name}"
    return "\n".join([summary, "", *sections, "", *trailers(recipe_bytes)]) + "\n"


def trailers(recipe_bytes: bytes) -> list[str]:
    """The commit trailers: the recipe's digest and the aicr-gen version that rendered it."""
    from aicr_gen import __version__

    return [f"Aicr-Gen-Recipe-Digest: sha256:{hashlib.sha256(recipe_bytes).hexdigest()}",
            f"Aicr-Gen-Version: {__version__}"]


def _policy_errors(cluster: Any, base: Path, recipe: dict[str, Any], spec_file: str) -> None:
    """Refuse to sync a spec its policies reject (the shipped ones and spec.policies), listing the errors."""
    from aicr_gen.policy.check import findings_for

    _policies, findings = findings_for(cluster, base, [], recipe)
    errors = [f"  {f.policy} {f.path}: {f.message}" for f in findings if f.severity == "error"]
    if errors:
        raise FindingsError(f"{spec_file}: {len(errors)} policy error(s); nothing was committed "
                            "(fix the spec, see 'aicr-gen policy check'):\n" + "\n".join(errors))


def _check(repo: Repo, spec_files: list[str], path_option: str | None, staged: bool) -> int:
    """Compare each spec's rendered tree with HEAD (or the index); exit 1 listing every stale file."""
    from aicr_gen.gitops import fingerprint, objects, sync

    against = "the index" if staged else "HEAD"
    if not staged:
        sync._head(repo)

    def listing(path: str) -> dict[str, str]:
        return objects.indexed(repo, path) if staged else objects.committed(repo, "HEAD", path)

    set_key = fingerprint.key(spec_files, path_option)
    remembered = fingerprint.recall(set_key, spec_files)
    if remembered is None or any(listing(tree["path"]) != tree["blobs"] for tree in remembered):
        return _render_and_check(repo, spec_files, path_option, against, listing, set_key=set_key)
    for spec_file, tree in zip(spec_files, remembered, strict=True):
        sys.stdout.write(f"aicr-gen: {tree['path']} is up to date with {spec_file} in {against}\n")
    sys.stdout.write(f"aicr-gen: {len(spec_files)} of {len(spec_files)} tree(s) up to date with {against}\n")
    return OK


def _render_and_check(repo: Repo, spec_files: list[str], path_option: str | None, against: str,
                      listing: Callable[[str], dict[str, str]], *, set_key: str | None) -> int:
    from aicr_gen.gitops import fingerprint, sync
    from aicr_gen.gitops.render_tree import managed_path, render_tree
    from aicr_gen.gitops.spec import load_spec
    from aicr_gen.gitops.specs import distinct

    problems: list[str] = []
    loaded = [(spec_file, load_spec(spec_file)) for spec_file in spec_files]
    distinct(loaded, path_option)
    checked = []
    for spec_file, cluster in loaded:
        path = managed_path(cluster, path_option)
        read = fingerprint.inputs(spec_file, cluster)
        tree = render_tree(cluster, Path(spec_file).resolve().parent, path)
        have = listing(path)
        found = sync.stale(have, tree, path)
        if found:
            problems.append(f"{path} is not up to date with {spec_file} in {against} "
                            f"(run 'aicr-gen sync {spec_file} --repo {repo.working_tree_dir}'):")
            problems += [f"  {line}" for line in found]
        else:
            checked.append((cluster, read, path, have))
            sys.stdout.write(f"aicr-gen: {path} is up to date with {spec_file} in {against}\n")
    count = f"{len(checked)} of {len(loaded)} tree(s) up to date with {against}"
    if problems:
        raise FindingsError("\n".join([*problems, f"{count}; {len(loaded) - len(checked)} stale"]))
    fingerprint.remember(set_key, spec_files, path_option, checked)
    sys.stdout.write(f"aicr-gen: {count}\n")
    return OK


def run(args: argparse.Namespace) -> int:
    """Render the spec's tree; ``--check`` compares it with HEAD, otherwise commit it (once, if changed)."""
    from aicr_gen.gitops import sync
    from aicr_gen.gitops.specs import expand

    specs = expand(args.spec_files)
    if args.staged and not args.check:
        raise InvalidInputError("--staged compares with the index and needs --check; add --check")
    if len(specs) > 1 and not args.check:
        raise InvalidInputError(f"{len(specs)} SPEC files given: a sync commits one spec; sync them one at a "
                                "time (several are allowed with --check)")
    if len(specs) > 1 and args.path:
        raise InvalidInputError("--path names the folder of one spec; give one SPEC with --path")
    repo = sync.open_repo(args.repo)
    if args.check:
        return _check(repo, specs, args.path, args.staged)
    from aicr_gen.gitops import fingerprint, objects
    from aicr_gen.gitops.changes import compare
    from aicr_gen.gitops.render_tree import managed_path, render_tree
    from aicr_gen.gitops.spec import load_spec, resolve_spec

    spec_file = specs[0]
    set_key = fingerprint.key([spec_file], args.path)
    cluster = load_spec(spec_file)
    base = Path(spec_file).resolve().parent
    path = managed_path(cluster, args.path)
    read = fingerprint.inputs(spec_file, cluster)
    recipe = resolve_spec(cluster, base)
    _policy_errors(cluster, base, recipe, spec_file)
    tree = render_tree(cluster, base, path, recipe)
    inputs = spec_inputs(repo, cluster, spec_file, path)

    def text(old: Mapping[str, bytes]) -> str:
        return message(cluster.metadata.name, path, compare(old, tree), tree["recipe.yaml"], title=args.message,
                       inputs=inputs)

    result = sync.sync(repo, tree, path, text, inputs=inputs, branch=args.branch, force=args.force, push=args.push)
    # the tree is now at result.ref: a check of this spec alone can answer without rendering it again
    fingerprint.remember(set_key, [spec_file], args.path,
                         [(cluster, read, path, objects.committed(repo, result.ref, path))])
    if result.commit is None:
        sys.stdout.write(f"aicr-gen: {path} is up to date on {result.ref}; nothing to commit\n")
    else:
        sys.stdout.write(f"aicr-gen: committed {result.commit[:12]} on {result.ref} ({len(result.changed)} files "
                         f"changed under {path}{' and its spec' if inputs else ''})\n")
    return OK
