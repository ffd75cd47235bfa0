"""Boosters in retraining families (issue 32): ``wrap`` reads an XGBoost / LightGBM classifier
fitted on model space exactly; ``proplace_family`` and ``seed_family`` retrain bare boosters (on
model space) and the user's raw-frame pipelines (imported by ``from_sklearn``) with new seeds,
row subsamples and added data; ``ModelFamily.validity`` is vr."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import robustce as rc
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models import ImportedBoostedModel, proplace_family, seed_family, wrap
from robustce.models.families import fits_raw_frames
from robustce.models.sklearn import SklearnModel

xgb = pytest.importorskip("xgboost", reason="xgboost is not installed (pip install robustce[xgboost])")
lgb = pytest.importorskip("lightgbm", reason="lightgbm is not installed (pip install robustce[lightgbm])")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _xgb(**kw):
    return xgb.XGBClassifier(n_estimators=kw.pop("n_estimators", 10), max_depth=3, random_state=0,
                             n_jobs=1, **kw)


def _lgb(**kw):
    return lgb.LGBMClassifier(n_estimators=kw.pop("n_estimators", 10), num_leaves=8,
                              random_state=0, verbose=-1, n_jobs=1, **kw)


def _subsampled(make):
    return make(subsample=0.7, **({"subsample_freq": 1} if make is _lgb else {}))


@pytest.fixture(scope="module")
def credit():
    rng = np.random.default_rng(1)
    n = 400
    df = pd.DataFrame({"u": rng.uniform(size=n), "income": rng.normal(50, 15, n).round(2),
                       "years": rng.integers(0, 30, n),
                       "housing": rng.choice(["own", "rent", "free"], n)})
    score = 2 * df.u + 0.04 * df.income + 0.05 * df.years + (df.housing == "own") - 3.2
    y = (score + rng.normal(0, 0.5, n) > 0).astype(int).to_numpy()
    data = rc.data.from_frame(df.assign(label=y), "label")
    return data.split(test_size=0.25, random_state=0)


def _pipe(make):
    pre = ColumnTransformer([("num", StandardScaler(), ["u", "income", "years"]),
                             ("cat", OneHotEncoder(handle_unknown="ignore"), ["housing"])])
    return Pipeline([("pre", pre), ("clf", make())])


# ----------------------------------------------------------------------------------------
# wrap: a booster fitted on model space
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
@pytest.mark.parametrize("scaled", [False, True], ids=["bare", "scaler"])
@pytest.mark.parametrize("classes", [2, 3])
def test_wrap_reads_a_booster_fitted_on_model_space_exactly(credit, make, scaled, classes):
    train, _ = credit
    enc = rc.data.Encoder(train.schema).fit(train.frame)
    X = enc.transform(train.frame)
    y = train.y if classes == 2 else train.y + (X[:, 0] > 0.8)
    est = make_pipeline(StandardScaler(), make()) if scaled else make()
    est.fit(X, y)
    model = wrap(est, enc)
    assert model.kind == "boosted" and model.n_classes == classes
    np.testing.assert_array_equal(model.predict(X), est.predict(X))
    # the view's own probabilities (from its margins) equal the booster's
    view = rc.models.base.Model.predict_proba(model, X)
    np.testing.assert_allclose(view, est.predict_proba(X), atol=1e-6, rtol=0)
    np.testing.assert_array_equal(model.predict(train.frame), est.predict(X))
    with pytest.raises(UnsupportedModelError, match="additive_trees"):
        model.network()
    assert not model.differentiable


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_wrap_refuses_a_booster_on_other_inputs(credit, make):
    train, _ = credit
    enc = rc.data.Encoder(train.schema).fit(train.frame)
    X = enc.transform(train.frame)
    est = make().fit(X[:, :3], train.y)
    with pytest.raises(ValidationError, match="fitted on 3 features"):
        wrap(est, enc)
    with pytest.raises(rc.errors.NotFittedError):
        wrap(make(), enc)


# ----------------------------------------------------------------------------------------
# Families of boosters
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
@pytest.mark.parametrize("raw", [False, True], ids=["bare", "pipeline"])
def test_proplace_family_retrains_boosters(credit, make, raw):
    train, test = credit
    spec = _pipe(make) if raw else _subsampled(make)
    assert fits_raw_frames(spec) is raw
    base, family = proplace_family(train, spec, n_retrain=3, n_drop=3, test=test, random_state=0)
    kind = ImportedBoostedModel if raw else SklearnModel
    assert all(isinstance(m, kind) and m.kind == "boosted" for m in [base, *family])
    assert len(family) == 6 and family.protocol == "proplace"
    # every member is its own retrained estimator, with the seed the family records
    for m, seed in zip(family, family.seeds, strict=True):
        params = m.estimator.get_params()
        assert params["clf__random_state" if raw else "random_state"] == seed
    # the members read their estimators exactly: raw rows for the pipelines, model space else
    X = base.encoder.transform(test.frame)
    for m in family:
        if raw:
            np.testing.assert_array_equal(m.predict(test.frame), m.estimator_predict(test.frame))
        else:
            np.testing.assert_array_equal(m.predict(X), m.estimator.predict(X))
    # one model space: every member's encoder gives the base model's columns
    assert {tuple(m.encoder.columns_) for m in family} == {tuple(base.encoder.columns_)}
    # the added data and dropped rows give different boosters (not all the same predictions)
    P = family.predict(X)
    assert (P != P[0]).any()
    np.testing.assert_allclose(family.accuracies, (P == test.y).mean(axis=1))
    assert 0.6 < family.accuracies.mean() <= 1.0 and 0.6 < family.meta["base_accuracy"]
    # vr: validity over the family, from raw rows or model-space rows alike
    vr = family.validity(test.frame, 1)
    np.testing.assert_allclose(vr.per_ce, (P == 1).mean(axis=0))
    assert vr.mean == pytest.approx((P == 1).mean())
    assert family.validity(X, 1).mean == vr.mean
    # same seed, same family
    _, again = proplace_family(train, spec, n_retrain=3, n_drop=3, random_state=0)
    np.testing.assert_array_equal(again.predict(X), P)


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_seed_family_of_boosters_seeds_and_row_subsamples(credit, make):
    train, test = credit
    X = rc.data.Encoder(train.schema).fit(train.frame).transform(test.frame)
    # deterministic boosters (no subsampling): a new seed alone retrains the same trees
    base, same = seed_family(train, make(), n_models=3, random_state=0)
    assert base.kind == "boosted" and same.protocol == "seeds"
    P = same.predict(X)
    assert (P == base.predict(X)).all()
    # row subsamples of the data and subsampling boosters move them
    _, dropped = seed_family(train, make(), n_models=3, drop_fraction=0.2, random_state=0)
    _, subsampled = seed_family(train, _subsampled(make), n_models=3, random_state=0)
    for fam in (dropped, subsampled):
        assert (fam.predict(X) != P[0]).any()
    # a raw-frame pipeline spec too
    base, fam = seed_family(train, _pipe(make), n_models=2, drop_fraction=0.2, random_state=0)
    assert isinstance(base, ImportedBoostedModel)
    assert all(isinstance(m, ImportedBoostedModel) for m in fam)
    # the MLP path is unchanged (a dict of parameters)
    mlp_base, mlp_fam = seed_family(train, {"hidden_layers": (4,), "epochs": 1}, n_models=1)
    assert isinstance(mlp_base, rc.models.MLP) and len(mlp_fam) == 1


def test_a_raw_pipeline_needs_the_schemas_own_model_space(credit):
    train, _ = credit
    other = rc.data.Encoder(train.schema.select(["u", "income", "years"])).fit(
        train.frame[["u", "income", "years"]])
    with pytest.raises(ValidationError, match="leave encoder= unset"):
        proplace_family(train, _pipe(_xgb), n_retrain=1, n_drop=0, encoder=other)
