"""EnsembleRobust: the nearest (δ, ε)-robust CE of a tree ensemble — its optimum against brute
force, its CEs against the exact test, sampled ensembles and the user's own model."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

from robustce.data.dataset import from_frame
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.methods import EnsembleRobust, MILPNearest
from robustce.models.boosting import AdditiveTrees
from robustce.models.sklearn_import import from_sklearn
from robustce.models.trees import TreeView
from robustce.robustness import EnsembleCertifier, EnsembleShift
from robustce.robustness.ensemble import VoteEnsemble


def _data(n=400, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = ((X[:, 0] + X[:, 1] + 0.25 * rng.normal(size=n)) > 1).astype(int)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    return df, y, from_frame(df.assign(y=y), "y")


@pytest.mark.parametrize("est", [RandomForestClassifier(3, max_depth=2, random_state=1),
                                 GradientBoostingClassifier(n_estimators=4, max_depth=2,
                                                            random_state=0)],
                         ids=["forest", "boosted"])
def test_the_optimum_equals_brute_force_over_the_robust_boxes(est):
    """The robust points form boxes whose faces lie at θ ± ε, widened by the float margin
    (and the domain's ends); under l1 the nearest point of a box takes, per column, the
    query's value or a face's. So the grid of those values (each face also one float past it,
    for strict sides), every point tested by the exact (δ, ε)-test, holds the optimum."""
    df, y, data = _data()
    est.fit(df, y)
    model = from_sklearn(est, df)
    shift = EnsembleShift(0.02, 0.04)
    ens = VoteEnsemble.of(model)
    s = ens.stack
    inner = ~s.is_leaf
    queries = df[est.predict(df) == 0].iloc[:6]
    explainer = EnsembleRobust(model, data, delta=shift.delta, epsilon=shift.epsilon,
                               time_limit=60)
    result = explainer.explain(queries)
    Q = model.encoder.transform(queries)
    cert = EnsembleCertifier(shift)
    for i, q in enumerate(Q):
        axes = []
        for j in range(2):
            t = s.threshold[inner & (s.feature == j)]
            # the ε boundary clears the model's float32 comparison by 4 float32 steps of
            # max(|t| + ε, the raw column's magnitude over its range): the pipeline reads raw
            f = data.schema[f"x{j}"]
            raw = max(abs(f.lower), abs(f.upper)) / (f.upper - f.lower)
            size = np.maximum(np.abs(t) + shift.epsilon, raw).astype(np.float32)
            m = 4 * np.spacing(size).astype(np.float64)
            faces = np.r_[t - shift.epsilon - m, t + shift.epsilon + m]
            vals = np.r_[q[j], 0.0, 1.0, faces, np.nextafter(faces, np.inf),
                         np.nextafter(faces, -np.inf)]
            axes.append(np.unique(np.clip(vals, 0.0, 1.0)))
        P = np.array(list(itertools.product(*axes)))
        ok = cert.certify(model, P, 1).robust
        # the CE's raw row must round-trip: keep a hair away from the faces (SplitMargins)
        best = np.min(np.abs(P[ok] - q).sum(axis=1))
        row = result.to_frame().iloc[i]
        assert row["status"] == "found" and row["optimal"]
        got = np.abs(model.encoder.transform(result.for_query(queries.index[i])) - q).sum()
        assert got == pytest.approx(best, abs=1e-6)


@pytest.fixture(scope="module")
def booster():
    xgboost = pytest.importorskip("xgboost")
    df, y, data = _data(n=600, d=4, seed=3)
    est = xgboost.XGBClassifier(n_estimators=30, max_depth=3).fit(df, y)
    return est, from_sklearn(est, df), data, df


def test_every_ce_is_certified_survives_sampled_ensembles_and_the_users_model(booster):
    est, model, data, df = booster
    shift = EnsembleShift(0.03, 0.02)
    queries = df[est.predict(df) == 0].iloc[:8]
    result = EnsembleRobust(model, data, delta=0.03, epsilon=0.02, time_limit=60).explain(queries)
    frame = result.to_frame()
    found = np.flatnonzero(frame["status"] == "found")
    assert found.size == len(queries)
    raw = result.counterfactuals[list(df.columns)]
    assert np.all(est.predict(raw[df.columns]) == 1)  # the user's own booster
    X = model.encoder.transform(raw)
    assert EnsembleCertifier(shift).certify(model, X, 1).robust.all()
    parts = model.additive_trees()
    rng = np.random.default_rng(0)
    for _ in range(100):
        trees = []
        for t in parts.trees:
            thr = t.threshold.copy()
            inner = t.left >= 0
            thr[inner] += rng.choice([-1.0, 1.0], inner.sum()) * shift.epsilon
            trees.append(TreeView(t.feature, thr, t.left, t.right,
                                  t.value + rng.uniform(-1, 1, t.value.shape) * shift.delta,
                                  t.n_features))
        assert np.all(AdditiveTrees(trees, parts.output, parts.baseline).predict(X) == 1)
    assert np.all(frame.loc[frame.index[found], "worst_case_margin"] > 0)


def test_the_empty_set_gives_the_nearest_ce(booster):
    est, model, data, df = booster
    queries = df[est.predict(df) == 0].iloc[:6]
    robust = EnsembleRobust(model, data, delta=0.0, epsilon=0.0, time_limit=60).explain(queries)
    nearest = MILPNearest(model, data, time_limit=60).explain(queries)
    np.testing.assert_allclose(robust.to_frame()["distance"], nearest.to_frame()["distance"],
                               atol=1e-6)


@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_robustness_costs_distance(booster):
    est, model, data, df = booster
    queries = df[est.predict(df) == 0].iloc[:6]
    d0 = EnsembleRobust(model, data, delta=0.0, epsilon=0.0).explain(queries).to_frame()
    d1 = EnsembleRobust(model, data, delta=0.05, epsilon=0.03).explain(queries).to_frame()
    assert np.all(d1["distance"] >= d0["distance"] - 1e-9)
    assert np.any(d1["distance"] > d0["distance"] + 1e-6)


def test_bad_parameters_and_models_are_refused(booster):
    est, model, data, df = booster
    with pytest.raises(ValidationError, match="delta"):
        EnsembleRobust(model, data, delta=-0.1)
    with pytest.raises(ValidationError, match="epsilon"):
        EnsembleRobust(model, data, epsilon=-0.1)
    with pytest.raises(ValidationError, match="epsilon has 2 entries"):
        EnsembleRobust(model, data, epsilon=[0.1, 0.1])
    from sklearn.linear_model import LogisticRegression

    linear = from_sklearn(LogisticRegression().fit(df, est.predict(df)), df)
    with pytest.raises(UnsupportedModelError, match="tree model"):
        EnsembleRobust(linear, data)


def _lightgbm_with_categories():
    """A bare LightGBM on a raw frame with pandas ``category`` columns: its categorical
    splits over level sets become chains of one-hot tests that share a child."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"u": rng.uniform(size=n), "income": rng.normal(50, 15, n).round(2),
                       "region": pd.Categorical(rng.choice(list("abcdefg"), n)),
                       "owner": pd.Categorical(rng.choice(["yes", "no"], n))})
    y = (df["region"].isin(["b", "d", "e"]) ^ (df.u > 0.7) ^ (df.owner == "yes")).astype(int)
    clf = lgb.LGBMClassifier(n_estimators=20, num_leaves=8, random_state=0, verbose=-1, n_jobs=1,
                             min_data_per_group=5, cat_smooth=1.0).fit(df, y.to_numpy())
    assert sum(t["num_cat"] for t in clf.booster_.dump_model()["tree_info"]) > 0
    return df, clf, from_sklearn(clf, df)


def test_the_worst_case_at_zero_is_the_lightgbm_booster_score_through_categorical_splits():
    """δ = ε = 0: the worst summed-vote margin for class 1 is the booster's own raw score, on
    rows over every level of every category (the routing pass reaches every tree's leaf)."""
    df, clf, model = _lightgbm_with_categories()
    grid = pd.concat([df.iloc[[i]] for i in range(6)] * 14, ignore_index=True)
    grid["region"] = pd.Categorical(np.tile(list("abcdefg"), 12),
                                    categories=df["region"].cat.categories)
    grid["owner"] = pd.Categorical(np.repeat(["yes", "no"], 42), categories=df["owner"].cat.categories)
    from robustce.robustness import ensemble_worst_case

    worst = ensemble_worst_case(model, model.encoder.transform(grid), 0.0, target_class=1)
    np.testing.assert_allclose(worst, clf.booster_.predict(grid, raw_score=True), atol=1e-6)


def test_ensemble_robust_on_lightgbm_categories_finds_what_the_booster_accepts():
    """Every query gets a CE from MILPNearest and from EnsembleRobust (at δ = ε = 0 as near
    as MILPNearest's), and the booster itself predicts the target on each CE's raw row."""
    df, clf, model = _lightgbm_with_categories()
    queries = df[clf.predict(df) == 0].iloc[:8]
    nearest = MILPNearest(model, norm="l1", time_limit=30).explain(queries)
    assert (nearest.status == "found").all(), nearest.status.tolist()
    np.testing.assert_array_equal(clf.predict(nearest.counterfactuals[list(df.columns)]), 1)
    for delta, eps in ((0.0, 0.0), (0.02, 0.01)):
        res = EnsembleRobust(model, delta=delta, epsilon=eps, norm="l1", time_limit=30).explain(queries)
        assert (res.status == "found").all(), res.status.tolist()
        np.testing.assert_array_equal(clf.predict(res.counterfactuals[list(df.columns)]), 1)
        cert = EnsembleCertifier(EnsembleShift(delta, eps)).certify(
            model, res.counterfactuals_encoded, 1)
        assert cert.robust.all()
        if delta == eps == 0.0:
            d_robust = res.to_frame()["distance"].to_numpy()
            d_nearest = nearest.to_frame()["distance"].to_numpy()
            np.testing.assert_allclose(d_robust, d_nearest, atol=1e-6)
