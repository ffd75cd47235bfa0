"""Bring your own model: a raw-data scikit-learn pipeline on German credit, explained and
certified as it is (run: ROBUSTCE_DATA=... python docs/examples/own_model_german.py)."""

import copy
import warnings

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import robustce as rc
from robustce.robustness import ParameterShift

warnings.simplefilter("ignore", ConvergenceWarning)
ds = rc.datasets.load("german_raw")                       # raw strings + integers
X, y = ds.frame, ds.y
cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
num = [c for c in X.columns if c not in cat]

# the lender's model, trained without robustce
pipe = Pipeline([
    ("pre", ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                               ("num", StandardScaler(), num)])),
    ("clf", MLPClassifier((10,), max_iter=400, random_state=1)),
]).fit(X, y)

model = rc.models.from_sklearn(pipe, ds)   # ds: schema with actionability (age etc. immutable)
print(model)
print("view == pipeline on all", len(X), "rows:",
      bool((model.predict(X) == model.estimator_predict(X)).all()))

queries = X[model.predict(X) == 0].iloc[:5]               # five applicants refused
shift = ParameterShift(0.02)
res = rc.methods.MILPRobust(model, ds, shift=shift, time_limit=30).explain(queries)
print(res.status.value_counts().to_dict())
cfs = res.counterfactuals
print("original pipeline accepts every CE:",
      bool((pipe.predict(cfs[X.columns]) == 1).all()))
print(res.certificates[["distance", "delta", "delta_status", "worst_case_margin"]].round(4))
res.show(res.query_ids[0])
z = shift.sample(model.network(), 10_000, random_state=0).forward(res.counterfactuals_encoded)
print("min margin over 10 000 sampled models:", float(z.min()))

# the lender's own weights: MLPClassifier.coefs_ / intercepts_ moved within ±δ (what Δ covers)
rng = np.random.default_rng(0)
user = copy.deepcopy(pipe)
coefs, intercepts = list(pipe[-1].coefs_), list(pipe[-1].intercepts_)
kept = True
for _ in range(2_000):
    user[-1].coefs_ = [W + rng.uniform(-0.02, 0.02, W.shape) for W in coefs]
    user[-1].intercepts_ = [b + rng.uniform(-0.02, 0.02, b.shape) for b in intercepts]
    kept &= bool((user.predict(cfs[X.columns]) == 1).all())
print("pipeline's own weights moved by up to 0.02 (2 000 draws), every CE accepted:", kept)
