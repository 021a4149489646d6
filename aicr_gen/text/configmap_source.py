"""``cm://NAMESPACE/NAME``: a ConfigMap named as a source or target of a document (snapshots, recipes), with
Kubernetes names (a DNS label, a DNS subdomain). Reading one is ``edges/configmaps.py``."""

from __future__ import annotations

import re

from aicr_gen.errors import InvalidInputError
from aicr_gen.yaml import shorten

CM_PREFIX = "cm://"


# patterns, not compiled ones: only cm:// sources need them (``re`` compiles and caches them on first use)
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"


def parse_cm_source(source: str) -> tuple[str, str]:
    """``(namespace, name)`` of ``cm://NAMESPACE/NAME``; anything else is an input error."""
    rest = source[len(CM_PREFIX):]
    namespace, _, name = rest.partition("/")
    # fullmatch: with re.match, '$' also matches before a final newline ("cm://aicr/snap\n")
    if not (re.fullmatch(_DNS_LABEL, namespace) and len(namespace) <= 63 and re.fullmatch(_DNS_SUBDOMAIN, name)
            and len(name) <= 253):
        raise InvalidInputError(f"{shorten(repr(source))}: expected cm://NAMESPACE/NAME with Kubernetes names "
                                "(lower-case letters, digits, '-'; '.' in NAME), e.g. cm://aicr/snapshot")
    return namespace, name
