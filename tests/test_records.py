"""``aicr_gen.records.NamedTuple`` builds what ``typing.NamedTuple`` builds, and the modules of the quick commands
use it: ``validate`` and ``bundle`` import no ``typing``."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from aicr_gen import records

ROOT = Path(__file__).resolve().parent.parent


def _declare(base: type) -> type:
    class Reading(base):  # type: ignore[misc,valid-type]
        """A measured value."""

        name: str
        value: float
        unit: str | None = None
        tags: tuple[str, ...] = ()

        LIMIT = 10

        @property
        def high(self) -> bool:
            return bool(self.value > self.LIMIT)

        def label(self) -> str:
            return f"{self.name}={self.value}{self.unit or ''}"

    return Reading


OURS, THEIRS = _declare(records.NamedTuple), _declare(typing.NamedTuple)  # type: ignore[arg-type]


def test_a_record_is_the_namedtuple_typing_builds() -> None:
    for attribute in ("_fields", "_field_defaults", "__doc__", "__name__", "__qualname__", "__module__", "LIMIT"):
        assert getattr(OURS, attribute) == getattr(THEIRS, attribute), attribute
    # typing wraps the annotations (strings here) in ForwardRefs; they resolve to the same types
    assert typing.get_type_hints(OURS) == typing.get_type_hints(THEIRS) == {
        "name": str, "value": float, "unit": str | None, "tags": tuple[str, ...]}
    assert OURS.__mro__[1:] == THEIRS.__mro__[1:] == (tuple, object)
    ours, theirs = OURS("gpu", 12.5), THEIRS("gpu", 12.5)
    assert ours == theirs == ("gpu", 12.5, None, ())
    assert repr(ours) == repr(theirs) == "Reading(name='gpu', value=12.5, unit=None, tags=())"
    assert ours.high and ours.label() == theirs.label() == "gpu=12.5"
    assert ours._replace(unit="C") == theirs._replace(unit="C") and type(ours._replace(unit="C")) is OURS
    assert ours._asdict() == theirs._asdict()
    assert OURS._make(["a", 1, "u", ()]) == THEIRS._make(["a", 1, "u", ()])
    assert hash(ours) == hash(theirs)
    assert not hasattr(ours, "__dict__")


def test_a_record_pickles_by_its_name() -> None:
    reading = globals()["Module"]("x", 1)
    assert pickle.loads(pickle.dumps(reading)) == reading


class Module(records.NamedTuple):
    """A record at module level, as pickle finds it."""

    name: str
    value: int = 0


@pytest.mark.parametrize("base", [records.NamedTuple, typing.NamedTuple])
def test_what_typing_refuses_is_refused(base: type) -> None:
    with pytest.raises(TypeError, match="default"):
        class Late(base):  # type: ignore[misc,valid-type]
            first: int = 0
            second: int

    with pytest.raises(AttributeError, match="_replace"):
        class Clash(base):  # type: ignore[misc,valid-type]
            name: str

            def _replace(self) -> None:
                pass


@pytest.mark.parametrize("argv", [
    ["validate", "--recipe", "RECIPE", "--snapshot", str(ROOT / "snapshots" / "example-live.yaml")],
    ["bundle", "--recipe", "RECIPE", "--deployer", "flux", "-o", "OUT", "--repo", "https://git.example.com/x.git",
     "--force"],
])
def test_quick_commands_import_no_typing(argv: list[str], tmp_path: Path) -> None:
    import os

    env = {**os.environ, "AICR_GEN_CACHE_DIR": str(tmp_path / "cache")}
    recipe = tmp_path / "recipe.yaml"
    subprocess.run([sys.executable, "-m", "aicr_gen", "recipe", "--service", "eks", "--accelerator", "h100",
                    "--os", "ubuntu", "--intent", "training", "-o", str(recipe)], check=True, cwd=ROOT, env=env)
    args = [str(recipe) if arg == "RECIPE" else str(tmp_path / "out") if arg == "OUT" else arg for arg in argv]
    code = ("import sys\nfrom aicr_gen.cli.main import main\n"
            f"main({args!r})\n"
            "print('typing' in sys.modules)\n")
    for _ in range(2):  # the second run, as the cache has it
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                             check=False)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr
