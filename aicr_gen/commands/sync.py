"""``aicr-gen sync``: render a ClusterSpec's whole tree and commit it to a Git repository (or ``--check`` it)."""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aicr_gen.errors import OK, FindingsError


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
    from aicr_gen import __version__

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
    digest = hashlib.sha256(recipe_bytes).hexdigest()
    trailers = [f"Aicr-Gen-Recipe-Digest: sha256:{digest}", f"Aicr-Gen-Version: {__version__}"]
    return "\n".join([f"aicr-gen: sync {name}", "", *sections, "", *trailers]) + "\n"


def run(args: argparse.Namespace) -> int:
    """Render the spec's tree; ``--check`` compares it with HEAD, otherwise commit it (once, if changed)."""
    from aicr_gen.gitops import sync
    from aicr_gen.gitops.render_tree import managed_path, render_tree
    from aicr_gen.gitops.spec import load_spec, resolve_spec

    cluster = load_spec(args.spec_file)
    base = Path(args.spec_file).resolve().parent
    path = managed_path(cluster, args.path)
    recipe = resolve_spec(cluster, base)
    repo = sync.open_repo(args.repo)
    tree = render_tree(cluster, base, path, recipe)
    if args.check:
        sync._head(repo)
        problems = sync.stale(repo, tree, path)
        if problems:
            raise FindingsError(f"{path} is not up to date with {args.spec_file} (run 'aicr-gen sync'):\n"
                                + "\n".join(f"  {line}" for line in problems))
        sys.stdout.write(f"aicr-gen: {path} is up to date\n")
        return OK
    changed = sync.stale(repo, tree, path)
    text = args.message or message(cluster.metadata.name, path, old_recipe=_old_recipe(repo, path),
                                   new_recipe=recipe, changed=changed, recipe_bytes=tree["recipe.yaml"])
    if args.message:
        from aicr_gen import __version__

        digest = hashlib.sha256(tree["recipe.yaml"]).hexdigest()
        text = f"{args.message.rstrip()}\n\nAicr-Gen-Recipe-Digest: sha256:{digest}\nAicr-Gen-Version: {__version__}\n"
    result = sync.sync(repo, tree, path, text, branch=args.branch, force=args.force, push=args.push)
    if result.commit is None:
        sys.stdout.write(f"aicr-gen: {path} is up to date on {result.ref}; nothing to commit\n")
    else:
        sys.stdout.write(f"aicr-gen: committed {result.commit[:12]} on {result.ref} ({len(result.changed)} files "
                         f"changed under {path})\n")
    return OK
