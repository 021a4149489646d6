"""``aicr_gen/render/names.py``: object names made from URLs (host and path, as AICR names them), kept DNS labels."""

from __future__ import annotations

import hashlib

from aicr_gen.render.names import DNS_LABEL, hashed, url_name
from aicr_gen.text.kube_names import is_dns_label


def test_a_url_is_named_by_host_and_path() -> None:
    assert url_name("https://helm.ngc.nvidia.com/nvidia", fallback="x") == "helm-ngc-nvidia-com-nvidia"
    assert url_name("oci://ghcr.io/NVIDIA/Charts/", fallback="x") == "ghcr-io-nvidia-charts"
    assert url_name("https://", fallback="default") == "default"


def test_source_only_drops_user_info_and_the_git_suffix() -> None:
    url = "ssh://git@github.com/example/gitops.git"
    assert url_name(url, fallback="x", source_only=True) == "github-com-example-gitops"
    assert url_name(url, fallback="x") == "git-github-com-example-gitops-git"


def test_a_long_name_is_cut_to_the_limit_with_a_hash_of_the_whole_url() -> None:
    base = "https://charts.example.com/" + "very-long-path/" * 8
    first, second = (url_name(base + leaf, fallback="x", limit=DNS_LABEL) for leaf in ("one", "two"))
    assert first != second  # the same start, named apart
    for name in (first, second):
        assert len(name) <= DNS_LABEL and is_dns_label(name), name
    assert first.endswith("-" + hashlib.sha256((base + "one").encode()).hexdigest()[:8])
    assert url_name("https://a.io/b", fallback="x", limit=DNS_LABEL) == "a-io-b"  # short enough: no hash


def test_hashed_strips_the_dash_the_cut_leaves() -> None:
    name = hashed("abc-def", "key", limit=13)  # 13 - 8 - 1 = 4 characters kept: "abc-" -> "abc"
    assert name == "abc-" + hashlib.sha256(b"key").hexdigest()[:8]
    assert hashed("name", "key") == "name-" + hashlib.sha256(b"key").hexdigest()[:8]
