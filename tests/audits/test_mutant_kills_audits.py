"""Every bootstrap interval of the audit contains its own value, also where the replicates
all lie on one side of it (issue 47, mutant ``audit_interval_misses_its_point``): the figures
test draws groups whose replicates straddle the value, so a percentile interval that was not
extended to it passed there."""

from __future__ import annotations

import numpy as np

from robustce.utils import percentile_interval as _ci


def test_one_sided_replicates_give_an_interval_reaching_the_value():
    above = np.linspace(1.0, 2.0, 200)
    lo, hi = _ci(above, 0.5)
    assert lo == 0.5 and hi == np.percentile(above, 97.5)
    lo, hi = _ci(-above, -0.5)
    assert hi == -0.5 and lo == np.percentile(-above, 2.5)
    lo, hi = _ci(np.array([np.nan, 1.0, 1.0, 1.0]), 0.0)  # NaN replicates are left out
    assert (lo, hi) == (0.0, 1.0)
    assert all(np.isnan(_ci(np.array([np.nan]), 0.0)))  # no replicate: no interval
