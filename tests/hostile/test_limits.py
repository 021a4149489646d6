"""Hostile spec values (issue 24): every list and text a ClusterSpec, a Fleet or a rule-set file can grow is
bounded (``aicr_gen/limits.py``), and every text that reaches a rendered tree fits its consumer's grammar.
Each case asserts exit 2 with one line naming the file, the field path and the limit or grammar, that nothing
was written or executed, and that it is refused quickly. A full disk and a read-only folder are real: a tmpfs
mounted in a mount namespace of the aicr-gen process (``unshare``)."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen import limits
from aicr_gen.spec import patterns as specs
from tests.conftest import ROOT, Result, as_refusal, assert_refused
from tests.gitops.test_sync import init_repo

SPEC: dict[str, Any] = {
    "apiVersion": "aicr-gen.dev/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "mixed"},
    "spec": {"criteria": {"service": "eks", "intent": "inference", "os": "ubuntu"},
             "pools": [{"name": "h100", "accelerator": "h100",
                        "nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"}},
                       {"name": "gb200", "accelerator": "gb200",
                        "nodeSelector": {"node.kubernetes.io/instance-type": "p6e-gb200.36xlarge"}}],
             "deployers": ["helm"], "repo": {"url": "https://github.com/example/gitops.git", "path": "clusters/mixed"}},
}
PWNED = "pwned-by-spec"

Lint = Callable[..., Result]


@pytest.fixture
def lint(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lint:
    """``aicr-gen lint`` of ``SPEC`` changed by ``edit``; nothing is ever executed (``PWNED`` never appears)."""
    monkeypatch.chdir(tmp_path)

    def run(edit: Callable[[dict[str, Any]], None], name: str = "spec.yaml") -> Result:
        data = copy.deepcopy(SPEC)
        edit(data)
        (tmp_path / name).write_text(yaml.safe_dump(data, width=10_000), encoding="utf-8")
        result: Result = cli("lint", str(tmp_path / name))
        assert not (tmp_path / PWNED).exists()
        return result

    return run


def refused(result: Result, *fragments: str) -> None:
    assert_refused(result, *fragments)
    assert as_refusal(result).err.count("\n") == 1, result


def pools(data: dict[str, Any], count: int) -> None:
    data["spec"]["pools"] = [{"name": f"p{index}", "accelerator": "h100",
                              "nodeSelector": {"node.kubernetes.io/instance-type": f"t{index}"}}
                             for index in range(count)]


def pool(data: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = data["spec"]["pools"][0]
    return first


# ---------------------------------------------------------------- counts


def test_ten_thousand_pools_are_refused_quickly(lint: Lint) -> None:
    began = time.monotonic()
    result = lint(lambda data: pools(data, 10_000))
    elapsed = time.monotonic() - began
    refused(result, "spec.yaml:", "spec.pools: 10000 items, over the limit of 100; give at most 100")
    assert elapsed < 10, f"{elapsed:.1f}s"  # 126 s before the limit


def test_one_pool_over_the_limit_is_refused(lint: Lint) -> None:
    refused(lint(lambda data: pools(data, limits.MAX_POOLS + 1)), "spec.pools: 101 items, over the limit of 100")


@pytest.mark.parametrize(("edit", "path"), [
    (lambda data: pool(data).update(tolerations=[f"k{index}:NoSchedule" for index in range(257)]),
     "spec.pools[0].tolerations: 257 items, over the limit of 256"),
    (lambda data: data["spec"].update(overrides={"set": [f"gpu-operator:a{index}=1" for index in range(300)]}),
     "spec.overrides.set: 300 items, over the limit of 256"),
    (lambda data: data["metadata"].update(labels={f"k{index}": "v" for index in range(257)}),
     "metadata.labels: 257 entries, over the limit of 256"),
    (lambda data: pool(data).update(versions={f"c{index}": "1.0.0" for index in range(257)}),
     "spec.pools[0].versions: 257 entries, over the limit of 256"),
])
def test_lists_and_maps_are_bounded(lint: Lint, edit: Callable[[dict[str, Any]], None], path: str) -> None:
    refused(lint(edit), path)


def test_rule_sets_are_bounded(cli: Any, tmp_path: Path) -> None:
    sets = [{"name": f"set {index}", "match": {"all": [{"kind": "HealthEvent", "expression": "true"}]},
             "cordon": {"shouldCordon": True}} for index in range(limits.MAX_RULE_SETS + 1)]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(sets), encoding="utf-8")
    result = cli("sentinel", "values", "--mode", "quarantine", "--rules", str(tmp_path / "rules.yaml"))
    refused(result, f"rules.yaml:1: (document root): 1001 rule sets, over the limit of {limits.MAX_RULE_SETS}")
    (tmp_path / "values.yaml").write_text(yaml.safe_dump({"fault-quarantine": {"ruleSets": sets}}), encoding="utf-8")
    events = ROOT / "tests" / "fixtures" / "rules" / "events" / "syslog-xid79.yaml"
    result = cli("rules", "test", "--values", str(tmp_path / "values.yaml"), "--events", str(events))
    refused(result, "values.yaml:2: fault-quarantine.ruleSets: 1001 rule sets, over the limit of 1000")


def test_the_specs_of_one_run_are_bounded(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(specs, "MAX_SPECS", 3)
    for index in range(4):
        (tmp_path / f"c{index}.yaml").write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    result = cli("fleet", "entry", str(tmp_path / "*.yaml"), "-o", str(tmp_path / "fleet"))
    refused(result, "SPEC: 4 ClusterSpecs, over the limit of 3 for one run")
    assert not (tmp_path / "fleet").exists()


# ---------------------------------------------------------------- grammars before a tree


@pytest.mark.parametrize(("edit", "fragments"), [
    (lambda data: pool(data).update(overrides={"set": [f"gpu-operator:driver.repository=$(touch {PWNED})"]}),
     ("spec.yaml:", "spec.pools: pool 'h100': its NVIDIADriver's driver.repository", "is not a repository path")),
    (lambda data: pool(data).update(overrides={"setJson": ['gpu-operator:driver={"version": "580.1\\nx: y"}']}),
     ("spec.pools: pool 'h100': its NVIDIADriver's", "is not a tag")),
    (lambda data: pool(data).update(overrides={"set": ["gpu-operator:driver.version=580.1\n::error::x"]}),
     ("spec.pools[0].overrides.set[0]: ", "holds a line break or control character; write it on one line")),
    (lambda data: pool(data).update(versions={"gpu-operator": "v26.3.3\nx"}),
     ("spec.pools[0].versions.gpu-operator: ", "is not a version")),
    (lambda data: data["spec"].update(versions={"gpu-operator": f"$(touch {PWNED})"}),
     ("spec.versions.gpu-operator: ", "is not a version", "e.g. v26.3.3", "; 128 at most")),
])
def test_nvidia_driver_and_versions_fit_their_grammars(lint: Lint, edit: Callable[[dict[str, Any]], None],
                                                       fragments: tuple[str, ...]) -> None:
    refused(lint(edit), *fragments)


@pytest.mark.parametrize(("edit", "fragments"), [
    (lambda data: data["metadata"].update(labels={"env prod": "x"}), ("metadata.labels.env prod: ", "label key")),
    (lambda data: data["metadata"].update(labels={"env": "a" * 64}), ("metadata.labels.env: ", "is not a label value")),
    (lambda data: pool(data)["nodeSelector"].update({"node.kubernetes.io/instance-type": "p5\n::error::x"}),
     ("spec.pools[0].nodeSelector.node.kubernetes.io/instance-type: ", "is not a label value")),
    (lambda data: data["spec"]["repo"].update(branch="main; touch x"), ("spec.repo.branch: ", "is not a branch name")),
    (lambda data: data["spec"]["repo"].update(branch="main\n::stop-commands::x"), ("spec.repo.branch: ",)),
    (lambda data: data["spec"]["repo"].update(url="https://github.com/x/y.git\n::error::x"),
     ("spec.repo.url: ", "is not a URL")),
    (lambda data: data["spec"].update(scheduling={"storageClass": "Fast Disks"}),
     ("spec.scheduling.storageClass: ", "is not a Kubernetes name")),
    (lambda data: data["spec"].update(snapshot={"configmap": "cm://aicr/snap\n"}),
     ("spec.snapshot.configmap: ", "line break")),
    (lambda data: pool(data).update(name="p" * 64), ("spec.pools[0].name: 64 characters, over the limit of 63",)),
])
def test_texts_that_reach_a_tree_fit_their_consumers(lint: Lint, edit: Callable[[dict[str, Any]], None],
                                                     fragments: tuple[str, ...]) -> None:
    refused(lint(edit), *fragments)


def test_a_rule_set_name_on_two_lines(lint: Lint) -> None:
    """Refused; the message names the key as written, over two lines: neutralising what a message prints in CI
    is the output's job (issue 24 item 2), not the limits'."""
    result = lint(lambda data: data["spec"].update(sentinel={"mode": "quarantine", "ruleSetPools": {"a\nb": ["h100"]}}))
    assert_refused(result, "spec.sentinel.ruleSetPools.a", "holds a line break or control character")


def test_cm_sources_are_matched_whole(cli: Any) -> None:
    result = cli("snapshot", "--agent-cronjob", "agent", "--configmap", "cm://aicr/snap\n")
    refused(result, "expected cm://NAMESPACE/NAME with Kubernetes names")


# ---------------------------------------------------------------- paths


@pytest.mark.parametrize(("edit", "fragments"), [
    (lambda data: data["spec"].update(extends="a" * 300 + "/fleet.yaml"),
     ("spec.extends: ", "is too long for a file system (311 bytes, a part of 300)", "255 per folder or file name")),
    (lambda data: data["spec"].update(extends="/".join(["abcdefgh"] * 120) + "/fleet.yaml"),
     ("spec.extends: ", "is too long for a file system (1090 bytes", "give at most 1024 bytes")),
    (lambda data: data["spec"].update(catalogs=["c" * 256]), ("spec.catalogs[0]: ", "too long for a file system")),
    (lambda data: data["spec"]["repo"].update(path="clusters/" + "x" * 256), ("spec.repo.path: ",)),
])
def test_paths_longer_than_a_file_system_allows(lint: Lint, edit: Callable[[dict[str, Any]], None],
                                                fragments: tuple[str, ...]) -> None:
    refused(lint(edit), *fragments)


def test_an_extends_too_long_for_its_folder_is_one_message(cli: Any, tmp_path: Path) -> None:
    """Each part and the path itself fit, but joined to the spec's deep folder they pass PATH_MAX: the kernel's
    ENAMETOOLONG is one message too."""
    deep = tmp_path.joinpath(*["d" * 250] * 14)
    deep.mkdir(parents=True)
    data = copy.deepcopy(SPEC)
    data["spec"]["extends"] = "/".join(["x" * 250] * 4) + "/fleet.yaml"
    (deep / "spec.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    refused(cli("lint", str(deep / "spec.yaml")), "spec.extends: ", "File name too long; give a shorter path")


# ---------------------------------------------------------------- spec init --extends


def test_spec_init_refuses_a_fleet_outside_the_repository(cli: Any, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    outside = tmp_path / "elsewhere"
    shutil.copytree(ROOT / "examples" / "fleet", outside)
    target = repo / "clusters" / "new.yaml"
    result = cli("spec", "init", "--extends", str(outside / "fleet.yaml"), "--service", "eks", "--accelerator",
                 "h100", "--intent", "inference", "--os", "ubuntu", "-o", str(target))
    refused(result, f"{target}:", "spec.extends: '../../elsewhere/fleet.yaml' leads out of the Git repository the "
                                  f"spec is in ({repo})")
    assert not target.exists() and not target.parent.exists()
    inside = cli("spec", "init", "--extends", str(outside / "fleet.yaml"), "--service", "eks", "--accelerator",
                 "h100", "--intent", "inference", "--os", "ubuntu", "-o", str(outside / "clusters" / "new.yaml"))
    assert inside.code == 0, inside


# ---------------------------------------------------------------- a full disk, a read-only folder


def mounted(mount: Path, state: str) -> list[str]:
    """A command prefix running its command with a tmpfs at ``mount`` (created here) that is ``full`` or
    ``read-only``, in a mount namespace of its own; skips where there is none."""
    command = ["unshare", "--user", "--map-root-user", "--mount"]
    try:
        probe = subprocess.run([*command, "true"], capture_output=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        probe = None
    if probe is None or probe.returncode != 0:
        pytest.skip("no mount namespace here (unshare --user --map-root-user --mount fails): a full disk and a "
                    "read-only folder need one")
    mount.mkdir()
    setup = {"full": f"mount -t tmpfs -o size=8k tmpfs {mount} && (cat /dev/zero > {mount}/fill 2>/dev/null; true)",
             "read-only": f"mount -t tmpfs -o size=64k,ro tmpfs {mount}"}[state]
    return [*command, "sh", "-c", f'{setup} && exec "$@"', "sh"]


@pytest.mark.parametrize("state", ["full", "read-only"])
def test_spec_init_on_a_full_or_read_only_disk(tmp_path: Path, state: str) -> None:
    mount = tmp_path / "mnt"
    target = mount / "clusters" / "spec.yaml"
    aicr = [sys.executable, "-m", "aicr_gen", "spec", "init", "--service", "eks", "--accelerator", "h100",
            "--intent", "inference", "--os", "ubuntu", "-o", str(target)]
    done = subprocess.run([*mounted(mount, state), *aicr], capture_output=True, text=True, check=False, timeout=60,
                          cwd=ROOT)
    reason = {"full": "No space left on device", "read-only": "Read-only file system"}[state]
    refused(Result(done.returncode, done.stdout, done.stderr), f"-o {target}: ", reason)


def test_the_json_schema_says_the_limits_and_grammars(cli: Any) -> None:
    """``aicr-gen schema clusterspec`` carries them, so that an editor or check-jsonschema refuses as early."""
    import json

    import jsonschema

    result = cli("schema", "clusterspec")
    schema = json.loads(result.out)
    jsonschema.validate(SPEC, schema)
    for edit in (lambda data: pools(data, 101), lambda data: pool(data).update(versions={"gpu-operator": "v1\nx"}),
                 lambda data: data["metadata"].update(labels={"env": "a" * 64}),
                 lambda data: data["spec"]["repo"].update(url="https://x y"),
                 lambda data: data["spec"]["repo"].update(branch="a b")):
        data = copy.deepcopy(SPEC)
        edit(data)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, schema)
