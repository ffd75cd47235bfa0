"""A per-column ε must have exactly one entry per model-space column: shorter *and longer*
lists are refused by name (mutant ``ensemble_epsilon_length_unchecked``: a longer list was
read by position, each ε against whichever column it happened to land on)."""

from __future__ import annotations

import numpy as np
import pytest

from robustce.errors import ValidationError
from robustce.robustness import EnsembleShift


@pytest.mark.parametrize("n", [1, 3, 5, 8])
def test_a_per_column_epsilon_of_another_length_is_refused(n):
    shift = EnsembleShift(0.0, [0.1] * n)
    with pytest.raises(ValidationError, match=f"epsilon has {n} entries for 4"):
        shift.epsilons(4)


def test_one_epsilon_per_column_is_kept_in_order():
    np.testing.assert_array_equal(EnsembleShift(0.0, [0.1, 0.2, 0.3, 0.4]).epsilons(4),
                                  [0.1, 0.2, 0.3, 0.4])
    np.testing.assert_array_equal(EnsembleShift(0.0, 0.25).epsilons(3), [0.25] * 3)
