"""ParameterShift: samples, interval bounds (soundness for any input sign), membership."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustce.errors import ValidationError
from robustce.models.network import ReLUNetwork
from robustce.robustness.shift import (
    IntervalNetwork,
    ParameterShift,
    SampledNetworks,
    empirical_delta,
)

TOL = 1e-9


def random_network(rng: np.random.Generator, sizes: list[int], scale: float = 1.0) -> ReLUNetwork:
    return ReLUNetwork([(rng.normal(0, scale, size=(b, a)), rng.normal(0, scale, size=b))
                        for a, b in zip(sizes[:-1], sizes[1:], strict=True)])


@st.composite
def networks_and_inputs(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n_in = draw(st.integers(1, 5))
    hidden = draw(st.lists(st.integers(1, 6), min_size=0, max_size=3))
    n_out = draw(st.sampled_from([1, 2, 3]))
    delta = draw(st.floats(1e-3, 1.0))
    input_scale = draw(st.sampled_from([0.1, 1.0, 5.0]))
    biases = draw(st.booleans())
    rng = np.random.default_rng(seed)
    net = random_network(rng, [n_in, *hidden, n_out])
    X = rng.uniform(-input_scale, input_scale, size=(6, n_in))  # both signs
    return net, X, ParameterShift(delta, biases=biases), rng


@settings(max_examples=80, deadline=None)
@given(networks_and_inputs())
def test_every_sampled_realisation_lies_inside_the_interval_bounds(case):
    net, X, shift, rng = case
    lo, hi = shift.interval(net).bounds(X)
    assert lo.shape == hi.shape == (len(X), net.n_outputs)
    assert np.all(lo <= hi + TOL)
    out = shift.sample(net, 200, random_state=rng).forward(X)
    assert np.all(out >= lo[None] - TOL)
    assert np.all(out <= hi[None] + TOL)
    # the base network is one of the realisations
    base = net.forward(X)
    assert np.all(base >= lo - TOL) and np.all(base <= hi + TOL)


@settings(max_examples=80, deadline=None)
@given(networks_and_inputs(), st.sampled_from([0.0, 0.01, 0.5, 2.0]))
def test_box_bounds_contain_point_bounds_and_sampled_outputs(case, width):
    net, X, shift, rng = case
    X_hi = X + width * rng.uniform(0, 1, size=X.shape)
    inet = shift.interval(net)
    box_lo, box_hi = inet.bounds(X, X_hi)
    # points inside each box (the corners included)
    for t in (0.0, 1.0, *rng.uniform(0, 1, size=3)):
        P = X + t * (X_hi - X)
        p_lo, p_hi = inet.bounds(P)
        assert np.all(box_lo <= p_lo + TOL)
        assert np.all(p_hi <= box_hi + TOL)
        out = shift.sample(net, 50, random_state=rng).forward(P)
        assert np.all(out >= box_lo[None] - TOL) and np.all(out <= box_hi[None] + TOL)
    # every layer's bounds, not only the logits
    layers = inet.layer_bounds(X, X_hi)
    assert len(layers) == len(net.weights)
    for lo, hi in layers:
        assert np.all(lo <= hi + TOL)


def test_point_bounds_are_exact_for_a_single_linear_layer():
    # one affine layer: the worst case sets every weight to its extreme, so bounds are attained
    rng = np.random.default_rng(3)
    net = random_network(rng, [4, 2])
    X = rng.uniform(-1, 1, size=(5, 4))
    shift = ParameterShift(0.1)
    lo, hi = shift.interval(net).bounds(X)
    z = net.forward(X)
    spread = 0.1 * (np.abs(X).sum(axis=1, keepdims=True) + 1.0)
    np.testing.assert_allclose(lo, z - spread, atol=1e-12)
    np.testing.assert_allclose(hi, z + spread, atol=1e-12)


def test_nonnegative_box_bounds_match_the_four_corner_form():
    rng = np.random.default_rng(4)
    net = random_network(rng, [3, 5, 2])
    lo_in = rng.uniform(0, 0.5, size=(7, 3))
    hi_in = lo_in + rng.uniform(0, 0.5, size=(7, 3))
    inet = ParameterShift(0.05).interval(net)
    fast = inet.layer_bounds(lo_in, hi_in)
    # force the general (four-corner) path by shifting the box below zero by nothing: compare
    # with a hand computation of the first layer
    Wl, Wu, bl, bu = inet.layers[0]
    corners = np.stack([Wl * lo_in[:, None, :], Wl * hi_in[:, None, :],
                        Wu * lo_in[:, None, :], Wu * hi_in[:, None, :]])
    np.testing.assert_allclose(fast[0][0], corners.min(axis=0).sum(axis=2) + bl, atol=1e-12)
    np.testing.assert_allclose(fast[0][1], corners.max(axis=0).sum(axis=2) + bu, atol=1e-12)


def test_sampled_forward_equals_a_per_sample_loop(monkeypatch):
    rng = np.random.default_rng(0)
    net = random_network(rng, [6, 20, 10, 3])
    X = rng.uniform(-1, 1, size=(17, 6))
    samples = ParameterShift(0.05).sample(net, 37, random_state=1)
    loop = np.stack([samples.network(i).forward(X) for i in range(len(samples))])
    np.testing.assert_array_equal(samples.forward(X), loop)
    # several chunks (of 1 and of 3 samples) give the same numbers
    for elements in (1, 3 * 17 * 20):
        monkeypatch.setattr(SampledNetworks, "_CHUNK_ELEMENTS", elements)
        np.testing.assert_array_equal(samples.forward(X), loop)
    margins = samples.margin(X, target_class=2)
    np.testing.assert_array_equal(margins, np.stack([samples.network(i).margin(X, 2) for i in range(37)]))
    assert samples.forward(X[0]).shape == (37, 1, 3)


def test_samples_lie_in_the_box_and_are_seeded():
    rng = np.random.default_rng(0)
    net = random_network(rng, [4, 8, 1])
    shift = ParameterShift(0.2)
    a = shift.sample(net, 500, random_state=7)
    b = shift.sample(net, 500, random_state=7)
    c = shift.sample(net, 500, random_state=8)
    assert len(a) == 500
    for (Wa, ba), (Wb, bb), (Wc, _), (W, bias) in zip(a.weights, b.weights, c.weights, net.weights,
                                                      strict=True):
        np.testing.assert_array_equal(Wa, Wb)
        np.testing.assert_array_equal(ba, bb)
        assert not np.array_equal(Wa, Wc)
        dev = Wa - W[None]
        assert np.abs(dev).max() <= 0.2
        assert dev.min() < -0.19 and dev.max() > 0.19  # uniform over the whole box
        assert abs(dev.mean()) < 0.01
        assert np.abs(ba - bias[None]).max() <= 0.2
    for i in (0, 123, 499):
        assert shift.contains(net, a.network(i))
    # biases=False keeps every bias
    nb = ParameterShift(0.2, biases=False).sample(net, 20, random_state=0)
    for (_, bs), (_, bias) in zip(nb.weights, net.weights, strict=True):
        np.testing.assert_array_equal(bs, np.broadcast_to(bias, bs.shape))


def test_sample_matches_the_uniform_draw_it_documents():
    rng = np.random.default_rng(0)
    net = random_network(rng, [3, 4, 1])
    s = ParameterShift(0.3).sample(net, 5, random_state=11)
    g = np.random.default_rng(11)
    for (W, b), (Ws, bs) in zip(net.weights, s.weights, strict=True):
        np.testing.assert_array_equal(Ws, W[None] + g.uniform(-0.3, 0.3, size=(5,) + W.shape))
        np.testing.assert_array_equal(bs, b[None] + g.uniform(-0.3, 0.3, size=(5,) + b.shape))


def test_interval_uses_delta_on_weights_and_biases():
    net = ReLUNetwork([(np.array([[1.0, -2.0]]), np.array([0.5]))])
    inet = ParameterShift(0.25).interval(net)
    assert isinstance(inet, IntervalNetwork)
    Wl, Wu, bl, bu = inet.layers[0]
    np.testing.assert_array_equal(Wl, [[0.75, -2.25]])
    np.testing.assert_array_equal(Wu, [[1.25, -1.75]])
    np.testing.assert_array_equal(bl, [0.25])
    np.testing.assert_array_equal(bu, [0.75])
    # x = (1, -1): z = 1 + 2 + 0.5 = 3.5; spread = 0.25 * (1 + 1 + 1)
    lo, hi = inet.bounds(np.array([[1.0, -1.0]]))
    assert lo[0, 0] == pytest.approx(2.75) and hi[0, 0] == pytest.approx(4.25)
    assert inet.margin_lower_bound(np.array([[1.0, -1.0]]), 1)[0] == pytest.approx(2.75)
    assert inet.margin_lower_bound(np.array([[1.0, -1.0]]), 0)[0] == pytest.approx(-4.25)


def test_margin_lower_bound_takes_one_target_per_row():
    rng = np.random.default_rng(5)
    for n_out in (1, 3):
        net = random_network(rng, [4, 6, n_out])
        X = rng.uniform(0, 1, size=(9, 4))
        inet = ParameterShift(0.05).interval(net)
        n_classes = max(2, n_out)
        targets = rng.integers(0, n_classes, size=9)
        per_row = inet.margin_lower_bound(X, targets)
        for c in range(n_classes):
            np.testing.assert_array_equal(per_row[targets == c], inet.margin_lower_bound(X, c)[targets == c])
        # sound: every sampled realisation's margin is above the bound
        margins = ParameterShift(0.05).sample(net, 100, random_state=0).forward(X)
        from robustce.models.network import class_margin

        for c in range(n_classes):
            assert np.all(class_margin(margins, c)[:, targets == c] >= per_row[targets == c] - TOL)
        with pytest.raises(ValidationError, match="target_class"):
            inet.margin_lower_bound(X, n_classes)
        with pytest.raises(ValidationError, match="one per row"):
            inet.margin_lower_bound(X, targets[:3])


def test_contains_matches_a_hand_computation():
    a = ReLUNetwork([(np.array([[1.0, 2.0], [0.0, -1.0]]), np.array([0.0, 1.0])),
                     (np.array([[1.0, 1.0]]), np.array([0.5]))])
    b = ReLUNetwork([(np.array([[1.1, 2.0], [0.0, -1.3]]), np.array([0.0, 1.0])),
                     (np.array([[1.0, 0.95]]), np.array([-0.5]))])
    # weight diffs: 0.1, 0.3 (layer 1), 0.05 (layer 2); bias diff 1.0 (layer 2)
    assert ParameterShift(1.0).contains(a, b)
    assert not ParameterShift(0.99).contains(a, b)
    assert not ParameterShift(0.3, biases=False).contains(a, b)  # biases are fixed then
    b_same_bias = ReLUNetwork([(W, ba) for (W, _), (_, ba) in zip(b.weights, a.weights, strict=True)])
    assert ParameterShift(0.3, biases=False).contains(a, b_same_bias)
    assert not ParameterShift(0.29, biases=False).contains(a, b_same_bias)
    other = ReLUNetwork([(np.ones((3, 2)), np.zeros(3)), (np.ones((1, 3)), np.zeros(1))])
    assert not ParameterShift(1.0).contains(a, other)


def test_empirical_delta_of_samples_is_at_most_delta():
    rng = np.random.default_rng(0)
    net = random_network(rng, [5, 7, 1])
    s = ParameterShift(0.04).sample(net, 30, random_state=0)
    deltas = [empirical_delta(net, s.network(i)) for i in range(30)]
    assert max(deltas) <= 0.04 and min(deltas) > 0.03


@pytest.mark.parametrize("delta", [0, -0.1, float("nan"), float("inf"), "abc", None])
def test_bad_delta_is_rejected(delta):
    with pytest.raises(ValidationError, match="delta"):
        ParameterShift(delta)


@pytest.mark.parametrize("p", [1, 2, 0.5])
def test_only_p_inf_is_supported(p):
    with pytest.raises(ValidationError, match="p=inf"):
        ParameterShift(0.1, p=p)
    assert ParameterShift(0.1, p=math.inf).p == math.inf


def test_bad_sample_and_input_arguments():
    rng = np.random.default_rng(0)
    net = random_network(rng, [3, 2, 1])
    shift = ParameterShift(0.1)
    with pytest.raises(ValidationError, match="n must be an integer >= 1"):
        shift.sample(net, 0)
    with pytest.raises(ValidationError, match="random_state"):
        shift.sample(net, 3, random_state="seed")
    with pytest.raises(ValidationError, match="columns"):
        shift.sample(net, 3, random_state=0).forward(np.zeros((2, 4)))
    inet = shift.interval(net)
    with pytest.raises(ValidationError, match="lower > upper"):
        inet.bounds(np.ones((1, 3)), np.zeros((1, 3)))
    with pytest.raises(ValidationError, match="shape"):
        inet.bounds(np.ones((1, 2)))
    assert shift.to_dict() == {"delta": 0.1, "p": "inf", "biases": True}


def test_shift_accepts_models_with_a_network_view():
    from robustce.datasets import load
    from robustce.models import MLP

    data = load("synthetic_loan", n_samples=200)
    model = MLP(hidden_layers=(4,), epochs=1, random_state=0).fit(data)
    X = model.encoder.transform(data.frame.iloc[:5])
    lo, hi = ParameterShift(0.01).interval(model).bounds(X)
    z = model.logits(X)
    assert np.all(lo <= z) and np.all(z <= hi)


def test_parameter_shift_of_accepts_a_shift_a_number_or_its_dict_and_names_the_parameter():
    from robustce.robustness import ParameterShift as PS

    s = PS(0.05, biases=False)
    assert PS.of(s) is s
    assert PS.of(0.05) == PS(0.05)
    assert PS.of(s.to_dict()) == s  # round trip through saved metadata
    for bad in (math.nan, -1.0, "x", {"delta": 0.1, "p": 2}, {"delta": math.inf}, {"radius": 1}):
        with pytest.raises(ValidationError, match="^shift"):
            PS.of(bad)
    with pytest.raises(ValidationError, match="^delta"):
        PS.of(math.nan, "delta")
