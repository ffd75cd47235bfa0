"""CounterNet / RoCourseNet paper-era training options (issue 31): leaky ReLU, gradient-norm
clipping, a validation checkpoint, the authors' loan sizes, and unbounded CEs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import robustce as rc
from robustce.errors import ValidationError
from robustce.methods.counternet import CounterNet, LeakyNetworkModel
from robustce.methods.counternet_network import _PredictorView
from robustce.methods.rocoursenet import RoCourseNet

TINY = ((16, 8), (8,), (8,))
KW = dict(hidden=TINY, batch_size=32, random_state=0, progress=False)


@pytest.fixture(scope="module")
def train():
    data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=1)
    return data.split(test_size=0.25, random_state=0)[0]


def test_leaky_relu_network_and_model_predict_as_the_module(train):
    m = CounterNet(activation="leaky_relu", epochs=2, **KW).fit(train)
    acts = [type(a) for a in m.net_.modules() if isinstance(a, nn.ReLU | nn.LeakyReLU)]
    assert acts and set(acts) == {nn.LeakyReLU}
    assert isinstance(m.model, LeakyNetworkModel)
    X = m.encoder.transform(train.frame)
    with torch.no_grad():
        torch_logit = _PredictorView(m.net_)(torch.tensor(X, dtype=torch.float32)).double()
    np.testing.assert_allclose(m.model.logits(X)[:, 0], torch_logit.numpy(), atol=1e-4)
    # a ReLU reading of the same weights is another function (negative pre-activations exist)
    relu = rc.models.NetworkModel(m.net_.relu_weights(), m.encoder)
    assert not np.allclose(relu.logits(X), m.model.logits(X), atol=1e-4)
    assert set(np.unique(m.model.predict(X))) <= {0, 1}


def test_grad_clip_changes_training_and_is_deterministic(train):
    a = CounterNet(epochs=2, **KW).fit(train)
    b = CounterNet(epochs=2, grad_clip=1e-3, **KW).fit(train)
    c = CounterNet(epochs=2, grad_clip=1e-3, **KW).fit(train)
    sa, sb, sc = (m.net_.state_dict() for m in (a, b, c))
    assert not all(torch.allclose(sa[k], sb[k]) for k in sa)
    assert all(torch.equal(sb[k], sc[k]) for k in sb)


def test_grad_clip_bounds_the_gradient_norm_at_each_step(train, monkeypatch):
    norms = []
    real = nn.utils.clip_grad_norm_

    def spy(params, max_norm, *a, **k):
        params = list(params)
        out = real(params, max_norm, *a, **k)
        norms.append(float(torch.cat([p.grad.reshape(-1) for p in params]).norm()))
        return out

    monkeypatch.setattr(nn.utils, "clip_grad_norm_", spy)
    CounterNet(epochs=1, grad_clip=0.5, **KW).fit(train)
    n_batches = -(-len(train) // 32)
    assert len(norms) == 2 * n_batches  # predictor and explainer step, every batch
    assert max(norms) <= 0.5 + 1e-5


def test_validation_checkpoint_keeps_the_best_epoch_on_held_out_rows(train):
    m = CounterNet(epochs=8, lr=0.1, val_size=0.2, **KW).fit(train)
    vals = [h["val"] for h in m.history_]
    assert len(vals) == 8
    assert m.best_epoch_ == int(np.argmin(vals))
    assert m.best_epoch_ < 7  # this run's validation loss rises again: a real choice


def test_validation_checkpoint_restores_weights_that_score_the_minimum(train):
    kw = dict(epochs=8, lr=0.1, val_size=0.2, **KW)  # best epoch 1 of 0..7 (see above)
    m = CounterNet(**kw).fit(train)
    # the rows the run held out: everything of `train` it did not train on
    held = train.frame.index.difference(m.data.frame.index)
    assert 0 < len(held) < len(train)
    Xv = torch.tensor(m.encoder.transform(train.frame.loc[held]), dtype=torch.float32)
    yv = torch.tensor(train.subset(held).y, dtype=torch.float32)
    vals = [h["val"] for h in m.history_]
    assert m.validation_loss(Xv, yv) == pytest.approx(min(vals), rel=1e-6)
    assert min(vals) < vals[-1] - 1e-4  # the last epoch's weights would score otherwise


def test_paper_era_options_reach_rocoursenet_and_are_checked(train):
    # the paper-era loan network: enc_dims [110, 200, 10] is input 110 then layers 200, 10;
    # dec_dims [10, 10] one 10-unit layer; exp_dims [10, 10] one 10-unit layer on [z, p]
    m = RoCourseNet(hidden=((200, 10), (10,), (10,)), activation="leaky_relu",
                    dropout=0.3, grad_clip=0.5, n_steps=13, epochs=1, val_size=0.2,
                    batch_size=64, random_state=0, progress=False).fit(train)
    enc = [mod.out_features for mod in m.net_.encoder if isinstance(mod, nn.Linear)]
    assert enc == [200, 10]
    assert isinstance(m.model, LeakyNetworkModel) and m.best_epoch_ == 0
    for bad in (dict(activation="tanh"), dict(grad_clip=0), dict(val_size=1.0),
                dict(val_size=0)):
        with pytest.raises(ValidationError, match=next(iter(bad))):
            CounterNet(**bad).fit(train)
