"""``yaml.edit.set_value``, as ``rollout advance`` and ``rollback`` use it on a fleet file: one wave's ``spec`` set,
every other byte kept, the result read back; what cannot be edited that way is refused (exit 2), never written
wrong."""

from __future__ import annotations

import pytest
import yaml

from aicr_gen.errors import InvalidInputError
from aicr_gen.yaml.edit import set_value

BUMP = {"versions": {"gpu-operator": "v26.4.0"}, "overrides": {"set": ["gpu-operator:driver.version=590.44.01"]}}
FLEET = """\
# the production fleet
apiVersion: aicr-gen.dev/v1alpha1
kind: Fleet
metadata: {name: prod}   # named for the ring
spec:
  versions: {gpu-operator: v26.3.3}
rollout:
  waves:
    - name: canary   # first
      clusters: [a]
      spec:
        versions:
          gpu-operator: v26.4.0   # the bump
    # prod next
    - name: prod
      selector: {ring: prod}
      soak: 24h
      spec:
        versions:
          gpu-operator: v26.3.3   # old
        # trailing comment

    - name: bare
      clusters: [z]
    - {name: flow, clusters: [q]}
    - name: flowspec
      clusters: [r]
      spec: {versions: {gpu-operator: old}}
# end
"""


def set_wave_spec(text: str, source: str, index: int, value: dict[str, object]) -> str:
    return set_value(text, source, ("rollout", "waves", index, "spec"), value)


def _wave(text: str, index: int) -> dict[str, object]:
    return yaml.safe_load(text)["rollout"]["waves"][index]


@pytest.mark.parametrize("index", [1, 2, 3, 4])
def test_only_the_waves_spec_changes(index: int) -> None:
    edited = set_wave_spec(FLEET, "fleet.yaml", index, BUMP)
    before, after = yaml.safe_load(FLEET), yaml.safe_load(edited)
    before["rollout"]["waves"][index]["spec"] = BUMP
    assert after == before
    kept = [line for line in FLEET.splitlines() if line.lstrip().startswith("#") or "# " in line]
    dropped = {1: {"          gpu-operator: v26.3.3   # old"}}.get(index, set())
    assert [line for line in kept if line not in dropped] == [line for line in edited.splitlines()
                                                              if line in kept]


def test_a_block_spec_is_rewritten_in_place_at_its_indentation() -> None:
    edited = set_wave_spec(FLEET, "fleet.yaml", 1, {"versions": {"gpu-operator": "v26.4.0"}})
    assert "      spec:\n        versions:\n          gpu-operator: v26.4.0\n        # trailing comment\n" in edited


def test_a_wave_without_spec_gets_it_last() -> None:
    edited = set_wave_spec(FLEET, "fleet.yaml", 2, {"versions": {"gpu-operator": "v26.4.0"}})
    assert "    - name: bare\n      clusters: [z]\n      spec:\n        versions:\n          gpu-operator: v26.4.0\n" \
        "    - {name: flow" in edited


def test_windows_line_breaks_stay() -> None:
    text = FLEET.replace("\n", "\r\n")
    edited = set_wave_spec(text, "fleet.yaml", 2, {"versions": {"gpu-operator": "v26.4.0"}})
    assert "\n" not in edited.replace("\r\n", "")
    assert _wave(edited, 2)["spec"] == {"versions": {"gpu-operator": "v26.4.0"}}


def test_an_empty_baseline() -> None:
    assert _wave(set_wave_spec(FLEET, "fleet.yaml", 1, {}), 1)["spec"] == {}


def test_a_spec_shared_through_an_alias_is_refused() -> None:
    text = FLEET.replace("      spec:\n        versions:\n          gpu-operator: v26.4.0   # the bump",
                         "      spec: &base\n        versions:\n          gpu-operator: v26.4.0").replace(
        "      spec:\n        versions:\n          gpu-operator: v26.3.3   # old\n        # trailing comment\n",
        "      spec: *base\n")
    assert _wave(text, 1)["spec"] == _wave(text, 0)["spec"]
    with pytest.raises(InvalidInputError, match=r"editing rollout.waves\[1\].spec would change more than it"):
        set_wave_spec(text, "fleet.yaml", 1, {"versions": {"gpu-operator": "v9"}})


def test_no_such_wave() -> None:
    with pytest.raises(InvalidInputError, match=r"has no rollout.waves\[9\]"):
        set_wave_spec(FLEET, "fleet.yaml", 9, BUMP)
