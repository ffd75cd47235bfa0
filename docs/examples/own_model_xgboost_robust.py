"""An XGBoost credit model explained and certified end to end (docs/own_model.md, README).

Raw UCI Adult, a 100-tree depth-4 XGBoost at the end of a ColumnTransformer pipeline; the
nearest CE (MILPNearest) and the nearest (δ, ε)-robust CE (EnsembleRobust) for five people the
model turns down; both certified by the exact (δ, ε)-test, re-scored by the pipeline, and hit
by 1 000 ensembles drawn from the set.

    python docs/examples/own_model_xgboost_robust.py      # needs ROBUSTCE_DATA (adult)
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from xgboost import XGBClassifier

import robustce as rc
from robustce.models.boosting import AdditiveTrees
from robustce.models.trees import TreeView
from robustce.robustness import EnsembleCertifier, EnsembleShift

ds = rc.datasets.load("adult")
X, y = ds.frame, ds.y
cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
num = [c for c in X.columns if c not in cat]
pipe = Pipeline([
    ("pre", ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                               ("num", StandardScaler(), num)])),
    ("clf", XGBClassifier(n_estimators=100, max_depth=4, random_state=0, n_jobs=1)),
]).fit(X, y)

model = rc.models.from_sklearn(pipe, ds)
queries = X[model.predict(X) == 0].iloc[:5]
shift = EnsembleShift(delta=0.005, epsilon=0.005)   # leaf values ±0.005, splits ±0.5 % of range

nearest = rc.methods.MILPNearest(model, ds).explain(queries)
t0 = time.perf_counter()
robust = rc.methods.EnsembleRobust(model, ds, delta=shift.delta, epsilon=shift.epsilon).explain(queries)
print(f"EnsembleRobust: { {k: v for k, v in robust.status_counts().items() if v} } in {time.perf_counter() - t0:.1f} s")
print(robust.to_frame()[["distance", "worst_case_margin", "optimal", "delta_status"]].round(4))

certifier = EnsembleCertifier(shift)
parts = model.additive_trees()
rng = np.random.default_rng(0)
for name, res in (("MILPNearest", nearest), ("EnsembleRobust", robust)):
    Z = model.encoder.transform(res.counterfactuals[X.columns])
    certs = certifier.certify(model, Z, 1)
    flipped = np.zeros(len(Z), dtype=bool)
    for _ in range(1000):   # ensembles drawn at the corners of the set
        trees = []
        for t in parts.trees:
            inner = t.left >= 0
            thr = t.threshold.copy()
            thr[inner] += rng.choice([-1.0, 1.0], inner.sum()) * shift.epsilon
            trees.append(TreeView(t.feature, thr, t.left, t.right,
                                  t.value + rng.choice([-1.0, 1.0], t.value.shape) * shift.delta,
                                  t.n_features))
        flipped |= AdditiveTrees(trees, parts.output, parts.baseline).predict(Z) != 1
    print(f"{name}: pipeline accepts {int((pipe.predict(res.counterfactuals[X.columns]) == 1).sum())}"
          f"/{len(Z)}, (δ, ε)-robust {int(certs.robust.sum())}/{len(Z)}, "
          f"flipped by a sampled ensemble {int(flipped.sum())}/{len(Z)}, "
          f"mean ℓ1 {res.to_frame()['distance'].mean():.4f}")

first = queries.index[0]
changed = robust.for_query(first).iloc[0] != queries.loc[first]
print(pd.DataFrame({"query": queries.loc[first][changed],
                    "nearest CE": nearest.for_query(first).iloc[0][changed],
                    "robust CE": robust.for_query(first).iloc[0][changed]}))
