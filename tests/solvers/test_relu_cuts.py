"""Cuts of the ideal single-neuron ReLU formulation: every cut holds at every point the MILP
allows (checked by sampling), adding them keeps the worst-case optimum of the Δ-test and never
lowers its root LP bound."""

from __future__ import annotations

import numpy as np
import pytest

from robustce.models.network import ReLUNetwork
from robustce.robustness import ParameterShift
from robustce.robustness.delta_milp import DeltaMILP
from robustce.robustness.exact import delta_test, margin_terms, point_layer_bounds
from robustce.solvers.relu_cuts import most_violated_cuts


def _net(seed: int, sizes=(5, 12, 12, 1)) -> ReLUNetwork:
    rng = np.random.default_rng(seed)
    return ReLUNetwork([(rng.normal(size=(o, i)) / np.sqrt(i), rng.normal(size=o) * 0.3)
                        for i, o in zip(sizes[:-1], sizes[1:], strict=True)])


def test_every_cut_holds_at_every_point_the_milp_allows():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n_in, n_out = 6, 4
        W, b = rng.normal(size=(n_out, n_in)), rng.normal(size=n_out)
        lo = rng.uniform(0, 0.5, n_in)
        hi = lo + rng.uniform(0.1, 1.0, n_in)
        # separate at a fractional point, as an LP solution would be
        v_sep, z_sep = rng.uniform(lo, hi), rng.uniform(0, 1, n_out)
        member, coef_z, const, value = most_violated_cuts(W, b, lo, hi, v_sep, z_sep)
        V = rng.uniform(lo, hi, size=(2000, n_in))
        V[:64] = np.where(rng.uniform(size=(64, n_in)) < 0.5, lo, hi)  # box corners
        pre = V @ W.T + b
        for z in (0.0, 1.0):
            # z = 0 allows y = 0; z = 1 allows y up to relu's argument where it is >= 0
            y = np.zeros_like(pre) if z == 0 else np.where(pre >= 0, pre, -np.inf)
            rhs = (V[:, None, :] * np.where(member, W, 0.0)[None]).sum(axis=2) + coef_z * z + const
            assert np.all(y <= rhs + 1e-9)
        # the chosen member is the most violated one: brute force over all 2^6 subsets I of
        # Σ_{i∈I} w_i (v_i − l̆_i (1 − z)) + (b + Σ_{i∉I} w_i ŭ_i) z at the separation point
        l_end, u_end = np.where(W >= 0, lo, hi), np.where(W >= 0, hi, lo)
        subsets = ((np.arange(2 ** n_in)[:, None] >> np.arange(n_in)) & 1).astype(bool)
        for k in range(n_out):
            rhs_all = (np.where(subsets, W[k] * (v_sep - l_end[k] * (1 - z_sep[k])),
                                W[k] * u_end[k] * z_sep[k]).sum(axis=1) + b[k] * z_sep[k])
            assert value[k] == pytest.approx(rhs_all.min(), abs=1e-12)


def test_cuts_keep_the_worst_case_and_never_lower_the_root_bound():
    shift = ParameterShift(0.05)
    tightened = 0
    for seed in range(3):
        net = _net(seed)
        X = np.random.default_rng(seed).uniform(size=(3, 5))
        t = net.predict(X).astype(np.int64)
        deltas = np.full(len(X), shift.delta)
        plain = delta_test(net, X, t, deltas, precheck=False, decide_only=False, time_limit=30)
        cut = delta_test(net, X, t, deltas, precheck=False, decide_only=False, time_limit=30,
                         cut_rounds=5)
        np.testing.assert_allclose(cut.value, plain.value, rtol=1e-6, atol=1e-7)
        inn = shift.interval(net)
        bounds = point_layer_bounds(net, X, deltas)
        terms = margin_terms(bounds[-1][0], bounds[-1][1], t)
        for i in range(len(X)):
            eng = DeltaMILP(net, inn, shift, solver="highs", time_limit=30, threads=1,
                            mode="rebuild", box=None, mip_gap=1e-9, abs_gap=1e-9, cut_rounds=5)
            b_i = [(lo[i], hi[i]) for lo, hi in bounds]
            out = eng.solve(X[i], int(t[i]), b_i, terms[i], 30.0, False, 1e-6)
            root = np.array(eng.last_root_bounds)
            assert root.size >= 1
            assert np.all(np.diff(root) >= -1e-7)  # cuts only tighten the relaxation
            assert root[-1] <= out.value + 1e-6  # and stay a relaxation
            assert abs(out.value - plain.value[i]) <= 1e-6 * max(1.0, abs(out.value))
            tightened += root[-1] > root[0] + 1e-6
    assert tightened > 0  # the cuts did bind somewhere: the test exercised them
