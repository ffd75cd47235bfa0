"""Exact enumeration by interval splitting (APΔS Algorithm 3)."""

from __future__ import annotations

import numpy as np
import pytest

from robustce.errors import ValidationError
from robustce.models import ReLUNetwork
from robustce.robustness import DeltaStatus, ParameterShift, enumerate_delta, exact_worst_case


def _net(rng, sizes):
    return ReLUNetwork([(rng.normal(size=(o, i)), rng.normal(size=o) * 0.5)
                        for i, o in zip(sizes[:-1], sizes[1:], strict=True)])


def test_fractions_agree_with_the_exact_test_and_with_sampling():
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(12):
        net = _net(rng, [2, 3, 2, 1])
        x = rng.normal(size=2)
        shift = ParameterShift(0.15)
        t = int(net.predict(x[None])[0])
        ex = exact_worst_case(net, x[None], shift, t)
        res = enumerate_delta(net, x, shift, max_splits=10)
        assert res.robust + res.non_robust + res.unknown == pytest.approx(1.0)
        if ex.status[0] is DeltaStatus.ROBUST:
            seen.add("robust")
            assert res.non_robust == 0.0
        else:
            seen.add("not_robust")
            assert res.robust < 1.0
        # proven fractions bracket the share of sampled networks that flip
        flips = (shift.sample(net, 20000, random_state=1).margin(x[None], t)[:, 0] <= 0).mean()
        assert res.non_robust - 0.02 <= flips <= res.non_robust + res.unknown + 0.02
    assert seen == {"robust", "not_robust"}


def test_more_splits_never_lose_proven_volume():
    rng = np.random.default_rng(3)
    net = _net(rng, [2, 3, 1])
    x = rng.normal(size=2)
    shift = ParameterShift(0.3)
    prev = None
    for s in (0, 2, 4, 8):
        r = enumerate_delta(net, x, shift, max_splits=s, target_class=1)
        if prev is not None:
            assert r.robust >= prev.robust - 1e-12 and r.non_robust >= prev.non_robust - 1e-12
        prev = r
    assert prev.meta["max_splits"] == 8


def test_multiclass_and_box_cap():
    rng = np.random.default_rng(5)
    net = _net(rng, [2, 3, 3])
    x = rng.normal(size=2)
    r = enumerate_delta(net, x, ParameterShift(0.2), max_splits=30, max_boxes=64)
    assert r.depth < 30 and r.n_unknown_boxes <= 64
    assert 0.0 <= r.unknown <= 1.0
    assert set(r.to_dict()) >= {"robust", "non_robust", "unknown", "depth"}


def test_bad_arguments():
    rng = np.random.default_rng(0)
    net = _net(rng, [2, 3, 1])
    with pytest.raises(ValidationError):
        enumerate_delta(net, np.zeros((2, 2)), ParameterShift(0.1))
    with pytest.raises(ValidationError):
        enumerate_delta(net, np.zeros(2), 0.1)
    with pytest.raises(ValidationError):
        enumerate_delta(net, np.zeros(2), ParameterShift(0.1), max_splits=-1)
