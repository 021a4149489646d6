"""The limits and grammars of everything a ClusterSpec, a Fleet or a rule-set file can grow, in one place: each
taken from the consumer that reads the value (issue 24). A value beyond one is refused before anything is
rendered, with exit 2, naming the file, line and field path, and the limit.

========================================  =========================  ==========================================
What                                      Limit                      Source
========================================  =========================  ==========================================
spec.pools                                100 pools                  AKS: 100 node pools per cluster
                                                                     (learn.microsoft.com/azure/aks/quotas-skus-
                                                                     regions); EKS: 30 managed node groups by
                                                                     default; one NVIDIADriver per pool
rule sets (spec.sentinel.rules, the       1,000 rule sets            they land in NVSentinel's fault-quarantine
``rules`` file)                                                      ConfigMap and Helm release Secret, objects
                                                                     of at most 1 MiB (kubernetes.io ConfigMap
                                                                     docs; etcd's request limit)
specs of one run (fleet members)          10,000 ClusterSpecs        aicr-gen's: ten times the 1,000-cluster
                                                                     fleet ``bench/bench_fleet.py`` measures
fleet layering (spec.extends)             1 level                    ``spec/fleet.py``: a Fleet extends
                                                                     nothing, so there are no chains or cycles
node counts (criteria.nodes, pools[].     1,000,000 nodes            aicr-gen's: 200 times Kubernetes' largest
nodes, breaker.maxNodes, rollout                                     supported cluster (5,000 nodes, kubernetes.
maxUpdate)                                                           io/docs/setup/best-practices/cluster-large)
whole numbers of options                  64-bit signed              what NVCRE (Go ``int64``) and CEL read
other lists (tolerations, overrides,      256 items                  aicr-gen's: no consumer limit; 25 times the
categories, catalogs, policies, tests)                               largest shipped example
maps (labels, selectors, thresholds,      256 entries                aicr-gen's, as lists
options, versions, ruleSetPools)
cluster, pool, hub, Secret names          63, RFC 1123 label         Kubernetes object and DNS label names
                                                                     (apimachinery validation.IsDNS1123Label);
                                                                     Helm's 53 for release names is kept by
                                                                     ``render/argocd.py`` (hashed when longer)
label keys (metadata.labels, node         [prefix/]name: prefix a    apimachinery validation.IsQualifiedName
selectors)                                DNS subdomain <= 253, name
                                          <= 63
label values, rollout order               <= 63, alphanumeric ends,  apimachinery validation.IsValidLabelValue
                                          ``-_.`` inside
StorageClass, AppProject names            <= 253, RFC 1123 subdomain apimachinery validation.IsDNS1123Subdomain
Secret keys (kubeConfigSecret.key)        <= 253, ``[-._a-zA-Z0-9]`` apimachinery validation.IsConfigMapKey
versions (spec.versions, pools[].         <= 128, ``[A-Za-z0-9_]``   one token of the characters SemVer 2
versions)                                 then ``[A-Za-z0-9_.+-]``   (semver.org, Helm chart versions), OCI
                                                                     tags and git tags share: no space, newline,
                                                                     ``$``, ``/`` or ``:``
NVIDIADriver repository/image:version     the image reference        distribution/reference grammar
(pools' GPU Operator driver values)       grammar                    (``mirror/reference.parse_image``)
branch (spec.repo.branch)                 <= 255, git ref grammar    ``git check-ref-format`` rules; 255 is
                                                                     NAME_MAX (a ref is a file)
URLs (repo.url, destinationServer)        <= 2,048, no space or      aicr-gen's: a URL is one token
                                          control character
paths (repo.path, extends, catalogs,      <= 1,024 bytes, each       Linux NAME_MAX 255; PATH_MAX 4,096 less
policies, rules, baseline)                part <= 255 bytes          room for the checkout's own folder
other texts (tolerations, overrides,      <= 4,096 characters, one   aicr-gen's: every one is a line of YAML,
thresholds, options, context, ...)        line                       a flag or a message
========================================  =========================  ==========================================

No pydantic here (``rules test`` and ``sentinel values`` need the limits without it): ``spec/cluster.py`` binds
these checks into the model's field types. Texts with a grammar of their own are checked by their consumers'
parsers elsewhere: cron schedules (``certify/schedule``), threshold expressions (``certify/thresholds``),
``--set`` texts (``render/values``), tolerations and taints (``render/scheduling``), Go durations
(``text/durations``), ``cm://`` sources (``drift/snapshot``), mirror prefixes (``mirror/reference``), criteria
(the catalog's vocabulary), NVCRE categories and options (``certify/nvcre``). Overrides values are Helm values:
data the chart's own schema types, written as quoted YAML, never into a command line.
"""

from __future__ import annotations

import re

from aicr_gen.text.kube_names import DNS_SUBDOMAIN, LABEL_VALUE, MAX_LABEL, MAX_SUBDOMAIN, label_key_problem

MAX_POOLS = 100
MAX_NODES = 1_000_000
MAX_RULE_SETS = 1000
MAX_WINDOW_SECONDS = 24 * 3600
"""The longest circuit-breaker window NVSentinel counts cordons in (one-second buckets over a day)."""
MAX_SPECS = 10_000
MAX_ITEMS = 256
MAX_ENTRIES = 256
MAX_TEXT = 4096
MAX_URL = 2048
MAX_PATH = 1024
MAX_PATH_PART = 255
MAX_REF = 255
MAX_VERSION = 128

VERSION = re.compile(r"[A-Za-z0-9_]+(?:(?:[.+]|-+)[A-Za-z0-9_]+)*")
SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\.lock(/|$)")


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else f"{text[:77]}...")


def one_line(text: str) -> str:
    """A text of one line: no control character (newline, carriage return, tab, NUL, ...)."""
    if _CONTROL.search(text):
        raise ValueError(f"{_shown(text)} holds a line break or control character; write it on one line")
    return text


def _fits(text: str, grammar: re.Pattern[str], limit: int, what: str) -> str:
    """``text`` when ``grammar`` matches all of it and it is at most ``limit`` long; else why not."""
    if len(text) > limit or not grammar.fullmatch(text):
        raise ValueError(f"{_shown(text)} is not {what}; {limit} at most")
    return text


def subdomain(text: str) -> str:
    """An RFC 1123 subdomain (lower-case labels joined by '.'), at most 253 characters."""
    return _fits(text, DNS_SUBDOMAIN, MAX_SUBDOMAIN, "a Kubernetes name (lower-case letters, digits, '-' and '.', "
                                                     "starting and ending with a letter or digit)")


def label_key(text: str) -> str:
    """A Kubernetes label key: an optional DNS-subdomain prefix and '/', then a name of at most 63."""
    problem = label_key_problem(text)
    if problem:
        raise ValueError(f"{problem}, e.g. node.kubernetes.io/instance-type")
    return text


def label_value(text: str) -> str:
    """A Kubernetes label value: empty, or a label name of at most 63."""
    return text and _fits(text, LABEL_VALUE, MAX_LABEL, "a label value (letters, digits, '-', '_', '.', starting "
                                                         "and ending with a letter or digit)")


def version(text: str) -> str:
    """A version: one token of SemVer's, OCI tags' and git tags' shared characters, its parts (letters, digits,
    '_') joined by one '.' or '+' or by '-'s (no empty part: ``v26..3`` is a typo, not a release), at most 128."""
    return _fits(text, VERSION, MAX_VERSION, "a version (letters, digits and '_' joined by '.', '+' or '-', no "
                                              "empty part; e.g. v26.3.3 or 580.105.08)")


def secret_key(text: str) -> str:
    """A key of a Secret's data."""
    return _fits(text, SECRET_KEY, MAX_SUBDOMAIN, "a Secret key (letters, digits, '-', '_', '.')")


def branch(text: str) -> str:
    """A branch name git accepts (``git check-ref-format --branch``), at most 255 bytes."""
    if (len(text.encode()) > MAX_REF or _REF_FORBIDDEN.search(text) or text.startswith(("-", "/", "."))
            or text.endswith(("/", ".")) or text == "@"):
        raise ValueError(f"{_shown(text)} is not a branch name git accepts (no spaces, control characters, "
                         "'~^:?*[\\', '..', '@{' or '//'; not starting with '-', '/' or '.'; "
                         f"{MAX_REF} bytes at most), e.g. main")
    return text


def url(text: str) -> str:
    """A URL: one token of at most 2,048 characters."""
    if len(text) > MAX_URL or not text or any(char.isspace() for char in text) or _CONTROL.search(text):
        raise ValueError(f"{_shown(text)} is not a URL (one token without spaces or control characters, "
                         f"{MAX_URL} at most)")
    return text


def path(text: str) -> str:
    """A file path the file system can hold: at most 1,024 bytes, each part at most 255 (NAME_MAX)."""
    one_line(text)
    size = len(text.encode())
    longest = max((len(part.encode()) for part in text.split("/")), default=0)
    if size > MAX_PATH or longest > MAX_PATH_PART:
        raise ValueError(f"{_shown(text)} is too long for a file system ({size} bytes, a part of {longest}): "
                         f"give at most {MAX_PATH} bytes, {MAX_PATH_PART} per folder or file name")
    return text
