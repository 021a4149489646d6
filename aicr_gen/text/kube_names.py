"""Kubernetes name grammars, as apimachinery's ``validation`` package states them: the one home of every check
of an object name, namespace, label key and label value.

- DNS label (``IsDNS1123Label``): namespaces, most object names, NVCRE test names: lower-case letters, digits
  and ``-``, starting and ending alphanumeric, at most 63.
- DNS subdomain (``IsDNS1123Subdomain``): ConfigMap, StorageClass and ValidationRequest names, label-key
  prefixes: DNS labels joined by ``.``, at most 253.
- Label key (``IsQualifiedName``): an optional DNS-subdomain prefix and ``/``, then a name of at most 63 of
  ``[A-Za-z0-9-_.]`` starting and ending alphanumeric; a label value (``IsValidLabelValue``) is such a name or
  empty.

One grammar here is aicr-gen's own, kept as it was: the NAME of a ``cm://NAMESPACE/NAME`` snapshot source
(``drift/snapshot``) takes ``.`` anywhere inside (``LOOSE_SUBDOMAIN``), where ``IsDNS1123Subdomain`` refuses
``a..b``; the API server then answers for such a name.

The patterns' texts are also the JSON Schema ``pattern`` of the fields they type (``aicr-gen schema``).
"""

from __future__ import annotations

import re

MAX_LABEL = 63
MAX_SUBDOMAIN = 253

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL = re.compile(_LABEL)
"""A DNS label's characters, any length: pair it with ``MAX_LABEL`` (``is_dns_label`` does)."""
DNS_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
"""A DNS subdomain's characters, any length: pair it with ``MAX_SUBDOMAIN`` (``is_dns_subdomain`` does)."""
LOOSE_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
"""A ``cm://`` snapshot source's NAME (see the module rules)."""
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
"""The name part of a label key, any length: pair it with ``MAX_LABEL``."""
LABEL_VALUE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]")
"""A non-empty label value, its bound of 63 inside the pattern (a JSON Schema carries it so)."""


def is_dns_label(text: str) -> bool:
    return len(text) <= MAX_LABEL and DNS_LABEL.fullmatch(text) is not None


def is_dns_subdomain(text: str, *, loose: bool = False) -> bool:
    """``loose``: the ``cm://`` source NAME grammar (see the module rules)."""
    grammar = LOOSE_SUBDOMAIN if loose else DNS_SUBDOMAIN
    return len(text) <= MAX_SUBDOMAIN and grammar.fullmatch(text) is not None


def is_label_value(text: str) -> bool:
    """A non-empty label value (an empty one is valid too: callers that take it test for it first)."""
    return LABEL_VALUE.fullmatch(text) is not None


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a Kubernetes label (or taint) key, or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and not (prefix and is_dns_subdomain(prefix)):
        return f"key {key!r}: prefix {prefix!r} is not a DNS subdomain"
    if not (len(name) <= MAX_LABEL and QUALIFIED_NAME.fullmatch(name)):
        return (f"key {key!r} is not a valid label key (an optional DNS prefix and '/', then at most 63 "
                "characters of [A-Za-z0-9-_.])")
    return None
