"""Explainers on XGBoost and LightGBM models (issue 32): NearestNeighbour, FeatureTweaking,
DiverseRobust, RobX, DiCE (random and genetic) and RobustNearestNeighbour — bare boosters and
boosters at the end of a scikit-learn pipeline. Every returned CE is accepted by the user's own
fitted estimator (``est.predict`` on the raw CE rows). RobustNearestNeighbour has no Δ-test on a
booster: without a certifier it says so (typed), with a :class:`FamilyCertifier` its CEs are
valid under every retrained model of the family."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import robustce as rc
from robustce.errors import UnsupportedModelError
from robustce.methods import (
    DiCE,
    DiverseRobust,
    NearestNeighbour,
    PlausibleFeatureTweaking,
    RobustNearestNeighbour,
    RobX,
)
from robustce.models import from_sklearn, proplace_family
from robustce.robustness import FamilyCertifier

xgb = pytest.importorskip("xgboost", reason="xgboost is not installed (pip install robustce[xgboost])")
lgb = pytest.importorskip("lightgbm", reason="lightgbm is not installed (pip install robustce[lightgbm])")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NUM = ["u", "income", "years"]


def _frame(n: int = 300, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"u": rng.uniform(size=n), "income": rng.normal(50, 15, n).round(2),
                       "years": rng.integers(0, 30, n),
                       "housing": rng.choice(["own", "rent", "free"], n)})
    score = 2 * df.u + 0.04 * df.income + 0.05 * df.years + (df.housing == "own") - 3.2
    return df, (score > 0).astype(int).to_numpy()


def _xgb(**kw):
    return xgb.XGBClassifier(n_estimators=10, max_depth=3, random_state=0, n_jobs=1, **kw)


def _lgb(**kw):
    return lgb.LGBMClassifier(n_estimators=10, num_leaves=8, random_state=0, verbose=-1, n_jobs=1,
                              **kw)


def _setup(make, mode):
    """(fitted estimator, its raw columns, imported model, training Dataset, queries)."""
    df, y = _frame()
    if mode == "pipeline":
        pre = ColumnTransformer([("num", StandardScaler(), NUM),
                                 ("cat", OneHotEncoder(handle_unknown="ignore"), ["housing"])])
        est = Pipeline([("pre", pre), ("clf", make())]).fit(df, y)
        frame = df
    else:
        frame = df[NUM]
        est = make().fit(frame, y)
    data = rc.data.from_frame(frame.assign(label=y), "label")
    model = from_sklearn(est, data)
    queries = frame[est.predict(frame) == 0].iloc[:4]
    return est, list(frame.columns), model, data, queries


def _assert_accepted(res, est, columns, model):
    """Every query found, and every CE (all ranks) in its target class for the user's own
    estimator on the raw rows — and for the imported view."""
    assert (res.status == "found").all(), res.messages if hasattr(res, "messages") else res.status
    cfs = res.counterfactuals
    assert len(cfs) >= len(res.status)
    targets = res.target_class.loc[cfs["query_id"]].to_numpy()
    np.testing.assert_array_equal(est.predict(cfs[columns]), targets)
    np.testing.assert_array_equal(model.predict(cfs[columns]), targets)


METHODS = [
    ("nearest_neighbour", lambda m, d: NearestNeighbour(m, d)),
    ("feature_tweaking", lambda m, d: PlausibleFeatureTweaking(m, d)),
    ("diverse_robust", lambda m, d: DiverseRobust(m, d, n_counterfactuals=3)),
    ("robx", lambda m, d: RobX(m, d, n_samples=200, random_state=0)),
    ("dice_random", lambda m, d: DiCE(m, d, method="random", n_counterfactuals=2, random_state=0)),
    ("dice_genetic", lambda m, d: DiCE(m, d, method="genetic", n_counterfactuals=2,
                                        random_state=0)),
]


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
@pytest.mark.parametrize("mode", ["bare", "pipeline"])
@pytest.mark.parametrize("name, build", METHODS, ids=[m[0] for m in METHODS])
def test_every_ce_is_accepted_by_the_users_booster(make, mode, name, build):
    if name.startswith("dice") and DiCE.missing_dependency():
        pytest.skip(DiCE.missing_dependency())
    est, columns, model, data, queries = _setup(make, mode)
    _assert_accepted(build(model, data).explain(queries), est, columns, model)


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_robust_nearest_neighbour_without_a_certifier_names_what_a_booster_needs(make):
    _, _, model, data, _ = _setup(make, "pipeline")
    with pytest.raises(UnsupportedModelError, match=r"certifier=.*FamilyCertifier"):
        RobustNearestNeighbour(model, data)


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
@pytest.mark.parametrize("mode", ["bare", "pipeline"])
def test_robust_nearest_neighbour_over_a_retrained_family(make, mode):
    """With a FamilyCertifier the pool is exactly the training points that the model and every
    retrained booster put in the target class; the CE is the nearest reachable one, valid for
    the user's estimator and for every member."""
    est, columns, model, data, queries = _setup(make, mode)
    spec = est if mode == "pipeline" else make(subsample=0.7, **(
        {"subsample_freq": 1} if make is _lgb else {}))
    _, family = proplace_family(data, spec, n_retrain=2, n_drop=2, random_state=0)
    rnn = RobustNearestNeighbour(model, data, certifier=FamilyCertifier(family), n_neighbours=2)
    res = rnn.explain(queries)
    _assert_accepted(res, est, columns, model)
    cfs = res.counterfactuals
    assert family.validity(cfs[columns], 1).mean == 1.0
    assert res.certificates["delta"].isna().all()  # no Δ box on a booster
    assert (res.certificates["worst_case_margin"] > 0).all()
    # the pool: every distinct training point every model puts in class 1
    X = np.unique(model.encoder.transform(data.frame), axis=0)
    agree = (model.predict(X) == 1) & (family.predict(X) == 1).all(axis=0)
    assert rnn.pool_info[1].n_certified == int(agree.sum())
    assert rnn.pool_info[1].n_candidates == int((model.predict(X) == 1).sum())
    # and it is the nearest of them (ℓ1 in model space, the method's default norm)
    pool = X[agree]
    Xq = model.encoder.transform(queries)
    for i, qid in enumerate(queries.index):
        d = np.abs(pool - Xq[i]).sum(axis=1).min()
        assert res.certificates.loc[qid, "distance"] == pytest.approx(d, abs=1e-12)
