"""The certifier contract (issue 47's mutants): of the five statuses only ``robust`` is a claim
of robustness — ``inconclusive`` (worst case within tolerance of 0), ``timeout`` and ``error``
are never counted robust — and only ``not_robust`` counts as refuted."""

from __future__ import annotations

import numpy as np

from robustce.robustness.certifier import Certificates

STATUSES = ["robust", "not_robust", "timeout", "inconclusive", "error"]


def test_only_robust_is_robust_and_only_not_robust_is_refuted():
    n = len(STATUSES)
    c = Certificates(STATUSES, [1.0, -1.0, np.nan, 0.0, np.nan], [2.0, -0.5, 1.0, 1e-9, np.nan],
                     [None] * n, [0.1] * n, [1] * n, "toy")
    assert c.robust.tolist() == [True, False, False, False, False]
    assert c.not_robust.tolist() == [False, True, False, False, False]
