"""``aicr_gen/resolve/merge.py``: ``copy_tree`` copies a loaded tree as ``copy.deepcopy`` does, sharing nothing."""

from __future__ import annotations

import copy
import math
import random
from typing import Any


def _plain_tree(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth < 4 and pick < 0.3:
        return {f"k{i}": _plain_tree(rng, depth + 1) for i in range(rng.randrange(4))}
    if depth < 4 and pick < 0.5:
        return [_plain_tree(rng, depth + 1) for _ in range(rng.randrange(4))]
    return rng.choice([None, True, False, 0, -3, 2**70, 1.5, math.inf, "", "x", "24.04", (1, [2])])


def test_copy_tree_copies_like_deepcopy() -> None:
    from aicr_gen.resolve.merge import copy_tree

    rng = random.Random(7)
    for _ in range(500):
        tree = _plain_tree(rng)
        copied = copy_tree(tree)
        assert copied == copy.deepcopy(tree)
        pending = [(tree, copied)]
        while pending:  # no container of the original is shared with the copy
            left, right = pending.pop()
            if isinstance(left, dict | list | tuple) and left:
                assert left is not right
                pending.extend(zip(left.values(), right.values(), strict=True) if isinstance(left, dict)
                               else zip(left, right, strict=True))
    shared = ["a"]
    copied = copy_tree({"x": shared, "y": shared})
    copied["x"].append("b")
    assert copied["y"] == ["a"] and shared == ["a"]
