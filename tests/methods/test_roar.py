"""ROAR: the closed-form inner maximisation against a brute-force vertex search; valid,
actionable CEs on diabetes and adult (ROAR-LIME) and on a linear model (exact ROAR);
larger δ_max gives more robust CEs on a linear model; bad parameters are named."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.methods import ROAR
from robustce.methods.roar import roar_worst_case
from robustce.models import NetworkModel


def bce_target(score):
    return np.logaddexp(0.0, -score)


@pytest.mark.parametrize("shift_bias", [True, False])
def test_closed_form_inner_max_equals_vertex_search(shift_bias):
    rng = np.random.default_rng(3)
    delta = 0.3
    for _ in range(20):
        w, b = rng.normal(size=3), rng.normal()
        X = rng.normal(size=(5, 3))  # both signs: the closed form must handle them
        score, dW, db = roar_worst_case(w, b, X, delta, shift_bias)
        # brute force: the loss is convex in (Δw, Δb), so its max over the box is at one of
        # the 2^4 vertices (2^3 when the bias is fixed)
        best = np.full(len(X), -np.inf)
        for v in itertools.product((-delta, delta), repeat=4):
            dv = np.asarray(v)
            bias = dv[3] if shift_bias else 0.0
            best = np.maximum(best, bce_target(X @ (w + dv[:3]) + b + bias))
        np.testing.assert_allclose(bce_target(score), best, rtol=1e-12)
        # the returned shift attains the value and lies in the box
        np.testing.assert_allclose(np.einsum("ij,ij->i", w + dW, X) + b + db, score)
        assert np.all(np.abs(dW) <= delta) and np.all(np.abs(db) <= delta)


def _linear_setup():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.random(200), "b": rng.random(200), "age": rng.random(200)})
    schema = rc.data.infer_schema(df, immutable=["age"])
    enc = rc.data.Encoder(schema).fit(df)
    # class 1 iff 2a + b − 0.5·age > 1.2
    model = NetworkModel([(np.array([[2.0, 1.0, -0.5]]), np.array([-1.2]))], enc)
    return df, model


W, B = np.array([2.0, 1.0, -0.5]), -1.2


def test_exact_roar_on_a_linear_model_is_robust_to_its_delta():
    df, model = _linear_setup()
    q = df[model.predict(df) == 0].iloc[:10]
    wc = {}
    for dm in (0.0, 0.2):
        res = ROAR(model, delta_max=dm, lam_init=0.5).explain(q)
        assert (res.status == "found").all()
        pos, C = res.first_counterfactuals()
        X = model.encoder.transform(q)[pos]
        np.testing.assert_array_equal(C[:, 2], X[:, 2])  # age is immutable
        cert = res.certificates
        assert (cert["fidelity"] == 1.0).all()  # the model's own weights, no surrogate
        # the certificate is the closed form at the returned CE, with the model's weights
        np.testing.assert_allclose(cert["worst_case_score"].to_numpy()[pos],
                                   roar_worst_case(W, B, C, dm)[0])
        wc[dm] = roar_worst_case(W, B, C, 0.2)[0]
    # asking for robustness to δ = 0.2 makes the CEs more robust to it (on average: ROAR is
    # a penalty method, so not every query improves). The gain is 0.097 here; an optimiser
    # trained against the best case instead of the worst (+δ‖x'‖₁) gains 0.009.
    assert wc[0.2].mean() > wc[0.0].mean() + 0.05


def test_roar_certificate_is_sound_against_sampled_shifts():
    df, model = _linear_setup()
    q = df[model.predict(df) == 0].iloc[:10]
    res = ROAR(model, delta_max=0.2).explain(q)
    _, C = res.first_counterfactuals()
    score = res.certificates["worst_case_score"].to_numpy()[res.status == "found"]
    assert np.mean(score > 0) >= 0.5
    # independent evidence: random shifts of weights and bias in the box (vertices and inside)
    rng = np.random.default_rng(1)
    shifts = np.vstack([rng.choice((-0.2, 0.2), size=(500, 4)), rng.uniform(-0.2, 0.2, (500, 4))])
    z = C @ (W[None, :] + shifts[:, :3]).T + B + shifts[:, 3]  # (n, 1000)
    assert np.all(z[score > 0] > 0)  # a positive certificate: every shifted model agrees
    np.testing.assert_array_less(score - 1e-12, z.min(axis=1))  # and it is a lower bound


def queries_of(test, model, n):
    return test.frame[model.predict(test.frame) == 0].iloc[:n]


def test_roar_lime_on_diabetes(diabetes_setup, check_feasible):
    train, test, model = diabetes_setup
    q = queries_of(test, model, 10)
    res = ROAR(model, train, delta_max=0.1, random_state=0).explain(q)
    assert (res.status == "found").mean() >= 0.9
    assert set(res.status) <= {"found", "not_found"}
    check_feasible(res, model, q)
    cert = res.certificates[res.status == "found"]
    assert (cert["fidelity"] > 0.5).all()  # the surrogate explains the local margin
    np.testing.assert_allclose(cert["worst_case_loss"], np.logaddexp(0, -cert["worst_case_score"]))


def test_roar_lime_on_adult_respects_immutables(adult_setup, check_feasible):
    train, test, model = adult_setup
    assert model.encoder.immutable_mask_.any()
    q = queries_of(test, model, 6)
    res = ROAR(model, train, random_state=0, lime_samples=300).explain(q)
    assert (res.status == "found").mean() >= 0.8
    check_feasible(res, model, q)


def test_deterministic_with_a_seed(diabetes_setup):
    train, test, model = diabetes_setup
    q = queries_of(test, model, 3)
    a = ROAR(model, train, random_state=5, lime_samples=200).explain(q).first_counterfactuals()[1]
    b = ROAR(model, train, random_state=5, lime_samples=200).explain(q).first_counterfactuals()[1]
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name, value", [
    ("delta_max", -0.1), ("lam_init", 0.0), ("lam_decay", 1.0), ("lam_decay", 0.0),
    ("max_iter", 0), ("lime_samples", 1), ("lime_scale", 0.0), ("kernel_width", -1.0),
    ("ridge_alpha", -1.0), ("tol", 0.0), ("lr", float("nan")), ("shift_bias", "yes"),
    ("max_lambda_steps", 0), ("distance_weights", "bogus"),
])
def test_bad_parameters_are_named(diabetes_setup, name, value):
    train, _, model = diabetes_setup
    with pytest.raises(ValidationError, match=name):
        ROAR(model, train, **{name: value})


def test_registered():
    assert rc.methods.get_method("roar") is ROAR
