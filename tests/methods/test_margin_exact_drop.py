"""MILP-R raises its margin by the *exact* worst-case drop (issue 33): the margins it tries are a
function of the network and Δ, not of which flipping network the Δ-test's solver found first, so
a tighter formulation or another solver gives the same CEs up to ties."""

from __future__ import annotations

import numpy as np
import pytest

import robustce as rc
from robustce.models.network import class_margin
from robustce.robustness import ParameterShift, exact_worst_case

TAU1, DELTA, SLACK = 0.05, 0.03, 0.05


@pytest.fixture(scope="module")
def setting():
    data = rc.datasets.load("synthetic_loan", n_samples=400, random_state=0)
    train, test = data.split(test_size=0.25, random_state=0)
    model = rc.models.MLP(hidden_layers=(10, 8), epochs=30, random_state=0).fit(train)
    rejected = test.frame[model.predict(test.frame) == 0].head(12)
    return model, train, rejected


def test_second_margin_is_the_exact_worst_case_drop(setting):
    model, train, rejected = setting
    # round 1's CE: the nearest point at margin TAU1
    first = rc.methods.MILPNearest(model, train, tau=TAU1).explain(rejected)
    X = first.counterfactuals_encoded
    net = model.network()
    ones = np.ones(len(X), dtype=np.int64)
    margin = class_margin(net.forward(X), ones)
    exact = exact_worst_case(net, X, ParameterShift(DELTA), 1, decide_only=False)
    first_witness = exact_worst_case(net, X, ParameterShift(DELTA), 1, decide_only=True)
    assert not exact.robust.any()  # every round-1 CE is flipped: each gets a second round
    expected = np.maximum(1.0001 * TAU1, (margin - exact.upper) * (1 + SLACK) + 1e-6)
    from_first_witness = np.maximum(1.0001 * TAU1,
                                    (margin - first_witness.upper) * (1 + SLACK) + 1e-6)
    # the case separates the two readings: the first flipping network is not always the worst
    assert np.abs(expected - from_first_witness).max() > 1e-3

    res = rc.methods.MILPRobust(model, train, shift=DELTA, tau=TAU1, growth=1.0001, slack=SLACK,
                                max_rounds=2).explain(rejected)
    cert = res.certificates
    assert (cert["rounds"] == 2).all()
    np.testing.assert_allclose(cert["tau"].to_numpy(), expected, rtol=1e-5)
