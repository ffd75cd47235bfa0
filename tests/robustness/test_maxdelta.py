"""Max provable δ (APΔS Algorithm 4): proven at δ, not at δ + δ_init, vectorised = one by one."""

from __future__ import annotations

import numpy as np
import pytest

from robustce.errors import ValidationError
from robustce.models import ReLUNetwork
from robustce.robustness import DeltaStatus, ParameterShift, exact_worst_case, max_provable_delta


def _net(seed: int, sizes=(3, 5, 4, 1)) -> ReLUNetwork:
    rng = np.random.default_rng(seed)
    return ReLUNetwork([(rng.normal(size=(o, i)), rng.normal(size=o) * 0.5)
                        for i, o in zip(sizes[:-1], sizes[1:], strict=True)])


@pytest.mark.parametrize("sizes", [(3, 5, 4, 1), (3, 4, 3)])
def test_delta_is_proven_and_the_bracket_is_tight(sizes):
    net = _net(0, sizes)
    X = np.random.default_rng(1).uniform(size=(12, 3))
    d0 = 1e-3
    res = max_provable_delta(net, X, delta_init=d0)
    t = net.predict(X)
    assert np.array_equal(res.target_class, t)
    for i in range(len(X)):
        assert res.n_timeouts[i] == 0
        if res.status[i] == "ok":
            assert res.upper[i] - res.delta[i] <= d0 + 1e-12
            ok = exact_worst_case(net, X[i:i + 1], ParameterShift(res.delta[i]), int(t[i]), precheck=False)
            assert ok.status[0] is DeltaStatus.ROBUST
            bad = exact_worst_case(net, X[i:i + 1], ParameterShift(res.upper[i]), int(t[i]), precheck=False)
            assert bad.status[0] is not DeltaStatus.ROBUST
        else:
            assert res.status[i] in ("not_robust", "capped")


def test_vectorised_equals_one_by_one():
    net = _net(2)
    X = np.random.default_rng(3).uniform(size=(6, 3))
    together = max_provable_delta(net, X, delta_init=1e-3)
    for i in range(len(X)):
        alone = max_provable_delta(net, X[i:i + 1], delta_init=1e-3)
        assert alone.delta[0] == together.delta[i]


def test_not_robust_at_init_and_capped():
    net = ReLUNetwork([(np.array([[1.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([-1.0]))])
    X = np.array([[1.0 + 1e-9], [50.0]])  # margin ~1e-9 at the first, ~49 at the second
    res = max_provable_delta(net, X, target_class=1, delta_init=1e-3, delta_max=0.05)
    assert res.status[0] == "not_robust" and res.delta[0] == 0.0
    assert res.status[1] == "capped" and res.delta[1] == pytest.approx(0.05)
    assert np.isinf(res.upper[1])
    frame = res.to_frame()
    assert list(frame.columns[:3]) == ["delta", "upper", "status"]


def test_matches_a_closed_form():
    # z = w x + b with x = 2: worst case (w - δ)·2 + (b - δ) = 2w + b - 3δ  ->  δ* = (2w + b) / 3
    net = ReLUNetwork([(np.array([[0.7]]), np.array([0.1]))])
    res = max_provable_delta(net, np.array([[2.0]]), target_class=1, delta_init=1e-4)
    assert res.delta[0] == pytest.approx((2 * 0.7 + 0.1) / 3, abs=1e-4)
    assert res.delta[0] <= (2 * 0.7 + 0.1) / 3


def test_bad_arguments():
    net = _net(0)
    X = np.zeros((1, 3))
    with pytest.raises(ValidationError):
        max_provable_delta(net, X, delta_init=0)
    with pytest.raises(ValidationError):
        max_provable_delta(net, X, delta_init=0.1, delta_max=0.01)
    res = max_provable_delta(net, np.full((1, 3), np.nan))
    assert res.status[0] == "error"


def test_undecided_test_at_init_is_not_called_not_robust(monkeypatch):
    """A timed-out test at δ_init proves nothing: status "undecided", δ = 0 (still a valid bound)."""
    import robustce.robustness.maxdelta as md

    real = md.delta_test

    def timed_out(*args, **kwargs):
        res = real(*args, **kwargs)
        res.status[:] = DeltaStatus.TIMEOUT
        return res

    monkeypatch.setattr(md, "delta_test", timed_out)
    net = ReLUNetwork([(np.array([[1.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([-1.0]))])
    res = max_provable_delta(net, np.array([[1.0 + 1e-9]]), target_class=1, delta_init=1e-3)
    assert res.status[0] == "undecided" and res.delta[0] == 0.0
    assert res.n_timeouts[0] >= 1
