"""``aicr-gen policy check SPEC``: evaluate the shipped and the user's CEL policies over a ClusterSpec."""

from __future__ import annotations

import json
from pathlib import Path

from aicr_gen.errors import OK


def check_command(spec_path: str, folders: list[str], output_format: str = "text") -> int:
    """Print the findings; 1 when any has severity error."""
    from aicr_gen.gitops.recipes import resolve_spec
    from aicr_gen.policy.check import findings_for
    from aicr_gen.spec.load import load_spec
    cluster = load_spec(spec_path)
    base = Path(spec_path).parent
    policies, findings = findings_for(cluster, base, [Path(folder) for folder in folders],
                                      resolve_spec(cluster, base))
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    if output_format == "json":
        print(json.dumps({"spec": spec_path, "policies": [p.name for p in policies],
                          "findings": [f.as_dict() for f in findings],
                          "errors": errors, "warnings": warnings}, indent=2, sort_keys=True))
    else:
        for f in findings:
            print(f"{f.severity} {f.policy} {f.path}: {f.message}")
        print(f"{len(policies)} policies, {errors} error(s), {warnings} warning(s)")
    return 1 if errors else OK
