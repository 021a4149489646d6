"""``aicr-gen certification``: NVCRE Certifications, their thresholds, and the jobs that repeat them.

Every emitted object is checked by a real consumer: the Certification against our JSON Schema of NVCRE's
API, CronJob/Job/RBAC/ConfigMap/ServiceAccount against the Kubernetes 1.33 strict schemas, the Flux
Kustomization against Flux's CRD, the kustomization.yaml files by SchemaStore and ``kubectl kustomize``.
"""

from __future__ import annotations

import copy
import threading
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from aicr_gen.certify import cron, nvcre
from aicr_gen.certify.thresholds import (
    THRESHOLD_KEYS,
    ThresholdTimeout,
    compile_thresholds,
    evaluate,
    run_with_deadline,
)
from aicr_gen.errors import InvalidInputError
from aicr_gen.text.cron import check_schedule
from tests.bundles import YAMLSnapshot
from tests.conftest import REFERENCE, assert_refused, use_reference
from tests.consumers import kustomize_build, read_tree, validate_manifests, validate_objects

SCHEMA = nvcre.load_schema()
CERT_KEY = (nvcre.API_VERSION, nvcre.KIND)
EXTRA = {CERT_KEY: SCHEMA}
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
ROLE_RULES = [{"apiGroups": ["nvcre.nvidia.com"], "resources": ["certifications"], "verbs": ["create"]}]
FULL = ("--category", "communication/nccl-all-reduce", "--category", "training/nemotron5-8b",
        "--category", "diagnostics/dcgm-level4", "--node-selector", "nvidia.com/gpu.present=true",
        "--threshold", "busBandwidthGBps=value >= 300",
        "--threshold", "training/nemotron5-8b:goodputRatio=value >= 0.9",
        "--option", "gpusPerNode=8", "--option", "communication/nccl-all-reduce:maxBytes=32G",
        "--option", "communication/nccl-all-reduce:testScale=diagnose",
        "--option", "training/nemotron5-8b:resources.limits.cpu=64",
        "--option", "training/nemotron5-8b:enableCheckpoint=true",
        "--option", "workloadMetadata.labels.kueue.x-k8s.io/queue-name=gpu",
        "--schedule", "0 3 * * 0", "--post-change")
RUNNER_FOLDERS = ("schedule", "post-change/argocd", "post-change/flux/job")


def _write(cli: Any, out: Path, *args: str) -> Any:
    return cli("certification", *args, "--output", str(out))


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _template(folder: Path) -> dict[str, Any]:
    text = _load(folder / "configmap.yaml")["data"]["certification.yaml"]
    template: dict[str, Any] = yaml.safe_load(text)
    return template


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aicr_gen.cli.main import main

    out = tmp_path_factory.mktemp("certification") / "bundle"
    assert main(["certification", *FULL, "--output", str(out)]) == 0
    return out


# ------------------------------------------------------------------------------------ consumers


def test_every_emitted_manifest_validates(full: Path) -> None:
    files = read_tree(full)
    assert sorted(files) == sorted([
        "README.md", "certification.yaml", "checksums.txt", "post-change/flux/flux-kustomization.yaml",
        *(f"{folder}/{name}" for folder in RUNNER_FOLDERS for name in (
            "configmap.yaml", "kustomization.yaml", "role.yaml", "rolebinding.yaml", "serviceaccount.yaml")),
        "schedule/cronjob.yaml", "post-change/argocd/job.yaml", "post-change/flux/job/job.yaml"])
    # 1 Certification + 3 x (4 runner objects + a job + kustomization.yaml) + the Flux Kustomization
    assert validate_manifests(files, extra_schemas=EXTRA) == 20
    for folder in RUNNER_FOLDERS:
        template = _template(full / folder)
        assert list(VALIDATOR.iter_errors(template)) == []
        assert validate_objects(kustomize_build(full / folder), f"kubectl kustomize {folder}") == 5


def test_bundle_verifies_and_rewrites_only_with_force(cli: Any, full: Path, tmp_path: Path) -> None:
    assert cli("verify", str(full)).code == 0
    out = tmp_path / "b"
    assert _write(cli, out, *FULL).code == 0
    assert_refused(_write(cli, out, *FULL), "not empty", "--force")
    assert _write(cli, out, *FULL, "--force").code == 0
    assert read_tree(out) == read_tree(full)


def test_certification_is_pinned(cli: Any, tmp_path: Path, snapshot: Any) -> None:
    assert _write(cli, tmp_path / "o", *FULL[:-3]).code == 0
    assert (tmp_path / "o" / "certification.yaml").read_text(encoding="utf-8") == snapshot(extension_class=YAMLSnapshot)


def test_output_is_deterministic_and_independent_of_flag_order(cli: Any, full: Path, tmp_path: Path) -> None:
    pairs = [FULL[i:i + 2] for i in range(0, len(FULL) - 1, 2)]
    options = [pair for pair in pairs if pair[0] in ("--option", "--threshold")]
    others = [pair for pair in pairs if pair[0] not in ("--option", "--threshold")]
    shuffled = [arg for pair in [*others, *reversed(options)] for arg in pair] + ["--post-change"]
    assert _write(cli, tmp_path / "again", *shuffled).code == 0
    assert read_tree(tmp_path / "again") == read_tree(full)


# ---------------------------------------------------------------------------- the Certification


def test_options_are_typed_and_placed(full: Path) -> None:
    cert = _load(full / "certification.yaml")
    spec = cert["spec"]
    assert cert["metadata"] == {"name": "gpu-certification", "namespace": "nvcre-system",
                                "labels": {"app.kubernetes.io/managed-by": "aicr-gen"}}
    assert spec["target"] == {"nodeSelector": {"nvidia.com/gpu.present": "true"}}
    assert spec["gpusPerNode"] == 8
    assert spec["workloadMetadata"] == {"labels": {"kueue.x-k8s.io/queue-name": "gpu"}}
    nccl, training, dcgm = spec["categories"]
    assert nccl["options"] == {"testScale": "diagnose", "maxBytes": "32G",
                               "thresholds": {"busBandwidthGBps": "value >= 300"}}
    assert training["options"] == {"enableCheckpoint": True, "resources": {"limits": {"cpu": "64"}},
                                   "thresholds": {"goodputRatio": "value >= 0.9"}}
    assert dcgm == {"domain": "diagnostics", "variant": "dcgm-level4"}
    assert "thresholds" not in spec  # NVCRE replaces, not merges, the global map: each category gets its own


def test_global_thresholds_stay_global_when_every_category_measures_them(cli: Any, tmp_path: Path) -> None:
    args = ("--category", "communication/nccl-all-reduce", "--category", "communication/nccl-loopback",
            "--node", "gpu-1", "--node", "gpu-2", "--taint-selector", "nvidia.com/gpu=present:NoSchedule",
            "--taint-selector", "maintenance", "--threshold", "busBandwidthGBps=value >= 300",
            "--threshold", "algBandwidthGBps=value > 100.5")
    assert _write(cli, tmp_path / "o", *args).code == 0
    spec = _load(tmp_path / "o" / "certification.yaml")["spec"]
    assert spec["thresholds"] == {"algBandwidthGBps": "value > 100.5", "busBandwidthGBps": "value >= 300"}
    assert all("options" not in item for item in spec["categories"])
    assert spec["target"] == {"nodeNames": ["gpu-1", "gpu-2"], "taintSelectors": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}, {"key": "maintenance"}]}
    assert sorted(read_tree(tmp_path / "o")) == ["README.md", "certification.yaml", "checksums.txt"]


@pytest.mark.parametrize(("args", "fragments"), [
    (("--category", "communication/nccl-all-reduce", "--threshold", "goodputRatio=value > 0.9"),
     ("never measures goodputRatio", "training/nemotron5-8b")),
    (("--category", "diagnostics/dcgm-level4", "--threshold", "c2cVerified=value == 1.0"),
     ("c2cVerified", "no category in the catalog measures it")),
    (("--category", "communication/nccl-all-reduce", "--category", "training/nemotron5-8b",
      "--threshold", "communication/nccl-all-reduce:avgStepTimeSec=value < 3.0"), ("never measures avgStepTimeSec",)),
])
def test_thresholds_on_unmeasured_metrics_are_refused(cli: Any, tmp_path: Path, args: tuple[str, ...],
                                                      fragments: tuple[str, ...]) -> None:
    assert_refused(_write(cli, tmp_path / "o", *args, "--node", "n1"), *fragments)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("args", "fragments"), [
    (("--category", "communication/nccl-all-reduce"), ("--node-selector", "--node")),
    (("--category", "communication/nccl-all-reduce", "--node", "a", "--node-selector", "k=v"), ("one of the two",)),
    (("--category", "communication/nccl-foo", "--node", "a"),
     ("unknown category 'communication/nccl-foo'", "diagnostics/dcgm-level4, training/nemotron5-56b")),
    (("--category", "diagnostics/dcgm-level4", "--category", "diagnostics/dcgm-level4", "--node", "a"), ("twice",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "Not_A_Node"), ("not a node name",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--node", "a"), ("given twice",)),
    (("--category", "diagnostics/dcgm-level4", "--node-selector", "novalue"), ("write K=V",)),
    (("--category", "diagnostics/dcgm-level4", "--node-selector", "a/b/c=x"), ("not a DNS subdomain",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--taint-selector", "k:Sometimes"),
     ("effect 'Sometimes'", "NoSchedule")),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--name", "Bad_Name"), ("--name 'Bad_Name'",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--namespace", "a.b"), ("--namespace 'a.b'",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--option", "maxBytes=32G"),
     ("none of the selected categories uses maxBytes", "communication/nccl-all-reduce")),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--option", "diagnostics/dcgm-level4:testScale=diagnose"),
     ("dcgm-level4 does not use testScale", "gpusPerNode")),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--option", "training/nemotron5-8b:maxSteps=5"),
     ("training/nemotron5-8b is not among the --category flags",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--option", "gpuPerNode=8"),
     ("unknown option 'gpuPerNode'", "gpusPerNode")),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--option", "gpusPerNode=eight"), ("whole number",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--option", "gpusPerNode=0"), ("from 1 to",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--option", "gpusPerNode=2147483648"), ("from 1 to",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--option", "gpusPerNode=8", "--option",
      "gpusPerNode=4"), ("given twice",)),
    (("--category", "training/nemotron5-8b", "--node", "a", "--option", "enableMNNVL=yes"), ("true or false",)),
    (("--category", "communication/nccl-alltoall", "--node", "a", "--option", "maxBytes=16GB"), ("'16G'",)),
    (("--category", "communication/nccl-alltoall", "--node", "a", "--option", "testScale=huge"), ("intra-node",)),
    (("--category", "communication/nccl-alltoall", "--node", "a", "--option", "timeoutPerJob=1 hour"), ("'1h30m'",)),
    (("--category", "training/nemotron5-8b", "--node", "a", "--option", "sourceRepo=http://x/y.git"),
     ("sourceRepo",)),
    (("--category", "training/nemotron5-8b", "--node", "a", "--option", "nicResourceName=kubernetes.io/nic"),
     ("reserved",)),
    (("--category", "training/nemotron5-8b", "--node", "a", "--option", "resources.limits.cpu=-1"),
     ("non-negative Kubernetes quantity",)),
    (("--category", "training/nemotron5-8b", "--node", "a", "--option", "resources.limits.memory=100Gi",
      "--option", "resources.requests.memory=200Gi"), ("requests.memory 200Gi exceeds resources.limits.memory",)),
    (("--category", "training/nemotron5-8b", "--node", "a", "--option",
      "workloadMetadata.labels.nvcre.nvidia.com/job=x"), ("owned by the NVCRE controller",)),
    (("--category", "training/nemotron5-8b", "--node", "a", "--option", "thresholds.goodputRatio=value > 1.0"),
     ("--threshold",)),
    (("--category", "training/nemotron5-8b", "--node", "a", "--option", "imagePullSecrets=a,a"), ("twice",)),
    (("--category", "training/nemotron5-8b", "--node", "a", "--threshold", "value >= 300"), ("KEY=VALUE",)),
    (("--category", "diagnostics/dcgm-level4", "--node", "a", "--schedule", "@daily", "--name", "n" * 44),
     ("CronJob", "at most 43 characters")),
])
def test_bad_input_is_refused_and_nothing_is_written(cli: Any, tmp_path: Path, args: tuple[str, ...],
                                                     fragments: tuple[str, ...]) -> None:
    assert_refused(_write(cli, tmp_path / "o", *args), *fragments)
    assert not (tmp_path / "o").exists()


def test_options_take_their_types(cli: Any, tmp_path: Path) -> None:
    args = ("--category", "training/nemotron5-56b", "--node", "a")
    options = {"nodesPerJob": "4", "maxSteps": "-1", "exitDurationMins": "30", "startupStallTimeoutSeconds": "1200",
               "mlnxPerNode": "0", "nicResourceName": "rdma/ib", "enableMNNVL": "False", "image": "nvcr.io/x/y:1",
               "imagePullSecrets": "ngc,mirror", "storageClassName": "fast-ssd", "saveInterval": "250",
               "saveRetainInterval": "1000", "saveTopK": "1", "storageSize": "10Ti", "maxRestarts": "3",
               "repeatCount": "2", "maxConcurrent": "0", "timeoutPerJob": "2h30m", "measurementTimeout": "5m",
               "sourceRepo": "ssh://git@mirror/megatron.git", "resources.requests.cpu": "1500m",
               "resources.limits.cpu": "2", "resources.requests.memory": "1e3", "resources.limits.memory": "1Ki"}
    flags = [arg for key, value in options.items() for arg in ("--option", f"training/nemotron5-56b:{key}={value}")]
    assert _write(cli, tmp_path / "o", *args, *flags).code == 0
    cert = _load(tmp_path / "o" / "certification.yaml")
    assert list(VALIDATOR.iter_errors(cert)) == []
    got = cert["spec"]["categories"][0]["options"]
    assert got["nodesPerJob"] == 4 and got["maxSteps"] == -1 and got["enableMNNVL"] is False
    assert got["imagePullSecrets"] == [{"name": "ngc"}, {"name": "mirror"}]
    assert got["resources"] == {"limits": {"cpu": "2", "memory": "1Ki"}, "requests": {"cpu": "1500m", "memory": "1e3"}}
    assert list(got) == [key for key in nvcre.OPTION_ORDER if key in got]  # NVCRE's field order


# ---------------------------------------------------------------------------------------- the jobs


def test_rbac_is_least_privilege(full: Path) -> None:
    files = read_tree(full)
    kinds = {yaml.safe_load(data)["kind"] for path, data in files.items() if path.endswith(".yaml")}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding"}
    for folder in RUNNER_FOLDERS:
        sa, role, binding = (_load(full / folder / f"{name}.yaml")
                             for name in ("serviceaccount", "role", "rolebinding"))
        namespace = sa["metadata"]["namespace"]
        assert role["rules"] == ROLE_RULES
        assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == namespace == "nvcre-system"
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": role["metadata"]["name"]}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                        "namespace": namespace}]
        job = _load(full / folder / ("cronjob.yaml" if folder == "schedule" else "job.yaml"))
        pod = (job["spec"]["jobTemplate"]["spec"] if job["kind"] == "CronJob" else job["spec"])["template"]["spec"]
        assert pod["serviceAccountName"] == sa["metadata"]["name"]


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    spec = job["spec"]["jobTemplate"]["spec"] if job["kind"] == "CronJob" else job["spec"]
    pod: dict[str, Any] = spec["template"]["spec"]
    return pod


def test_jobs_create_a_fresh_certification_each_run(full: Path) -> None:
    cert = _load(full / "certification.yaml")
    for folder, job_file, trigger in (("schedule", "cronjob.yaml", "schedule"),
                                      ("post-change/argocd", "job.yaml", "post-sync"),
                                      ("post-change/flux/job", "job.yaml", "post-change")):
        template = _template(full / folder)
        assert "name" not in template["metadata"]
        assert template["metadata"]["generateName"] == "gpu-certification-"
        assert template["metadata"]["labels"][cron.TRIGGER_LABEL] == trigger
        assert template["spec"] == cert["spec"]
        pod = _pod(_load(full / folder / job_file))
        (container,) = pod["containers"]
        assert container["image"] == cron.KUBECTL_IMAGE
        assert container["command"] == ["/bin/kubectl"]
        assert container["args"][0] == "create"
        assert f"--filename={cron.TEMPLATE_DIR}/{cron.TEMPLATE_KEY}" in container["args"]
        template_volume = next(v for v in pod["volumes"] if v["name"] == "template")
        assert template_volume["configMap"]["name"] == _load(full / folder / "configmap.yaml")["metadata"]["name"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                                "capabilities": {"drop": ["ALL"]}}


def test_image_is_pinned_to_an_exact_release() -> None:
    repository, _, tag = cron.KUBECTL_IMAGE.partition(":")
    assert repository == "registry.k8s.io/kubectl"
    assert tag.startswith("v1.33.") and tag.removeprefix("v1.33.").isdigit()


def test_cronjob_never_overlaps_and_keeps_little_history(full: Path) -> None:
    spec = _load(full / "schedule" / "cronjob.yaml")["spec"]
    assert spec["schedule"] == "0 3 * * 0"
    assert spec["concurrencyPolicy"] == "Forbid"
    assert 1 <= spec["successfulJobsHistoryLimit"] <= 5 and 1 <= spec["failedJobsHistoryLimit"] <= 5
    assert spec["startingDeadlineSeconds"] > 0
    assert spec["jobTemplate"]["spec"]["activeDeadlineSeconds"] > 0


def test_post_change_hooks(full: Path) -> None:
    argocd = _load(full / "post-change" / "argocd" / "job.yaml")
    assert argocd["metadata"]["annotations"] == {"argocd.argoproj.io/hook": "PostSync",
                                                 "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}
    # its template too: a hook, left out of the Application's sync status, so a new template alone never syncs it
    template = _load(full / "post-change" / "argocd" / "configmap.yaml")
    assert template["metadata"]["annotations"] == argocd["metadata"]["annotations"]
    flux = _load(full / "post-change" / "flux" / "flux-kustomization.yaml")
    assert flux["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1"
    assert flux["spec"]["dependsOn"] == [{"name": "aicr-stack"}]
    assert flux["spec"]["path"] == "./post-change/flux/job" and (full / "post-change" / "flux" / "job").is_dir()
    assert flux["spec"]["force"] is True and flux["spec"]["wait"] is True
    job = _load(full / "post-change" / "flux" / "job" / "job.yaml")
    assert job["spec"]["ttlSecondsAfterFinished"] > 0  # Flux recreates it on the next revision


@pytest.mark.parametrize("schedule", ["0 3 * * 0", "*/15 * * * *", "0 0 1 jan-MAR MON-FRI", "5,35 1-5/2 * * 6",
                                      "@daily", "  0   3 * *  0 "])
def test_valid_schedules(schedule: str) -> None:
    assert check_schedule(schedule) == (schedule if schedule.startswith("@") else " ".join(schedule.split()))


@pytest.mark.parametrize(("schedule", "fragment"), [
    ("* * * *", "found 4"), ("* * * * * *", "found 6"), ("60 * * * *", "minute field '60'"),
    ("* 24 * * *", "hour field"), ("* * 0 * *", "day-of-month field"), ("* * * 13 *", "month field"),
    ("* * * * 7", "day-of-week field"), ("*/0 * * * *", "step '0'"), ("5-1 * * * *", "backwards"),
    ("TZ=UTC 0 3 * * *", "time zone"), ("a b c d e", "minute field 'a'"), ("1-2-3 * * * *", "minute field"),
    ("@every 1 h", "not a Go duration"), ("", "found 0"),
])
def test_bad_schedules_are_refused(cli: Any, tmp_path: Path, schedule: str, fragment: str) -> None:
    result = _write(cli, tmp_path / "o", "--category", "diagnostics/dcgm-level4", "--node", "a", "--schedule",
                    schedule)
    assert_refused(result, fragment, "--schedule")
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------------------- thresholds


@pytest.mark.parametrize("expression", [
    "value >= 300", "value >= 300.0 && value < 1e9", "300 <= value", "!(value < 0.9)", "value > 1u",
    "value == 1.0", "value in [1.0, 2.0]", "int(value) >= 300", "value >= 300 // bus bandwidth in GB/s",
    "value > 1 ? true : value < -1.0", "double('2.5') < value",
])
def test_good_thresholds_compile(expression: str) -> None:
    compiled = compile_thresholds({"busBandwidthGBps": expression}, "--threshold")
    assert list(compiled) == ["busBandwidthGBps"]


@pytest.mark.parametrize(("expression", "fragments"), [
    ("value + 1", ("'_+_' applied to '(double, int)'",)),
    ("value * 2.0", ("expression must return bool, got double",)),
    ("value == 1", ("'_==_' applied to '(double, int)'", "1.0, not 1")),
    ("value > 'a'", ("'_>_' applied to '(double, string)'",)),
    ("1 && true", ("expected type 'bool' but found 'int'",)),  # cel-go's checker asserts && operands are bool
    ("bandwidth >= 300", ("undeclared reference to 'bandwidth'", "the only variable is `value`")),
    ("math.abs(value) > 1.0", ("undeclared reference to 'math'",)),
    ("value.x > 1", ("does not support field selection",)),
    ("value > 1 ? 1 : 2", ("must return bool, got int",)),
    ("value >= ", ("syntax error at line 1, column 10", "mismatched input '<EOF>'")),
    ("value = 300", ("syntax error", "compare with ==")),
    ("", ("expression is empty",)),
    ("int(value) / 0 > 1", ("fails to evaluate for every value tried", "division by zero")),
    ("value >= 300 && 15.0 == 15", ("'_==_' applied to '(double, int)'", "1.0, not 1")),
    ("value.`x` > 1.0", ("syntax error",)),  # NVCRE's cel-go has no backquoted fields
    ("9223372036854775808 < value", ("invalid int literal",)),
])
def test_bad_thresholds_name_key_expression_and_fix(expression: str, fragments: tuple[str, ...]) -> None:
    with pytest.raises(InvalidInputError) as caught:
        compile_thresholds({"busBandwidthGBps": expression}, "--threshold")
    message = str(caught.value)
    assert message.startswith("--threshold: busBandwidthGBps=")
    assert "; " in message  # the problem, then the fix
    for fragment in fragments:
        assert fragment in message, message


def test_unknown_threshold_keys_list_the_registry() -> None:
    with pytest.raises(InvalidInputError) as caught:
        compile_thresholds({"busBandwithGBps": "value > 1.0", "zzz": "true"}, "f.yaml")
    assert str(caught.value) == (
        "f.yaml: unknown threshold key(s) [busBandwithGBps, zzz] (did you mean busBandwidthGBps?); valid keys: "
        "[busBandwidthGBps, algBandwidthGBps, goodputRatio, avgTFLOPsPerGPU, avgStepTimeSec, "
        "c2cCPUToGPUBandwidthGBps, c2cGPUToCPUBandwidthGBps, c2cVerified]")
    with pytest.raises(InvalidInputError, match="not a CEL expression string"):
        compile_thresholds({"busBandwidthGBps": 300}, "f.yaml")  # type: ignore[dict-item]


_NESTED_MACROS = "[" + ",".join("0" for _ in range(30)) + "]"
HOSTILE = {
    "10k-digit literal": "value > " + "1" * 10_000,
    "251-deep parentheses": "(" * 251 + "value > 1.0" + ")" * 251,  # past cel-go's nesting limit of 250
    "nested comprehensions": (f"{_NESTED_MACROS}.all(a, {_NESTED_MACROS}.all(b, {_NESTED_MACROS}.all(c, "
                              f"{_NESTED_MACROS}.exists(d, value > 1.0))))"),
    "over 100,000 code points": "value > 1.0 || '" + "x" * 100_000 + "' == ''",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_thresholds_are_refused_quickly_and_write_nothing(cli: Any, tmp_path: Path, name: str) -> None:
    result = _write(cli, tmp_path / "o", "--category", "communication/nccl-all-reduce", "--node", "a",
                    "--threshold", f"busBandwidthGBps={HOSTILE[name]}")
    assert_refused(result, "--threshold: busBandwidthGBps=")
    assert len(result.err) < 600
    assert not (tmp_path / "o").exists()


# Within cel-go's defaults, so NVCRE compiles them: accepted, and each evaluates within its budget.
LARGE_BUT_VALID = {
    "200-deep parentheses": "(" * 200 + "value > 1.0" + ")" * 200,
    "200 negations": "!" * 200 + "(value > 1.0)",
    "catastrophic regex for a backtracking engine (RE2 is linear)": (
        "value > 1e9 || 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'.matches('(a+)+$')"),
    "long chain": " + ".join(["value"] * 120) + " > 1.0",
}


@pytest.mark.parametrize("name", LARGE_BUT_VALID)
def test_thresholds_within_cel_go_defaults_compile(name: str) -> None:
    start = time.perf_counter()
    compiled = compile_thresholds({"busBandwidthGBps": LARGE_BUT_VALID[name]}, "--threshold")
    evaluate(compiled, {"busBandwidthGBps": 400.0})
    assert time.perf_counter() - start < 1.0


def test_threshold_errors_on_the_command_line_exit_2(cli: Any, tmp_path: Path) -> None:
    for threshold, fragment in (("busBandwidthGBps=value + 1", "'_+_'"), ("bus=value > 1.0", "unknown threshold key"),
                                ("busBandwidthGBps=value >=", "syntax error")):
        result = _write(cli, tmp_path / "o", "--category", "communication/nccl-all-reduce", "--node", "a",
                        "--threshold", threshold)
        assert_refused(result, fragment)
        assert not (tmp_path / "o").exists()


def test_evaluate_reports_like_nvcre() -> None:
    compiled = compile_thresholds({"busBandwidthGBps": "value >= 300", "goodputRatio": "value >= 0.9",
                                   "algBandwidthGBps": "300 <= value", "avgStepTimeSec": "int(value * 5e18) > 0"},
                                  "t")
    results = evaluate(compiled, {"busBandwidthGBps": 250.0, "algBandwidthGBps": 300, "avgStepTimeSec": 2.0})
    assert [r.key for r in results] == ["algBandwidthGBps", "avgStepTimeSec", "busBandwidthGBps", "goodputRatio"]
    alg, step, bus, goodput = results
    assert (alg.measured, alg.passed) == (300.0, True)
    assert alg.message == 'Threshold "algBandwidthGBps" met: measured 300.0000, expression: 300 <= value'
    assert (bus.measured, bus.passed) == (250.0, False)
    assert bus.message == 'Threshold "busBandwidthGBps" violated: measured 250.0000, expression: value >= 300'
    assert step.passed is False
    assert step.message.startswith('Threshold "avgStepTimeSec": evaluate threshold expression "int(value * 5e18) > 0" '
                                   'with value=2.000000: ')  # int64 overflow; NVCRE: InvalidThresholdExpression
    assert (goodput.measured, goodput.passed) == (None, None)
    assert "no measurement" in goodput.message


def test_cross_type_comparisons_are_cel_go_s() -> None:
    # cel-go (common/types/compare.go) orders an int against a double as two doubles once the double is within
    # the int64 range: 2**53 + 1 rounds to 2**53, so it is not bigger
    compiled = compile_thresholds({"busBandwidthGBps": "9007199254740993 > value", "goodputRatio": "1 > value"},
                                  "t")
    results = evaluate(compiled, {"busBandwidthGBps": 9007199254740992.0, "goodputRatio": 0.999})
    assert [result.passed for result in results] == [False, True]


def test_evaluation_has_a_time_limit() -> None:
    def spin() -> None:
        while True:
            pass

    with pytest.raises(ThresholdTimeout):
        run_with_deadline(spin, 0.2)
    assert run_with_deadline(lambda: 42, 1.0) == 42
    caught: list[BaseException] = []

    def in_thread() -> None:
        try:
            run_with_deadline(lambda: sum(range(10)), 1.0)
            run_with_deadline(lambda: __import__("time").sleep(5), 0.2)
        except ThresholdTimeout as err:
            caught.append(err)

    worker = threading.Thread(target=in_thread)
    worker.start()
    worker.join(5)
    assert len(caught) == 1


# ---------------------------------------------------------------------------------------------- schema


def test_schema_matches_the_code() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    defs = SCHEMA["$defs"]
    fields = defs["categoryOptionFields"]["properties"]
    assert list(fields) == list(nvcre.OPTION_ORDER)
    assert fields["thresholds"]["propertyNames"]["enum"] == list(THRESHOLD_KEYS)
    assert fields["testScale"]["enum"] == list(nvcre.TEST_SCALES)
    pairs = {(branch["properties"]["domain"]["const"], variant)
             for branch in defs["category"]["oneOf"] for variant in branch["properties"]["variant"]["enum"]}
    assert {f"{domain}/{variant}" for domain, variant in pairs} == set(nvcre.CATALOG)
    for key, minimum in nvcre.INT_MINIMUM.items():
        assert fields[key]["minimum"] == minimum


def test_upstream_samples_validate_once_renamed() -> None:
    samples = sorted(use_reference(REFERENCE / "nvcre").rglob("*.yaml"))
    assert len(samples) == 3
    for sample in samples:
        doc = _load(sample)
        assert doc["apiVersion"] == "cre.nvidia.com/v1alpha1"  # the old group: refused as written
        assert list(VALIDATOR.iter_errors(doc))
        doc["apiVersion"] = nvcre.API_VERSION
        assert list(VALIDATOR.iter_errors(doc)) == [], sample.name


def _good() -> dict[str, Any]:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification",
            "metadata": {"name": "c", "namespace": "nvcre-system"},
            "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                     "categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                                     "options": {"thresholds": {"busBandwidthGBps": "value >= 300"}}}],
                     "numIterations": 10}}


def _set(path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(_good())
    *parents, last = path.split(".")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if value is _DROP:
        del node[last]
    else:
        node[last] = value
    return doc


_DROP = object()
BAD = {
    "old API group": ("apiVersion", "cre.nvidia.com/v1alpha1"),
    "wrong kind": ("kind", "Certificate"),
    "no name": ("metadata.name", _DROP),
    "unknown top-level field": ("extra", 1),
    "no target": ("spec.target", _DROP),
    "selector and names": ("spec.target", {"nodeSelector": {"a": "b"}, "nodeNames": ["n"]}),
    "empty target": ("spec.target", {}),
    "empty selector": ("spec.target", {"nodeSelector": {}}),
    "no categories": ("spec.categories", []),
    "65 categories": ("spec.categories", [{"domain": "diagnostics", "variant": "dcgm-level4"}] * 65),
    "unknown variant": ("spec.categories.0.variant", "nccl-broadcast"),
    "variant of another domain": ("spec.categories.0.domain", "training"),
    "unknown option": ("spec.categories.0.options.speed", "fast"),
    "unknown spec field": ("spec.speed", "fast"),
    "unknown threshold key": ("spec.categories.0.options.thresholds", {"bandwidth": "value > 1.0"}),
    "threshold not a string": ("spec.categories.0.options.thresholds", {"busBandwidthGBps": 300}),
    "bad testScale": ("spec.categories.0.options.testScale", "huge"),
    "bad maxBytes": ("spec.maxBytes", "16GB"),
    "count as string": ("spec.numIterations", "10"),
    "count below minimum": ("spec.numIterations", 0),
    "bad taint effect": ("spec.target", {"nodeNames": ["n"], "taintSelectors": [{"key": "k", "effect": "Never"}]}),
    "http sourceRepo": ("spec.sourceRepo", "http://example.com/x.git"),
    "reserved workload label": ("spec.workloadMetadata", {"labels": {"nvcre.nvidia.com/x": "y"}}),
}


@pytest.mark.parametrize("name", BAD)
def test_schema_refuses_bad_certifications(name: str) -> None:
    assert list(VALIDATOR.iter_errors(_good())) == []
    path, value = BAD[name]
    assert list(VALIDATOR.iter_errors(_set(path, value))), name
