"""Training that learns, or says it did not (issue 29, finding 5).

``MLP()`` with its defaults trains until the training loss stops improving (patience, a cap on
the epochs); an explicit ``epochs=`` trains exactly that many, as before. A model — trained
here or imported — that predicts one class for every training row raises a
:class:`~robustce.errors.ConstantModelWarning`."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ConstantModelWarning, RobustCEWarning, ValidationError


@pytest.fixture(scope="module")
def wine_binary():
    """scikit-learn's wine, class 0 vs the rest, through ``from_frame``; 124 training rows."""
    from sklearn.datasets import load_wine

    raw = load_wine(as_frame=True)
    frame = raw.data.copy()
    frame["y"] = (raw.target == 0).astype(int)
    train, _ = rc.datasets.from_frame(frame, "y").split(test_size=0.3, random_state=0)
    assert len(train) == 124
    return train


def test_defaults_learn_wine(wine_binary):
    """With the old defaults (50 epochs, batch 64) this model predicted class 0 for all 124 rows."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantModelWarning)
        model = rc.models.MLP().fit(wine_binary)
    pred = model.predict(wine_binary.frame)
    assert np.unique(pred).size == 2
    assert (pred == wine_binary.y).mean() > 0.9
    assert model.epochs is None and 1 <= model.n_epochs_ <= model.max_epochs
    assert len(model.loss_curve_) == model.n_epochs_
    assert model.loss_curve_[-1] < model.loss_curve_[0]


def test_a_constant_model_warns_and_names_the_cure(wine_binary):
    with pytest.warns(ConstantModelWarning, match=r"class 0 for every one of its 124 training rows") as rec:
        model = rc.models.MLP(epochs=50).fit(wine_binary)  # the old defaults
    assert "epochs=50" in str(rec[0].message)
    assert issubclass(ConstantModelWarning, RobustCEWarning)
    assert np.unique(model.predict(wine_binary.frame)).size == 1


@pytest.mark.filterwarnings("ignore::robustce.errors.ConstantModelWarning")
def test_explicit_epochs_train_exactly_that_many(wine_binary):
    model = rc.models.MLP((8,), epochs=7, random_state=1).fit(wine_binary)
    assert model.n_epochs_ == 7 and len(model.loss_curve_) == 7
    again = rc.models.MLP((8,), epochs=7, random_state=1).fit(wine_binary)
    for (W, b), (W2, b2) in zip(model.network().weights, again.network().weights, strict=True):
        np.testing.assert_array_equal(W, W2)
        np.testing.assert_array_equal(b, b2)


@pytest.mark.filterwarnings("ignore::robustce.errors.ConstantModelWarning")
def test_early_stopping_respects_patience_and_the_cap(wine_binary):
    capped = rc.models.MLP((8,), max_epochs=5).fit(wine_binary)
    assert capped.n_epochs_ == 5
    model = rc.models.MLP((8,), patience=3, tol=0.05, lr=1e-2).fit(wine_binary)
    curve = model.loss_curve_
    assert model.n_epochs_ < model.max_epochs
    best = min(curve[:-3])
    assert all(v >= best - 0.05 for v in curve[-3:])  # stopped: 3 epochs without a 0.05 gain


@pytest.mark.parametrize("kw,name", [({"patience": 0}, "patience"), ({"max_epochs": 0}, "max_epochs"),
                                     ({"tol": -1.0}, "tol"), ({"epochs": 0}, "epochs")])
def test_bad_training_parameters_name_themselves(kw, name):
    with pytest.raises(ValidationError, match=name):
        rc.models.MLP(**kw)


def test_imported_sklearn_model_that_learned_one_class_warns(wine_binary):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = wine_binary.frame, wine_binary.y
    flat = make_pipeline(StandardScaler(), LogisticRegression(C=1e-8)).fit(X, y)
    with pytest.warns(ConstantModelWarning, match="LogisticRegression"):
        rc.models.from_sklearn(flat, X)
    good = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantModelWarning)
        rc.models.from_sklearn(good, X)


def test_imported_torch_module_that_learned_one_class_warns(wine_binary):
    import torch

    enc = rc.data.Encoder(wine_binary.schema).fit(wine_binary.frame)
    module = torch.nn.Sequential(torch.nn.Linear(enc.n_features_out_, 4), torch.nn.ReLU(),
                                 torch.nn.Linear(4, 1))
    with torch.no_grad():
        module[2].weight.zero_()
        module[2].bias.fill_(-1.0)
    with pytest.warns(ConstantModelWarning, match="torch module"):
        rc.models.from_torch(module, enc, wine_binary)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantModelWarning)
        rc.models.from_torch(module, enc)


def test_warning_needs_two_rows_and_one_class():
    from robustce.models.base import warn_if_constant

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantModelWarning)
        assert not warn_if_constant(np.array([1]), "m")
        assert not warn_if_constant(pd.Series([0, 1, 1]), "m")
    with pytest.warns(ConstantModelWarning):
        assert warn_if_constant([2, 2, 2], "m", "try more epochs")
