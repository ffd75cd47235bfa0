"""The exact Δ-test never claims more than the solver proved.

* a MILP stopped by its time limit with a *positive incumbent* (an upper bound on the worst
  case) and a *negative dual bound* proves nothing: the row is ``timeout``, never robust;
* a worst case inside the tolerance band (0 ≤ value < tol) is ``inconclusive``, not robust;
  just above the band it is robust; just below 0 a witness flips the CE.

Networks with a known worst case are made by shifting the output bias: moving the nominal
output bias by c moves every realisation's output (and so the exact worst case) by c.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from robustce.models.network import ReLUNetwork
from robustce.robustness import DeltaStatus, ParameterShift, exact_worst_case, is_delta_robust
from robustce.robustness.bounds import crown_point_bounds
from robustce.solvers import milp as milp_module
from robustce.solvers.milp import SolveStatus

SHIFT = ParameterShift(0.02)


def _net(seed: int, sizes=(4, 6, 5, 1)) -> ReLUNetwork:
    rng = np.random.default_rng(seed)
    return ReLUNetwork([(rng.normal(size=(o, i)) * 0.8, rng.normal(size=o) * 0.3)
                        for i, o in zip(sizes[:-1], sizes[1:], strict=True)])


def _with_output_bias_shift(net: ReLUNetwork, c: float) -> ReLUNetwork:
    weights = [(W.copy(), b.copy()) for W, b in net.weights]
    weights[-1][1][0] += c
    return ReLUNetwork(weights)


def _crown_lower(net: ReLUNetwork, X: np.ndarray) -> np.ndarray:
    """Back-substituted lower bound of the target-1 logit over Δ (what the Δ-test uses)."""
    return crown_point_bounds(SHIFT.interval(net), X).lower[-1][:, 0]


@pytest.fixture(scope="module")
def robust_cases():
    """(network, point) pairs whose exact worst case (target 1) is clearly positive while the
    interval and back-substituted bounds are negative, so only the MILP can prove robustness."""
    net = _net(3, sizes=(4, 16, 16, 16, 1))
    X = np.random.default_rng(4).uniform(size=(60, 4))
    v = exact_worst_case(net, X, SHIFT, 1, precheck=False).value
    gap = v - _crown_lower(net, X)
    cases = []
    for i in np.argsort(gap)[-3:]:
        assert gap[i] > 1.0
        lifted = _with_output_bias_shift(net, gap[i] / 2 - v[i])  # worst case gap/2 > 0.5
        x = X[i:i + 1]
        res = exact_worst_case(lifted, x, SHIFT, 1, precheck=False)
        assert res.status[0] is DeltaStatus.ROBUST and res.value[0] > 0.5
        assert SHIFT.interval(lifted).bounds(x)[0][0, 0] < -0.5  # the interval proves nothing
        assert _crown_lower(lifted, x)[0] < -0.5  # nor does back-substitution
        cases.append((lifted, x))
    return cases


def _stopped_at_time_limit(monkeypatch, dual_bound: float) -> list:
    """Every MILP solve runs to its optimum but reports TIME_LIMIT with the incumbent kept and
    ``dual_bound`` as the proven bound — what a solver stopped early with a good incumbent and
    a weak bound returns."""
    real = milp_module.MILP.solve
    seen = []

    def solve(self, *args, cutoff=None, target=None, **kwargs):
        res = real(self, *args, **kwargs)  # no cutoff/target: always an incumbent
        assert res.has_solution
        seen.append(res.objective)
        return dataclasses.replace(res, status=SolveStatus.TIME_LIMIT, bound=dual_bound)

    monkeypatch.setattr(milp_module.MILP, "solve", solve)
    return seen


@pytest.mark.parametrize("decide_only", [False, True])
def test_time_limit_with_positive_incumbent_is_a_timeout_not_robust(monkeypatch, robust_cases,
                                                                    decide_only):
    seen = _stopped_at_time_limit(monkeypatch, dual_bound=-0.3)
    for net, x in robust_cases:
        res = exact_worst_case(net, x, SHIFT, 1, precheck=False, decide_only=decide_only)
        assert res.status[0] is DeltaStatus.TIMEOUT  # the incumbent proves nothing
        assert res.lower[0] < 0
        assert np.isnan(res.value[0])
    assert seen and min(seen) > 0.5  # the incumbents were positive


def test_is_delta_robust_is_false_on_a_timed_out_solve(monkeypatch, robust_cases):
    _stopped_at_time_limit(monkeypatch, dual_bound=-0.3)
    for net, x in robust_cases:
        assert not is_delta_robust(net, x, SHIFT, 1, precheck=False)[0]
        assert not is_delta_robust(net, x, SHIFT, 1)[0]  # the prechecks cannot prove it either


def test_time_limit_with_a_proven_positive_bound_is_robust(monkeypatch, robust_cases):
    """The other side: a dual bound ≥ tol is a proof even when the solver stopped early."""
    _stopped_at_time_limit(monkeypatch, dual_bound=0.05)
    for net, x in robust_cases:
        assert exact_worst_case(net, x, SHIFT, 1, precheck=False).status[0] is DeltaStatus.ROBUST


@pytest.fixture(scope="module")
def band_case():
    net = _net(5, sizes=(3, 8, 6, 1))
    X = np.random.default_rng(6).uniform(size=(4, 3))
    v = exact_worst_case(net, X, SHIFT, 1, precheck=False).value
    assert np.isfinite(v).all()
    return net, X, v


@pytest.mark.parametrize("offset, want", [
    (0.5, DeltaStatus.INCONCLUSIVE),   # worst case tol/2: inside the band
    (0.01, DeltaStatus.INCONCLUSIVE),  # just above 0
    (2.0, DeltaStatus.ROBUST),         # worst case 2·tol: proven
    (-0.5, DeltaStatus.NOT_ROBUST),    # worst case −tol/2: a witness flips the CE
])
def test_tolerance_band_around_zero(band_case, offset, want):
    net, X, v = band_case
    tol = 1e-4
    for i in range(len(X)):
        shifted = _with_output_bias_shift(net, -v[i] + offset * tol)
        res = exact_worst_case(shifted, X[i:i + 1], SHIFT, 1, precheck=False, tol=tol)
        assert res.value[0] == pytest.approx(offset * tol, abs=1e-7)
        assert res.status[0] is want, (i, offset, res.status[0], res.lower[0])
        if want is DeltaStatus.NOT_ROBUST:
            assert res.witness[0].predict(X[i:i + 1])[0] != 1


def test_real_tiny_time_limit_gives_timeouts_and_no_unproven_claims():
    """A real solve far too short for a 10-40-40-1 network: rows time out (asserted), and any
    row that is decided is decided correctly (robust rows checked by sampling, not-robust rows
    by their witness)."""
    rng = np.random.default_rng(1)
    sizes = [10, 40, 40, 1]
    net = ReLUNetwork([(rng.normal(size=(o, i)) * 0.4, rng.normal(size=o) * 0.1)
                       for i, o in zip(sizes[:-1], sizes[1:], strict=True)])
    X = rng.uniform(size=(5, 10))
    res = exact_worst_case(net, X, SHIFT, None, precheck=False, time_limit=1e-3)
    assert (res.status == DeltaStatus.TIMEOUT).sum() >= 1
    assert np.isnan(res.value[res.status == DeltaStatus.TIMEOUT]).all()
    samples = SHIFT.sample(net, 2000, random_state=0).forward(X)[..., 0]  # (n, rows)
    for i, s in enumerate(res.status):
        if s is DeltaStatus.ROBUST:
            sign = 1 if res.target_class[i] == 1 else -1
            assert (sign * samples[:, i] > 0).all()
        if s is DeltaStatus.NOT_ROBUST:
            assert res.witness[i].predict(X[i:i + 1])[0] != res.target_class[i]


def test_slightly_negative_worst_case_is_never_robust_by_the_prechecks():
    """One hidden layer: the interval bound at a point is the exact worst case. Shifted to
    −2e-4 it is negative but tiny; the pre-checks must not round it up to robust, and the
    answer comes with a witness that flips the CE."""
    net = _net(8, sizes=(3, 7, 1))
    X = np.random.default_rng(9).uniform(size=(5, 3))
    v = exact_worst_case(net, X, SHIFT, 1, precheck=False).value
    for i in range(len(X)):
        shifted = _with_output_bias_shift(net, -v[i] - 2e-4)
        x = X[i:i + 1]
        lo = SHIFT.interval(shifted).bounds(x)[0][0, 0]
        assert -1e-3 < lo < 0  # the premise: a tiny negative bound
        assert shifted.predict(x)[0] == 1  # valid on the nominal network
        res = exact_worst_case(shifted, x, SHIFT, 1)
        assert res.status[0] is DeltaStatus.NOT_ROBUST
        assert res.witness[0].predict(x)[0] != 1
        assert not is_delta_robust(shifted, x, SHIFT, 1)[0]
