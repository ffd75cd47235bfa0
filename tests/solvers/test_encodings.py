"""Network and input-domain encodings: exact, big-M from bounds, no binaries for stable neurons."""

from __future__ import annotations

import numpy as np
import pytest

import robustce as rc
from robustce.models import ReLUNetwork
from robustce.robustness import ParameterShift, exact_worst_case
from robustce.solvers import MILP, SolveStatus
from robustce.solvers.encodings import (
    InputVars,
    encode_input_domain,
    encode_network,
    encode_shifted_network,
    plain_interval,
)


def _net(rng, sizes, scale=1.0):
    return ReLUNetwork([(rng.normal(size=(o, i)) * scale, rng.normal(size=o) * 0.5)
                        for i, o in zip(sizes[:-1], sizes[1:], strict=True)])


def _box_vars(m: MILP, lo, hi) -> InputVars:
    return InputVars(m.add_vars(len(lo), lo, hi), lo, hi)


def test_plain_network_fixed_input_reproduces_forward_pass():
    rng = np.random.default_rng(0)
    for _ in range(10):
        net = _net(rng, [3, 5, 4, 2])
        x = rng.normal(size=3)
        m = MILP(time_limit=5)
        enc = encode_network(m, net, x)
        m.set_objective(enc.outputs, [1.0, 0.0])
        r = m.solve()
        assert r.status is SolveStatus.OPTIMAL
        assert np.allclose(r.values[enc.outputs], net.forward(x[None])[0], atol=1e-7)
        assert enc.n_binaries == 0  # a fixed point makes every neuron stable


@pytest.mark.parametrize("signed", [False, True])
def test_plain_network_over_a_box_is_exact(signed):
    rng = np.random.default_rng(1)
    for _ in range(6):
        net = _net(rng, [2, 6, 4, 1])
        lo = np.array([-1.0, -0.5]) if signed else np.zeros(2)
        hi = np.array([0.5, 1.0]) if signed else np.ones(2)
        m = MILP(time_limit=10, mip_gap=1e-9)
        xv = _box_vars(m, lo, hi)
        enc = encode_network(m, net, xv)
        m.set_objective(enc.outputs, [1.0], sense="max")
        r = m.solve()
        assert r.status is SolveStatus.OPTIMAL
        x_star = r.values[xv.index]
        # the maximiser is a real input whose forward pass gives the optimum ...
        assert net.forward(x_star[None])[0, 0] == pytest.approx(r.objective, abs=1e-6)
        # ... and no sampled input does better
        grid = rng.uniform(lo, hi, size=(20000, 2))
        assert net.forward(grid)[:, 0].max() <= r.objective + 1e-7


def test_stable_neurons_get_no_binary_and_big_m_comes_from_bounds():
    rng = np.random.default_rng(2)
    net = _net(rng, [4, 12, 8, 1])
    lo, hi = np.zeros(4), np.full(4, 0.3)
    m = MILP(time_limit=5)
    enc = encode_network(m, net, _box_vars(m, lo, hi))
    bounds = plain_interval(net).layer_bounds(lo, hi)
    A = m._materialise().A.tocsc()
    for layer, (L, U) in zip(enc.hidden, bounds[:-1], strict=False):
        unstable = (L[0] < 0) & (U[0] > 0)
        assert np.array_equal(layer.binary >= 0, unstable)
        for i in np.flatnonzero(unstable):
            col = A[:, layer.binary[i]].data
            # the binary's coefficients are exactly -L_i and -U_i (no fixed big constant)
            assert np.allclose(np.sort(np.abs(col)), np.sort([abs(L[0, i]), abs(U[0, i])]))


def test_shifted_network_fixed_point_is_first_layer_bounds_only():
    rng = np.random.default_rng(3)
    net = _net(rng, [3, 5, 1])
    x = rng.normal(size=3)
    m = MILP(time_limit=5)
    enc = encode_shifted_network(m, net, ParameterShift(0.1), x)
    # one hidden layer + a fixed input: nothing left to branch on
    assert enc.n_binaries == 0
    assert not enc.plain
    with pytest.raises(rc.errors.ValidationError):
        _ = enc.outputs


def test_shifted_network_over_signed_box_is_exact():
    """min over x in a box straddling 0 and over Δ: the optimal x's exact Δ-test agrees, and no
    sampled x in the box has a smaller worst case."""
    rng = np.random.default_rng(4)
    shift = ParameterShift(0.08)
    for _ in range(4):
        net = _net(rng, [2, 4, 3, 1])
        lo, hi = np.array([-1.0, -0.2]), np.array([0.6, 1.0])
        m = MILP(time_limit=10, mip_gap=1e-9, abs_gap=1e-9)
        xv = _box_vars(m, lo, hi)
        enc = encode_shifted_network(m, net, shift, xv)
        assert enc.aux["n_sign_binaries"] == 2
        m.set_objective([enc.out_lower[0]], [1.0])
        r = m.solve()
        assert r.status is SolveStatus.OPTIMAL
        x_star = r.values[xv.index]
        at_star = exact_worst_case(net, x_star[None], shift, 1, precheck=False)
        assert at_star.value[0] == pytest.approx(r.objective, abs=1e-6)
        pts = rng.uniform(lo, hi, size=(15, 2))
        others = exact_worst_case(net, pts, shift, 1, precheck=False).value
        assert np.all(others >= r.objective - 1e-7)


def test_encoding_a_50_50_network_stays_small_at_a_point():
    """A fixed input point needs no input variables: only activations and their binaries."""
    rng = np.random.default_rng(5)
    net = _net(rng, [20, 50, 50, 1], scale=0.3)
    x = rng.uniform(size=20)
    m = MILP(time_limit=5)
    encode_shifted_network(m, net, ParameterShift(0.01), _box_vars(m, np.zeros(20), np.ones(20)))
    m._materialise()
    assert m.n_vars > 100  # 20 inputs, 100 activations, 2 outputs, binaries
    m = MILP(time_limit=5)
    encode_shifted_network(m, net, ParameterShift(0.01), x)
    assert m.n_vars < 300


@pytest.fixture(scope="module")
def loan_encoder():
    data = rc.datasets.load("synthetic_loan")
    return data, rc.data.Encoder(data.schema).fit(data.frame)


def test_input_domain_structure(loan_encoder):
    data, enc = loan_encoder
    X = enc.transform(data.frame.iloc[:25])
    rng = np.random.default_rng(6)
    for q in X:
        m = MILP(time_limit=5)
        dom = encode_input_domain(m, enc, q)
        m.set_objective(dom.index, rng.normal(size=enc.n_features_out_))
        r = m.solve()
        assert r.status is SolveStatus.OPTIMAL
        x = r.values[dom.index]
        # a valid encoding: projecting changes nothing
        assert np.allclose(enc.project(x[None])[0], x, atol=1e-6)
        for b in enc.blocks_:
            xs, qs = x[b.slice], q[b.slice]
            if b.encoding == "onehot":
                assert xs.sum() == pytest.approx(1.0)
            if b.encoding == "thermometer":
                assert np.all(np.diff(xs) <= 1e-9)
            if b.n_steps:
                assert xs[0] * b.n_steps == pytest.approx(round(xs[0] * b.n_steps), abs=1e-6)
            act = b.actionability.value
            if act == "immutable":
                assert np.allclose(xs, qs)
            elif act == "increase":
                assert np.all(xs >= qs - 1e-9)
            elif act == "decrease":
                assert np.all(xs <= qs + 1e-9)
        assert set(dom.column_kind) <= {"continuous", "grid", "binary", "fixed"}


def test_input_domain_without_encoder_and_bad_inputs(loan_encoder):
    _, enc = loan_encoder
    m = MILP(time_limit=5)
    dom = encode_input_domain(m, 3, lower=[-1, 0, 0], upper=[1, 2, 0.5])
    assert np.array_equal(dom.lower, [-1, 0, 0]) and list(dom.column_kind) == ["continuous"] * 3
    with pytest.raises(rc.errors.ValidationError):
        encode_input_domain(MILP(), "nope")
    with pytest.raises(rc.errors.ValidationError):
        encode_input_domain(MILP(), enc, np.full(enc.n_features_out_ + 1, 0.5))
    with pytest.raises(rc.errors.ValidationError):
        InputVars([0], [0.0], [np.inf])


@pytest.mark.parametrize("ordinal_encoding", ["thermometer", "integer"])
def test_column_kinds_are_the_domain_kinds_without_a_milp(ordinal_encoding):
    from robustce.data.schema import Feature, Schema
    from robustce.solvers.encodings import column_kinds

    schema = Schema([Feature("x", "continuous", 0.0, 5.0), Feature("k", "integer", 1, 4),
                     Feature("c", "continuous", 2.0, 2.0), Feature("z", "integer", 3, 3),
                     Feature("b", "binary", categories=(0, 1)),
                     Feature("cat", "categorical", categories=("a", "b", "c")),
                     Feature("o", "ordinal", categories=("lo", "mid", "hi"))])
    enc = rc.data.Encoder(schema, ordinal_encoding=ordinal_encoding).fit()
    dom = encode_input_domain(MILP(), enc)
    kind, steps = column_kinds(enc)
    assert list(kind) == list(dom.column_kind) and np.array_equal(steps, dom.grid_steps)
    assert {"continuous", "grid", "fixed", "binary"} <= set(kind)
