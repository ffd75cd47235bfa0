"""``from_torch``: a Sequential with BatchNorm and Dropout trained outside robustce on adult is
folded exactly (same predictions) and the exact Δ-test runs on it; other layers are refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import robustce as rc
from robustce.errors import UnsupportedModelError
from robustce.models import from_torch
from robustce.robustness import DeltaStatus, ParameterShift, exact_worst_case


@pytest.fixture(scope="module")
def adult():
    try:
        ds = rc.datasets.load("adult")
    except rc.errors.DatasetUnavailableError as exc:
        pytest.skip(f"adult is not available offline: {exc}")
    return ds.subset(np.arange(800))


def _train(module: nn.Module, X: np.ndarray, y: np.ndarray, epochs: int = 30) -> nn.Module:
    torch.manual_seed(0)
    opt = torch.optim.Adam(module.parameters(), lr=1e-2)
    Xt = torch.tensor(np.array(X), dtype=torch.float32)
    yt = torch.tensor(np.array(y), dtype=torch.float32)
    module.train()
    for _ in range(epochs):
        opt.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(module(Xt)[:, 0], yt)
        loss.backward()
        opt.step()
    return module.eval()


def _net(n_in: int, input_bn: bool) -> nn.Sequential:
    torch.manual_seed(0)
    layers = [nn.BatchNorm1d(n_in)] if input_bn else []
    layers += [nn.Linear(n_in, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2),
               nn.Linear(16, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Flatten(), nn.Linear(8, 1)]
    return nn.Sequential(*layers)


@pytest.mark.parametrize("input_bn", [False, True])
def test_batchnorm_sequential_on_model_space(adult, input_bn):
    enc = rc.data.Encoder(adult.schema).fit()
    X = enc.transform(adult.frame)
    module = _train(_net(X.shape[1], input_bn), X, adult.y)
    # non-trivial running statistics: BatchNorm is doing something
    assert not torch.allclose(module[1 if not input_bn else 0].running_var,
                              torch.ones_like(module[1 if not input_bn else 0].running_var))
    model = from_torch(module, enc, adult)
    assert np.array_equal(model.predict(adult.frame), model.module_predict(adult.frame))
    with torch.no_grad():
        z = module(torch.as_tensor(X, dtype=torch.float32)).double().numpy()
    assert np.allclose(model.logits(adult.frame), z, atol=1e-4)
    # the exact Δ-test runs on the folded network and agrees with sampling
    shift = ParameterShift(0.002)
    pts = X[:8]
    t = model.predict(pts)
    res = exact_worst_case(model.network(), pts, shift, t, time_limit=20)
    robust = np.array([s is DeltaStatus.ROBUST for s in res.status])
    assert robust.any()
    samples = shift.sample(model.network(), 2000, random_state=0).margin(pts, t)
    assert (samples[:, robust] > 0).all()


def test_sklearn_preprocessor_in_front_of_the_module(adult):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    frame = adult.frame
    cat = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    num = [c for c in frame.columns if c not in cat]
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                             ("num", StandardScaler(), num)]).fit(frame)
    Z = np.asarray(pre.transform(frame), dtype=np.float64)
    module = _train(_net(Z.shape[1], False), Z, adult.y)
    model = from_torch(module, pre, adult)
    assert np.array_equal(model.predict(frame), model.module_predict(frame, pre))


def test_unsupported_layers_are_named():
    enc_free = None
    with pytest.raises(UnsupportedModelError, match=r"layer 1 \(Tanh\)"):
        from_torch(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)), enc_free)
    with pytest.raises(UnsupportedModelError, match="training mode"):
        from_torch(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1)), enc_free)
    with pytest.raises(UnsupportedModelError, match="Sequential"):
        from_torch(nn.Linear(3, 1), enc_free)
