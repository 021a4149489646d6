"""``aicr-gen certification``: an NVCRE Certification, optionally with the jobs that repeat it on a schedule
or after every change of the stack, written as one bundle folder."""

from __future__ import annotations

import argparse
import re
import sys

from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SCOPED_KEY = re.compile(r"(?:(?P<scope>[a-z0-9-]+/[a-z0-9.-]+):)?(?P<key>[A-Za-z][A-Za-z0-9]*)")
_OPTION_KEY = re.compile(r"(?:(?P<scope>[a-z0-9-]+/[a-z0-9.-]+):)?(?P<key>[A-Za-z][A-Za-z0-9]*(\..+)?)")


def arguments(parser: argparse.ArgumentParser) -> None:
    """``certification``: the categories, the target nodes, thresholds and options, and the schedules."""
    parser.add_argument("--category", action="append", required=True, metavar="DOMAIN/VARIANT",
                        help="a catalog category, e.g. communication/nccl-all-reduce (repeatable)")
    parser.add_argument("--node-selector", action="append", default=[], metavar="K=V", help="target node label")
    parser.add_argument("--node", action="append", default=[], metavar="NAME", help="target node name (repeatable)")
    parser.add_argument("--taint-selector", action="append", default=[], metavar="KEY[=VALUE][:EFFECT]",
                        help="taints the target nodes carry (with --node)")
    parser.add_argument("--threshold", action="append", default=[], metavar="KEY=EXPR",
                        help='CEL over `value`, e.g. busBandwidthGBps="value >= 300" (repeatable)')
    parser.add_argument("--option", action="append", default=[], metavar="[DOMAIN/VARIANT:]K=V",
                        help="a global option, or one category's with a DOMAIN/VARIANT: prefix")
    parser.add_argument("--schedule", metavar="CRON", help="also emit a CronJob that certifies on this schedule")
    parser.add_argument("--post-change", action="store_true",
                        help="also emit an Argo CD PostSync hook Job and a Flux Kustomization that certify after sync")
    parser.add_argument("--name", default="gpu-certification", help="Certification name (or generateName prefix)")
    parser.add_argument("--namespace", default="nvcre-system", help="namespace of the Certification and jobs")
    parser.add_argument("--output", "-o", required=True, metavar="DIR", help="bundle folder (written atomically)")
    parser.add_argument("--force", action="store_true", help="replace the files of a previous bundle in DIR")


def _split(text: str, flag: str, pattern: re.Pattern[str], example: str) -> tuple[str | None, str, str]:
    """``[DOMAIN/VARIANT:]KEY=VALUE`` as (scope, key, value)."""
    left, sep, value = text.partition("=")
    match = pattern.fullmatch(left.strip()) if sep else None
    if match is None:
        raise InvalidInputError(f"{flag} {text!r}: write [DOMAIN/VARIANT:]KEY=VALUE, e.g. {flag} {example!r}")
    return match.group("scope"), match.group("key"), value


def _scope(scope: str | None, selected: dict[str, Any], flag: str, text: str) -> str | None:
    if scope is not None and scope not in selected:
        raise InvalidInputError(f"{flag} {text!r}: {scope} is not among the --category flags "
                                f"({', '.join(selected)}); add --category {scope} or drop the prefix")
    return scope


def _node_selector(items: list[str]) -> dict[str, str]:
    from aicr_gen.text.kube_names import is_label_value, label_key_problem

    selector: dict[str, str] = {}
    for text in items:
        key, sep, value = text.partition("=")
        problem = label_key_problem(key) if sep else "write K=V, e.g. nvidia.com/gpu.present=true"
        if problem is None and value and not is_label_value(value):
            problem = f"label value {value!r} is not valid (at most 63 of [A-Za-z0-9-_.], alphanumeric ends)"
        if problem is None and key in selector:
            problem = f"label {key} is given twice"
        if problem:
            raise InvalidInputError(f"--node-selector {text!r}: {problem}")
        selector[key] = value
    return selector


def _nodes(items: list[str]) -> list[str]:
    from aicr_gen.text.kube_names import is_dns_subdomain

    for text in items:
        if not is_dns_subdomain(text):
            raise InvalidInputError(f"--node {text!r}: not a node name (lower-case DNS name, at most 253 characters)")
    if len(set(items)) != len(items):
        twice = next(node for node in items if items.count(node) > 1)
        raise InvalidInputError(f"--node {twice!r} is given twice; list each node once")
    return items


def _taints(items: list[str]) -> list[dict[str, str]]:
    from aicr_gen.certify.nvcre import TAINT_EFFECTS
    from aicr_gen.text.kube_names import is_label_value, label_key_problem

    taints = []
    for text in items:
        rest, colon, effect = text.rpartition(":") if ":" in text else (text, "", "")
        key, _, value = rest.partition("=")
        problem = label_key_problem(key)
        if colon and effect not in TAINT_EFFECTS:
            problem = f"effect {effect!r} is not one of {', '.join(TAINT_EFFECTS)}"
        if problem is None and value and not is_label_value(value):
            problem = f"taint value {value!r} is not valid (at most 63 of [A-Za-z0-9-_.], alphanumeric ends)"
        if problem:
            raise InvalidInputError(f"--taint-selector {text!r}: {problem}; write KEY[=VALUE][:EFFECT], e.g. "
                                    "nvidia.com/gpu=present:NoSchedule")
        taint = {"key": key, **({"value": value} if value else {}), **({"effect": effect} if effect else {})}
        if taint in taints:
            raise InvalidInputError(f"--taint-selector {text!r} is given twice")
        taints.append(taint)
    return taints


def _name(name: str, namespace: str) -> None:
    from aicr_gen.text.kube_names import DNS_SUBDOMAIN, MAX_LABEL, is_dns_label

    if not (len(name) <= MAX_LABEL and DNS_SUBDOMAIN.fullmatch(name)):
        raise InvalidInputError(f"--name {name!r}: use at most 63 characters of a-z, 0-9, '-' and '.', starting and "
                                "ending with a letter or digit (NVCRE copies the name into labels)")
    if not is_dns_label(namespace):
        raise InvalidInputError(f"--namespace {namespace!r}: not a namespace name (a-z, 0-9 and '-', at most 63)")


def _thresholds(items: list[str], selected: dict[str, Any]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Global and per-category thresholds, each map checked and compiled."""
    from aicr_gen.certify.thresholds import compile_thresholds

    scoped: dict[str | None, dict[str, str]] = {}
    for text in items:
        scope, key, expression = _split(text, "--threshold", _SCOPED_KEY, "busBandwidthGBps=value >= 300")
        scope = _scope(scope, selected, "--threshold", text)
        mapping = scoped.setdefault(scope, {})
        if key in mapping:
            raise InvalidInputError(f"--threshold {text!r}: {key} is given twice{f' for {scope}' if scope else ''}; "
                                    "give it once")
        mapping[key] = expression.strip()
    for scope, mapping in scoped.items():
        compile_thresholds(mapping, f"--threshold {scope}" if scope else "--threshold")
    global_thresholds = scoped.pop(None, {})
    return global_thresholds, {scope: mapping for scope, mapping in scoped.items() if scope is not None}


def _options(items: list[str], selected: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    from aicr_gen.certify.nvcre import parse_option, set_option

    global_options: dict[str, Any] = {}
    category_options: dict[str, dict[str, Any]] = {}
    for text in items:
        scope, key, value = _split(text, "--option", _OPTION_KEY, "communication/nccl-all-reduce:maxBytes=32G")
        scope = _scope(scope, selected, "--option", text)
        where = f"--option {text!r}"
        path, typed = parse_option(key, value, where)
        set_option(global_options if scope is None else category_options.setdefault(scope, {}), path, typed, where)
    return global_options, category_options


def run(args: argparse.Namespace) -> int:
    """Build the Certification (and its jobs), then write the bundle folder atomically."""
    from aicr_gen.certify import cron, nvcre
    from aicr_gen.edges.output import write_bundle
    from aicr_gen.text.cron import check_schedule

    _name(args.name, args.namespace)
    selected: dict[str, nvcre.Category] = {}
    for text in args.category:
        entry = nvcre.category(text, f"--category {text!r}")
        if entry.name in selected:
            raise InvalidInputError(f"--category {text} is given twice; give each category once")
        selected[entry.name] = entry
    target = nvcre.target(_node_selector(args.node_selector), _nodes(args.node), _taints(args.taint_selector))
    global_thresholds, category_thresholds = _thresholds(args.threshold, selected)
    global_options, category_options = _options(args.option, selected)
    schedule = check_schedule(args.schedule) if args.schedule is not None else None
    cron.check_names(args.name, schedule is not None, args.post_change)
    cert = nvcre.certification(args.name, args.namespace, target_spec=target, entries=list(selected.values()),
                               global_options=global_options, category_options=category_options,
                               global_thresholds=global_thresholds, category_thresholds=category_thresholds)
    bundle = cron.render(cert, schedule=schedule, post_change=args.post_change).with_checksums()
    written = write_bundle(bundle, args.output, args.force)
    sys.stderr.write(f"aicr-gen: wrote Certification {args.name} ({len(selected)} categories, {len(bundle)} files) "
                     f"to {written}\n")
    return OK
