"""The raw evaluator of an equality relation is two-sided: ``a + b == c`` is violated by
``|a + b − c|``, below as above (mutant ``relation_equality_one_sided``: rows with a + b < c
passed), and :meth:`Constraints.satisfied` rejects both sides."""

from __future__ import annotations

import numpy as np
import pandas as pd

from robustce.data.constraints import Constraints
from robustce.data.relations import Relation


def test_an_equality_is_violated_on_both_sides_by_the_absolute_difference():
    frame = pd.DataFrame({"a": [1.0, 1.0, 2.0, 0.5], "b": [2.0, 1.0, 2.0, 0.25],
                          "c": [3.0, 3.0, 3.0, 0.75]})
    by_hand = np.abs(frame["a"] + frame["b"] - frame["c"]).to_numpy()  # 0, 1 (below), 1 (above), 0
    rel = Relation.parse("a + b == c")
    np.testing.assert_array_equal(rel.violation(frame), by_hand)
    ok = Constraints(["a + b == c"]).satisfied(frame)
    assert ok.tolist() == [True, False, False, True]
    # the one-sided forms only on their side
    np.testing.assert_array_equal(Relation.parse("a + b <= c").violation(frame), [0, 0, 1, 0])
    np.testing.assert_array_equal(Relation.parse("a + b >= c").violation(frame), [0, 1, 0, 0])
