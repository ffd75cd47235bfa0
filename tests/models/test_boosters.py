"""XGBoost and LightGBM import (:mod:`robustce.models.boosters`): the additive-tree view routes
every row to the leaf the booster itself reaches (``pred_leaf``) — on every training row and on
rows exactly on and beside every split threshold (XGBoost's strict float32 ``<``, LightGBM's
float64 ``<=``) — and its probabilities equal the booster's ``predict_proba``; bare and in
pipelines, binary and multi-class, trained with missing values, LightGBM categorical splits;
CEs from MACE (SMT) and NearestNeighbour are accepted by the user's own pipeline; what cannot be
imported is refused with a typed error."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import robustce as rc
from robustce.errors import NotFittedError, UnsupportedModelError
from robustce.methods import MACE, NearestNeighbour
from robustce.models import ImportedBoostedModel, from_sklearn
from robustce.models import boosters as bmod

#: a solver's wall-clock guard against a hang, not a measurement: far above any solve here
#: on a host at load 20 (issue 53), so that no result depends on the host's load
GUARD_S = 600

xgb = pytest.importorskip("xgboost", reason="xgboost is not installed (pip install robustce[xgboost])")
lgb = pytest.importorskip("lightgbm", reason="lightgbm is not installed (pip install robustce[lightgbm])")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: XGBoost accumulates its margin in float32: probabilities agree to float32 rounding
XGB_ATOL = 1e-6


def _credit(n: int = 400, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """A small credit-like frame: numbers (a float column with exact 0 and 1, so model space
    equals raw space on it), an integer, a category; binary and 3-class labels."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=n)
    u[:2] = (0.0, 1.0)
    df = pd.DataFrame({"u": u, "income": rng.normal(50, 15, n).round(2),
                       "years": rng.integers(0, 30, n),
                       "housing": rng.choice(["own", "rent", "free"], n)})
    score = 2 * df.u + 0.04 * df.income + 0.05 * df.years + (df.housing == "own") - 3.2
    y = (score > 0).astype(int).to_numpy()
    y3 = y + (df.u > 0.8).to_numpy().astype(int)
    return df, y, y3


def _pipe(clf, df, y):
    pre = ColumnTransformer([("num", StandardScaler(), ["u", "income", "years"]),
                             ("cat", OneHotEncoder(handle_unknown="ignore"), ["housing"])])
    return Pipeline([("pre", pre), ("clf", clf)]).fit(df, y)


def _xgb(**kw):
    return xgb.XGBClassifier(n_estimators=kw.pop("n_estimators", 15), max_depth=3, random_state=0,
                             n_jobs=1, **kw)


def _lgb(**kw):
    return lgb.LGBMClassifier(n_estimators=kw.pop("n_estimators", 15), num_leaves=8,
                              random_state=0, verbose=-1, n_jobs=1, **kw)


def _booster_leaves(final, Z) -> np.ndarray:
    """The leaf each tree of the booster reaches on its own inputs ``Z`` (n, n_trees)."""
    if isinstance(final, xgb.XGBClassifier):
        return np.asarray(final.get_booster().predict(xgb.DMatrix(Z), pred_leaf=True), dtype=np.int64)
    return np.asarray(final.booster_.predict(Z, pred_leaf=True), dtype=np.int64)


def _view_leaves(model, final, X) -> np.ndarray:
    """The leaf each tree of the imported view reaches, in the booster's own numbering
    (XGBoost: node id; LightGBM: ``leaf_index``, node id minus the internal nodes)."""
    trees = model.additive_trees().trees
    out = np.column_stack([t.apply(X) for t in trees])
    if isinstance(final, lgb.LGBMClassifier):
        info = final.booster_.dump_model()["tree_info"]
        out = out - np.array([t["num_leaves"] - 1 for t in info])[None, :]
    return out


def _assert_exact(model, est, frame):
    """Leaves, probabilities and decisions of the view equal the booster's on ``frame``."""
    final = est.steps[-1][1] if isinstance(est, Pipeline) else est
    Z = est[:-1].transform(frame) if isinstance(est, Pipeline) else frame
    X = model.encoder.transform(frame)
    mine = _view_leaves(model, final, X)
    # pred_leaf lists every tree; predictions use those up to the best iteration (the view's)
    np.testing.assert_array_equal(mine, _booster_leaves(final, Z)[:, :mine.shape[1]])
    atol = XGB_ATOL if isinstance(final, xgb.XGBClassifier) else 1e-12
    np.testing.assert_allclose(model.predict_proba(X), est.predict_proba(frame), rtol=0, atol=atol)
    np.testing.assert_array_equal(model.predict(X), model.estimator_predict(frame))


@pytest.fixture(scope="module")
def credit():
    return _credit()


@pytest.fixture(scope="module")
def numbers(credit):
    """The numeric columns of :func:`credit` (a bare booster's inputs) and its labels."""
    df, y, y3 = credit
    return df[["u", "income", "years"]], y, y3


def _patch_dump(monkeypatch, clf, edit) -> None:
    """Import ``clf`` from its dump as changed by ``edit(dump)`` (a copy)."""
    name = "_xgb_dump" if isinstance(clf, xgb.XGBClassifier) else "_lgb_dump"
    dump = copy.deepcopy(getattr(bmod, name)(clf))
    edit(dump)
    monkeypatch.setattr(bmod, name, lambda final: dump)


# ----------------------------------------------------------------------------------------
# Exact equality
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
@pytest.mark.parametrize("classes", [2, 3])
def test_pipeline_view_equals_the_booster_on_every_training_row(credit, make, classes):
    df, y, y3 = credit
    pipe = _pipe(make(), df, y if classes == 2 else y3)
    model = from_sklearn(pipe, df)
    assert isinstance(model, ImportedBoostedModel)
    assert model.additive_trees().n_logits == (1 if classes == 2 else 3)
    _assert_exact(model, pipe, df)


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
@pytest.mark.parametrize("classes", [2, 3])
def test_bare_view_equals_the_booster_on_every_training_row(numbers, make, classes):
    num, y, y3 = numbers
    clf = make().fit(num, y if classes == 2 else y3)
    model = from_sklearn(clf, num)
    _assert_exact(model, clf, num)


@pytest.mark.parametrize("make", [
    lambda: xgb.XGBRFClassifier(n_estimators=8, max_depth=3, random_state=0, n_jobs=1),
    lambda: _xgb(objective="multi:softmax"),
    lambda: _xgb(booster="gbtree", num_parallel_tree=3, n_estimators=4),
    lambda: _lgb(boosting_type="rf", bagging_freq=1, bagging_fraction=0.7),
    lambda: _lgb(sigmoid=0.4),
    lambda: _lgb(boosting_type="goss"),
], ids=["xgb-rf", "xgb-softmax", "xgb-parallel-trees", "lgb-rf", "lgb-sigmoid", "lgb-goss"])
def test_booster_variants_are_exact(numbers, make):
    """Random-forest modes (XGBRFClassifier: parallel trees in one round; LightGBM ``rf``:
    ``average_output``), ``multi:softmax``, several parallel trees per round, LightGBM's
    ``sigmoid`` scale on the logit, GOSS sampling."""
    num, y, y3 = numbers
    clf = make()
    softmax = getattr(clf, "objective", None) == "multi:softmax"
    clf.fit(num, y3 if softmax else y)
    model = from_sklearn(clf, num)
    if softmax:  # no predict_proba: leaves and decisions
        X = model.encoder.transform(num)
        np.testing.assert_array_equal(_view_leaves(model, clf, X), _booster_leaves(clf, num))
        np.testing.assert_array_equal(model.predict(X), clf.predict(num))
    else:
        _assert_exact(model, clf, num)


@pytest.mark.filterwarnings("ignore:The argument 'eval_set' is deprecated")
@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_early_stopping_keeps_the_trees_the_booster_predicts_with(numbers, make):
    """After early stopping both wrappers predict with the best iteration's trees only."""
    num, y, _ = numbers
    if make is _xgb:
        clf = make(n_estimators=200, early_stopping_rounds=3, learning_rate=0.5)
        clf.fit(num.iloc[:300], y[:300], eval_set=[(num.iloc[300:], y[300:])], verbose=False)
        best = clf.best_iteration
    else:
        clf = make(n_estimators=200, learning_rate=0.5)
        clf.fit(num.iloc[:300], y[:300], eval_set=[(num.iloc[300:], y[300:])],
                callbacks=[lgb.early_stopping(3, verbose=False)])
        best = clf.best_iteration_ - 1
    assert best + 1 < 200
    model = from_sklearn(clf, num)
    assert len(model.additive_trees().trees) == best + 1
    _assert_exact(model, clf, num)


def _threshold_rows(final, base: pd.DataFrame, col: str, j: int) -> pd.DataFrame:
    """Rows whose column ``col`` (booster input ``j``) lies on every split threshold on it and
    beside it: the float64 and float32 neighbours, and the float64 values around the midpoint
    of two float32 values (which float32 rounds to one or the other)."""
    if isinstance(final, xgb.XGBClassifier):
        parsed = bmod.xgboost_trees(bmod._xgb_dump(final), "test")
        # the dump's threshold s is stored as the float32 just below it: recover s
        ts = [np.nextafter(np.float32(t), np.float32(np.inf)) for tr in parsed.trees
              for t, f in zip(tr.threshold, tr.feature, strict=True) if f == j]
    else:
        parsed = bmod.lightgbm_trees(bmod._lgb_dump(final), "test")
        ts = [t for tr in parsed.trees for t, f in zip(tr.threshold, tr.feature, strict=True)
              if f == j and np.isfinite(t)]
    vals = []
    for t in set(float(t) for t in ts):
        t32 = np.float32(t)
        lo32, hi32 = (np.nextafter(t32, np.float32(-np.inf)), np.nextafter(t32, np.float32(np.inf)))
        mids = [(float(lo32) + float(t32)) / 2, (float(t32) + float(hi32)) / 2]
        vals += [t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf), float(lo32), float(t32),
                 float(hi32)]
        vals += [v for m in mids for v in (m, np.nextafter(m, -np.inf), np.nextafter(m, np.inf))]
    vals = [v for v in vals if 0.0 <= v <= 1.0]
    rows = pd.concat([base] * len(vals), ignore_index=True)
    rows[col] = np.array(vals, dtype=np.float64)
    return rows


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_rows_on_and_beside_every_threshold_reach_the_boosters_leaves(numbers, make):
    """Column ``u`` spans exactly [0, 1], so its model-space value is the raw value bit for
    bit: the view's plain ``x <= t`` must reproduce XGBoost's ``float32(x) < s`` and LightGBM's
    float64 ``x <= t`` on the threshold, on its float64 and float32 neighbours and on both
    sides of every float32 rounding midpoint."""
    num, y, _ = numbers
    clf = make(n_estimators=40).fit(num, y)
    model = from_sklearn(clf, num)
    rows = _threshold_rows(clf, num.iloc[[5]], "u", 0)
    assert len(rows) > 100
    X = model.encoder.transform(rows)
    np.testing.assert_array_equal(X[:, 0], rows["u"].to_numpy())  # model space is raw on u
    _assert_exact(model, clf, rows)
    if isinstance(clf, xgb.XGBClassifier):  # the strict test: a row on s goes right
        leaves = _booster_leaves(clf, rows)
        assert len(np.unique(leaves, axis=0)) > 1


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
@pytest.mark.parametrize("classes", [2, 3])
def test_boosters_trained_with_missing_values_are_exact_on_complete_rows(numbers, make, classes):
    """robustce's model space has no NaN: a booster trained with missing values imports, and
    every complete row (the training rows without NaN, and random rows of the schema) is
    routed as the booster routes it; where a NaN would go (``default_left``) is not modelled."""
    num, y, y3 = numbers
    num = num.astype(float)
    rng = np.random.default_rng(1)
    holes = num.mask(rng.uniform(size=num.shape) < 0.15)
    clf = make().fit(holes, y if classes == 2 else y3)
    if isinstance(clf, xgb.XGBClassifier):  # the trees do send missing values somewhere
        default_left = [d for t in bmod._xgb_dump(clf)["learner"]["gradient_booster"]["model"]["trees"]
                        for d in t["default_left"]]
        assert any(default_left)
    complete = holes.dropna()
    model = from_sklearn(clf, complete)
    _assert_exact(model, clf, complete)
    probe = model.encoder.inverse_transform(model.encoder.project(rng.uniform(size=(300, 3))))
    _assert_exact(model, clf, probe[list(num.columns)])


@pytest.mark.parametrize("make, reachable", [
    (lambda: _xgb(missing=5.0), True),  # income takes the value 5
    (lambda: _xgb(missing=-999.0), False),  # below every column's range
    (lambda: _lgb(zero_as_missing=True), True),  # u takes 0
], ids=["xgb-missing-in-range", "xgb-missing-out-of-range", "lgb-zero-as-missing"])
def test_values_the_booster_reads_as_missing(numbers, make, reachable):
    """A non-NaN ``missing`` value (XGBoost) or zero-as-missing (LightGBM) sends that value the
    default way: refused where valid rows reach it against a threshold, exact where they
    cannot (rows with the value are routed as the booster routes them)."""
    num, y, _ = numbers
    num = num.astype(float)
    num.iloc[2:40, 1] = 5.0
    num.iloc[40:80, 2] = 0.0
    clf = make().fit(num, y)
    if reachable:
        with pytest.raises(UnsupportedModelError, match="as missing"):
            from_sklearn(clf, num)
    else:
        _assert_exact(from_sklearn(clf, num), clf, num)


def test_lightgbm_categorical_splits_on_a_pandas_category_column(credit):
    df, _, _ = credit
    cat = df.copy()
    cat["housing"] = cat["housing"].astype("category")
    rng = np.random.default_rng(2)
    cat["region"] = pd.Categorical(rng.choice(list("abcdefg"), len(cat)))
    cat["owner"] = pd.Categorical(rng.choice(["yes", "no"], len(cat)))  # 2 levels
    y = (cat["region"].isin(["b", "d", "e"]) ^ (cat.u > 0.7) ^ (cat.owner == "yes")).astype(int).to_numpy()
    clf = _lgb(min_data_per_group=5, cat_smooth=1.0, n_estimators=20).fit(cat, y)
    dump = clf.booster_.dump_model()
    assert sum(t["num_cat"] for t in dump["tree_info"]) > 0  # categorical splits were learned
    model = from_sklearn(clf, cat)
    assert model.encoder.block("region").encoding == "onehot"
    _assert_exact(model, clf, cat)
    # every level of every category, with the rest of a row fixed
    grid = pd.concat([cat.iloc[[3]]] * 7, ignore_index=True)
    grid["region"] = pd.Categorical(list("abcdefg"), categories=cat["region"].cat.categories)
    _assert_exact(model, clf, grid)
    # decoded rows keep the category dtype and levels, so the booster reads the same codes
    decoded = model.raw_rows(model.encoder.transform(grid))
    np.testing.assert_array_equal(clf.predict(decoded), clf.predict(grid))
    # MACE (SMT) through the categorical splits: every CE accepted by the booster itself
    queries = cat[clf.predict(cat) == 0].iloc[:3]
    res = MACE(model, norm="l1", time_limit=GUARD_S, backend="smt").explain(queries)
    assert (res.status == "found").all()
    targets = res.target_class.loc[res.counterfactuals["query_id"]].to_numpy()
    np.testing.assert_array_equal(clf.predict(res.counterfactuals[list(cat.columns)]), targets)


def test_lightgbm_categorical_splits_on_ordinal_codes_in_a_pipeline(credit):
    """``categorical_feature`` on an OrdinalEncoder's codes: with the column declared
    categorical (a Dataset) each code set becomes a set of one-hot levels; read as ordinal
    from the frame alone (thermometer levels), a non-interval set is refused with the hint."""
    from sklearn.preprocessing import OrdinalEncoder

    df = credit[0].copy()
    df["region"] = np.random.default_rng(3).choice(list("abcdefg"), len(df))
    y = (df.region.isin(["b", "d", "e"]) ^ (df.u > 0.7)).astype(int).to_numpy()
    pre = ColumnTransformer([("cat", OrdinalEncoder(), ["region", "housing"]),
                             ("num", StandardScaler(), ["u", "income", "years"])])
    clf = _lgb(min_data_per_group=5, cat_smooth=1.0, categorical_feature=[0, 1])
    pipe = Pipeline([("pre", pre), ("clf", clf)]).fit(df, y)
    assert sum(t["num_cat"] for t in pipe[-1].booster_.dump_model()["tree_info"]) > 0
    model = from_sklearn(pipe, rc.data.from_frame(df.assign(label=y), "label"))
    assert model.encoder.block("region").encoding == "onehot"
    _assert_exact(model, pipe, df)
    with pytest.raises(UnsupportedModelError, match="declare 'region' kind 'categorical'"):
        from_sklearn(pipe, df)


# ----------------------------------------------------------------------------------------
# Explainers: every found CE is accepted by the user's own pipeline
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_mace_nearest_neighbour_and_model_agnostic_ces_are_accepted_by_the_users_pipeline(credit, make):
    df, y, _ = credit
    pipe = _pipe(make(n_estimators=10), df, y)
    model = from_sklearn(pipe, df)
    queries = df[pipe.predict(df) == 0].iloc[:3]
    data = rc.data.from_frame(df.assign(label=y), "label")
    for res in (MACE(model, norm="l1", time_limit=GUARD_S, backend="smt").explain(queries),
                MACE(model, norm="l1", time_limit=GUARD_S, backend="milp").explain(queries),
                MACE(model, norm="l1", time_limit=GUARD_S, backend="smt", hint="milp").explain(queries),
                NearestNeighbour(model, data).explain(queries),
                *(getattr(rc.methods, m)(model, data).explain(queries)
                  for m in ("DiverseRobust", "RobX", "MinimumObservable"))):
        assert (res.status == "found").all()
        cfs = res.counterfactuals
        raw = cfs[list(df.columns)]
        targets = res.target_class.loc[cfs["query_id"]].to_numpy()
        np.testing.assert_array_equal(pipe.predict(raw), targets)
        np.testing.assert_array_equal(model.estimator_predict(raw), targets)


def _brute_force_nearest(model, x: np.ndarray, target: int) -> float:
    """MACE's ℓ1 distance from ``x`` to the nearest point the ensemble puts in ``target``,
    by enumerating every combination of one leaf per tree: the leaves' boxes intersected
    (closed: the infimum over each box), the summed scores decide, the nearest point of a
    box is ``x`` clipped to it."""
    import itertools

    from robustce.methods.mace import mace_distance

    ens = model.additive_trees()
    boxes = []
    for tree in ens.trees:
        per = []
        for leaf, path in tree.paths():
            lo, hi = np.zeros(ens.n_features), np.ones(ens.n_features)
            for f, t, went_left in path:
                if went_left:
                    hi[f] = min(hi[f], t)
                else:
                    lo[f] = max(lo[f], t)
            per.append((lo, hi, float(tree.value[leaf, 0])))
        boxes.append(per)
    best = np.inf
    for combo in itertools.product(*boxes):
        lo = np.max([b[0] for b in combo], axis=0)
        hi = np.min([b[1] for b in combo], axis=0)
        if np.any(lo > hi):
            continue
        z = ens.baseline.copy()
        for (_, _, v), k in zip(combo, ens.output, strict=True):
            z[k] += v
        cls = int(z[0] > 0) if len(z) == 1 else int(np.argmax(z))
        if cls == target:
            best = min(best, float(mace_distance(model.encoder, x, np.clip(x, lo, hi)[None])[0]))
    return best


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
@pytest.mark.parametrize("classes", [2, 3])
def test_mace_milp_backend_on_boosters_matches_brute_force_and_smt(make, classes):
    """MACE(backend="milp") encodes a booster as trees with per-class leaf scores
    (``AdditiveTrees.vote_trees``) in the forest MILP: on tiny ensembles over two columns
    whose model space is raw, its optimum equals the nearest CE found by enumerating every
    combination of leaves (within ε), it agrees with the SMT backend, and the pipeline's own
    booster accepts every CE."""
    rng = np.random.default_rng(4)
    n = 300
    df = pd.DataFrame({"u": rng.uniform(size=n), "v": rng.uniform(size=n)})
    df.iloc[0], df.iloc[1] = (0.0, 0.0), (1.0, 1.0)
    y = (df.u + df.v > 1).astype(int).to_numpy()
    if classes == 3:
        y = y + (df.u > 0.8).to_numpy().astype(int)
    clf = make(n_estimators=3 if classes == 2 else 2)  # at most 4^6 leaf combinations
    clf.set_params(**({"num_leaves": 4} if make is _lgb else {"max_depth": 2}))
    clf.fit(df, y)
    model = from_sklearn(clf, df)
    assert model.additive_trees().vote_trees()[0].n_classes == max(classes, 2)
    X = model.encoder.transform(df)
    np.testing.assert_array_equal(X, df.to_numpy())  # model space is raw
    queries = df[model.predict(df) == 0].iloc[:4]
    eps = 1e-3
    milp = MACE(model, norm="l1", epsilon=eps, backend="milp", target_class=1,
                time_limit=GUARD_S).explain(queries)
    smt = MACE(model, norm="l1", epsilon=eps, backend="smt", target_class=1,
               time_limit=GUARD_S).explain(queries)
    assert (milp.status == "found").all() and (smt.status == "found").all()
    cfs = milp.counterfactuals
    np.testing.assert_array_equal(clf.predict(cfs[["u", "v"]]), np.ones(len(cfs), dtype=int))
    for q in queries.index:
        brute = _brute_force_nearest(model, model.encoder.transform(queries.loc[[q]])[0], 1)
        a, b = milp.certificates.loc[q], smt.certificates.loc[q]
        assert a["delta_min"] <= brute + 1e-9
        assert brute <= a["delta_max"] <= brute + eps
        assert max(a["delta_min"], b["delta_min"]) <= min(a["delta_max"], b["delta_max"]) + 1e-9


def test_vote_trees_sum_to_the_logits(credit):
    df, y, y3 = credit
    for labels in (y, y3):
        model = from_sklearn(_pipe(_xgb(n_estimators=5), df, labels), df)
        ens = model.additive_trees()
        X = model.encoder.transform(df)
        score = sum(t.value[t.apply(X)] for t in ens.vote_trees())
        z = ens.logits(X)
        expect = np.column_stack([np.zeros(len(z)), z[:, 0]]) if z.shape[1] == 1 else z
        np.testing.assert_allclose(score, expect, atol=1e-12)
        np.testing.assert_array_equal(np.argmax(score, axis=1), ens.predict(X))


# ----------------------------------------------------------------------------------------
# Typed errors
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_an_unfitted_booster_is_refused(credit, make):
    with pytest.raises(NotFittedError, match="not fitted"):
        from_sklearn(make(), credit[0])


@pytest.mark.parametrize("est, match", [
    (lambda: xgb.XGBClassifier(n_estimators=3, booster="dart"), "dart"),
    (lambda: xgb.XGBClassifier(n_estimators=3, booster="gblinear"), "gblinear"),
    (lambda: lgb.LGBMClassifier(n_estimators=3, boosting_type="dart", verbose=-1), "dart"),
    (lambda: lgb.LGBMClassifier(n_estimators=3, linear_tree=True, verbose=-1), "linear trees"),
    (lambda: xgb.XGBRegressor(n_estimators=3), "regression"),
    (lambda: lgb.LGBMRegressor(n_estimators=3, verbose=-1), "regression"),
], ids=["xgb-dart", "xgb-gblinear", "lgb-dart", "lgb-linear", "xgb-regressor", "lgb-regressor"])
def test_unsupported_boosters_are_refused_naming_the_reason(numbers, est, match):
    num, y, _ = numbers
    clf = est().fit(num, y)
    with pytest.raises(UnsupportedModelError, match=match):
        from_sklearn(clf, num)


def test_raw_boosters_are_refused_asking_for_the_wrapper(numbers):
    num, y, _ = numbers
    for clf in (_xgb(n_estimators=2), _lgb(n_estimators=2)):
        clf.fit(num, y)
        raw = clf.get_booster() if isinstance(clf, xgb.XGBClassifier) else clf.booster_
        with pytest.raises(UnsupportedModelError, match="scikit-learn wrapper"):
            from_sklearn(raw, num)


def test_rankers_are_refused(numbers):
    num, y, _ = numbers
    ranker = xgb.XGBRanker(n_estimators=3).fit(num, y, qid=np.repeat(np.arange(40), 10))
    with pytest.raises(UnsupportedModelError, match="ranking"):
        from_sklearn(ranker, num)


def _logistic_objective(y_true, y_pred):
    p = 1.0 / (1.0 + np.exp(-y_pred))
    return p - y_true, p * (1.0 - p)


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_a_custom_objective_is_refused(numbers, make):
    num, y, _ = numbers
    clf = make(n_estimators=3, objective=_logistic_objective).fit(num, y)
    with pytest.raises(UnsupportedModelError, match="custom"):
        from_sklearn(clf, num)


def _set_xgb_objective(name):
    return lambda dump: dump["learner"]["objective"].update(name=name)


def _set_lgb_objective(name):
    return lambda dump: dump.update(objective=name)


@pytest.mark.parametrize("make, edit, match", [
    (_xgb, _set_xgb_objective("rank:pairwise"), "ranking"),
    (_xgb, _set_xgb_objective("reg:squarederror"), "regression"),
    (_xgb, _set_xgb_objective("multi:unknown"), "not supported"),
    (_lgb, _set_lgb_objective("regression"), "regression"),
    (_lgb, _set_lgb_objective("lambdarank"), "ranking"),
    (_lgb, _set_lgb_objective("multiclassova num_class:3"), "one-vs-all"),
], ids=["xgb-ranking", "xgb-regression", "xgb-unknown", "lgb-regression", "lgb-ranking",
        "lgb-one-vs-all"])
def test_non_classification_objectives_in_the_dump_are_refused(numbers, monkeypatch, make,
                                                               edit, match):
    num, y, _ = numbers
    clf = make(n_estimators=3).fit(num, y)
    _patch_dump(monkeypatch, clf, edit)
    with pytest.raises(UnsupportedModelError, match=match):
        from_sklearn(clf, num)


def _nan_xgb_threshold(dump):
    dump["learner"]["gradient_booster"]["model"]["trees"][1]["split_conditions"][0] = float("nan")


def _nan_lgb_threshold(dump):
    dump["tree_info"][1]["tree_structure"]["threshold"] = float("nan")


@pytest.mark.parametrize("make, edit", [(_xgb, _nan_xgb_threshold), (_lgb, _nan_lgb_threshold)],
                         ids=["xgboost", "lightgbm"])
def test_nan_thresholds_are_refused(numbers, monkeypatch, make, edit):
    num, y, _ = numbers
    clf = make(n_estimators=3).fit(num, y)
    _patch_dump(monkeypatch, clf, edit)
    with pytest.raises(UnsupportedModelError, match="NaN"):
        from_sklearn(clf, num)


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_feature_name_and_count_mismatches_are_refused(numbers, make):
    num, y, _ = numbers
    named = make(n_estimators=3).fit(num, y)
    with pytest.raises(UnsupportedModelError, match="fitted on columns"):
        from_sklearn(named, num.rename(columns={"years": "age"}))
    unnamed = make(n_estimators=3).fit(num.to_numpy(), y)
    with pytest.raises(UnsupportedModelError, match="takes 3 features but is given 2"):
        from_sklearn(unnamed, num[["u", "income"]])
