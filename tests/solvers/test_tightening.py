"""LP bound tightening: sound (every feasible point's pre-activations lie inside the tightened
bounds, checked by sampling) and tighter than interval propagation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from robustce.models.network import IntervalNetwork, ReLUNetwork
from robustce.solvers.encodings import InputVars, encode_network
from robustce.solvers.milp import MILP
from robustce.solvers.tightening import l1_ball_layer_bounds, l1_ball_max, lp_tighten_bounds


def _net(seed: int, sizes=(4, 12, 12, 1)) -> ReLUNetwork:
    rng = np.random.default_rng(seed)
    return ReLUNetwork([(rng.normal(size=(o, i)), rng.normal(size=o) * 0.3)
                        for i, o in zip(sizes[:-1], sizes[1:], strict=True)])


def _builder(net: ReLUNetwork, lo: np.ndarray, hi: np.ndarray, tau: float | None):
    def build(bounds, _upper_min):
        m = MILP("highs", time_limit=10)
        x = m.add_vars(len(lo), lo, hi)
        ne = encode_network(m, net, InputVars(x, lo, hi), bounds=bounds)
        if tau is not None:  # margin row: output >= tau
            m.add_constrs_coo([0], [ne.outputs[0]], [1.0], 1, tau, np.inf)
        return m, ne
    return build


def _pre_activations(net: ReLUNetwork, X: np.ndarray) -> list[np.ndarray]:
    out, h = [], X
    for W, b in net.weights[:-1]:
        z = h @ W.T + b
        out.append(z)
        h = np.maximum(z, 0.0)
    return out


def test_tightened_bounds_hold_for_sampled_points_and_beat_intervals():
    for seed in range(3):
        net = _net(seed)
        lo, hi = np.zeros(4), np.ones(4)
        inn = IntervalNetwork.point(net)
        start = [(a[0], b[0]) for a, b in inn.layer_bounds(lo, hi)]
        tb = lp_tighten_bounds(_builder(net, lo, hi, None), inn, start, plain=True,
                               time_limit=30)
        assert tb.complete and not tb.infeasible and tb.n_lps > 0
        X = np.random.default_rng(seed).uniform(size=(20_000, 4))
        for (L, U), Z in zip(tb.bounds, _pre_activations(net, X), strict=False):
            assert np.all(Z >= L[None] - 1e-9) and np.all(Z <= U[None] + 1e-9)
        widths0 = sum(float((b - a).sum()) for a, b in start[:-1])
        widths1 = sum(float((b - a).sum()) for a, b in tb.bounds[:-1])
        assert widths1 < widths0  # the second layer gains over interval propagation


def test_tightened_bounds_hold_on_the_feasible_set_of_a_margin_row():
    net = _net(7)
    lo, hi = np.zeros(4), np.ones(4)
    inn = IntervalNetwork.point(net)
    start = [(a[0], b[0]) for a, b in inn.layer_bounds(lo, hi)]
    X = np.random.default_rng(7).uniform(size=(50_000, 4))
    out = net.forward(X)[:, 0]
    tau = float(np.quantile(out, 0.8))  # a constraint that excludes most of the box
    tb = lp_tighten_bounds(_builder(net, lo, hi, tau), inn, start, plain=True, time_limit=30)
    feasible = X[out >= tau]
    assert len(feasible) > 100
    for (L, U), Z in zip(tb.bounds, _pre_activations(net, feasible), strict=False):
        assert np.all(Z >= L[None] - 1e-9) and np.all(Z <= U[None] + 1e-9)


def test_budget_stops_early_with_sound_bounds():
    net = _net(1)
    lo, hi = np.zeros(4), np.ones(4)
    inn = IntervalNetwork.point(net)
    start = [(a[0], b[0]) for a, b in inn.layer_bounds(lo, hi)]
    tb = lp_tighten_bounds(_builder(net, lo, hi, None), inn, start, plain=True,
                           time_limit=30, max_lps=3)
    assert tb.n_lps == 3 and not tb.complete
    X = np.random.default_rng(1).uniform(size=(5000, 4))
    for (L, U), Z in zip(tb.bounds, _pre_activations(net, X), strict=False):
        assert np.all(Z >= L[None] - 1e-9) and np.all(Z <= U[None] + 1e-9)


def _ball_lp_max(a, q, lo, hi, w, r):
    """max a·(x − q) over {lo ≤ x ≤ hi, Σ w_j |x_j − q_j| ≤ r} by scipy's LP (variables x and
    e ≥ |x − q|), independent of the greedy rule under test."""
    d = len(q)
    c = np.concatenate([-a, np.zeros(d)])
    eye = np.eye(d)
    A = np.vstack([np.hstack([eye, -eye]), np.hstack([-eye, -eye]),
                   np.concatenate([np.zeros(d), w])[None]])
    b = np.concatenate([q, -q, [r]])
    res = linprog(c, A_ub=A, b_ub=b, bounds=list(zip(lo, hi, strict=True)) + [(0, None)] * d,
                  method="highs")
    return -np.inf if res.status == 2 else -res.fun - a @ q


@pytest.mark.parametrize("seed", range(6))
def test_l1_ball_max_equals_the_lp_optimum(seed):
    rng = np.random.default_rng(seed)
    d, m = 7, 5
    A = rng.normal(size=(m, d))
    lo = rng.uniform(-1, 0, size=d)
    hi = lo + rng.uniform(0, 2, size=d)
    lo[0] = hi[0] = 0.3  # a fixed column
    w = rng.uniform(0.2, 2, size=d)
    w[1] = 0.0  # free column: moves to the box edge at no cost
    q = rng.uniform(-1, 1, size=d)
    q[2] = hi[2] + 0.1  # a query outside the box pays its distance to it first
    for r in (0.0, 0.05, 0.5, 5.0):
        got = l1_ball_max(A, q, lo, hi, w, r)
        want = np.array([_ball_lp_max(a, q, lo, hi, w, r) for a in A])
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-7)


def test_l1_ball_max_of_an_empty_set_is_minus_infinity():
    q, lo, hi, w = np.zeros(2), np.array([1.0, 0.0]), np.array([2.0, 1.0]), np.ones(2)
    assert np.all(l1_ball_max(np.ones((3, 2)), q, lo, hi, w, 0.5) == -np.inf)


def test_l1_ball_layer_bounds_hold_in_the_ball_and_beat_the_box():
    net = _net(3, sizes=(6, 16, 10, 1))
    rng = np.random.default_rng(0)
    lo, hi = np.zeros(6), np.ones(6)
    q = rng.uniform(size=6)
    w = np.array([1.0, 1.0, 0.5, 0.5, 2.0, 0.0])
    r = 0.3
    b = l1_ball_layer_bounds(net, q, lo, hi, w, r)
    box = IntervalNetwork.point(net).layer_bounds(lo, hi)
    # points of the box within the ball (on and inside its boundary)
    X = rng.uniform(size=(20000, 6))
    dist = np.abs(X - q) @ w
    inside = dist <= r
    on = X[~inside]
    t = (r / (np.abs(on - q) @ w))[:, None]  # pulled toward q onto the ball's surface
    X = np.vstack([X[inside], q + t * (on - q)])
    assert np.all(np.abs(X - q) @ w <= r + 1e-9)
    Z = _pre_activations(net, X)
    for li, z in enumerate(Z):
        assert np.all(z >= b[li][0] - 1e-9) and np.all(z <= b[li][1] + 1e-9)
    y = X @ np.eye(6)
    for W, bb in net.weights:
        y = y @ W.T + bb
        y = np.maximum(y, 0.0) if W is not net.weights[-1][0] else y
    assert np.all(y[:, 0] >= b[-1][0][0] - 1e-9) and np.all(y[:, 0] <= b[-1][1][0] + 1e-9)
    # never looser than the box, and much tighter in the first layer for a small radius
    for (bl, bh), (xl, xh) in zip(b, box, strict=True):
        assert np.all(bl >= xl[0] - 1e-12) and np.all(bh <= xh[0] + 1e-12)
    assert np.mean(b[0][1] - b[0][0]) < 0.5 * np.mean(box[0][1][0] - box[0][0][0])
