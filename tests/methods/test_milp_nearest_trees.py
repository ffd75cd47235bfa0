"""MILPNearest on tree ensembles (issue 32): a decision tree, a random forest, scikit-learn's
GradientBoosting and (when installed) XGBoost and LightGBM, each the last step of the user's own
pipeline. Its optimum equals brute force — every combination of one leaf per tree enumerated,
the leaves' boxes intersected with the actionable box, the nearest point of each box whose
summed vote gives the target — under l1, l0 and linf; it agrees with ``MACE(backend="milp")``
(the same :class:`~robustce.solvers.tree_encoding.TreeEnsemble`); every CE is accepted by the
pipeline's own ``predict`` on the raw row and respects the schema's actionability."""

from __future__ import annotations

import importlib.util
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.methods import MACE, MILPNearest
from robustce.solvers.tree_encoding import tree_parts

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

COLS = ["u", "v", "w"]
#: the MILP's CEs clear every split by its margin (SplitMargins, ~1e-12 here) and its vote
#: beats tie-winning rivals by 1e-6: the brute force's closed boxes give the infimum
TOL = 1e-6


def _frame(n: int = 300, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({c: rng.uniform(size=n) for c in COLS})
    df.iloc[0], df.iloc[1] = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)  # model space is raw
    df["y"] = (df.u + 0.8 * df.v + 0.4 * df.w + rng.normal(0, 0.1, n) > 1.1).astype(int)
    return df


def _schema() -> Schema:
    return Schema([Feature("u", "continuous", lower=0.0, upper=1.0),
                   Feature("v", "continuous", lower=0.0, upper=1.0, actionability="increase"),
                   Feature("w", "continuous", lower=0.0, upper=1.0, actionability="immutable")])


def _estimators() -> dict[str, object]:
    out: dict[str, object] = {
        "tree": DecisionTreeClassifier(max_depth=3, random_state=0),
        "forest": RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0),
        "gb": GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0),
    }
    if importlib.util.find_spec("xgboost") is not None:
        from xgboost import XGBClassifier

        out["xgboost"] = XGBClassifier(n_estimators=3, max_depth=2, random_state=0, n_jobs=1)
    if importlib.util.find_spec("lightgbm") is not None:
        from lightgbm import LGBMClassifier

        out["lightgbm"] = LGBMClassifier(n_estimators=3, num_leaves=4, random_state=0,
                                         n_jobs=1, verbose=-1)
    return out


KINDS = ["tree", "forest", "gb", "xgboost", "lightgbm"]


@pytest.fixture(scope="module")
def world():
    df = _frame()
    data = from_frame(df, "y", schema=_schema())
    out = {}
    for name, est in _estimators().items():
        pipe = Pipeline([("scale", StandardScaler()), ("clf", est)]).fit(df[COLS], df["y"])
        out[name] = (pipe, rc.models.from_sklearn(pipe, data))
    return data, out


def _brute_force(model, q: np.ndarray, target: int, norm: str) -> float:
    """The least ``norm`` distance (model space is raw: every column weighs 1) from ``q`` to a
    point of the actionable box (u free, v >= q_v, w = q_w) that the ensemble puts in
    ``target``: one leaf per tree, boxes intersected (closed: the infimum), the summed leaf
    scores' first argmax decides, the nearest point of a box clips ``q`` to it."""
    kind, parts = tree_parts(model)
    trees = parts.vote_trees() if kind == "boosted" else parts
    act_lo = np.array([0.0, q[1], q[2]])
    act_hi = np.array([1.0, 1.0, q[2]])
    per_tree = []
    for tree in trees:
        leaves = []
        for leaf, path in tree.paths():
            lo, hi = act_lo.copy(), act_hi.copy()
            for f, t, went_left in path:
                if went_left:
                    hi[f] = min(hi[f], t)
                else:
                    lo[f] = max(lo[f], t)
            leaves.append((lo, hi, np.asarray(tree.value[leaf], dtype=np.float64)))
        per_tree.append(leaves)
    best = math.inf
    for combo in itertools.product(*per_tree):
        lo = np.max([c[0] for c in combo], axis=0)
        hi = np.min([c[1] for c in combo], axis=0)
        if np.any(lo > hi):
            continue
        score = np.sum([c[2] for c in combo], axis=0)
        if int(np.argmax(score)) != target:
            continue
        d = np.abs(np.clip(q, lo, hi) - q)
        dist = {"l1": d.sum(), "linf": d.max(), "l0": float(np.count_nonzero(d > 1e-12))}[norm]
        best = min(best, float(dist))
    return best


@pytest.mark.parametrize("norm", ["l1", "l0", "linf"])
@pytest.mark.parametrize("kind", KINDS)
def test_optimum_equals_brute_force_and_mace(world, kind, norm):
    data, models = world
    if kind not in models:
        pytest.skip(f"{kind} is not installed")
    pipe, model = models[kind]
    queries = data.frame[model.predict(data.frame) == 0].iloc[:5]
    X = model.encoder.transform(queries)
    res = MILPNearest(model, data, norm=norm, target_class=1, time_limit=30).explain(queries)
    bare = MILPNearest(model, norm=norm, target_class=1, time_limit=30).explain(queries)
    mace = MACE(model, norm=norm, epsilon=1e-4, backend="milp", target_class=1,
                time_limit=30).explain(queries)
    J = len(model.encoder.blocks_)
    checked = 0
    for i, qid in enumerate(queries.index):
        opt = _brute_force(model, X[i], 1, norm)
        if math.isinf(opt):
            assert res.status.loc[qid] == "infeasible"
            assert bare.status.loc[qid] == "infeasible"
            continue
        for r in (res, bare):
            cert = r.certificates.loc[qid]
            assert r.status.loc[qid] == "found" and bool(cert["optimal"])
            assert opt - TOL <= cert["distance"] <= opt + TOL, (qid, opt, cert["distance"])
        # MACE's distance is this one divided by J; its δ_max is within ε of its optimum
        assert abs(mace.certificates.loc[qid, "delta_max"] * J - res.certificates.loc[
            qid, "distance"]) <= 1e-4 * J + TOL
        checked += 1
    assert checked >= 3
    for r in (res, bare):
        cfs = r.counterfactuals
        assert len(cfs) == int((r.status == "found").sum())
        # the user's own pipeline accepts every CE on its raw row
        np.testing.assert_array_equal(pipe.predict(cfs[COLS]), np.ones(len(cfs), dtype=int))
        q = queries.loc[cfs["query_id"]]
        assert (cfs["w"].to_numpy() == q["w"].to_numpy()).all()  # immutable
        assert (cfs["v"].to_numpy() >= q["v"].to_numpy()).all()  # increase only


# --- mixed feature types -------------------------------------------------------------------
LEVELS = ("low", "mid", "high")
CATS = ("a", "b", "c")


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(0)
    n = 300
    f = pd.DataFrame({
        "c1": rng.uniform(0, 10, n).round(2), "n": rng.integers(0, 7, n),
        "level": rng.choice(LEVELS, n), "cat": rng.choice(CATS, n), "flag": rng.integers(0, 2, n),
    })
    score = (f.c1 / 10 + f.n / 6 + f.level.map({"low": 0, "mid": 0.4, "high": 0.8})
             + (f.cat == "b") * 0.5 - f.flag * 0.3 + rng.normal(0, 0.15, n))
    f["y"] = (score > 1.1).astype(int)
    schema = Schema([
        Feature("c1", "continuous", lower=0.0, upper=10.0),
        Feature("n", "integer", lower=0, upper=6, actionability="increase"),
        Feature("level", "ordinal", categories=LEVELS),
        Feature("cat", "categorical", categories=CATS),
        Feature("flag", "binary", categories=(0, 1), actionability="immutable"),
    ])
    data = from_frame(f, "y", schema=schema)
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    X = enc.transform(data.frame)
    forest = rc.models.wrap(RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
                            .fit(X, data.y), enc)
    pre = ColumnTransformer([("num", StandardScaler(), ["c1", "n", "flag"]),
                             ("cat", OneHotEncoder(handle_unknown="ignore"), ["level", "cat"])])
    gb = Pipeline([("pre", pre), ("clf", GradientBoostingClassifier(
        n_estimators=5, max_depth=2, learning_rate=1.0, random_state=0))]).fit(data.frame, data.y)
    return data, {"forest": (forest, forest.predict),
                  "gb": (rc.models.from_sklearn(gb, data), gb.predict)}


@pytest.mark.parametrize("norm", ["l1", "l0", "linf"])
@pytest.mark.parametrize("kind", ["forest", "gb"])
def test_mixed_types_match_mace_and_respect_actionability(mixed, kind, norm):
    """Integer, ordinal, categorical and binary features: the same optimum as MACE's MILP
    backend, actionable CEs (immutable ``flag``, ``n`` only up) that the model accepts."""
    data, models = mixed
    model, judge = models[kind]
    queries = data.frame[model.predict(data.frame) == 0].iloc[:6]
    res = MILPNearest(model, data, norm=norm, target_class=1, time_limit=30).explain(queries)
    mace = MACE(model, norm=norm, epsilon=1e-4, backend="milp", target_class=1,
                time_limit=30).explain(queries)
    J = len(model.encoder.blocks_)
    both = (res.status == "found") & (mace.status == "found")
    assert both.sum() >= 4
    assert ((res.status == "found") == (mace.status == "found")).all()
    gap = (mace.certificates["delta_max"] * J - res.certificates["distance"])[both]
    assert (gap.abs() <= 1e-4 * J + 1e-9).all(), gap
    assert res.certificates["optimal"][both].all()
    cfs = res.counterfactuals
    np.testing.assert_array_equal(judge(cfs[list(data.frame.columns)]),
                                  np.ones(len(cfs), dtype=int))
    q = queries.loc[cfs["query_id"]]
    assert (cfs["flag"].to_numpy() == q["flag"].to_numpy()).all()
    assert (cfs["n"].to_numpy() >= q["n"].to_numpy()).all()


def test_tree_models_keep_unsupported_parameters_harmless(world):
    """Network-only knobs (LP bound tightening, relaxing grids first) do not change a tree
    model's optimum."""
    data, models = world
    _, model = models["forest"]
    queries = data.frame[model.predict(data.frame) == 0].iloc[:3]
    a = MILPNearest(model, data, target_class=1).explain(queries)
    b = MILPNearest(model, data, target_class=1, bound_tightening="lp",
                    relax_first=False).explain(queries)
    np.testing.assert_allclose(a.certificates["distance"], b.certificates["distance"])


@pytest.mark.parametrize("kind", ["gb", "xgboost", "lightgbm"])
def test_feature_tweaking_on_boosters_is_valid_and_never_beats_the_optimum(world, kind):
    """PlausibleFeatureTweaking on boosted trees (leaves that move the score towards the
    target): every CE is accepted by the pipeline and actionable, and none is nearer than
    MILPNearest's certified optimum."""
    data, models = world
    if kind not in models:
        pytest.skip(f"{kind} is not installed")
    pipe, model = models[kind]
    queries = data.frame[model.predict(data.frame) == 0].iloc[:5]
    pft = rc.methods.PlausibleFeatureTweaking(model, target_class=1).explain(queries)
    opt = MILPNearest(model, data, target_class=1).explain(queries)
    assert (pft.status == "found").sum() >= 1
    cfs = pft.counterfactuals
    np.testing.assert_array_equal(pipe.predict(cfs[COLS]), np.ones(len(cfs), dtype=int))
    q = queries.loc[cfs["query_id"]]
    assert (cfs["w"].to_numpy() == q["w"].to_numpy()).all()
    assert (cfs["v"].to_numpy() >= q["v"].to_numpy()).all()
    J = len(model.encoder.blocks_)
    found = pft.status == "found"
    d_pft = pft.certificates.loc[found, "distance"] * J  # MACE's distance times J
    assert (d_pft >= opt.certificates.loc[found, "distance"] - 1e-9).all()


def test_a_tree_models_incumbent_comes_from_training_points_moved_into_the_box(world):
    """With an immutable feature no training row shares with the query, no training row is
    actionable as it is; the incumbent is then a training point moved into the query's
    actionable box (w set to the query's, v raised to it) — valid, actionable, and never
    nearer than the certified optimum."""
    data, models = world
    _, model = models["forest"]
    ex = rc.methods.MILPNearest(model, data, time_limit=30)
    frame = data.frame[COLS].copy()
    q_raw = frame[model.predict(frame) == 0].iloc[:1].copy()
    q_raw["w"] = 0.4321  # no training row has this value
    q = model.encoder.transform(q_raw)[0]
    X, _ = ex._candidates(1)
    assert not ex.actionable(q, X, tol=0.0).any()
    inc = ex.incumbent(q, 1, 1e-6)
    assert inc is not None
    assert ex.actionable(q, inc.x[None], tol=0.0)[0]
    assert model.predict(inc.x[None])[0] == 1
    res = ex.explain(q_raw)
    assert res.status.iloc[0] == "found" and bool(res.certificates["optimal"].iloc[0])
    assert inc.objective >= res.certificates["distance"].iloc[0] - 1e-9
