"""MLP: determinism, raw/encoded inputs, the numpy network view against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import robustce as rc
from robustce.errors import NotFittedError, UnsupportedModelError, ValidationError
from robustce.models import MLP, ReLUNetwork


@pytest.fixture(scope="module")
def loan():
    data = rc.datasets.load("synthetic_loan", n_samples=400, random_state=0)
    return data.split(test_size=0.25, random_state=0)


@pytest.fixture(scope="module")
def fitted(loan):
    train, _ = loan
    return MLP(hidden_layers=(8, 4), epochs=3, batch_size=32, random_state=0).fit(train)


def test_same_seed_same_weights_whatever_the_global_torch_state(loan):
    train, _ = loan
    torch.manual_seed(123)
    a = MLP(hidden_layers=(8, 4), epochs=2, random_state=5).fit(train)
    torch.manual_seed(999)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        b = MLP(hidden_layers=(8, 4), epochs=2, random_state=5).fit(train)
        assert torch.get_num_threads() == 2  # the caller's setting is restored
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(a.network().flat(), b.network().flat())
    c = MLP(hidden_layers=(8, 4), epochs=2, random_state=6).fit(train)
    assert not np.array_equal(a.network().flat(), c.network().flat())


def test_training_does_not_consume_the_global_torch_rng(loan):
    train, _ = loan
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    MLP(hidden_layers=(4,), epochs=1, random_state=1).fit(train)
    assert torch.equal(torch.rand(3), expected)


def test_raw_frames_and_encoded_arrays_agree(fitted, loan):
    _, test = loan
    X = fitted.encoder.transform(test.frame)
    np.testing.assert_array_equal(fitted.predict(test.frame), fitted.predict(X))
    np.testing.assert_array_equal(fitted.logits(test.frame), fitted.logits(X))
    proba = fitted.predict_proba(test.frame)
    assert proba.shape == (len(test), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(np.argmax(proba, axis=1), fitted.predict(X))
    assert set(np.unique(fitted.predict(X))) <= {0, 1}
    assert fitted.class_names == test.class_names
    # one row as a 1-D array
    assert fitted.predict(X[0]).shape == (1,)


def test_network_view_equals_the_torch_module(fitted, loan):
    _, test = loan
    X = fitted.encoder.transform(test.frame)
    net = fitted.network()
    assert isinstance(net, ReLUNetwork)
    assert net.layer_sizes == [X.shape[1], 8, 4, 1]
    with torch.no_grad():
        ref = fitted.torch_module()(torch.as_tensor(X, dtype=torch.float32)).double().numpy()
    np.testing.assert_allclose(net.forward(X), ref, atol=1e-5)
    tl = fitted.torch_logits(torch.as_tensor(X, dtype=torch.float64)).detach().numpy()
    np.testing.assert_allclose(tl, net.forward(X), atol=1e-12)
    assert fitted.differentiable


def test_multiclass_mlp_has_k_logits():
    data = rc.datasets.load("iris")
    model = MLP(hidden_layers=(10,), epochs=60, lr=1e-2, random_state=0).fit(data)
    X = model.encoder.transform(data.frame)
    z = model.logits(X)
    assert z.shape == (len(data), 3)
    with torch.no_grad():
        ref = model.torch_module()(torch.as_tensor(X, dtype=torch.float32)).double().numpy()
    np.testing.assert_allclose(z, ref, atol=1e-5)
    assert (model.predict(data.frame) == data.y).mean() > 0.8
    np.testing.assert_allclose(model.predict_proba(X).sum(axis=1), 1.0)


def test_fit_more_continues_from_the_current_weights(loan):
    train, _ = loan
    model = MLP(hidden_layers=(8, 4), epochs=2, random_state=0).fit(train)
    before = model.network().flat().copy()
    model.fit_more(train, epochs=1, random_state=3, lr=1e-3)
    after = model.network().flat()
    assert not np.array_equal(before, after)  # the cached view was refreshed
    # a few Adam steps of size ~lr move each weight by at most steps * lr (plus slack)
    steps = int(np.ceil(len(train) / model.batch_size))
    assert np.abs(after - before).max() <= steps * 1e-3 * 1.5
    again = MLP(hidden_layers=(8, 4), epochs=2, random_state=0).fit(train)
    again.fit_more((again.encoder.transform(train.frame), train.y), epochs=1, random_state=3, lr=1e-3)
    np.testing.assert_array_equal(again.network().flat(), after)


def test_parameter_and_input_validation(loan):
    train, _ = loan
    with pytest.raises(ValidationError, match="hidden_layers"):
        MLP(hidden_layers=(0,))
    with pytest.raises(ValidationError, match="epochs"):
        MLP(epochs=0)
    with pytest.raises(ValidationError, match="lr"):
        MLP(lr=0)
    with pytest.raises(ValidationError, match="weight_decay"):
        MLP(weight_decay=-1)
    with pytest.raises(ValidationError, match="Dataset"):
        MLP().fit(train.frame)
    with pytest.raises(NotFittedError):
        MLP().predict(train.frame)
    with pytest.raises(NotFittedError):
        MLP().network()
    model = MLP(hidden_layers=(4,), epochs=1, random_state=0).fit(train)
    with pytest.raises(ValidationError, match="shape"):
        model.predict(np.zeros((2, 3)))
    with pytest.raises(ValidationError, match="NaN"):
        model.predict(np.full((1, model.encoder.n_features_out_), np.nan))
    with pytest.raises(ValidationError, match="missing columns"):
        model.predict(train.frame.drop(columns=["income"]))
    with pytest.raises(ValidationError, match="lr"):
        model.fit_more(train, epochs=1, lr=-1.0)


def test_wrapped_models_without_a_network_say_so():
    from sklearn.tree import DecisionTreeClassifier

    data = rc.datasets.load("synthetic_loan", n_samples=200)
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(enc.transform(data.frame), data.y)
    model = rc.models.wrap(tree, enc)
    with pytest.raises(UnsupportedModelError, match="no ReLU-network view"):
        model.network()
    assert not model.differentiable
