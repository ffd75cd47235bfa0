"""RBR: the two-dimensional optimistic / pessimistic likelihoods against a direct optimisation
over the Gaussians of the Gelbrich ball (scipy), the ε = 0 objective against the kernel
density log-odds (scipy.stats); valid, actionable CEs on diabetes and adult; bad parameters
are named."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.stats import multivariate_normal

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.errors import ValidationError
from robustce.methods import RBR
from robustce.methods.rbr import _project_l1, optimistic_nll, pessimistic_nll, worst_case_log_odds


def _direct_nll(x, xhat, sigma, eps, sense, starts=6, seed=0):
    """min (sense=+1) or max (sense=−1) of −log N(x; μ, Σ) over μ, Σ with
    ‖μ − x̂‖² + ‖Σ^{1/2} − σI‖_F² ≤ ε² and Σ ⪰ σ²I, parameterised as Σ^{1/2} = σI + LLᵀ
    (any square root ⪰ σI), solved by SLSQP from several starts."""
    p = len(x)
    rng = np.random.default_rng(seed)

    def unpack(z):
        mu = z[:p]
        L = z[p:].reshape(p, p)
        R = sigma * np.eye(p) + L @ L.T
        return mu, R

    def nll(z):
        mu, R = unpack(z)
        return -multivariate_normal(mu, R @ R).logpdf(x)

    def budget(z):
        mu, R = unpack(z)
        return eps**2 - np.sum((mu - xhat) ** 2) - np.sum((R - sigma * np.eye(p)) ** 2)

    best = np.inf
    for _ in range(starts):
        z0 = np.concatenate([xhat + rng.normal(0, eps / (2 * np.sqrt(p)), p),
                             rng.normal(0, 0.3 * np.sqrt(eps / p), p * p)])
        if budget(z0) < 0:
            z0[p:] *= 0.1
            z0[:p] = xhat
        r = minimize(lambda z: sense * nll(z), z0, method="SLSQP",
                     constraints=[{"type": "ineq", "fun": budget}],
                     options={"maxiter": 500, "ftol": 1e-12})
        if budget(r.x) > -1e-7:
            best = min(best, sense * nll(r.x))
    return sense * best


@pytest.mark.parametrize("c", [0.3, 1.0, 2.5])
def test_optimistic_likelihood_matches_direct_optimisation(c):
    sigma, eps = 0.8, 0.6
    x = np.array([c, 0.0, 0.0])
    xhat = np.zeros(3)
    ours = optimistic_nll(np.array([c]), sigma, eps, 3)[0][0]
    assert ours == pytest.approx(_direct_nll(x, xhat, sigma, eps, +1), abs=1e-5)
    # and it is the likelihood of a member of the ball: never above the nominal NLL
    assert ours <= -multivariate_normal(xhat, sigma**2 * np.eye(3)).logpdf(x) + 1e-12


@pytest.mark.parametrize("c", [0.2, 1.0, 2.5])
def test_pessimistic_likelihood_matches_direct_optimisation(c):
    sigma, eps = 0.8, 0.6
    x = np.array([c, 0.0, 0.0])
    xhat = np.zeros(3)
    ours = pessimistic_nll(np.array([c]), sigma, eps, 3)[0][0]
    assert ours == pytest.approx(_direct_nll(x, xhat, sigma, eps, -1), abs=1e-5)
    assert ours >= -multivariate_normal(xhat, sigma**2 * np.eye(3)).logpdf(x) - 1e-12


def test_zero_ambiguity_is_the_kernel_density_log_odds():
    rng = np.random.default_rng(0)
    p, sigma = 4, 0.5
    neg, pos = rng.random((7, p)), rng.random((5, p))
    x = rng.random(p)
    kde = lambda S: np.log(sum(multivariate_normal(s, sigma**2 * np.eye(p)).pdf(x) for s in S))  # noqa: E731
    assert worst_case_log_odds(x, neg, pos, sigma, 0.0, 0.0) == pytest.approx(kde(neg) - kde(pos),
                                                                              rel=1e-9)
    # ambiguity can only make the odds worse, each radius on its own side
    base = worst_case_log_odds(x, neg, pos, sigma, 0.0, 0.0)
    assert worst_case_log_odds(x, neg, pos, sigma, 0.3, 0.0) > base
    assert worst_case_log_odds(x, neg, pos, sigma, 0.0, 0.3) > base


def test_l1_projection_is_the_nearest_point_of_the_ball():
    import torch

    rng = np.random.default_rng(2)
    V = rng.normal(size=(6, 5))
    r = np.array([0.5, 1.0, 2.0, 10.0, 0.1, 3.0])
    P = _project_l1(torch.as_tensor(V), torch.as_tensor(r)).numpy()
    assert np.all(np.abs(P).sum(1) <= r + 1e-9)
    for i in range(6):  # against scipy on the split form v = a − b, a, b ≥ 0
        res = minimize(lambda z, v=V[i]: np.sum((z[:5] - z[5:] - v) ** 2), np.zeros(10),
                       method="SLSQP", bounds=[(0, None)] * 10,
                       constraints=[{"type": "ineq", "fun": lambda z, ri=r[i]: ri - z.sum()}],
                       options={"ftol": 1e-14, "maxiter": 500})
        np.testing.assert_allclose(P[i], res.x[:5] - res.x[5:], atol=1e-5)


def queries_of(test, model, n):
    return test.frame[model.predict(test.frame) == 0].iloc[:n]


def test_rbr_on_diabetes(diabetes_setup, check_feasible):
    train, test, model = diabetes_setup
    q = queries_of(test, model, 6)
    res = RBR(model, train, random_state=0, n_neighbours=200, max_iter=100).explain(q)
    assert (res.status == "found").mean() >= 0.9
    assert set(res.status) <= {"found", "not_found"}
    _, C, X = check_feasible(res, model, q)
    cert = res.certificates[res.status == "found"]
    # the CE stays inside its L1 budget, and the ambiguity makes the odds no better
    np.testing.assert_array_less(np.abs(C - X).sum(1), cert["radius"].to_numpy() + 1e-9)
    assert (cert["worst_case_log_odds"] >= cert["nominal_log_odds"]).all()
    assert ((cert["n_pos"] + cert["n_neg"]) == 200).all()


def test_rbr_on_adult_respects_immutables(adult_setup, check_feasible):
    train, test, model = adult_setup
    assert model.encoder.immutable_mask_.any()
    q = queries_of(test, model, 4)
    res = RBR(model, train, random_state=0, n_neighbours=100, max_iter=50).explain(q)
    assert (res.status == "found").mean() >= 0.8
    check_feasible(res, model, q)


@pytest.mark.parametrize("name, value", [
    ("epsilon_plus", -1.0), ("epsilon_minus", float("nan")), ("sigma", 0.0),
    ("n_neighbours", 0), ("n_line", 1), ("n_samples", 1), ("perturb_radius", -0.1),
    ("delta_plus", -1.0), ("max_iter", 0), ("lr", 0.0),
])
def test_bad_parameters_are_named(diabetes_setup, name, value):
    train, _, model = diabetes_setup
    with pytest.raises(ValidationError, match=name):
        RBR(model, train, **{name: value})


def test_needs_training_data(diabetes_setup):
    _, _, model = diabetes_setup
    with pytest.raises(ValidationError, match="data"):
        RBR(model)


def test_registered():
    assert rc.methods.get_method("rbr") is RBR


@pytest.fixture(scope="module")
def category_decides():
    """The class is (almost) decided by a one-hot categorical feature: y = 1 iff cat == "b"
    (plus a little of a continuous x); an MLP on it. A point between two categories (a mixed
    one-hot vector) is not in the data domain."""
    rng = np.random.default_rng(0)
    n = 600
    frame = pd.DataFrame({"x": rng.random(n), "cat": rng.choice(["a", "b", "c"], size=n)})
    frame["y"] = ((frame["cat"] == "b") & (frame["x"] > 0.1)).astype(int)
    schema = Schema([Feature("x", "continuous", lower=0.0, upper=1.0),
                     Feature("cat", "categorical", categories=("a", "b", "c"))])
    data = from_frame(frame, "y", schema)
    model = rc.models.MLP((16,), epochs=60, lr=0.01, random_state=0).fit(data)
    q = data.frame[model.predict(data.frame) == 0].iloc[:15]
    return data, model, q


def test_start_point_is_a_valid_encoding_in_the_target_class(category_decides):
    """x_b (the start of the descent) is a point of the data domain — it equals its projection
    to a valid encoding — and the model puts it in the target class."""
    data, model, q = category_decides
    ex = RBR(model, data, random_state=0)
    X = model.encoder.transform(q)
    starts = np.array([ex._boundary(x, 1) for x in X])
    np.testing.assert_array_equal(model.encoder.project(starts), starts)
    assert (model.predict(starts) == 1).all()


def test_rbr_finds_ces_when_a_category_decides(category_decides, check_feasible):
    data, model, q = category_decides
    res = RBR(model, data, random_state=0, n_neighbours=200, max_iter=100).explain(q)
    assert (res.status == "found").mean() >= 0.9
    check_feasible(res, model, q)  # valid encodings in the target class
