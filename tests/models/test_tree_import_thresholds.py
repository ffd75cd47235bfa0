"""Imported trees route every value as scikit-learn does, bit for bit, at integer splits.

scikit-learn's trees store the transformed inputs as float32 and compare that value, widened
back to float64, with the float64 threshold. ``from_sklearn`` maps each split to model space;
on an integer feature whose grid values sit on the threshold up to rounding (a StandardScaler
in front, values in steps of 10 000 as in Taiwan credit's limits and bills), a comparison that
rounds the threshold to float32 instead misroutes the values next to it (issue 29, finding 2:
on Taiwan credit 18 splits of a decision tree, 741 of a 100-tree forest, 36 of
GradientBoosting). Here every split is checked at the four integers around its threshold.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import robustce as rc

TAIWAN = "credit_default_taiwan/credit_card.csv"


def _estimators():
    return {
        "tree": DecisionTreeClassifier(random_state=0),
        "forest": RandomForestClassifier(n_estimators=15, max_depth=12, random_state=0,
                                         n_jobs=1),
        "boosting": GradientBoostingClassifier(n_estimators=25, max_depth=3, random_state=0),
    }


def misrouted_splits(pipe: Pipeline, model, X: pd.DataFrame) -> tuple[int, int]:
    """(splits routed differently from scikit-learn at one of the four integers around
    their threshold, splits checked). Every tree's node ``i`` is compared directly: the
    pipeline's own transform, float32 widened to float64, ``<= threshold``, against the
    imported view's model-space test on the encoder's transform of the same raw row."""
    clf, scaler = pipe[-1], pipe[0]
    ests = [clf] if hasattr(clf, "tree_") else list(np.ravel(clf.estimators_))
    views = model.trees() if hasattr(model, "trees") else list(model.additive_trees().trees)
    lo, hi = X.min().to_numpy(), X.max().to_numpy()
    f, val, th, vf, vt = [], [], [], [], []
    for est, view in zip(ests, views, strict=True):
        t = est.tree_
        nodes = np.flatnonzero(t.children_left >= 0)
        feat, thr = t.feature[nodes], t.threshold[nodes]
        v = np.floor(thr * scaler.scale_[feat] + scaler.mean_[feat])
        for d in (-1.0, 0.0, 1.0, 2.0):
            f.append(feat)
            val.append(np.clip(v + d, lo[feat], hi[feat]))
            th.append(thr)
            vf.append(view.feature[nodes])
            vt.append(view.threshold[nodes])
    f, val, th = np.concatenate(f), np.concatenate(val), np.concatenate(th)
    vf, vt = np.concatenate(vf), np.concatenate(vt)
    rows = np.arange(len(f))
    vals = np.repeat(X.iloc[[0]].to_numpy(dtype=np.float64), len(f), axis=0)
    vals[rows, f] = val
    frame = pd.DataFrame(vals, columns=X.columns).astype(X.dtypes.to_dict())
    Z = scaler.transform(frame)
    theirs = Z[rows, f].astype(np.float32).astype(np.float64) <= th
    ours = model.encoder.transform(frame)[rows, vf] <= vt
    n = len(f) // 4
    return int((theirs != ours).reshape(4, n).any(axis=0).sum()), n


def _integer_frame(n: int = 1500, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    """Integer features in steps of 10 000 / 1 000 / 1 (like Taiwan credit's limits, bills
    and ages), so many thresholds fall on grid values up to rounding."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "limit": 10_000 * rng.integers(1, 80, n),
        "bill": 1_000 * rng.integers(-5, 400, n),
        "paid": rng.integers(0, 90_000, n),
        "age": rng.integers(21, 75, n),
    })
    score = (X["limit"] / 2e5 - X["bill"] / 3e5 + X["paid"] / 4e4 + (X["age"] - 40) / 30
             + rng.normal(0, 0.7, n))
    return X, (score > 0.2).astype(int)


@pytest.mark.parametrize("kind", ["tree", "forest", "boosting"])
def test_integer_splits_route_as_scikit_learn_synthetic(kind):
    X, y = _integer_frame()
    pipe = Pipeline([("scale", StandardScaler()), ("clf", _estimators()[kind])]).fit(X, y)
    model = rc.models.from_sklearn(pipe, X)
    bad, n = misrouted_splits(pipe, model, X)
    assert n > 50
    assert bad == 0, f"{bad} of {n} splits routed differently from scikit-learn"
    np.testing.assert_array_equal(model.predict(X), pipe.predict(X))


@pytest.mark.parametrize("kind", ["tree", pytest.param("forest", marks=pytest.mark.slow), "boosting"])
def test_integer_splits_route_as_scikit_learn_taiwan(shared_datasets, kind):
    path = shared_datasets / TAIWAN
    if not path.is_file():
        pytest.skip(f"Taiwan credit data not found at {path}")
    df = pd.read_csv(path, encoding="utf-8-sig").iloc[:4000]
    X, y = df.drop(columns=["ID", "Y"]), df["Y"]
    pipe = Pipeline([("scale", StandardScaler()), ("clf", _estimators()[kind])]).fit(X, y)
    model = rc.models.from_sklearn(pipe, X)
    bad, n = misrouted_splits(pipe, model, X)
    assert bad == 0, f"{bad} of {n} splits routed differently from scikit-learn"
    np.testing.assert_array_equal(model.predict(X), pipe.predict(X))
