"""Bring your own gradient-boosted model: an XGBoost credit pipeline on raw UCI Adult, imported
exactly and explained with MACE's SMT backend
(run: ROBUSTCE_DATA=... python docs/examples/own_model_xgboost.py; needs ``pip install xgboost``)."""

import time

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from xgboost import XGBClassifier

import robustce as rc

ds = rc.datasets.load("adult")                            # raw strings + integers, 48 832 rows
X, y = ds.frame, ds.y
cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
num = [c for c in X.columns if c not in cat]

# the lender's model, trained without robustce: 100 trees of depth 4
pipe = Pipeline([
    ("pre", ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                               ("num", StandardScaler(), num)])),
    ("clf", XGBClassifier(n_estimators=100, max_depth=4, random_state=0, n_jobs=1)),
]).fit(X, y)

t0 = time.perf_counter()
model = rc.models.from_sklearn(pipe, ds)   # ds: schema with actionability (age, sex… immutable)
print(f"{model}  imported in {time.perf_counter() - t0:.2f} s")
p_view, p_pipe = model.predict_proba(X), pipe.predict_proba(X)
print("decisions equal on all", len(X), "rows:",
      bool((model.predict(X) == model.estimator_predict(X)).all()),
      f"| max |Δproba| {np.abs(p_view - p_pipe).max():.1e} (XGBoost sums in float32)")

queries = X[model.predict(X) == 0].iloc[:6]               # six applicants predicted <=50K
t0 = time.perf_counter()
res = rc.methods.MACE(model, ds, norm="l1", epsilon=1e-3, backend="smt",
                      time_limit=120).explain(queries)
wall = time.perf_counter() - t0
print(res.status.value_counts().to_dict())
cfs = res.counterfactuals
print("original pipeline accepts every CE:",
      bool((pipe.predict(cfs[X.columns]) == 1).all()))
print(f"MACE-SMT per query: median {res.timings.median():.2f} s, max {res.timings.max():.2f} s "
      f"({wall:.1f} s for all {len(queries)}, set-up included)")
print(res.certificates[["delta_min", "delta_max"]].round(4).to_string())
changed = cfs.set_index("query_id")[X.columns].compare(queries, result_names=("ce", "query"))
print(changed.iloc[:3].to_string())
