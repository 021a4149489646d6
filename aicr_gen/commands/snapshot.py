"""``aicr-gen snapshot``: capture a read-only AICR snapshot through the Kubernetes API (GET only) and write
it as YAML to ``-o FILE`` (default stdout) or server-side apply it to ``-o cm://NS/NAME``; or, with
``--agent-cronjob DIR``, write a CronJob bundle that runs AICR's own snapshot agent on a schedule.

Exit 0: written; 2: invalid input; 3: the cluster could not be reached.
"""

from __future__ import annotations

import argparse

from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime
    from typing import Any

GZIP_ABOVE = 900 * 1024
"""Above this many bytes of YAML the ConfigMap holds ``binaryData.snapshot.yaml.gz`` instead."""
CONFIGMAP_MAX = 1024 * 1024 - 16 * 1024
"""The API server refuses objects over 1 MiB; keep room for metadata."""
LABELS = {"app.kubernetes.io/name": "aicr", "app.kubernetes.io/component": "Snapshot"}


def arguments(parser: argparse.ArgumentParser) -> None:
    """``snapshot``: the cluster, where to write, or the agent CronJob instead."""
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, "
                        "in a pod its service account)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current-context)")
    parser.add_argument("--output", "-o", metavar="FILE|cm://NS/NAME", help="where to write (default: stdout)")
    parser.add_argument("--api-version", choices=("aicr.run/v1", "aicr.run/v1alpha2"),
                        help="header to write: aicr.run/v1 (default; AICR >= 0.22) or aicr.run/v1alpha2 "
                             "(AICR <= 0.21)")
    parser.add_argument("--agent-cronjob", metavar="DIR",
                        help="instead, write a CronJob (+RBAC) that runs AICR's snapshot agent into cm://")
    parser.add_argument("--schedule", default="0 * * * *", metavar="CRON", help="schedule of --agent-cronjob")
    parser.add_argument("--configmap", default="cm://aicr-system/aicr-snapshot", metavar="cm://NS/NAME",
                        help="where the agent CronJob stores its snapshot")
    parser.add_argument("--force", action="store_true", help="replace a previous --agent-cronjob folder")


def configmap_payload(text: str, stamp: str) -> tuple[dict[str, str], dict[str, bytes]]:
    """``(data, binaryData)`` of the ConfigMap holding snapshot YAML ``text`` (AICR's keys)."""
    import gzip

    data = {"format": "yaml", "timestamp": stamp}
    raw = text.encode("utf-8")
    if len(raw) <= GZIP_ABOVE:
        return {"snapshot.yaml": text, **data}, {}
    packed = gzip.compress(raw, compresslevel=9, mtime=0)
    if len(packed) > CONFIGMAP_MAX:
        raise InvalidInputError(f"the snapshot is {len(packed)} bytes even gzip'ed, over the 1 MiB ConfigMap "
                                "limit; write it to a file with -o FILE instead")
    return data, {"snapshot.yaml.gz": packed}


def run(args: argparse.Namespace, now: datetime.datetime | None = None) -> int:
    if args.agent_cronjob:
        return _agent(args)
    import datetime

    from aicr_gen.drift.capture import build_snapshot, timestamp
    from aicr_gen.drift.snapshot import API_VERSION
    from aicr_gen.edges.kube.client import connect
    from aicr_gen.edges.output import write_text
    from aicr_gen.text.configmap_source import CM_PREFIX, parse_cm_source
    from aicr_gen.yaml import dump

    output = args.output
    target: tuple[str, str] | None = parse_cm_source(output) if output and output.startswith(CM_PREFIX) else None
    with connect(args.kubeconfig, args.context) as cluster:
        moment = now or datetime.datetime.now(datetime.UTC)
        snapshot: dict[str, Any] = build_snapshot(
            *cluster.inventory(), moment, api_version=getattr(args, "api_version", None) or API_VERSION)
        text = dump(snapshot)
        if target is None:
            write_text(output, text)
            return OK
        data, binary = configmap_payload(text, timestamp(moment))
        labels = {**LABELS, "app.kubernetes.io/version": str(snapshot["metadata"]["version"])}
        cluster.apply_configmap(target[0], target[1], data, binary, labels)
    return OK


def _agent(args: argparse.Namespace) -> int:
    from aicr_gen.drift.agent import agent_bundle
    from aicr_gen.edges.output import write_bundle
    from aicr_gen.text.configmap_source import parse_cm_source
    from aicr_gen.text.cron import check_schedule

    if args.output:
        raise InvalidInputError("--agent-cronjob DIR writes a bundle; -o does not apply (use --configmap for "
                                "where the agent stores its snapshot)")
    namespace, name = parse_cm_source(args.configmap)
    bundle = agent_bundle(namespace, name, check_schedule(args.schedule))
    write_bundle(bundle, args.agent_cronjob, args.force)
    return OK
