"""One strict pydantic base (``modelcheck.Strict``): every model a file is checked against forbids unknown keys
through it, and the consumers with a further rule (frozen values, AICR's uncoerced config) name it there."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

import aicr_gen
from aicr_gen.drift.snapshot import _models
from aicr_gen.modelcheck import Strict

PACKAGE = Path(aicr_gen.__file__).parent
# module -> the rule its models add to the base (the six homes of 3d48356, each with its own ConfigDict)
HOMES = {
    "aicr_gen.catalog.models": {}, "aicr_gen.spec.cluster": {}, "aicr_gen.spec.fleet": {},
    "aicr_gen.gitops.review.plan": {"frozen": True}, "aicr_gen.gitops.review.objects": {"frozen": True},
    "aicr_gen.gitops.review.rendered": {"frozen": True}, "aicr_gen.gitops.review.upgrade": {"frozen": True},
    "aicr_gen.policy.check": {}, "aicr_gen.mirror.manifests": {}, "aicr_gen.mirror.lock": {"frozen": True},
    "aicr_gen.gitops.review.model": {"frozen": True}, "aicr_gen.commands._bundle_config": {"strict": True},
}


def _models_of(name: str) -> list[type[BaseModel]]:
    module = importlib.import_module(name)
    return [value for value in vars(module).values()
            if inspect.isclass(value) and issubclass(value, BaseModel) and value.__module__ == name]


@pytest.mark.parametrize("name", sorted(HOMES))
def test_every_model_is_strict_with_its_homes_rule(name: str) -> None:
    models = _models_of(name)
    assert models
    for model in models:
        assert issubclass(model, Strict), model
        assert model.model_config.get("extra") == "forbid"
        for rule, value in HOMES[name].items():
            assert model.model_config.get(rule) == value, (model, rule)
        assert not {"frozen", "strict"} - set(HOMES[name]) & set(model.model_config), model


def test_snapshot_models_are_strict() -> None:
    assert all(issubclass(model, Strict) for model in _models().values())


def test_unknown_keys_and_coercion_are_refused_as_before() -> None:
    from aicr_gen.commands._bundle_config import _Strict as BundleStrict

    class Plain(Strict):
        count: int

    class Uncoerced(BundleStrict):
        count: int

    assert Plain.model_validate({"count": "3"}).count == 3
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Plain.model_validate({"count": 3, "other": 1})
    with pytest.raises(ValidationError, match="Input should be a valid integer"):
        Uncoerced.model_validate({"count": "3"})


def test_no_other_home_configures_forbid() -> None:
    homes = [path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
             if re.search(r"extra\s*=\s*[\"']forbid", path.read_text())]
    assert homes == ["modelcheck.py"]
