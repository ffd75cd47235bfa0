"""ProtoRobust (Proto-R): prototypes are the mean of the k nearest target-class training
points; valid CEs; those called Δ-robust survive sampling and a weight attack."""

from __future__ import annotations

import numpy as np
import pytest

import robustce as rc
from robustce.methods import ProtoRobust
from robustce.methods.registry import build_explainer
from robustce.robustness import ParameterShift


@pytest.fixture(scope="module")
def diab(free_diabetes_setup):
    return free_diabetes_setup


def test_prototype_is_the_mean_of_the_k_nearest_target_class_points(diab):
    train, test, model = diab
    ex = ProtoRobust(model, train, k=5)
    X = model.encoder.transform(test.frame.iloc[:4])
    targets = 1 - model.predict(X)
    protos, count = ex.prototypes(X, targets)
    Xt = model.encoder.transform(train.frame)
    pred = model.predict(Xt)
    for i, t in enumerate(targets):
        pool = np.unique(Xt[pred == t], axis=0)  # by brute force
        d = np.linalg.norm(pool - X[i], axis=1)
        want = pool[np.argsort(d)[:5]].mean(axis=0)
        assert count[i] == 5
        np.testing.assert_allclose(protos[i], want, atol=1e-9)


def test_ces_are_valid_and_delta_robust_on_diabetes(diab, check_delta_robust):
    train, test, model = diab
    shift = ParameterShift(0.02)
    res = ProtoRobust(model, train, shift=shift, max_iter=300, time_limit=30).explain(
        test.frame.iloc[:6])
    found = res.status == "found"
    assert found.sum() >= 2, res.messages.to_dict()
    cfs = res.counterfactuals_encoded
    t = res.target_class.loc[res.counterfactuals["query_id"].to_numpy()].to_numpy()
    assert (model.predict(cfs) == t).all()
    cert = res.certificates.loc[found]
    assert (cert["delta_status"] == "robust").all() and (cert["worst_case_margin"] > 0).all()
    assert (cert["n_prototype"] == 20).all()
    check_delta_robust(model, res, shift)


def test_ces_are_valid_on_adult(adult_setup, check_delta_robust):
    train, test, model = adult_setup
    shift = ParameterShift(0.01)
    res = ProtoRobust(model, train, shift=shift, max_iter=300, time_limit=30).explain(
        test.frame.iloc[:6])
    assert (res.status == "found").any(), res.messages.to_dict()
    check_delta_robust(model, res, shift)


def test_bad_params_name_themselves(diab):
    train, _, model = diab
    assert isinstance(build_explainer("proto-r", model, train), ProtoRobust)
    for bad, name in ((dict(theta=-1), "theta"), (dict(beta=float("nan")), "beta"),
                      (dict(k=0), "k"), (dict(k=10**9), "k"), (dict(shift=0), "shift")):
        with pytest.raises(rc.errors.ValidationError, match=name):
            ProtoRobust(model, train, **bad)
    with pytest.raises(rc.errors.ValidationError, match="data"):
        ProtoRobust(model, None)
