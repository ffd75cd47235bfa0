"""Solver edge cases of finding 7 (issue 29): the decide path must not stop at an incumbent
that only *ties* at margin 0, and max_provable_delta must say when its rounds ran out."""

from __future__ import annotations

import numpy as np
import pytest

from robustce.models import ReLUNetwork
from robustce.robustness import (
    DeltaStatus,
    ParameterShift,
    exact_worst_case,
    is_delta_robust,
    max_provable_delta,
)


def _tie_net() -> ReLUNetwork:
    """1 input, 2 hidden neurons, 3 classes, zero output biases; at x = 1 with δ = 0.1 (weights
    only) both hidden neurons can be switched off, where every logit is 0: a tie that keeps
    class 0 (argmax takes the first). Competitor 1 (interval bound −0.785, checked first) has
    worst case exactly 0 — that tie; competitor 2 (bound −0.235) has −0.18 and flips."""
    W1, b1 = np.array([[1.0], [1.0]]), np.array([-0.95, -0.9])
    W2, b2 = np.array([[6.0, 0.3], [5.0, 0.0], [0.0, 1.0]]), np.zeros(3)
    return ReLUNetwork([(W1, b1), (W2, b2)])


@pytest.mark.parametrize("mode", ["reuse", "rebuild"])
@pytest.mark.parametrize("precheck", [True, False])
def test_decide_path_continues_past_a_non_flipping_tie(mode, precheck):
    net, X, shift = _tie_net(), np.array([[1.0]]), ParameterShift(0.1, biases=False)
    assert net.predict(X)[0] == 0
    exact = exact_worst_case(net, X, shift, 0)
    assert exact.value[0] == pytest.approx(-0.18)
    robust, res = is_delta_robust(net, X, shift, target_class=0, precheck=precheck, mode=mode,
                                  return_result=True)
    assert not robust[0]
    assert res.status[0] is DeltaStatus.NOT_ROBUST  # was "inconclusive" (lower −0.235, upper 0)
    witness = res.witness[0]
    assert shift.contains(net, witness, atol=1e-9)
    assert witness.predict(X)[0] != 0 and res.upper[0] == pytest.approx(-0.18)


def test_a_true_tie_stays_inconclusive_never_robust():
    """Worst case exactly 0 for every competitor (all logits 0 with the hidden layer off): no
    network in Δ changes the prediction, but nothing is proven either."""
    W1, b1 = np.array([[1.0]]), np.array([-0.95])
    W2, b2 = np.array([[6.0], [5.0], [5.5]]), np.zeros(3)
    net, X, shift = ReLUNetwork([(W1, b1), (W2, b2)]), np.array([[1.0]]), ParameterShift(0.1, biases=False)
    assert exact_worst_case(net, X, shift, 0).value[0] == pytest.approx(0.0, abs=1e-9)
    robust, res = is_delta_robust(net, X, shift, target_class=0, return_result=True)
    assert not robust[0] and res.status[0] is DeltaStatus.INCONCLUSIVE


def _line() -> tuple[ReLUNetwork, np.ndarray]:
    """z = 3x at x = 2: worst case (3 − δ)·2 − δ = 6 − 3δ, so the largest robust δ is 2."""
    return ReLUNetwork([(np.array([[3.0]]), np.array([0.0]))]), np.array([[2.0]])


def test_max_provable_delta_says_when_rounds_run_out():
    net, X = _line()
    full = max_provable_delta(net, X, target_class=1, delta_init=1e-4)
    assert full.status[0] == "ok" and full.delta[0] == pytest.approx(2.0, abs=1e-4)
    # doubling from 1e-4: three rounds reach 4e-4 only (the "0.0004 where the truth is ~2")
    short = max_provable_delta(net, X, target_class=1, delta_init=1e-4, max_rounds=3)
    assert short.status[0] == "round_limit"  # was "ok", with upper = inf
    assert short.delta[0] == pytest.approx(4e-4) and np.isinf(short.upper[0])
    # bisection cut short: a finite bracket wider than delta_init, δ still proven
    mid = max_provable_delta(net, X, target_class=1, delta_init=1e-4, max_rounds=18)
    assert mid.status[0] == "round_limit"
    assert mid.delta[0] <= full.delta[0] < mid.upper[0] and mid.upper[0] - mid.delta[0] > 1e-4
    assert exact_worst_case(net, X, ParameterShift(mid.delta[0]), 1).robust[0]
