"""CounterNet and RoCourseNet: architecture, constraints, determinism, VDS, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import robustce as rc
from robustce.errors import NotFittedError, ValidationError
from robustce.methods.counternet import CEConstraints, CounterNet

TINY = ((16, 8), (8,), (8,))


@pytest.fixture(scope="module")
def loan_small():
    data = rc.datasets.load("synthetic_loan", n_samples=600, random_state=1)
    return data.split(test_size=0.25, random_state=0)


@pytest.fixture(scope="module")
def fitted(loan_small):
    train, _ = loan_small
    return CounterNet(hidden=TINY, epochs=25, batch_size=32, lambdas=(1, 1, 0.1),
                      random_state=0, progress=False).fit(train)


def test_same_seed_same_model_and_other_seed_differs(loan_small):
    train, _ = loan_small
    small = train.subset(np.arange(120))
    kw = dict(hidden=TINY, epochs=2, batch_size=32, progress=False)
    a = CounterNet(random_state=3, **kw).fit(small)
    b = CounterNet(random_state=3, **kw).fit(small)
    c = CounterNet(random_state=4, **kw).fit(small)
    sa, sb, sc = (m.net_.state_dict() for m in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_model_view_is_the_trained_predictor(fitted, loan_small):
    _, test = loan_small
    assert isinstance(fitted.model, rc.models.NetworkModel)
    X = fitted.encoder.transform(test.frame)
    with torch.no_grad():
        torch_p = torch.sigmoid(fitted.predictor_view()(torch.tensor(X, dtype=torch.float32)))
    np.testing.assert_allclose(fitted.predict_proba(test.frame)[:, 1], torch_p.numpy(), atol=1e-5)
    np.testing.assert_array_equal(fitted.predict(test.frame), fitted.model.predict(X))
    # it learned something: better than the majority class on held-out rows
    majority = max(test.y.mean(), 1 - test.y.mean())
    assert (fitted.predict(test.frame) == test.y).mean() > majority


def test_ces_respect_encoding_immutables_and_flip_the_predictor(fitted, loan_small):
    _, test = loan_small
    enc = fitted.encoder
    X = enc.transform(test.frame)
    C = fitted.counterfactuals(X)
    np.testing.assert_array_equal(C, enc.project(C))  # exact encodings
    for b in enc.blocks_:
        if b.encoding == "onehot":
            assert np.all(C[:, b.slice].sum(1) == 1)
    np.testing.assert_array_equal(C[:, enc.immutable_mask_], X[:, enc.immutable_mask_])
    assert np.all(C[:, enc.increasing_mask_] >= X[:, enc.increasing_mask_])
    assert C.min() >= 0 and C.max() <= 1
    validity = (fitted.model.predict(C) != fitted.model.predict(X)).mean()
    assert validity >= 0.9
    e = fitted.explain(test.frame)
    found = e.status == "found"
    assert found.mean() >= 0.9
    assert set(e.status) <= {"found", "not_found"}


def test_soft_constraints_are_valid_relaxations(fitted):
    enc = fitted.encoder
    cons = CEConstraints(enc, torch.device("cpu"))
    g = torch.Generator().manual_seed(0)
    x = torch.tensor(enc.project(torch.rand(50, enc.n_features_out_, generator=g).numpy()),
                     dtype=torch.float32)
    raw = (3 * torch.randn(50, enc.n_features_out_, generator=g)).requires_grad_()
    soft = cons.soft(x, raw)
    assert soft.min() >= 0 and soft.max() <= 1
    for b in enc.blocks_:
        block = soft[:, b.slice]
        if b.encoding == "onehot":
            torch.testing.assert_close(block.sum(1), torch.ones(50))
        if b.encoding == "thermometer":
            assert torch.all(block[:, 1:] <= block[:, :-1] + 1e-6)
    imm = torch.tensor(enc.immutable_mask_)
    torch.testing.assert_close(soft[:, imm], x[:, imm])
    soft.sum().backward()  # differentiable
    assert raw.grad is not None and torch.isfinite(raw.grad).all()


def test_explain_before_fit_and_bad_params():
    with pytest.raises(NotFittedError):
        CounterNet(progress=False).explain(np.zeros((1, 3)))
    for bad in (dict(epochs=0), dict(lr=-1), dict(lambdas=(1, 2)), dict(dropout=1.0),
                dict(hidden=((8,), (8,))), dict(hidden=((0,), (8,), (8,))), dict(batch_size=0)):
        with pytest.raises(ValidationError):
            CounterNet(**bad)


def test_multiclass_is_rejected():
    with pytest.raises(ValidationError, match="binary"):
        CounterNet(hidden=TINY, epochs=1, progress=False).fit(rc.datasets.load("iris"))
