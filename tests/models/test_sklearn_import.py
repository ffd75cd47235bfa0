"""``from_sklearn`` on raw German credit: the folded views decide as the original pipeline does,
CEs found on them are valid for the original pipeline, and Δ-certificates on a standardised
(negative-input) MLP survive sampling and a weight attack."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.feature_selection import VarianceThreshold
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    RobustScaler,
    StandardScaler,
)
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.methods import MACE, MILPNearest, MILPRobust, NearestNeighbour
from robustce.methods.mace import mace_distance
from robustce.models import from_sklearn
from robustce.models.network import class_margin
from robustce.robustness import ParameterShift
from robustce.robustness.attack import sign_attack


@pytest.fixture(scope="module")
def german():
    try:
        ds = rc.datasets.load("german_raw")
    except rc.errors.DatasetUnavailableError as exc:
        pytest.skip(f"German credit is not available offline: {exc}")
    cat = [c for c in ds.frame.columns if not pd.api.types.is_numeric_dtype(ds.frame[c])]
    num = [c for c in ds.frame.columns if c not in cat]
    return ds, cat, num


def _pipe(german, clf, cat_enc=None, num_enc=None, extra=()):
    ds, cat, num = german
    pre = ColumnTransformer([
        ("cat", cat_enc if cat_enc is not None else OneHotEncoder(handle_unknown="ignore"), cat),
        ("num", num_enc if num_enc is not None else StandardScaler(), num),
    ])
    return Pipeline([("pre", pre), *extra, ("clf", clf)]).fit(ds.frame, ds.y)


def _same_decisions(model, frame):
    assert np.array_equal(model.predict(frame), model.estimator_predict(frame))


CLASSIFIERS = {
    "lr": lambda: LogisticRegression(max_iter=2000),
    "mlp": lambda: MLPClassifier((12,), max_iter=300, random_state=0),
    "tree": lambda: DecisionTreeClassifier(max_depth=6, random_state=0),
    "forest": lambda: RandomForestClassifier(25, max_depth=6, random_state=0),
    "gb": lambda: GradientBoostingClassifier(n_estimators=25, max_depth=3, random_state=0),
    "hgb": lambda: HistGradientBoostingClassifier(max_iter=25, random_state=0),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
# hgb: make test-all
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "hgb" else n
                                  for n in CLASSIFIERS])
def test_view_predicts_like_the_pipeline_on_every_training_row(german, name):
    ds = german[0]
    pipe = _pipe(german, CLASSIFIERS[name]())
    for arg in (ds, ds.frame):
        model = from_sklearn(pipe, arg)
        _same_decisions(model, ds.frame)
    # the view's model-space inputs reproduce the pipeline's transformed columns
    Z = pipe[:-1].transform(ds.frame)
    assert np.allclose(model.transformed(ds.frame), Z, atol=1e-9)
    assert model.encoder.schema["age"].kind is rc.data.FeatureKind.INTEGER


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cat_enc, num_enc", [
    (OneHotEncoder(drop="first"), MinMaxScaler()),
    (OneHotEncoder(drop="if_binary", handle_unknown="ignore"), RobustScaler()),
    (OneHotEncoder(min_frequency=30, handle_unknown="infrequent_if_exist"), MaxAbsScaler()),
    (OrdinalEncoder(), "passthrough"),
    (Pipeline([("imp", SimpleImputer(strategy="most_frequent")), ("oh", OneHotEncoder())]),
     Pipeline([("imp", SimpleImputer()), ("sc", StandardScaler())])),
])
@pytest.mark.parametrize("clf", ["lr", "forest", pytest.param("hgb", marks=pytest.mark.slow)])
def test_every_supported_transformer_folds_exactly(german, cat_enc, num_enc, clf):
    ds = german[0]
    from sklearn.base import clone

    pipe = _pipe(german, CLASSIFIERS[clf](), clone(cat_enc), clone(num_enc) if num_enc != "passthrough"
                 else num_enc)
    model = from_sklearn(pipe, ds)
    _same_decisions(model, ds.frame)
    assert np.allclose(model.transformed(ds.frame), pipe[:-1].transform(ds.frame), atol=1e-9)


def test_scaler_and_selector_after_the_column_transformer(german):
    ds = german[0]
    pipe = _pipe(german, LogisticRegression(max_iter=2000),
                 extra=[("var", VarianceThreshold(0.01)), ("sc", StandardScaler())])
    model = from_sklearn(pipe, ds.frame)
    _same_decisions(model, ds.frame)
    # the selector drops columns and the scaler rescales the rest: both folded into the map
    assert np.allclose(model.transformed(ds.frame), pipe[:-1].transform(ds.frame), atol=1e-9)
    assert model.transformed(ds.frame).shape[1] < pipe[0].transform(ds.frame).shape[1]


def test_schema_read_from_the_transformers_alone(german):
    ds, cat, num = german
    pipe = _pipe(german, LogisticRegression(max_iter=2000), num_enc=MinMaxScaler())
    model = from_sklearn(pipe)
    schema = model.encoder.schema
    assert schema["amount"].lower == ds.frame["amount"].min()
    assert schema["amount"].upper == ds.frame["amount"].max()
    assert set(schema["purpose"].categories) == set(ds.frame["purpose"])
    _same_decisions(model, ds.frame)
    with pytest.raises(ValidationError, match="'duration'"):  # StandardScaler has no bounds
        from_sklearn(_pipe(german, LogisticRegression(max_iter=2000)))


def test_data_mismatch_names_the_column(german):
    ds, cat, num = german
    pipe = _pipe(german, LogisticRegression(max_iter=2000),
                 cat_enc=OneHotEncoder(handle_unknown="error"))
    bad = ds.frame.copy()
    bad["status"] = bad["status"].astype(object)
    bad.loc[bad.index[0], "status"] = "A99"
    with pytest.raises(ValidationError, match="'status'"):
        from_sklearn(pipe, bad)
    schema = ds.schema.replace("savings", kind="integer", categories=None, lower=0, upper=5)
    with pytest.raises(ValidationError, match="'savings'"):
        from_sklearn(pipe, schema)
    with pytest.raises(ValidationError, match="amount"):
        from_sklearn(pipe, ds.frame.drop(columns="amount"))


class _Custom(BaseEstimator, TransformerMixin):
    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return np.asarray(X, dtype=float) * 2.0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_unsupported_steps_name_the_step(german):
    with pytest.raises(UnsupportedModelError, match="'custom'.*_Custom"):
        from_sklearn(_pipe(german, LogisticRegression(max_iter=500),
                           num_enc=Pipeline([("custom", _Custom())])), german[0])
    with pytest.raises(UnsupportedModelError, match="'poly'.*PolynomialFeatures"):
        from_sklearn(_pipe(german, LogisticRegression(max_iter=500),
                           extra=[("poly", PolynomialFeatures(2))]), german[0])
    with pytest.raises(UnsupportedModelError, match="'clf'.*activation='tanh'"):
        from_sklearn(_pipe(german, MLPClassifier((4,), activation="tanh", max_iter=50,
                                                 random_state=0)), german[0])
    clip = _pipe(german, LogisticRegression(max_iter=500), num_enc=MinMaxScaler(clip=True))
    from_sklearn(clip, german[0])  # fitted on the same range: clipping never acts
    wide = german[0].schema.replace("amount", upper=50_000)
    with pytest.raises(UnsupportedModelError, match="MinMaxScaler.*clip"):
        from_sklearn(clip, wide)


# --- CEs on the folded views are valid for the ORIGINAL pipeline -------------------------------


@pytest.fixture(scope="module")
def mlp_model(german):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe = _pipe(german, MLPClassifier((10,), max_iter=400, random_state=1))
    return from_sklearn(pipe, german[0])


def _original_accepts(model, res):
    found = res.status == "found"
    cfs = res.counterfactuals
    raw = cfs[list(model.encoder.schema.names)]
    targets = res.target_class.loc[cfs["query_id"]].to_numpy()
    assert np.array_equal(model.estimator_predict(raw), targets)
    return found


@pytest.mark.parametrize("clf", ["lr", "mlp"])
def test_milp_nearest_ces_are_valid_for_the_original_pipeline(german, mlp_model, clf):
    ds = german[0]
    model = mlp_model if clf == "mlp" else from_sklearn(_pipe(german, CLASSIFIERS["lr"]()), ds)
    queries = ds.frame.iloc[:6]
    res = MILPNearest(model, ds, time_limit=20).explain(queries)
    found = _original_accepts(model, res)
    assert found.sum() >= 4
    immutable = res.counterfactuals[["age", "personal_status_sex", "foreign_worker"]].to_numpy()
    owner = res.counterfactuals["query_id"]
    assert (immutable == ds.frame.loc[owner, ["age", "personal_status_sex",
                                              "foreign_worker"]].to_numpy()).all()


def test_milp_robust_certificates_survive_sampling_and_attack(german, mlp_model):
    ds, model = german[0], mlp_model
    # StandardScaler gives negative first-layer inputs; the folded first layer absorbs them
    assert (model.transformed(ds.frame) < 0).any()
    shift = ParameterShift(0.02)
    res = MILPRobust(model, ds, shift=shift, time_limit=30).explain(ds.frame.iloc[:6])
    found = _original_accepts(model, res)
    assert found.sum() >= 3
    cert = res.certificates.loc[found]
    assert (cert["delta_status"] == "robust").all()
    cfs = res.counterfactuals_encoded
    targets = res.target_class.loc[res.counterfactuals["query_id"]].to_numpy()
    z = shift.sample(model.network(), 10_000, random_state=0).forward(cfs)
    for j, t in enumerate(targets):
        assert (class_margin(z[:, j], int(t)) > 0).all()
    worst, _ = sign_attack(model.network(), cfs, shift, targets, steps=8)
    assert (worst > 0).all()


@pytest.mark.parametrize("clf", ["forest", "hgb", "gb"])
def test_nearest_neighbour_on_tree_ensembles(german, clf):
    ds = german[0]
    model = from_sklearn(_pipe(german, CLASSIFIERS[clf]()), ds.frame)  # no immutables
    res = NearestNeighbour(model, ds).explain(ds.frame.iloc[:10])
    found = _original_accepts(model, res)
    assert found.all()


@pytest.mark.slow
def test_mace_on_a_forest_pipeline(german):
    ds = german[0]
    model = from_sklearn(_pipe(german, RandomForestClassifier(5, max_depth=4, random_state=0)), ds)
    res = MACE(model, ds, sat_timeout=30, backend="smt").explain(ds.frame.iloc[:3])
    found = _original_accepts(model, res)
    assert found.sum() >= 2


@pytest.mark.parametrize("clf", ["hgb", "gb"])
def test_mace_on_a_boosted_pipeline_is_valid_and_no_farther_than_the_nearest_neighbour(german, clf):
    ds = german[0]
    est = (HistGradientBoostingClassifier(max_iter=8, max_depth=3, random_state=0) if clf == "hgb"
           else GradientBoostingClassifier(n_estimators=30, max_depth=2, random_state=0))
    model = from_sklearn(_pipe(german, est), ds.frame)
    assert set(model.predict(ds.frame)) == {0, 1}
    queries = ds.frame.iloc[:3]
    res = MACE(model, ds, sat_timeout=30, backend="smt").explain(queries)
    found = _original_accepts(model, res)
    assert found.all()
    # MACE's lower bound (no plausible CE within delta_min) holds against the nearest
    # training point of the target class, an independent plausible CE (all features free)
    nn = NearestNeighbour(model, ds).explain(queries)
    for q in queries.index:
        x = model.encoder.transform(queries.loc[[q]])[0]
        cand = nn.counterfactuals_encoded[nn.counterfactuals["query_id"].to_numpy() == q]
        d_nn = mace_distance(model.encoder, x, cand).min()
        cert = res.certificates.loc[q]
        assert cert["delta_min"] <= d_nn + 1e-9
        assert cert["delta_max"] - cert["delta_min"] <= cert["epsilon"] + 1e-12


@pytest.mark.parametrize("clf", ["hgb", "gb"])
def test_additive_formula_holds_exactly_where_the_model_predicts_its_class(german, clf):
    """φ_f(x, t) of a boosted pipeline (SMT-LIB text parsed by z3) at fixed rows: true for
    the predicted class, false for the other — checked row by row against ``predict``."""
    import z3

    from robustce.solvers import smt

    ds = german[0]
    est = (HistGradientBoostingClassifier(max_iter=8, max_depth=3, random_state=0) if clf == "hgb"
           else GradientBoostingClassifier(n_estimators=30, max_depth=2, random_state=0))
    model = from_sklearn(_pipe(german, est), ds.frame)
    inp = smt.SMTInput(model.encoder)
    X = model.encoder.transform(ds.frame.iloc[:200])
    pred = model.predict(X)
    X = np.vstack([X[pred == 0][:15], X[pred == 1][:15]])  # both classes
    pred = model.predict(X)
    assert 0 < pred.mean() < 1
    formulas = {t: smt.additive_formula(model.additive_trees(), inp, t, tau=0.0) for t in (0, 1)}
    for x, p in zip(X, pred, strict=True):
        fix = [inp.equal(i, v) for i, v in enumerate(inp.values(x))]
        for t, phi in formulas.items():
            s = z3.Solver()
            s.add(*inp.domain, *fix, *phi)
            assert (s.check() == z3.sat) == (t == int(p))


def _flag_and_size_data():
    """A 0/1 flag (schema: binary), a 2-level ordered size whose alphabetical order is the
    reverse of its levels (small < large), an integer income; the label uses all three."""
    rng = np.random.default_rng(0)
    n = 400
    flag = rng.integers(0, 2, n)
    size = rng.choice(["small", "large"], n)
    income = rng.integers(0, 50, n)
    y = ((flag == 0) & (income > 20)) | ((size == "large") & (income > 10)) | (income > 40)
    df = pd.DataFrame({"flag": flag, "size": pd.Categorical(size, ["small", "large"], ordered=True),
                       "income": income, "label": y.astype(int)})
    return rc.data.from_frame(df, "label")


@pytest.mark.parametrize("clf", [DecisionTreeClassifier(random_state=0),
                                 RandomForestClassifier(20, max_features=1, random_state=0)])
def test_tree_splits_on_a_negative_coefficient_column_route_like_the_pipeline(clf):
    """Issue 38: standard steps give a transformed column that *decreases* with its model-space
    column — OneHotEncoder's "flag == 0" column is 1 − x on a binary flag, and OrdinalEncoder's
    alphabetical codes (large = 0, small = 1) run against the levels of a 2-level ordinal —
    so a tree split there flips direction (``_SplitMap``: x ≥ b goes left). Only such
    two-valued features reach that branch (every supported scaler has a positive scale), so
    no valid row lies on its threshold; every valid raw row (all flags × sizes × incomes,
    both sides of every income threshold) is routed as ``pipe.predict`` routes it."""
    from sklearn.base import clone

    from robustce.models.sklearn_import import fold_preprocessing

    data = _flag_and_size_data()
    pre = ColumnTransformer([("flag", OneHotEncoder(), ["flag"]), ("size", OrdinalEncoder(), ["size"]),
                             ("num", StandardScaler(), ["income"])])
    pipe = Pipeline([("pre", pre), ("clf", clone(clf))]).fit(data.frame, data.y)
    _, A, _ = fold_preprocessing(pipe[0], data)
    negative = [j for j in range(A.shape[0])
                if np.count_nonzero(A[j]) == 1 and A[j][np.flatnonzero(A[j])[0]] < 0]
    assert negative == [0, 2]  # "flag == 0" and the ordinal code of size
    trees = [pipe[-1]] if hasattr(pipe[-1], "tree_") else pipe[-1].estimators_
    used = set(np.concatenate([t.tree_.feature for t in trees]).tolist())
    assert set(negative) <= used  # the fitted trees split on both
    model = from_sklearn(pipe, data)
    grid = pd.DataFrame([(f, s, i) for f in (0, 1) for s in ("small", "large") for i in range(50)],
                        columns=["flag", "size", "income"])
    grid["size"] = pd.Categorical(grid["size"], ["small", "large"], ordered=True)
    np.testing.assert_array_equal(model.predict(grid), pipe.predict(grid))
    _same_decisions(model, data.frame)


@pytest.mark.parametrize("scaler", ["passthrough", MinMaxScaler(), StandardScaler()],
                         ids=["passthrough", "minmax", "standard"])
def test_rows_on_and_beside_every_continuous_tree_threshold_route_like_the_pipeline(scaler):
    """Every split of a tree on a continuous column, probed at the raw value whose transform
    is the threshold and at the 4 floats on either side of it: ``x <= t`` in model space sends
    the row where the pipeline's float32 comparison does (a row exactly on the threshold goes
    left — the mutation check's sklearn_tree_threshold_off_by_one_float survived without this)."""
    from sklearn.base import clone

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"u": rng.uniform(0, 10, 300), "v": rng.normal(50, 20, 300)})
    data = rc.data.from_frame(df.assign(label=((df.u > 4) ^ (df.v > 55)).astype(int)), "label")
    step = scaler if isinstance(scaler, str) else clone(scaler)
    pipe = Pipeline([("pre", ColumnTransformer([("num", step, ["u", "v"])])),
                     ("clf", DecisionTreeClassifier(random_state=0))]).fit(data.frame, data.y)
    model = from_sklearn(pipe, data)
    Z = pipe[:-1].transform(data.frame)
    rows, on = [], 0
    tree = pipe[-1].tree_
    for f, theta in zip(tree.feature, tree.threshold, strict=True):
        if f < 0:
            continue
        col = ["u", "v"][f]
        raw = data.frame[col].to_numpy()
        a = (Z[1, f] - Z[0, f]) / (raw[1] - raw[0])
        v = (theta - (Z[0, f] - a * raw[0])) / a  # the raw image of the threshold
        for k in range(-4, 5):
            w = v
            for _ in range(abs(k)):
                w = np.nextafter(w, np.sign(k) * np.inf)
            row = data.frame.iloc[0].copy()
            row[col] = w
            rows.append(row)
            z = pipe[:-1].transform(pd.DataFrame([row]))[0, f]
            on += np.float32(z) == np.float32(theta)
    grid = pd.DataFrame(rows)
    assert on > 0  # some rows lie exactly on a threshold (in the pipeline's float32)
    np.testing.assert_array_equal(model.predict(grid), pipe.predict(grid))
