"""The network views and shared helpers of ``robustce.models.network``: class margin, target
resolution, margin bounds from logit bounds, the model → network view, empirical δ."""

from __future__ import annotations

import numpy as np
import pytest

from robustce.errors import ValidationError
from robustce.models.network import (
    IntervalNetwork,
    ReLUNetwork,
    as_network,
    class_margin,
    empirical_delta,
    margin_bounds,
    margin_terms,
    model_space_rows,
    resolve_targets,
    torch_class_margin,
)


def _net(rng: np.random.Generator, sizes: list[int]) -> ReLUNetwork:
    return ReLUNetwork([(rng.normal(size=(b, a)), rng.normal(size=b))
                        for a, b in zip(sizes[:-1], sizes[1:], strict=True)])


def test_class_margin_by_hand_and_per_row_targets():
    z = np.array([[2.0, 1.0, -1.0], [0.0, 3.0, 1.0]])
    np.testing.assert_allclose(class_margin(z, 0), [1.0, -3.0])
    np.testing.assert_allclose(class_margin(z, np.array([0, 1])), [1.0, 2.0])
    zb = np.array([[0.5], [-2.0]])
    np.testing.assert_allclose(class_margin(zb, 1), [0.5, -2.0])
    np.testing.assert_allclose(class_margin(zb, np.array([0, 0])), [-0.5, 2.0])
    # batched logits (samples, rows, K) with one target per row
    stack = np.stack([z, 2 * z])
    np.testing.assert_allclose(class_margin(stack, np.array([2, 1])), [[-3.0, 2.0], [-6.0, 4.0]])
    with pytest.raises(ValidationError, match="target_class"):
        class_margin(z, np.array([0, 3]))
    with pytest.raises(ValidationError, match="entries"):
        class_margin(z, np.array([0, 1, 2]))
    with pytest.raises(ValidationError, match="0 or 1"):
        class_margin(zb, 2)


def test_torch_margin_equals_numpy_margin():
    import torch

    rng = np.random.default_rng(0)
    for k in (1, 4):
        z = rng.normal(size=(7, k))
        t = rng.integers(0, max(k, 2), size=7)
        got = torch_class_margin(torch.as_tensor(z), t).numpy()
        np.testing.assert_allclose(got, class_margin(z, t))


def test_resolve_targets():
    net = _net(np.random.default_rng(1), [3, 4, 3])
    X = np.random.default_rng(2).uniform(size=(5, 3))
    np.testing.assert_array_equal(resolve_targets(None, 5, network=net, X=X), net.predict(X))
    np.testing.assert_array_equal(resolve_targets(2, 5), np.full(5, 2))
    np.testing.assert_array_equal(resolve_targets([0, 1, 2, 0, 1], 5, network=net), [0, 1, 2, 0, 1])
    with pytest.raises(ValidationError, match="one per row"):
        resolve_targets([0, 1], 5)
    with pytest.raises(ValidationError, match="out of range"):
        resolve_targets(3, 5, network=net)
    with pytest.raises(ValidationError, match="needs a network"):
        resolve_targets(None, 5)


@pytest.mark.parametrize("k", [1, 3])
def test_margin_bounds_contain_every_margin_in_the_logit_box(k):
    rng = np.random.default_rng(k)
    lo = rng.normal(size=(6, k))
    hi = lo + rng.uniform(0, 1, size=(6, k))
    t = rng.integers(0, max(k, 2), size=6)
    m_lo, m_hi = margin_bounds(lo, hi, t)
    np.testing.assert_array_equal(m_lo, margin_terms(lo, hi, t).min(axis=1))
    Z = lo[None] + rng.uniform(size=(2000, 6, k)) * (hi - lo)[None]
    m = class_margin(Z, t)
    assert np.all(m >= m_lo - 1e-12) and np.all(m <= m_hi + 1e-12)
    # the bounds are attained at the box ends the formula names
    if k == 1:
        np.testing.assert_allclose(m_lo, np.where(t == 1, lo[:, 0], -hi[:, 0]))


def test_interval_network_of_a_point_is_the_forward_pass():
    rng = np.random.default_rng(3)
    net = _net(rng, [4, 5, 2])
    X = rng.normal(size=(6, 4))
    lo, hi = IntervalNetwork.point(net).bounds(X)
    np.testing.assert_allclose(lo, net.forward(X))
    np.testing.assert_allclose(hi, net.forward(X))


def test_empirical_delta_matches_a_hand_computation():
    a = ReLUNetwork([(np.array([[1.0, 2.0], [0.0, -1.0]]), np.array([0.0, 1.0])),
                     (np.array([[1.0, 1.0]]), np.array([0.5]))])
    b = ReLUNetwork([(np.array([[1.1, 2.0], [0.0, -1.3]]), np.array([0.0, 1.0])),
                     (np.array([[1.0, 0.95]]), np.array([-0.5]))])
    # weight diffs: 0.1, 0.3 (layer 1), 0.05 (layer 2); bias diff 1.0 (layer 2)
    assert empirical_delta(a, b) == pytest.approx(1.0)
    assert empirical_delta(a, b, biases=False) == pytest.approx(0.3)
    assert empirical_delta(a, a) == 0.0
    assert empirical_delta(a, b) == empirical_delta(b, a)
    other = ReLUNetwork([(np.ones((3, 2)), np.zeros(3)), (np.ones((1, 3)), np.zeros(1))])
    with pytest.raises(ValidationError, match="architectures differ"):
        empirical_delta(a, other)


def test_as_network_and_rows():
    net = _net(np.random.default_rng(4), [2, 3, 1])
    assert as_network(net) is net
    with pytest.raises(ValidationError, match="expected a ReLUNetwork"):
        as_network(object())
    X, bad = model_space_rows(net, np.array([[0.0, 1.0], [np.nan, 0.0]]))
    assert X.shape == (2, 2) and bad.tolist() == [False, True]
    with pytest.raises(ValidationError, match="shape"):
        model_space_rows(net, np.zeros((2, 3)))
