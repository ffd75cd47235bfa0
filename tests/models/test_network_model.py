"""NetworkModel: a hand-given ReLU network over an encoder behaves as a robustce model."""

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.models import NetworkModel, ReLUNetwork


@pytest.fixture()
def encoder():
    frame = pd.DataFrame({"a": [0.0, 10.0], "c": ["x", "y"]})
    return rc.data.Encoder(rc.data.infer_schema(frame, kinds={"c": "categorical"})).fit(frame)


def test_predictions_follow_the_given_weights(encoder):
    # model space: a/10, c=x, c=y ; logit = a/10 - 0.5 + (c == y)
    model = NetworkModel([(np.array([[1.0, 0.0, 1.0]]), np.array([-0.5]))], encoder)
    q = pd.DataFrame({"a": [2.0, 8.0, 2.0], "c": ["x", "x", "y"]})
    np.testing.assert_allclose(model.logits(q)[:, 0], [-0.3, 0.3, 0.7])
    assert model.predict(q).tolist() == [0, 1, 1]
    np.testing.assert_allclose(model.predict_proba(q).sum(axis=1), 1.0)
    assert model.class_names == (0, 1)
    assert isinstance(model.network(), ReLUNetwork)


def test_multiclass_names_and_bad_input(encoder):
    W = np.eye(3)
    model = NetworkModel(ReLUNetwork([(W, np.zeros(3))]), encoder, class_names=("lo", "mid", "hi"))
    assert model.n_classes == 3
    with pytest.raises(ValidationError, match="2 class names for a network with 3 classes"):
        NetworkModel([(W, np.zeros(3))], encoder, class_names=("a", "b"))
    with pytest.raises(ValidationError, match="takes 2 inputs"):
        NetworkModel([(np.ones((1, 2)), np.zeros(1))], encoder)
