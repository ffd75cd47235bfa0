"""Back-substituted (CROWN-style) bounds: sound on sampled networks, never looser than
intervals, and the Δ-test that uses them decides every row as the interval formulation does.

Soundness is checked against concrete networks: weight realisations drawn from Δ (uniform and
vertices, the extremes where ReLU networks attain their worst cases) for the interval-weight
bounds, inputs drawn from the box for the fixed-weight bounds. Every pre-activation must lie in
``[lower, upper]``, every upper end at the realised activations above ``upper_min`` and every
lower end below ``lower_max``.
"""

from __future__ import annotations

import numpy as np
import pytest

from robustce.errors import ValidationError
from robustce.models.network import IntervalNetwork, ReLUNetwork
from robustce.robustness import ParameterShift, exact_worst_case
from robustce.robustness.attack import flips_prediction, sign_attack
from robustce.robustness.bounds import (
    crown_box_bounds,
    crown_point_bounds,
    interval_point_bounds,
    n_unstable,
)

TOL = 1e-9


def _random_net(rng: np.random.Generator, n_in: int | None = None) -> ReLUNetwork:
    """2–4 hidden layers of width 10–100 (deep, as deployed tabular MLPs)."""
    depth = int(rng.integers(2, 5))
    sizes = [int(n_in or rng.integers(3, 12))] + [int(rng.integers(10, 101)) for _ in range(depth)] + [1]
    return ReLUNetwork([(rng.normal(0, 1 / np.sqrt(a), size=(b, a)), rng.normal(0, 0.1, size=b))
                        for a, b in zip(sizes[:-1], sizes[1:], strict=True)])


def _realisations(net: ReLUNetwork, delta: float, n: int, rng: np.random.Generator):
    """n weight realisations in Δ: half uniform, half random vertices."""
    for s in range(n):
        layers = []
        for W, b in net.weights:
            if s % 2:
                dW, db = rng.uniform(-delta, delta, W.shape), rng.uniform(-delta, delta, b.shape)
            else:
                dW = delta * rng.choice([-1.0, 1.0], W.shape)
                db = delta * rng.choice([-1.0, 1.0], b.shape)
            layers.append((W + dW, b + db))
        yield layers


def _check_point_bounds_sound(net: ReLUNetwork, delta: float, X: np.ndarray, rng, n_samples: int):
    inn = ParameterShift(delta).interval(net)
    lb = crown_point_bounds(inn, X)
    for layers in _realisations(net, delta, n_samples, rng):
        h = X
        for k, (W, b) in enumerate(layers):
            z = h @ W.T + b
            assert (z >= lb.lower[k] - TOL).all() and (z <= lb.upper[k] + TOL).all()
            if k:  # the ends at the realised activations (layer 0: constants, exact)
                Wl, Wu, bl, bu = inn.layers[k]
                assert (h @ Wu.T + bu >= lb.upper_min[k] - TOL).all()
                assert (h @ Wl.T + bl <= lb.lower_max[k] + TOL).all()
            h = np.maximum(z, 0.0)


@pytest.mark.parametrize("seed", range(6))
def test_point_bounds_are_sound_on_sampled_weights(seed):
    rng = np.random.default_rng(seed)
    net = _random_net(rng)
    X = rng.uniform(-0.5, 1.0, size=(20, net.n_inputs))  # inputs of either sign
    _check_point_bounds_sound(net, float(rng.choice([0.005, 0.02, 0.05])), X, rng, 60)


@pytest.mark.parametrize("seed", range(6))
def test_box_bounds_are_sound_on_sampled_inputs(seed):
    rng = np.random.default_rng(100 + seed)
    net = _random_net(rng)
    inn = IntervalNetwork.point(net)
    lo = rng.uniform(-1, 0.5, size=(5, net.n_inputs))
    hi = lo + rng.uniform(0, 0.6, size=lo.shape)
    lb = crown_box_bounds(inn, lo, hi)
    for r in range(len(lo)):
        # corners and interior points of row r's box
        U = rng.uniform(size=(400, lo.shape[1]))
        U[:200] = np.round(U[:200])
        Xs = lo[r] + U * (hi[r] - lo[r])
        h = Xs
        for k, (W, b) in enumerate(net.weights):
            z = h @ W.T + b
            assert (z >= lb.lower[k][r] - TOL).all() and (z <= lb.upper[k][r] + TOL).all()
            h = np.maximum(z, 0.0)


def test_bounds_are_never_looser_than_intervals_and_tighter_on_deep_networks():
    rng = np.random.default_rng(7)
    gained = 0
    for _ in range(5):
        net = _random_net(rng)
        X = rng.uniform(size=(30, net.n_inputs))
        inn = ParameterShift(0.01).interval(net)
        iv, cr = interval_point_bounds(inn, X), crown_point_bounds(inn, X)
        for k in range(len(inn.layers)):
            assert (cr.lower[k] >= iv.lower[k] - TOL).all()
            assert (cr.upper[k] <= iv.upper[k] + TOL).all()
        assert (n_unstable(cr) <= n_unstable(iv)).all()
        gained += int((cr.upper[-1] - cr.lower[-1] < iv.upper[-1] - iv.lower[-1] - 1e-6).sum())
        # the interval bounds are the library's interval propagation
        for (lo, hi), a, b in zip(inn.layer_bounds(X), iv.lower, iv.upper, strict=True):
            np.testing.assert_allclose(lo, a, atol=1e-12)
            np.testing.assert_allclose(hi, b, atol=1e-12)
    assert gained > 0


def test_structured_or_moving_networks_are_refused():
    net = ReLUNetwork([(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))])
    with pytest.raises(ValidationError, match="fixed weights"):
        crown_box_bounds(ParameterShift(0.1).interval(net), np.zeros((1, 2)), np.ones((1, 2)))
    inn = IntervalNetwork.point(net)
    inn.input_map = (np.eye(2), np.zeros(2))
    with pytest.raises(ValidationError, match="plain ReLU"):
        crown_point_bounds(inn, np.zeros((1, 2)))


def _decisions(net, X, delta, method, decide_only):
    return exact_worst_case(net, X, ParameterShift(delta), None, decide_only=decide_only,
                            bounds_method=method, time_limit=30)


@pytest.mark.parametrize("seed", range(3))
def test_decisions_and_values_match_the_interval_formulation(seed):
    """Same robust / not-robust decision on every row, and the same exact worst case, as the
    formulation with interval bounds only (decision path and full worst-case path)."""
    rng = np.random.default_rng(200 + seed)
    sizes = [5, int(rng.integers(10, 25)), int(rng.integers(10, 25)), 1]
    net = ReLUNetwork([(rng.normal(0, 1 / np.sqrt(a), size=(b, a)), rng.normal(0, 0.1, size=b))
                       for a, b in zip(sizes[:-1], sizes[1:], strict=True)])
    X = rng.uniform(size=(25, 5))
    for delta in (0.01, 0.05):
        old = _decisions(net, X, delta, "interval", True)
        new = _decisions(net, X, delta, "crown", True)
        assert list(old.status) == list(new.status)
        old_v = _decisions(net, X, delta, "interval", False)
        new_v = _decisions(net, X, delta, "crown", False)
        assert list(old_v.status) == list(new_v.status)
        np.testing.assert_allclose(new_v.value, old_v.value, atol=1e-6)
        for r in (new, new_v):  # every witness flips; every lower bound is below the value
            for i in np.flatnonzero(r.not_robust):
                assert flips_prediction(r.witness[i], X[i], int(r.target_class[i]))[0]
        assert (new_v.lower <= new_v.value + 1e-6).all()


def _soundness_round(net: ReLUNetwork, X: np.ndarray, delta: float, rng,
                     compare: bool = False) -> tuple[int, int]:
    """Certify X, then attack every robust claim (sampling + sign-gradient steps on weights)
    and replay every witness; ``compare``: the interval formulation decides every row the
    same way (a timeout on either side excepted). Returns (robust claims checked, timeouts)."""
    shift = ParameterShift(delta)
    res = exact_worst_case(net, X, shift, None, decide_only=True, time_limit=5)
    if compare:
        old = exact_worst_case(net, X, shift, None, decide_only=True, time_limit=5,
                               bounds_method="interval")
        for a, b in zip(res.status, old.status, strict=True):
            assert a == b or "timeout" in (a, b)
    t = res.target_class
    for i in np.flatnonzero(res.not_robust):
        assert shift.contains(net, res.witness[i], atol=1e-9)
        assert flips_prediction(res.witness[i], X[i], int(t[i]))[0]
    rob = np.flatnonzero(res.robust)
    if rob.size:
        best, _ = sign_attack(net, X[rob], shift, t[rob], steps=20)
        assert (best > 0).all()
        for layers in _realisations(net, delta, 20, rng):
            z = ReLUNetwork(layers).forward(X[rob])[:, 0]
            assert (np.where(t[rob] == 1, z, -z) > 0).all()
    return int(rob.size), int((res.status == "timeout").sum())


# seed 0 in `make test`; seeds 1-3 are the sweep (`make test-all`, run by CI)
@pytest.mark.parametrize("seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in (1, 2, 3))])
def test_soundness_on_random_deep_networks_fast(seed):
    rng = np.random.default_rng(300 + seed)
    net = _random_net(rng)
    X = rng.uniform(size=(6, net.n_inputs))
    delta = float(rng.choice([0.002, 0.01]))
    _, timeouts = _soundness_round(net, X, delta, rng, compare=True)
    assert timeouts < len(X)  # some row was decided, so its claim or witness was checked
    # the worst-case mode the margin loops use: the same decisions, every witness in Δ and
    # flipping, no less deep than the decision path's, and the exact value between the bounds
    shift = ParameterShift(delta)
    fast = exact_worst_case(net, X, shift, None, decide_only=True, time_limit=5)
    full = exact_worst_case(net, X, shift, None, decide_only=False, time_limit=5)
    for i in range(len(X)):
        if "timeout" in (fast.status[i], full.status[i]):
            continue
        assert fast.status[i] == full.status[i]
        if full.not_robust[i]:
            assert shift.contains(net, full.witness[i], atol=1e-9)
            assert flips_prediction(full.witness[i], X[i], int(full.target_class[i]))[0]
            assert full.upper[i] <= fast.upper[i] + 1e-9
            if np.isfinite(full.value[i]):  # solved to optimality within the time limit
                assert full.lower[i] - 1e-6 <= full.value[i] <= full.upper[i] + 1e-6


@pytest.mark.slow
def test_soundness_on_500_random_deep_networks():
    """Issue 33's acceptance: ≥ 500 new random deep networks (2–4 hidden layers, widths
    10–100); every robust claim survives sampling + weight attacks, every witness flips."""
    rng = np.random.default_rng(33)
    claims = timeouts = 0
    for k in range(500):
        net = _random_net(rng)
        c, t = _soundness_round(net, rng.uniform(size=(3, net.n_inputs)),
                                float(rng.choice([0.001, 0.005, 0.02])), rng, compare=k < 100)
        claims, timeouts = claims + c, timeouts + t
    print(f"500 networks: {claims} robust claims checked, {timeouts} timeouts (5 s)")
    assert claims > 0


def test_a_solver_error_on_the_tightened_model_falls_back_to_the_interval_formulation(monkeypatch):
    """A numerical solve error on the tightened model is answered by the interval formulation
    (exact too): same decisions and values as the interval path."""
    from robustce.robustness import delta_milp
    from robustce.solvers.milp import SolveStatus

    real = delta_milp.DeltaMILP.solve
    failed = []

    def solve(self, x, t, bounds, terms, deadline_s, decide_only, tol, upper_min=None):
        r = real(self, x, t, bounds, terms, deadline_s, decide_only, tol, upper_min=upper_min)
        if upper_min is not None:
            failed.append(1)
            return delta_milp.MILPOutcome(np.nan, -np.inf, SolveStatus.ERROR, None, np.nan,
                                          False, r.time, "simulated")
        return r

    rng = np.random.default_rng(5)
    net = ReLUNetwork([(rng.normal(size=(12, 4)), rng.normal(size=12) * 0.3),
                       (rng.normal(size=(10, 12)) / 3, rng.normal(size=10) * 0.3),
                       (rng.normal(size=(1, 10)) / 3, rng.normal(size=1) * 0.1)])
    X = rng.uniform(size=(10, 4))
    old = _decisions(net, X, 0.02, "interval", False)
    monkeypatch.setattr(delta_milp.DeltaMILP, "solve", solve)
    new = _decisions(net, X, 0.02, "crown", False)
    assert failed
    assert list(old.status) == list(new.status)
    np.testing.assert_allclose(new.value, old.value, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_box_bounds_within_an_l1_ball_are_sound_and_tighter(seed):
    """Over box ∩ weighted L1 ball (what MILPNearest admits below its incumbent): every
    pre-activation of sampled points of that set lies within the bounds, which are never
    looser than the ball's interval bounds."""
    from robustce.solvers.tightening import l1_ball_layer_bounds

    rng = np.random.default_rng(400 + seed)
    net = _random_net(rng)
    d = net.n_inputs
    lo, hi = np.zeros(d), np.ones(d)
    q, w = rng.uniform(size=d), rng.uniform(0.5, 2.0, size=d)
    radius = float(rng.uniform(0.2, 1.0))
    known = l1_ball_layer_bounds(net, q, lo, hi, w, radius)
    lb = crown_box_bounds(IntervalNetwork.point(net), lo[None], hi[None],
                          [(a[None], b[None]) for a, b in known], ball=(q, w, radius))
    # points of box ∩ ball: random directions scaled onto the ball (and inside it), clipped
    D = rng.normal(size=(600, d))
    D /= (np.abs(D) * w).sum(axis=1, keepdims=True)
    Xs = np.clip(q + D * radius * rng.uniform(0, 1, size=(600, 1)) ** 0.2, lo, hi)
    assert ((np.abs(Xs - q) * w).sum(axis=1) <= radius + 1e-9).all()
    h = Xs
    for k, (W, b) in enumerate(net.weights):
        z = h @ W.T + b
        assert (z >= lb.lower[k][0] - TOL).all() and (z <= lb.upper[k][0] + TOL).all()
        assert (lb.lower[k][0] >= known[k][0] - TOL).all()
        assert (lb.upper[k][0] <= known[k][1] + TOL).all()
        h = np.maximum(z, 0.0)


def test_an_unknown_bounds_method_is_refused_by_name():
    from robustce.robustness import ExactDeltaCertifier

    net = ReLUNetwork([(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))])
    with pytest.raises(ValidationError, match="bounds_method"):
        ExactDeltaCertifier(0.01, bounds_method="lp")
    with pytest.raises(ValidationError, match="bounds_method"):
        exact_worst_case(net, np.zeros((1, 2)), ParameterShift(0.01), 1, bounds_method="deeppoly")
