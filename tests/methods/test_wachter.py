"""Wachter: finds valid, actionable CEs in batch; λ schedule; determinism; clear errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.methods.wachter import Wachter


def queries_of(test, model, target, n):
    return test.frame[model.predict(test.frame) != target].iloc[:n]


def check_found(check_feasible, res, model, queries):
    """The found CEs are feasible (the shared ``check_feasible`` fixture: target reached,
    actionability, valid encodings) and carry a positive margin; returns the found mask."""
    found = res.status == "found"
    check_feasible(res, model, queries)
    assert (res.certificates.loc[found, "margin"] > 0).all()
    return found


def test_finds_valid_ces_on_diabetes(diabetes_setup, check_feasible):
    train, test, model = diabetes_setup
    q = queries_of(test, model, 1, 40)
    res = Wachter(model, train, target_class=1).explain(q)
    found = check_found(check_feasible, res, model, q)
    assert found.mean() >= 0.9
    assert set(res.status) <= {"found", "not_found"}
    # proximity: the CE is much closer than the farthest training point of the class
    assert res.certificates.loc[found, "distance"].median() < 1.0


def test_finds_valid_ces_on_adult_with_monotone_features(adult_setup, check_feasible):
    train, test, _ = adult_setup
    train = dataclasses.replace(train, schema=train.schema.with_actionability(
        **{"education-num": "increase", "capital-loss": "decrease"}))
    model = rc.models.MLP((20, 10), epochs=15, random_state=0).fit(train)
    q = queries_of(test, model, 1, 60)
    res = Wachter(model, train, max_iter=150, distance_weights="mad").explain(q)
    found = check_found(check_feasible, res, model, q)
    assert found.mean() >= 0.8
    cf = res.counterfactuals.set_index("query_id")
    for col in ["age", "sex", "race", "marital-status", "native-country"]:
        assert (cf[col] == q.loc[cf.index, col]).all()
    assert (cf["education-num"] >= q.loc[cf.index, "education-num"]).all()


def test_lambda_grows_until_valid(diabetes_setup):
    train, test, model = diabetes_setup
    q = queries_of(test, model, 1, 20)
    res = Wachter(model, train, lam_init=1e-3, lam_schedule=4.0, max_iter=40).explain(q)
    lam = res.certificates["lambda"]
    assert (lam > 1e-3).any()  # λ was multiplied for queries the first round did not solve
    ratio = np.log(lam / 1e-3) / np.log(4.0)
    np.testing.assert_allclose(ratio, np.round(ratio), atol=1e-9)  # λ = λ0 · 4^r
    assert (res.certificates["n_iter"] <= 40 * 10).all()  # max_iter × max_lambda_steps


def test_deterministic_given_random_state(diabetes_setup):
    train, test, model = diabetes_setup
    q = queries_of(test, model, 1, 15)
    a = Wachter(model, train, init_noise=0.05, random_state=3, max_iter=60).explain(q)
    b = Wachter(model, train, init_noise=0.05, random_state=3, max_iter=60).explain(q)
    np.testing.assert_array_equal(a.counterfactuals_encoded, b.counterfactuals_encoded)
    pd.testing.assert_series_equal(a.status, b.status)


def test_gives_up_with_not_found(diabetes_setup):
    train, test, model = diabetes_setup
    q = queries_of(test, model, 1, 10)
    res = Wachter(model, train, lam_init=1e-6, max_lambda_steps=1, max_iter=1, lr=1e-6).explain(q)
    assert (res.status == "not_found").all()
    assert res.messages.str.contains("no valid CE").all()
    assert res.certificates["distance"].isna().all()


def test_multiclass_target(tmp_path):
    data = rc.datasets.load("iris")
    model = rc.models.MLP((16,), epochs=150, lr=1e-2, random_state=0).fit(data)
    q = data.frame[model.predict(data.frame) == 0].iloc[:10]
    res = Wachter(model, data, target_class=2).explain(q)
    found = res.status == "found"
    assert found.mean() >= 0.8
    pos, C = res.first_counterfactuals()
    assert (model.predict(C) == 2).all()


class NoGradient(rc.models.Model):
    def __init__(self, encoder):
        self.encoder = encoder

    def logits(self, X):
        return np.zeros((len(self.encode(X)), 1))


def test_validation(diabetes_setup):
    train, _, model = diabetes_setup
    with pytest.raises(UnsupportedModelError, match="differentiable"):
        Wachter(NoGradient(model.encoder), train)
    with pytest.raises(ValidationError, match="lam_schedule"):
        Wachter(model, train, lam_schedule=1.0)
    with pytest.raises(ValidationError, match="lam_init"):
        Wachter(model, train, lam_init=0)
    with pytest.raises(ValidationError, match="loss"):
        Wachter(model, train, loss="mse")
    with pytest.raises(ValidationError, match="needs the training data"):
        Wachter(model, None, distance_weights="mad")
    with pytest.raises(ValidationError, match="distance_weights"):
        Wachter(model, train, distance_weights=[1.0, 2.0])
    w = Wachter(model, train, distance_weights="range")
    assert w.weights_.shape == (model.encoder.n_features_out_,) and (w.weights_ > 0).all()
    assert Wachter.certificate_columns == ("distance", "margin", "lambda", "n_iter")
    assert {"lam_init", "lam_schedule", "max_iter", "lr"} <= set(Wachter.param_names())


def test_flat_region_is_reported_and_init_noise_escapes_it(check_feasible):
    # logit = 10 · relu(a + b − 0.25) − 1: class 1 iff a + b > 0.35. Below a + b = 0.25 the only
    # first-layer ReLU is inactive: the logit is the constant −1 and the input gradient is zero.
    schema = rc.data.Schema([rc.data.Feature("a", "continuous", lower=0.0, upper=1.0),
                             rc.data.Feature("b", "continuous", lower=0.0, upper=1.0)])
    enc = rc.data.Encoder(schema).fit(pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]}))
    model = rc.models.NetworkModel([(np.array([[1.0, 1.0]]), np.array([-0.25])),
                                    (np.array([[10.0]]), np.array([-1.0]))], enc)
    # 20 copies of a query on the plateau (a + b = 0.2), then one off it (a + b = 0.3)
    q = pd.DataFrame({"a": [0.1] * 20 + [0.15], "b": [0.1] * 20 + [0.15]})
    np.testing.assert_allclose(model.logits(q)[[0, 20], 0], [-1.0, -0.5])
    params = dict(lam_init=1.0, max_iter=50, max_lambda_steps=3)

    res = Wachter(model, **params).explain(q)
    flat = res.status.iloc[:20]
    assert (flat == "not_found").all() and res.status.iloc[20] == "found"
    msgs = res.messages.iloc[:20]
    assert msgs.str.contains("no valid CE").all()
    assert msgs.str.contains("input gradient is exactly zero at the query").all()
    assert msgs.str.contains("init_noise > 0").all()
    # Adam never moved: every step of every λ round was spent, no distance
    assert (res.certificates["n_iter"].iloc[:20] == 50 * 3).all()

    # a query off the plateau that gives up for other reasons gets no flat-region claim
    slow = Wachter(model, lam_init=1e-6, max_iter=1, max_lambda_steps=1, lr=1e-6).explain(q.iloc[20:])
    assert slow.status.iloc[0] == "not_found"
    assert "no valid CE" in slow.messages.iloc[0] and "gradient" not in slow.messages.iloc[0]

    # the escape: a noisy start lands off the plateau for most copies
    noisy = Wachter(model, init_noise=0.2, random_state=0, **params).explain(q)
    found = check_found(check_feasible, noisy, model, q)
    assert found.iloc[:20].sum() >= 10 and found.iloc[20]
    rest = noisy.messages.iloc[:20][~found.iloc[:20].to_numpy()]
    assert rest.str.contains("exactly zero at the noisy start point").all()
    assert rest.str.contains("larger init_noise").all()
