"""MACE's default z3 work budget is ``time_limit`` nominal seconds at the documented rate of
the model's family (MACE's docstring: 2e6 units a second for trees, 3e6 for forests, 5e5 for
logistic regression, 5e4 for ReLU MLPs; a one-layer network is logistic regression) —
mutants ``mace_one_layer_network_gets_the_mlp_rate``, ``mace_default_work_ignores_time_limit``."""

from __future__ import annotations

import numpy as np
import pytest

from robustce.methods.mace_work import default_work_limit

ONE_LAYER = [(np.ones((1, 3)), np.zeros(1))]
TWO_LAYERS = [(np.ones((4, 3)), np.zeros(4)), (np.ones((1, 4)), np.zeros(1))]


@pytest.mark.parametrize("kind, parts, per_second", [
    ("network", ONE_LAYER, 500_000), ("network", TWO_LAYERS, 50_000),
    ("tree", [None], 2_000_000), ("forest", [None, None], 3_000_000)])
@pytest.mark.parametrize("time_limit", [0.5, 2.0, 7.0])
def test_the_default_budget_is_time_limit_seconds_at_the_documented_rate(kind, parts, per_second,
                                                                          time_limit):
    assert default_work_limit(kind, parts, time_limit) == round(time_limit * per_second)
