"""LP bound tightening: sound (every feasible point's pre-activations lie inside the tightened
bounds, checked by sampling) and tighter than interval propagation."""

from __future__ import annotations

import numpy as np

from robustce.models.network import IntervalNetwork, ReLUNetwork
from robustce.solvers.encodings import InputVars, encode_network
from robustce.solvers.milp import MILP
from robustce.solvers.tightening import lp_tighten_bounds


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
