"""``aicr-gen sync``: render a ClusterSpec's whole tree and commit it to a Git repository (or ``--check`` it)."""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aicr_gen.errors import OK, FindingsError, InvalidInputError


def _versions(recipe: Mapping[str, Any]) -> dict[str, str]:
    return {str(ref.get("name")): str(ref.get("version", "")) for ref in recipe.get("componentRefs", [])
            if isinstance(ref, Mapping)}


def _old_recipe(repo: Any, path: str) -> dict[str, Any]:
    from aicr_gen.yamlio import load_text

    try:
        text: str = repo.git.show(f"HEAD:{path}/recipe.yaml")
    except Exception:
        return {}
    try:
        data = load_text(text, "recipe.yaml").data
    except Exception:
        return {}
    return data if isinstance(data, dict) else {}


def message(name: str, path: str, *, old_recipe: Mapping[str, Any], new_recipe: Mapping[str, Any],
            changed: list[str], recipe_bytes: bytes) -> str:
    """The commit message: a summary line, what changed for a reviewer, then the trailers."""

    old, new = _versions(old_recipe), _versions(new_recipe)
    body: list[str] = []
    body += [f"- added {comp} {new[comp]}" for comp in sorted(set(new) - set(old))]
    body += [f"- removed {comp} {old[comp]}" for comp in sorted(set(old) - set(new))]
    body += [f"- bumped {comp} {old[comp]} -> {new[comp]}" for comp in sorted(set(old) & set(new))
             if old[comp] != new[comp]]
    files = [line.split()[-1] for line in changed]
    folders: Counter[str] = Counter()
    for file in files:
        rel = file.removeprefix(f"{path}/")
        folders[rel.split("/")[0] if "/" in rel else "(top)"] += 1
    if f"{path}/recipe.yaml" in files and not body:
        body.append("- recipe changed (no component version changes)")
    sections = ["Components:", *(body or ["- none changed"]), "", "Files changed:"]
    sections += [f"- {folder}{'' if folder == '(top)' else '/'}: {count} file(s)"
                 for folder, count in sorted(folders.items())]
    for folder, what in (("certification", "Certification changed"), ("sentinel", "NVSentinel values changed")):
        if folders.get(folder):
            sections.append(f"- {what}")
    sections += ["", *[f"  {line}" for line in changed[:50]]]
    if len(files) > 50:
        sections.append(f"  ... and {len(files) - 50} more")
    return "\n".join([f"aicr-gen: sync {name}", "", *sections, "", *trailers(recipe_bytes)]) + "\n"


def trailers(recipe_bytes: bytes) -> list[str]:
    """The commit trailers: the recipe's digest and the aicr-gen version that rendered it."""
    from aicr_gen import __version__

    return [f"Aicr-Gen-Recipe-Digest: sha256:{hashlib.sha256(recipe_bytes).hexdigest()}",
            f"Aicr-Gen-Version: {__version__}"]


def _policy_errors(cluster: Any, base: Path, recipe: dict[str, Any], spec_file: str) -> None:
    """Refuse to sync a spec its policies reject (the shipped ones and spec.policies), listing the errors."""
    from aicr_gen.commands.policy import findings_for

    _policies, findings = findings_for(cluster, base, [], recipe)
    errors = [f"  {f.policy} {f.path}: {f.message}" for f in findings if f.severity == "error"]
    if errors:
        raise FindingsError(f"{spec_file}: {len(errors)} policy error(s); nothing was committed "
                            "(fix the spec, see 'aicr-gen policy check'):\n" + "\n".join(errors))


def _check(repo: Any, spec_files: list[str], path_option: str | None, staged: bool) -> int:
    """Compare each spec's rendered tree with HEAD (or the index); exit 1 listing every stale file."""
    from aicr_gen.gitops import sync
    from aicr_gen.gitops.render_tree import managed_path, render_tree
    from aicr_gen.gitops.spec import load_spec

    against = "the index" if staged else "HEAD"
    if not staged:
        sync._head(repo)
    problems: list[str] = []
    for spec_file in spec_files:
        cluster = load_spec(spec_file)
        path = managed_path(cluster, path_option)
        tree = render_tree(cluster, Path(spec_file).resolve().parent, path)
        have = sync.indexed(repo, path) if staged else sync.committed(repo, "HEAD", path)
        found = sync.stale(have, tree, path)
        if found:
            problems.append(f"{path} is not up to date with {spec_file} in {against} "
                            f"(run 'aicr-gen sync {spec_file} --repo {repo.working_tree_dir}'):")
            problems += [f"  {line}" for line in found]
        else:
            sys.stdout.write(f"aicr-gen: {path} is up to date with {spec_file} in {against}\n")
    if problems:
        raise FindingsError("\n".join(problems))
    return OK


def expand(patterns: list[str]) -> list[str]:
    """SPEC arguments with glob patterns (``*``, ``?``, ``[``) expanded in sorted order, as a shell would
    (pre-commit passes hook args without one); a pattern matching no file is an input error."""
    import glob

    specs: list[str] = []
    for pattern in patterns:
        if not glob.has_magic(pattern):
            specs.append(pattern)
            continue
        found = sorted(glob.glob(pattern))  # noqa: PTH207 (absolute patterns too, like a shell)
        if not found:
            raise InvalidInputError(f"SPEC {pattern!r} matches no file; give ClusterSpec paths or a pattern "
                                    "that matches some (e.g. clusters/*.yaml)")
        specs += found
    return list(dict.fromkeys(specs))


def run(args: argparse.Namespace) -> int:
    """Render the spec's tree; ``--check`` compares it with HEAD, otherwise commit it (once, if changed)."""
    from aicr_gen.gitops import sync
    from aicr_gen.gitops.render_tree import managed_path, render_tree
    from aicr_gen.gitops.spec import load_spec, resolve_spec

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
    spec_file = specs[0]
    cluster = load_spec(spec_file)
    base = Path(spec_file).resolve().parent
    path = managed_path(cluster, args.path)
    recipe = resolve_spec(cluster, base)
    _policy_errors(cluster, base, recipe, spec_file)
    tree = render_tree(cluster, base, path, recipe)

    def text(changed: list[str]) -> str:
        if args.message:
            return "\n".join([args.message.rstrip(), "", *trailers(tree["recipe.yaml"])]) + "\n"
        return message(cluster.metadata.name, path, old_recipe=_old_recipe(repo, path), new_recipe=recipe,
                       changed=changed, recipe_bytes=tree["recipe.yaml"])

    result = sync.sync(repo, tree, path, text, branch=args.branch, force=args.force, push=args.push)
    if result.commit is None:
        sys.stdout.write(f"aicr-gen: {path} is up to date on {result.ref}; nothing to commit\n")
    else:
        sys.stdout.write(f"aicr-gen: committed {result.commit[:12]} on {result.ref} ({len(result.changed)} files "
                         f"changed under {path})\n")
    return OK
