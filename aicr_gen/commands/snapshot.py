"""``aicr-gen snapshot``: capture a read-only AICR snapshot through the Kubernetes API (GET only) and write
it as YAML to ``-o FILE`` (default stdout) or server-side apply it to ``-o cm://NS/NAME``; or, with
``--agent-cronjob DIR``, write a CronJob bundle that runs AICR's own snapshot agent on a schedule.

Exit 0: written; 2: invalid input; 3: the cluster could not be reached.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
from typing import Any

from aicr_gen.errors import OK, InvalidInputError

GZIP_ABOVE = 900 * 1024
"""Above this many bytes of YAML the ConfigMap holds ``binaryData.snapshot.yaml.gz`` instead."""
CONFIGMAP_MAX = 1024 * 1024 - 16 * 1024
"""The API server refuses objects over 1 MiB; keep room for metadata."""
LABELS = {"app.kubernetes.io/name": "aicr", "app.kubernetes.io/component": "Snapshot"}


def configmap_payload(text: str, stamp: str) -> tuple[dict[str, str], dict[str, bytes]]:
    """``(data, binaryData)`` of the ConfigMap holding snapshot YAML ``text`` (AICR's keys)."""
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
    from aicr_gen.drift.capture import build_snapshot, timestamp
    from aicr_gen.drift.snapshot import API_VERSION, CM_PREFIX, parse_cm_source
    from aicr_gen.edges.kube.client import connect
    from aicr_gen.edges.output import write_text
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
    from aicr_gen.drift.snapshot import parse_cm_source
    from aicr_gen.edges.output import write_bundle
    from aicr_gen.text.cron import check_schedule

    if args.output:
        raise InvalidInputError("--agent-cronjob DIR writes a bundle; -o does not apply (use --configmap for "
                                "where the agent stores its snapshot)")
    namespace, name = parse_cm_source(args.configmap)
    bundle = agent_bundle(namespace, name, check_schedule(args.schedule))
    write_bundle(bundle, args.agent_cronjob, args.force)
    return OK
