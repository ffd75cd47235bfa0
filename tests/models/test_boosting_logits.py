"""``AdditiveTrees.logits`` routes all trees together (chunks of rows, one padded node table);
it must give the very floats of routing each tree with ``TreeView.apply`` and adding the leaf
values tree by tree — on imported boosters (one-hot splits become node chains: DAG trees of
unequal depth) and on hand-made ensembles, binary and multi-class, any chunking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.models import boosting
from robustce.models.boosting import AdditiveTrees
from robustce.models.trees import TreeView


def _reference(ens: AdditiveTrees, X: np.ndarray) -> np.ndarray:
    z = np.tile(ens.baseline, (len(X), 1))
    for tree, k in zip(ens.trees, ens.output, strict=True):
        z[:, k] += tree.value[tree.apply(X), 0]
    return z


def _random_tree(rng: np.random.Generator, d: int, depth: int) -> TreeView:
    feature, threshold, left, right, value = [], [], [], [], []

    def grow(level: int) -> int:
        i = len(feature)
        feature.append(-1)
        threshold.append(np.nan)
        left.append(-1)
        right.append(-1)
        value.append(rng.normal())
        if level < depth and rng.uniform() < 0.8:
            feature[i] = int(rng.integers(d))
            threshold[i] = float(rng.choice([0.0, 0.5, 1.0, rng.uniform()]))
            left[i] = grow(level + 1)
            right[i] = grow(level + 1)
        return i

    grow(0)
    return TreeView(np.array(feature), np.array(threshold), np.array(left), np.array(right),
                    np.array(value)[:, None], d)


@pytest.mark.parametrize("n_logits", [1, 3])
def test_stacked_routing_equals_per_tree_routing(n_logits, monkeypatch):
    rng = np.random.default_rng(0)
    d = 5
    trees = [_random_tree(rng, d, int(rng.integers(0, 7))) for _ in range(40)]
    ens = AdditiveTrees(trees, rng.integers(0, n_logits, size=40), rng.normal(size=n_logits))
    # rows on the thresholds, in the box and beyond it
    X = np.vstack([rng.choice([0.0, 0.5, 1.0], size=(200, d)), rng.uniform(-0.5, 1.5, (800, d))])
    np.testing.assert_array_equal(ens.logits(X), _reference(ens, X))
    monkeypatch.setattr(boosting, "_STACK_ELEMENTS", 1)  # chunks of 64 rows
    fresh = AdditiveTrees(trees, ens.output, ens.baseline)
    np.testing.assert_array_equal(fresh.logits(X), _reference(ens, X))
    np.testing.assert_array_equal(fresh.logits(X[3]), _reference(ens, X[3:4]))
    assert fresh.logits(X[:0]).shape == (0, n_logits)
    with pytest.raises(ValidationError, match="shape"):
        ens.logits(np.zeros((2, d + 1)))


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_imported_boosters_route_as_each_tree_does(lib):
    mod = pytest.importorskip(lib)
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(2)
    n = 300
    df = pd.DataFrame({"u": rng.uniform(size=n), "k": rng.integers(0, 9, n),
                       "c": rng.choice(list("abcde"), n)})
    y = ((df.u + 0.1 * df.k + (df.c == "b")) > 1.2).astype(int) + (df.c == "e").astype(int)
    clf = (mod.XGBClassifier(n_estimators=20, max_depth=4, n_jobs=1) if lib == "xgboost" else
           mod.LGBMClassifier(n_estimators=20, num_leaves=12, min_child_samples=3, verbose=-1,
                              n_jobs=1))
    pre = ColumnTransformer([("n", StandardScaler(), ["u", "k"]), ("c", OneHotEncoder(), ["c"])])
    pipe = Pipeline([("pre", pre), ("clf", clf)]).fit(df, y)
    model = rc.models.from_sklearn(pipe, df)
    ens = model.additive_trees()
    X = model.encoder.project(rng.uniform(size=(2000, ens.n_features)))
    X = np.vstack([model.encoder.transform(df), X])
    np.testing.assert_array_equal(ens.logits(X), _reference(ens, X))
    np.testing.assert_array_equal(model.predict(df), model.estimator_predict(df))
