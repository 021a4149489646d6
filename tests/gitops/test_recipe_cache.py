"""``diff --spec`` answers from a spec's cached recipe only while nothing the spec was read from changed: the spec,
its fleet (its wave's view), its catalog, its sentinel rules, the Git work tree its paths must stay in; otherwise
the spec is loaded and checked as always, refusals included."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.spec.test_waves import CANARY, cluster, write_fleet

LIVE = str(ROOT / "snapshots" / "example-live.yaml")


@pytest.fixture
def no_loading(monkeypatch: pytest.MonkeyPatch) -> Any:
    """After it is called, loading a spec fails the test: the answer must come from the cache."""
    from aicr_gen.spec import load

    def forbid() -> None:
        def refuse(path: Any) -> Any:
            raise AssertionError(f"{path} was loaded")

        monkeypatch.setattr(load, "load_spec", refuse)

    return forbid


def _diff(cli: Any, spec: Path) -> dict[str, Any]:
    result = cli("diff", "--spec", str(spec), "--target", LIVE, "--format", "json")
    assert result.code == 0, result.err
    found: dict[str, Any] = json.loads(result.out)
    return found


def _version(document: dict[str, Any]) -> str | None:
    return next((entry["baseline"] for entry in document["changes"]
                 if entry["path"] == "K8s.helm.gpu-operator.version"), None)


def test_an_unchanged_spec_answers_from_the_cache(cli: Any, tmp_path: Path, no_loading: Any) -> None:
    write_fleet(tmp_path / "fleet.yaml", [{**CANARY, "spec": {"versions": {"gpu-operator": "v26.4.0"}}}])
    spec = cluster(tmp_path)
    first = _diff(cli, spec)
    no_loading()
    assert _diff(cli, spec) == first and _version(first) == "v26.4.0"


def test_any_input_that_changed_is_read_again(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.spec import load

    loaded: list[str] = []
    real = load.load_spec

    def counting(path: Any) -> Any:
        loaded.append(str(path))
        return real(path)

    monkeypatch.setattr(load, "load_spec", counting)
    fleet = write_fleet(tmp_path / "fleet.yaml", [{**CANARY, "spec": {"versions": {"gpu-operator": "v26.4.0"}}}])
    spec = cluster(tmp_path)
    catalog = tmp_path / "catalog"
    shutil.copytree(ROOT / "overlays", catalog)
    data = yaml.safe_load(fleet.read_text())
    data["spec"]["catalogs"] = ["catalog"]
    fleet.write_text(yaml.safe_dump(data, sort_keys=False))
    assert _version(_diff(cli, spec)) == "v26.4.0" and len(loaded) == 1
    assert _version(_diff(cli, spec)) == "v26.4.0" and len(loaded) == 1  # from the cache
    # the wave's baseline moved: the fleet's view of the wave changed
    data["rollout"]["waves"][0]["spec"]["versions"]["gpu-operator"] = "v26.5.0"
    fleet.write_text(yaml.safe_dump(data, sort_keys=False))
    assert _version(_diff(cli, spec)) == "v26.5.0" and len(loaded) == 2
    # a file of a catalog layer changed
    readme = next(catalog.rglob("*.yaml"))
    readme.write_text(readme.read_text() + "\n# edited\n")
    _diff(cli, spec)
    assert len(loaded) == 3
    _diff(cli, spec)
    assert len(loaded) == 3
    # the catalog folder disappears: the spec is loaded again and refused, as without a cache
    shutil.rmtree(catalog)
    gone = cli("diff", "--spec", str(spec), "--target", LIVE)
    assert gone.code == 2 and "catalog" in gone.err and len(loaded) == 4
