"""Kubernetes name grammars: one home (``text/kube_names``); the table is what each former home answered at
3d48356 (``certify/nvcre``'s DNS_LABEL, DNS_SUBDOMAIN and label keys, ``drift/snapshot``'s cm:// names,
``sentinel/validation_request``'s node and test names, ``render/names``' and ``commands/spec``'s DNS labels,
``limits``' label values), and the callers still answer it with their own messages."""

from __future__ import annotations

import pytest

from aicr_gen import limits
from aicr_gen.certify import nvcre
from aicr_gen.errors import InvalidInputError
from aicr_gen.render.options import parse_extra_paths
from aicr_gen.sentinel import validation_request
from aicr_gen.text.configmap_source import parse_cm_source
from aicr_gen.text.kube_names import is_dns_label, is_dns_subdomain, is_label_value, label_key_problem

LONG_SUBDOMAIN = ".".join(["a" * 63] * 4)[:253]
# text, DNS label, DNS subdomain, cm:// NAME (loose subdomain), label value (empty allowed), label key
TABLE = [
    ("a", True, True, True, True, True),
    ("a-b", True, True, True, True, True),
    ("a.b", False, True, True, True, True),
    ("a..b", False, False, True, True, True),
    ("a.-b", False, False, True, True, True),
    ("-a", False, False, False, False, False),
    ("a-", False, False, False, False, False),
    ("A", False, False, False, True, True),
    ("a_b", False, False, False, True, True),
    ("", False, False, False, True, False),
    ("a" * 63, True, True, True, True, True),
    ("a" * 64, False, True, True, False, False),
    ("a" * 253, False, True, True, False, False),
    ("a" * 254, False, False, False, False, False),
    (LONG_SUBDOMAIN, False, True, True, False, False),
    ("a/b", False, False, False, False, True),
    ("example.com/a", False, False, False, False, True),
    ("Example.com/a", False, False, False, False, False),
    ("/a", False, False, False, False, False),
    ("a/", False, False, False, False, False),
    ("a" * 64 + "/b", False, False, False, False, True),
    ("x/" + "b" * 63, False, False, False, False, True),
    ("x/" + "b" * 64, False, False, False, False, False),
    ("1", True, True, True, True, True),
    ("a\n", False, False, False, False, False),
    ("a.b.c-d", False, True, True, True, True),
    ("é", False, False, False, False, False),
    ("a b", False, False, False, False, False),
    ("A_b.C-1", False, False, False, True, True),
    ("_a", False, False, False, False, False),
]


Row = tuple[str, bool, bool, bool, bool, bool]


@pytest.mark.parametrize("row", TABLE)
def test_grammars(row: Row) -> None:
    text, label, subdomain, loose, value, key = row
    assert is_dns_label(text) is label
    assert is_dns_subdomain(text) is subdomain
    assert is_dns_subdomain(text, loose=True) is loose
    assert (not text or is_label_value(text)) is value
    assert (label_key_problem(text) is None) is key


@pytest.mark.parametrize("row", TABLE)
def test_callers_answer_the_table(row: Row) -> None:
    text, label, subdomain, loose, value, key = row

    def accepts(check: object, *args: object) -> bool:
        try:
            check(*args)  # type: ignore[operator]
        except (InvalidInputError, ValueError):
            return False
        return True

    assert accepts(parse_cm_source, f"cm://{text}/snap") is label
    assert accepts(parse_cm_source, f"cm://aicr/{text}") is loose
    assert accepts(parse_extra_paths, f"extra={text}") is (label or text == "a\n")  # the namespace is stripped
    assert validation_request._is_subdomain(text) is subdomain
    assert accepts(nvcre.parse_option, "imagePullSecrets", text, "W") is (subdomain and "," not in text)
    assert accepts(limits.label_value, text) is value
    assert accepts(limits.label_key, text) is key


def test_messages_are_unchanged() -> None:
    assert label_key_problem("Example.com/a") == "key 'Example.com/a': prefix 'Example.com' is not a DNS subdomain"
    assert label_key_problem("x/" + "b" * 64) == (
        f"key 'x/{'b' * 64}' is not a valid label key (an optional DNS prefix and '/', then at most 63 characters "
        "of [A-Za-z0-9-_.])")
    with pytest.raises(InvalidInputError, match=r"^'cm://aicr/-a': expected cm://NAMESPACE/NAME with Kubernetes "
                                                r"names \(lower-case letters, digits, '-'; '\.' in NAME\), e\.g\. "
                                                r"cm://aicr/snapshot$"):
        parse_cm_source("cm://aicr/-a")
    with pytest.raises(ValueError, match=r"^'a\.\.b' is not a Kubernetes name \(lower-case letters, digits, '-' and "
                                         r"'\.', starting and ending with a letter or digit\); 253 at most$"):
        limits.subdomain("a..b")
