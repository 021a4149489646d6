"""``cm://NAMESPACE/NAME``: a ConfigMap named as a source or target of a document (snapshots, recipes), with
Kubernetes names (a DNS label, a DNS subdomain). Reading one is ``edges/configmaps.py``."""

from __future__ import annotations

from aicr_gen.errors import InvalidInputError
from aicr_gen.text.kube_names import is_dns_label, is_dns_subdomain
from aicr_gen.yaml import shorten

CM_PREFIX = "cm://"


def parse_cm_source(source: str) -> tuple[str, str]:
    """``(namespace, name)`` of ``cm://NAMESPACE/NAME``; anything else is an input error."""
    rest = source[len(CM_PREFIX):]
    namespace, _, name = rest.partition("/")
    if not (is_dns_label(namespace) and is_dns_subdomain(name, loose=True)):
        raise InvalidInputError(f"{shorten(repr(source))}: expected cm://NAMESPACE/NAME with Kubernetes names "
                                "(lower-case letters, digits, '-'; '.' in NAME), e.g. cm://aicr/snapshot")
    return namespace, name
