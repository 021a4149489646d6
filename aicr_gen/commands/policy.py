"""``aicr-gen policy check SPEC``: evaluate the shipped and the user's CEL policies over a ClusterSpec."""

from __future__ import annotations

import argparse

from aicr_gen.errors import OK


def arguments(parser: argparse.ArgumentParser) -> None:
    """``policy check SPEC``."""
    subcommands = parser.add_subparsers(dest="policy_command", metavar="check", required=True)
    check = subcommands.add_parser("check", help="evaluate the shipped and your policies; exit 1 on an "
                                   "error-severity finding")
    check.add_argument("spec_file", metavar="SPEC", help="ClusterSpec file")
    check.add_argument("--policies", action="append", default=[], metavar="DIR",
                       help="folder of policy files (repeatable; later folders add, a same-named policy replaces an "
                            "earlier one, shipped ones included)")
    check.add_argument("--format", dest="policy_format", choices=("text", "json"), default="text",
                       help="output format (default: text)")


def run(args: argparse.Namespace) -> int:
    """Print the findings; 1 when any has severity error."""
    import json
    from pathlib import Path

    from aicr_gen.gitops.trees.recipes import resolve_spec
    from aicr_gen.policy.check import findings_for
    from aicr_gen.spec.load import load_spec

    cluster = load_spec(args.spec_file)
    base = Path(args.spec_file).parent
    policies, findings = findings_for(cluster, base, [Path(folder) for folder in args.policies],
                                      resolve_spec(cluster, base))
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    if args.policy_format == "json":
        print(json.dumps({"spec": args.spec_file, "policies": [p.name for p in policies],
                          "findings": [f.as_dict() for f in findings],
                          "errors": errors, "warnings": warnings}, indent=2, sort_keys=True))
    else:
        for f in findings:
            print(f"{f.severity} {f.policy} {f.path}: {f.message}")
        print(f"{len(policies)} policies, {errors} error(s), {warnings} warning(s)")
    return 1 if errors else OK
