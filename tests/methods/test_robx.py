"""RobX (RobXNN): the stability estimate matches a direct Monte-Carlo estimate; CEs are valid,
stable (≥ τ) and actionable; the line search starts at the base CE; bad parameters."""

from __future__ import annotations

import numpy as np
import pytest

import robustce as rc
from robustce.methods import NearestNeighbour, RobX
from robustce.methods.registry import build_explainer


@pytest.fixture(scope="module")
def diab(free_diabetes_setup):
    return free_diabetes_setup


def _direct_stability(model, x, t, variance, K, seed):
    """R = mean − std of p_t over K fresh Gaussian draws around x, one point at a time."""
    rng = np.random.default_rng(seed)
    samples = x[None, :] + rng.normal(0.0, np.sqrt(variance), size=(K, len(x)))
    p = model.predict_proba(samples)[:, t]
    return p.mean() - p.std()


def test_stability_matches_a_direct_monte_carlo_estimate(diab):
    train, test, model = diab
    ex = RobX(model, train, variance=0.01, n_samples=4000, random_state=0)
    X = model.encoder.transform(test.frame.iloc[:5])
    for t in (0, 1):
        got = ex.stability(X, t)
        want = np.array([_direct_stability(model, x, t, 0.01, 40_000, 1) for x in X])
        # mean − std of a probability: standard error ≤ ~1/sqrt(K) each; 4000 vs 40 000 draws
        np.testing.assert_allclose(got, want, atol=0.03)


def test_ces_are_valid_and_stable_and_a0_is_the_base_ce(diab):
    train, test, model = diab
    ex = RobX(model, train, tau=0.6, random_state=0)
    res = ex.explain(test.frame.iloc[:10])
    found = res.status == "found"
    assert found.sum() >= 3, res.messages.to_dict()
    cfs = res.counterfactuals_encoded
    t = res.target_class.loc[res.counterfactuals["query_id"].to_numpy()].to_numpy()
    assert (model.predict(cfs) == t).all()
    cert = res.certificates.loc[found]
    assert (cert["stability"] >= 0.6).all()
    # the certificate's stability is the explainer's estimate of the returned point
    np.testing.assert_allclose(ex.stability(cfs, t), cert["stability"].to_numpy(), atol=1e-12)
    assert ((cert["a"] >= 0) & (cert["a"] <= 1)).all()
    # a = 0 means the base CE (the nearest neighbour) was already stable: then it is returned
    nn = NearestNeighbour(model, train).explain(test.frame.iloc[:10])
    for label in cert.index[cert["a"] == 0]:
        np.testing.assert_allclose(res.counterfactuals_encoded[list(res.counterfactuals["query_id"]).index(label)],
                                   nn.counterfactuals_encoded[list(nn.counterfactuals["query_id"]).index(label)])


def test_ces_respect_actionability_on_adult(adult_setup):
    train, test, model = adult_setup
    res = RobX(model, train, random_state=0, n_samples=300).explain(test.frame.iloc[:8])
    assert (res.status == "found").any(), res.messages.to_dict()
    owner = res.counterfactuals["query_id"].to_numpy()
    imm = model.encoder.immutable_mask_
    Xq = model.encoder.transform(test.frame.loc[owner])
    np.testing.assert_allclose(res.counterfactuals_encoded[:, imm], Xq[:, imm], atol=1e-9)


def test_same_seed_same_result_and_bad_params(diab):
    train, test, model = diab
    a = RobX(model, train, random_state=3, n_samples=200).explain(test.frame.iloc[:5])
    b = build_explainer("robxnn", model, train, random_state=3, n_samples=200).explain(
        test.frame.iloc[:5])
    np.testing.assert_array_equal(a.counterfactuals_encoded, b.counterfactuals_encoded)
    for bad, name in ((dict(tau=1.0), "tau"), (dict(tau=0), "tau"), (dict(variance=0), "variance"),
                      (dict(n_samples=1), "n_samples"), (dict(n_samples=10**18), "n_samples"),
                      (dict(base="dice"), "base"), (dict(step=0), "step")):
        with pytest.raises(rc.errors.ValidationError, match=name):
            RobX(model, train, **bad)


def test_stable_point_is_the_nearest_stable_training_point_by_brute_force(adult_setup):
    """The lazy stability search (only the neighbours it visits are scored) picks the same point
    as scoring every training point of the target class: the nearest reachable one with R ≥ τ."""
    train, test, model = adult_setup
    ex = RobX(model, train, tau=0.5, n_samples=200, random_state=0)
    queries = test.frame.iloc[:40]
    res = ex.explain(queries)
    X_train = model.encoder.transform(train.frame)
    imm = model.encoder.immutable_mask_
    inc, dec = model.encoder.increasing_mask_, model.encoder.decreasing_mask_
    checked = 0
    for label, status in res.status.items():
        x = model.encoder.transform(queries.loc[[label]])[0]
        t = int(res.target_class[label])
        pool = X_train[model.predict(X_train) == t]
        reach = (np.all(np.abs(pool[:, imm] - x[imm]) < 1e-9, axis=1)
                 & np.all(pool[:, inc] >= x[inc] - 1e-9, axis=1)
                 & np.all(pool[:, dec] <= x[dec] + 1e-9, axis=1))
        pool = pool[reach]
        stable = pool[ex.stability(pool, t) >= 0.5] if len(pool) else pool
        if status != "found":
            assert status == "no_robust_point" and len(stable) == 0
            continue
        d = np.abs(stable - x).sum(axis=1)
        idx = res.certificates.loc[label, "training_index"]
        used = model.encoder.transform(train.frame.loc[[idx]])[0]
        assert np.abs(used - x).sum() == pytest.approx(d.min(), abs=1e-9)
        checked += 1
    assert checked >= 3
