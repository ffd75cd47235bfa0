"""MACE: δ_min <= optimum <= δ_max <= δ_min + ε against brute force (grids for trees, an LP for
logistic regression, enumeration for a tiny MLP); valid, plausible CEs; never farther than MO;
diversity; honest statuses; clear errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.data.schema import FeatureKind
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.methods.mace import MACE
from robustce.models.trees import SplitMargins

#: a solver's wall-clock guard against a hang, not a measurement: far above any solve here
#: on a host at load 20 (issue 53), so that no result depends on the host's load
GUARD_S = 600

LEVELS = ("low", "mid", "high")
CATS = ("a", "b", "c")
EPS = 1e-3


def _reference_distance(enc: rc.data.Encoder, q: np.ndarray, C: np.ndarray, norm) -> np.ndarray:
    """MACE eq. 3 from decoded raw values (independent of the code under test): numeric
    |Δ|/range, ordinal |Δ level|/(k-1), categorical/binary 𝕀[≠], combined and divided by J."""
    a = enc.level_indices(np.atleast_2d(q))
    b = enc.level_indices(np.atleast_2d(C))
    delta = np.zeros_like(b)
    for j, blk in enumerate(enc.blocks_):
        f = blk.feature
        if f.kind.is_numeric:
            span = f.upper - f.lower
            delta[:, j] = np.abs(b[:, j] - a[:, j]) / span if span > 0 else 0.0
        elif f.kind is FeatureKind.ORDINAL:
            delta[:, j] = np.abs(b[:, j] - a[:, j]) / (f.n_levels - 1)
        else:
            delta[:, j] = (b[:, j] != a[:, j]).astype(float)
    weights = {norm: 1.0} if isinstance(norm, str) else norm
    parts = {"l0": (delta > 0).sum(axis=1), "l1": delta.sum(axis=1), "linf": delta.max(axis=1)}
    return sum(w * parts[k] for k, w in weights.items()) / len(enc.blocks_)


def _reachable(enc: rc.data.Encoder, X: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Rows of X reachable from q under the schema's actionability (the world-A schemas have
    immutable and increase-only features only)."""
    ok = np.all(X[:, enc.immutable_mask_] == q[enc.immutable_mask_], axis=1)
    return ok & np.all(X[:, enc.increasing_mask_] >= q[enc.increasing_mask_], axis=1)


def _check_plausible_and_valid(model, q: np.ndarray, cf: np.ndarray, target: int) -> None:
    enc = model.encoder
    np.testing.assert_array_equal(enc.project(cf[None])[0], cf)  # type and range consistent
    assert int(model.predict(cf[None])[0]) == target  # a plain forward pass
    assert np.all(cf[enc.immutable_mask_] == q[enc.immutable_mask_])
    assert np.all(cf[enc.increasing_mask_] >= q[enc.increasing_mask_])
    assert np.all(cf[enc.decreasing_mask_] <= q[enc.decreasing_mask_])


# --- world A: mixed kinds, for trees and forests -------------------------------------------


def _mixed_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    f = pd.DataFrame({
        "c1": rng.uniform(0, 10, n).round(2), "n": rng.integers(0, 7, n),
        "level": rng.choice(LEVELS, n), "cat": rng.choice(CATS, n), "flag": rng.integers(0, 2, n),
    })
    score = (f.c1 / 10 + f.n / 6 + f.level.map({"low": 0, "mid": 0.4, "high": 0.8})
             + (f.cat == "b") * 0.5 - f.flag * 0.3 + rng.normal(0, 0.15, n))
    f["y"] = (score > 1.1).astype(int)
    return f


def _mixed_schema() -> Schema:
    return Schema([
        Feature("c1", "continuous", lower=0.0, upper=10.0),
        Feature("n", "integer", lower=0, upper=6, actionability="increase"),
        Feature("level", "ordinal", categories=LEVELS),
        Feature("cat", "categorical", categories=CATS),
        Feature("flag", "binary", categories=(0, 1), actionability="immutable"),
    ])


@pytest.fixture(scope="module")
def mixed():
    data = from_frame(_mixed_frame(300, 0), "y", schema=_mixed_schema())
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    X = enc.transform(data.frame)
    tree = rc.models.wrap(DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, data.y), enc)
    forest = rc.models.wrap(RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
                            .fit(X, data.y), enc)
    return data, {"tree": tree, "forest": forest}


def _tree_grid(model) -> np.ndarray:
    """Every candidate optimum of a tree model: the continuous column at the query value or
    one split margin below / above a threshold (MACE's CEs clear every split by its margin,
    :class:`~robustce.models.trees.SplitMargins`); every value of the discrete features. (For
    a tree the nearest point of each leaf box clips the query, so these are exact.)"""
    enc = model.encoder
    thr = np.concatenate([t.threshold[t.feature == 0] for t in model.trees()])
    m = _margin(enc, thr)
    c1 = np.unique(np.clip(np.concatenate([thr - m, thr + m, [0.0, 1.0]]), 0, 1))
    frame = pd.DataFrame(list(itertools.product(range(7), LEVELS, CATS, (0, 1))),
                         columns=["n", "level", "cat", "flag"])
    frame.insert(0, "c1", 0.0)
    G = enc.transform(frame)
    return np.repeat(G, len(c1), axis=0), np.tile(c1, len(G))


def _margin(enc, thr: np.ndarray) -> np.ndarray:
    return SplitMargins.of(enc)(np.zeros(len(thr), dtype=np.int64), thr)


def _brute_force_tree(model, q: np.ndarray, target: int, norm) -> float:
    G, c1 = _tree_grid(model)
    G = np.vstack([G, G])
    G[:, 0] = np.concatenate([c1, np.full(len(c1), q[0])])  # and the query's own value
    ok = model.predict(G) == target
    thr = np.concatenate([t.threshold[t.feature == 0] for t in model.trees()])
    gap = np.abs(G[:, [0]] - thr[None, :]) - _margin(model.encoder, thr)[None, :]
    ok &= np.all(gap >= -1e-14, axis=1)  # clears every split (up to the rounding of t ± m)
    enc = model.encoder
    ok &= np.all(G[:, enc.immutable_mask_] == q[enc.immutable_mask_], axis=1)
    ok &= np.all(G[:, enc.increasing_mask_] >= q[enc.increasing_mask_], axis=1)
    return float(_reference_distance(enc, q, G[ok], norm).min()) if ok.any() else math.inf


NORMS = ["l1", "l0", "linf", {"l1": 0.5, "linf": 0.5}]


@pytest.mark.parametrize("kind", ["tree", "forest"])
@pytest.mark.parametrize("norm", NORMS, ids=["l1", "l0", "linf", "mixed"])
def test_trees_bounds_bracket_the_brute_force_optimum(mixed, kind, norm):
    data, models = mixed
    model = models[kind]
    queries = data.frame.iloc[:10]
    res = MACE(model, norm=norm, epsilon=EPS, time_limit=GUARD_S, backend="smt").explain(queries)
    assert _check_against_brute_force(model, queries, res, norm) >= 3


def _check_against_brute_force(model, queries, res, norm, slack: float = 1e-12) -> int:
    """Per query: ``infeasible`` iff the brute force finds no CE, else ``found`` with
    δ_min <= optimum <= δ_max <= δ_min + ε (``slack``: the solver's tolerance on δ_min), δ_max
    the CE's reference distance, the CE plausible and valid. Returns the number found."""
    Q = model.encoder.transform(queries)
    cert = res.certificates
    n_found = 0
    for i, label in enumerate(queries.index):
        if res.status[label] == "already_target":
            continue
        target = int(res.target_class[label])
        opt = _brute_force_tree(model, Q[i], target, norm)
        if math.isinf(opt):
            assert res.status[label] == "infeasible"
            continue
        assert res.status[label] == "found", res.messages[label]
        n_found += 1
        lo, hi = cert.loc[label, "delta_min"], cert.loc[label, "delta_max"]
        assert lo <= opt + slack and opt <= hi + 2e-12
        assert hi - lo <= EPS
        cf = res.counterfactuals_encoded[(res.counterfactuals["query_id"] == label).to_numpy()][0]
        assert hi == pytest.approx(_reference_distance(model.encoder, Q[i], cf, norm)[0], abs=1e-12)
        _check_plausible_and_valid(model, Q[i], cf, target)
    return n_found


def test_never_farther_than_mo(mixed):
    data, models = mixed
    model = models["forest"]
    train = data.subset(np.arange(200))
    queries = data.frame.iloc[200:215]
    enc = model.encoder
    Xtr = enc.transform(train.frame)
    with_data = MACE(model, train, norm="l1", backend="smt").explain(queries)
    without = MACE(model, norm="l1", backend="smt").explain(queries)
    Q = enc.transform(queries)
    checked = 0
    for i, label in enumerate(queries.index):
        if with_data.status[label] != "found":
            continue
        target = int(with_data.target_class[label])
        ok = _reachable(enc, Xtr, Q[i]) & (model.predict(Xtr) == target)
        if not ok.any():
            continue
        mo = _reference_distance(enc, Q[i], Xtr[ok], "l1").min()
        assert with_data.certificates.loc[label, "delta_max"] <= mo + 1e-12
        assert without.certificates.loc[label, "delta_max"] <= mo + EPS
        checked += 1
    assert checked >= 3


def test_user_constraint_keeps_a_feature_unchanged(mixed):
    data, models = mixed
    model = models["tree"]
    queries = data.frame.iloc[:10]
    free = MACE(model, norm="l1", backend="smt").explain(queries)
    fixed = MACE(model, norm="l1", actionability={"c1": "immutable"}, backend="smt").explain(queries)
    assert (fixed.status.isin(["found", "infeasible", "already_target"])).all()
    merged = fixed.counterfactuals.merge(queries, left_on="query_id", right_index=True,
                                         suffixes=("", "_q"))
    assert len(merged) and (merged["c1"] == merged["c1_q"]).all()
    both = (free.status == "found") & (fixed.status == "found")
    # a constrained optimum is never below the unconstrained lower bound
    assert (fixed.certificates.loc[both, "delta_max"]
            >= free.certificates.loc[both, "delta_min"] - 1e-12).all()


def test_infeasible_is_a_proof(mixed):
    data, models = mixed
    model = models["tree"]
    everything = dict.fromkeys(model.encoder.schema.names, "immutable")
    res = MACE(model, actionability=everything, backend="smt").explain(data.frame.iloc[:6])
    active = res.status != "already_target"
    assert active.any() and (res.status[active] == "infeasible").all()
    assert len(res.counterfactuals) == 0


def test_diverse_counterfactuals_differ(mixed):
    data, models = mixed
    model = models["tree"]
    queries = data.frame.iloc[:6]
    res = MACE(model, norm="l1", n_counterfactuals=3, backend="smt").explain(queries)
    Q = model.encoder.transform(queries)
    seen = 0
    for i, label in enumerate(queries.index):
        if res.status[label] != "found":
            continue
        rows = (res.counterfactuals["query_id"] == label).to_numpy()
        cfs = res.counterfactuals_encoded[rows]
        raw = res.counterfactuals.loc[rows, model.encoder.schema.names]
        assert len(cfs) == 3
        assert not raw.duplicated().any()  # every pair differs in at least one feature
        target = int(res.target_class[label])
        lows = res.certificates.loc[label, "diverse_delta_min"]
        highs = res.certificates.loc[label, "diverse_delta_max"]
        for k, cf in enumerate(cfs):
            _check_plausible_and_valid(model, Q[i], cf, target)
            assert highs[k] == pytest.approx(_reference_distance(model.encoder, Q[i], cf, "l1")[0])
            assert lows[k] <= highs[k] <= lows[k] + EPS
            assert highs[k] >= lows[0] - 1e-12  # more clauses never beat the first lower bound
        seen += 1
    assert seen >= 2


# --- world B: continuous features, logistic regression against an LP -----------------------


@pytest.fixture(scope="module")
def continuous_lr(continuous_lr_fit):
    return continuous_lr_fit[:2]


def test_logistic_regression_l1_matches_the_lp(continuous_lr):
    data, model = continuous_lr
    enc = model.encoder
    ex = MACE(model, norm="l1", epsilon=EPS, backend="smt")
    queries = data.frame.iloc[:12]
    res = ex.explain(queries)
    (W, b), = model.network().weights
    tau = 1e-6
    Q = enc.transform(queries)
    n = 0
    for i, label in enumerate(queries.index):
        if res.status[label] == "already_target":
            continue
        t = int(res.target_class[label])
        q = Q[i]
        sign = 1.0 if t == 1 else -1.0
        # variables (x_a, x_b, x_c, e_a, e_b, e_c): min Σ e / J
        c = np.r_[np.zeros(3), np.ones(3) / 3]
        A = [np.r_[-sign * W[0], np.zeros(3)]]  # sign * (w·x + b) >= tau
        ub = [sign * b[0] - tau]
        for j in range(3):  # e_j >= |x_j - q_j|
            A += [np.r_[np.eye(3)[j], -np.eye(3)[j]], np.r_[-np.eye(3)[j], -np.eye(3)[j]]]
            ub += [q[j], -q[j]]
        bounds = [(0, 1), (q[1], 1), (q[2], q[2])] + [(0, None)] * 3
        lp = linprog(c, A_ub=np.array(A), b_ub=np.array(ub), bounds=bounds, method="highs")
        if lp.status == 2:
            assert res.status[label] == "infeasible"
            continue
        assert lp.status == 0 and res.status[label] == "found"
        lo, hi = res.certificates.loc[label, ["delta_min", "delta_max"]]
        assert lo <= lp.fun + 1e-9 and lp.fun <= hi + 1e-9 and hi - lo <= EPS
        n += 1
    assert n >= 3


@pytest.mark.parametrize("norm", ["l1", "linf", "l0"])
def test_milp_backend_agrees_with_smt(continuous_lr, norm):
    data, model = continuous_lr
    queries = data.frame.iloc[:10]
    a = MACE(model, norm=norm, epsilon=EPS, backend="smt").explain(queries)
    b = MACE(model, norm=norm, epsilon=EPS, backend="milp").explain(queries)
    # z3 may answer "unknown" on one machine and not another (a CI run did, on two l0
    # queries): a timeout is an honest status, but its bounds must still bracket the optimum
    undecided = a.status == "timeout"
    assert (a.status[~undecided] == b.status[~undecided]).all(), (a.status, b.status)
    assert undecided.sum() <= 2, a.messages[undecided].tolist()
    for label in a.status.index[undecided]:
        assert b.status[label] == "found"
        assert a.certificates.loc[label, "delta_min"] <= b.certificates.loc[label, "delta_max"] + 1e-9
    found = a.status == "found"
    assert found.sum() >= 3
    ca, cb = a.certificates[found], b.certificates[found]
    assert (cb["delta_max"] - cb["delta_min"] <= EPS).all()
    assert (np.abs(ca["delta_max"] - cb["delta_max"]) <= EPS + 1e-9).all()
    assert (cb["delta_min"] <= ca["delta_max"] + 1e-9).all()  # each lower bound below
    assert (ca["delta_min"] <= cb["delta_max"] + 1e-9).all()  # the other's CE


@pytest.mark.parametrize("norm", ["l1", "linf"])
def test_milp_hint_keeps_the_smt_certificate(continuous_lr, norm):
    """hint="milp": the MILP incumbent becomes δ_max, z3 still proves δ_min; the bounds match
    the plain SMT search within ε and the hinted search needs no more SAT calls."""
    data, model = continuous_lr
    queries = data.frame.iloc[:10]
    plain = MACE(model, norm=norm, epsilon=EPS, backend="smt").explain(queries)
    hinted = MACE(model, norm=norm, epsilon=EPS, hint="milp", backend="smt").explain(queries)
    found = (plain.status == "found") & (hinted.status == "found")
    assert found.sum() >= 3 and (hinted.status[plain.status == "found"] == "found").all()
    a, b = plain.certificates[found], hinted.certificates[found]
    assert (b["delta_max"] - b["delta_min"] <= EPS).all()
    assert (b["delta_min"] <= a["delta_max"] + 1e-9).all() and (a["delta_min"] <= b["delta_max"] + 1e-9).all()
    assert (b["sat_calls"] >= 1).all()  # z3 answered: δ_min is not the MILP's bound
    assert b["sat_calls"].sum() < a["sat_calls"].sum()
    Q = model.encoder.transform(queries)
    for i, label in enumerate(queries.index):
        if found[label]:
            cf = hinted.counterfactuals_encoded[(hinted.counterfactuals["query_id"] == label).to_numpy()][0]
            _check_plausible_and_valid(model, Q[i], cf, int(hinted.target_class[label]))
    with pytest.raises(ValidationError, match="hint"):
        MACE(model, hint="lp", backend="smt")


def test_milp_backend_refuses_what_it_cannot_do(mixed, continuous_lr):
    with pytest.raises(ValidationError, match="diverse"):
        MACE(mixed[1]["forest"], backend="milp", n_counterfactuals=2)
    lr = continuous_lr[1]
    with pytest.raises(ValidationError, match="one norm"):
        MACE(lr, backend="milp", norm={"l1": 0.5, "l0": 0.5})
    with pytest.raises(ValidationError, match="diverse"):
        MACE(lr, backend="milp", n_counterfactuals=2)



def test_auto_backend_is_the_measured_faster_one_where_both_apply(mixed, continuous_lr):
    data, models = mixed
    lr = continuous_lr[1]
    assert MACE(models["tree"]).backend_ == "milp"
    assert MACE(models["forest"]).backend_ == "smt"
    assert MACE(lr).backend_ == "milp"
    # where the MILP does not apply (or a hint or diverse CEs are asked for): z3
    assert MACE(lr, norm={"l1": 0.5, "l0": 0.5}).backend_ == "smt"
    assert MACE(lr, actionability={"a": "immutable"}).backend_ == "smt"
    assert MACE(models["tree"], n_counterfactuals=2).backend_ == "smt"
    assert MACE(models["tree"], hint="milp").backend_ == "smt"
    assert MACE(lr, backend="smt").backend_ == "smt"
    # the default's answer carries the same certificate as z3's, within ε
    queries = continuous_lr[0].frame.iloc[:6]
    auto = MACE(lr, norm="l1", epsilon=EPS).explain(queries)
    ref = MACE(lr, norm="l1", epsilon=EPS, backend="smt").explain(queries)
    assert list(auto.status) == list(ref.status) and (auto.status == "found").sum() >= 4
    found = auto.status == "found"
    a, r = auto.certificates[found], ref.certificates[found]
    assert (auto.certificates.sat_calls == 0).all()  # the MILP answered
    assert np.all(a.delta_min <= r.delta_max + 1e-9) and np.all(r.delta_min <= a.delta_max + 1e-9)

# --- world C: discrete features, a tiny MLP against enumeration ----------------------------


@pytest.mark.slow
def test_mlp_bounds_bracket_enumeration():
    rng = np.random.default_rng(2)
    n = 400
    frame = pd.DataFrame({"n": rng.integers(0, 7, n), "level": rng.choice(LEVELS, n),
                          "cat": rng.choice(CATS, n), "flag": rng.integers(0, 2, n)})
    score = frame.n / 6 + frame.level.map({"low": 0, "mid": 0.4, "high": 0.8}) \
        + (frame.cat == "b") * 0.5 - frame.flag * 0.3
    frame["y"] = (score + rng.normal(0, 0.1, n) > 0.9).astype(int)
    schema = Schema([Feature("n", "integer", lower=0, upper=6),
                     Feature("level", "ordinal", categories=LEVELS, actionability="increase"),
                     Feature("cat", "categorical", categories=CATS),
                     Feature("flag", "binary", categories=(0, 1))])
    data = from_frame(frame, "y", schema=schema)
    enc = rc.data.Encoder(schema).fit(data.frame)
    X = enc.transform(data.frame)
    est = MLPClassifier((6,), max_iter=2000, random_state=0).fit(X, data.y)
    model = rc.models.wrap(est, enc)
    grid = enc.transform(pd.DataFrame(list(itertools.product(range(7), LEVELS, CATS, (0, 1))),
                                      columns=["n", "level", "cat", "flag"]))
    logits = model.logits(grid)[:, 0]
    queries = data.frame.iloc[:8]
    Q = enc.transform(queries)
    for norm in ("l1", "l0"):
        res = MACE(model, norm=norm, time_limit=GUARD_S, backend="smt").explain(queries)
        for i, label in enumerate(queries.index):
            if res.status[label] == "already_target":
                continue
            t = int(res.target_class[label])
            ok = (logits >= 1e-6) if t == 1 else (logits <= -1e-6)
            ok &= np.all(grid[:, enc.increasing_mask_] >= Q[i, enc.increasing_mask_], axis=1)
            if not ok.any():
                assert res.status[label] == "infeasible"
                continue
            opt = _reference_distance(enc, Q[i], grid[ok], norm).min()
            assert res.status[label] == "found", res.messages[label]
            lo, hi = res.certificates.loc[label, ["delta_min", "delta_max"]]
            assert lo <= opt + 1e-12 <= hi + 2e-12 and hi - lo <= EPS


def test_timeout_reports_bounds_not_a_claim(mixed):
    data, models = mixed
    res = MACE(models["forest"], time_limit=1e-4, backend="smt").explain(data.frame.iloc[:5])
    active = res.status != "already_target"
    assert (res.status[active] == "timeout").all()
    assert (res.certificates.loc[active, "delta_min"] == 0.0).all()


# --- bad input ---------------------------------------------------------------------------------


def test_unsupported_models_are_named(mixed):
    data, models = mixed
    enc = models["tree"].encoder
    X = enc.transform(data.frame)
    gb = GradientBoostingClassifier(n_estimators=3).fit(X, data.y)
    with pytest.raises(UnsupportedModelError, match="GradientBoostingClassifier"):
        MACE(rc.models.wrap(gb, enc), backend="smt")

    class Opaque(rc.models.Model):
        def __init__(self, encoder):
            self.encoder = encoder

        def logits(self, X):
            return np.zeros((len(self.encode(X)), 1))

    with pytest.raises(UnsupportedModelError, match="Opaque"):
        MACE(Opaque(enc), backend="smt")


@pytest.mark.parametrize("eps", [0, -1e-3, float("nan"), 2.0, "x"])
def test_bad_epsilon(mixed, eps):
    with pytest.raises(ValidationError, match="epsilon"):
        MACE(mixed[1]["tree"], epsilon=eps, backend="smt")


@pytest.mark.parametrize("norm", ["l2", "cosine", {"l1": 0.7}, {"l3": 1.0}, {"l1": -1, "l0": 2}])
def test_bad_norm(mixed, norm):
    with pytest.raises(ValidationError, match="norm"):
        MACE(mixed[1]["tree"], norm=norm, backend="smt")


def test_bad_actionability_and_backend(mixed):
    tree = mixed[1]["tree"]
    with pytest.raises(ValidationError, match="nope"):
        MACE(tree, actionability={"nope": "immutable"}, backend="smt")
    with pytest.raises(ValidationError, match="categorical"):
        MACE(tree, actionability={"cat": "increase"}, backend="smt")
    with pytest.raises(ValidationError, match="backend"):
        MACE(tree, backend="cvc5")


def test_params_round_trip(mixed):
    tree = mixed[1]["tree"]
    ex = MACE(tree, norm={"l1": 0.5, "l0": 0.5}, epsilon=1e-4, n_counterfactuals=2,
              actionability={"c1": "increase"}, time_limit=5, backend="smt")
    again = MACE(tree, **ex.get_params())
    assert again.get_params() == ex.get_params()


def test_built_from_the_registry(mixed):
    data, models = mixed
    ex = rc.methods.build_explainer("mace", models["tree"], None, norm={"l1": 1.0}, epsilon=0.01)
    assert isinstance(ex, MACE)
    res = ex.explain(data.frame.iloc[:4])
    assert res.status.isin(["found", "already_target"]).all()


# --- MO: the minimum observable under MACE's distance ------------------------------------------


def test_minimum_observable_is_the_nearest_reachable_training_point(mixed):
    """MO against a plain scan with the reference distance (not the code under test)."""
    data, models = mixed
    model = models["forest"]
    train = data.subset(np.arange(200))
    queries = data.frame.iloc[200:230]
    enc = model.encoder
    Xtr = enc.transform(train.frame)
    pred = model.predict(Xtr)
    Q = enc.transform(queries)
    for norm in ("l0", "l1", "linf"):
        res = rc.methods.MinimumObservable(model, train, norm=norm).explain(queries)
        n_found = 0
        for i, label in enumerate(queries.index):
            if res.status[label] == "already_target":
                continue
            t = int(res.target_class[label])
            ok = (pred == t) & _reachable(enc, Xtr, Q[i])
            if not ok.any():
                assert res.status[label] == "infeasible"
                continue
            assert res.status[label] == "found"
            n_found += 1
            best = _reference_distance(enc, Q[i], Xtr[ok], norm).min()
            assert res.certificates.loc[label, "distance"] == pytest.approx(best, abs=1e-12)
            cf = res.counterfactuals_encoded[(res.counterfactuals["query_id"] == label).to_numpy()][0]
            assert _reference_distance(enc, Q[i], cf, norm)[0] == pytest.approx(best, abs=1e-12)
            _check_plausible_and_valid(model, Q[i], cf, t)
            # the CE is a training row
            assert np.any(np.all(Xtr == cf[None], axis=1))
        assert n_found >= 5


def test_minimum_observable_honours_actionability_overrides(mixed):
    data, models = mixed
    model = models["tree"]
    train = data.subset(np.arange(200))
    queries = data.frame.iloc[200:230]
    res = rc.methods.MinimumObservable(model, train, actionability={"level": "immutable"}
                                       ).explain(queries)
    found = res.counterfactuals.merge(queries, left_on="query_id", right_index=True,
                                      suffixes=("", "_q"))
    assert len(found) >= 5 and (found["level"] == found["level_q"]).all()
    with pytest.raises(ValidationError, match="categorical"):
        rc.methods.MinimumObservable(model, train, actionability={"cat": "increase"})
    with pytest.raises(ValidationError, match="training data"):
        rc.methods.MinimumObservable(model)
    assert isinstance(rc.methods.build_explainer("mo", model, train), rc.methods.MinimumObservable)


def test_milp_backend_resolves_with_a_wider_margin_when_the_forward_pass_disagrees(
        continuous_lr, monkeypatch):
    """The solver's tolerances can leave a big-M network CE on the wrong side of a 1e-6
    margin (seen on the adult MLP, ℓ∞): the backend re-solves with a 100× margin instead of
    returning a CE that a plain predict rejects."""
    import dataclasses

    from robustce.methods.milp_nearest import MILPNearest

    data, model = continuous_lr
    real = MILPNearest._nearest
    taus: list[float] = []

    def flaky(self, x, target, tau, time_limit):
        taus.append(tau)
        r = real(self, x, target, tau, time_limit)
        if len(taus) == 1 and r.cf is not None:  # first answer: the query itself (wrong side)
            return dataclasses.replace(r, cf=x.copy())
        return r

    monkeypatch.setattr(MILPNearest, "_nearest", flaky)
    queries = data.frame.iloc[:12]
    need = MACE(model, backend="smt").explain(queries).status != "already_target"
    label = need[need].index[0]
    res = MACE(model, backend="milp").explain(queries.loc[[label]])
    assert res.status[label] == "found"
    assert taus[1] == pytest.approx(100 * taus[0])
    cf = res.counterfactuals_encoded[0]
    assert model.predict(cf[None])[0] == res.target_class[label]
    lo, hi = res.certificates.loc[label, ["delta_min", "delta_max"]]
    assert lo <= hi <= lo + EPS


# --- the MILP backend and hint for trees and forests (solvers/tree_encoding.py) -----------------


@pytest.fixture(scope="module")
def mixed_more(mixed):
    """World A with a 4-tree forest (even: exact vote ties, which class 0 wins) and a
    10-tree forest of full depth."""
    data, models = mixed
    enc = models["tree"].encoder
    X = enc.transform(data.frame)
    out = dict(models)
    out["forest4"] = rc.models.wrap(RandomForestClassifier(n_estimators=4, max_depth=3,
                                                           random_state=1).fit(X, data.y), enc)
    out["forest10"] = rc.models.wrap(RandomForestClassifier(n_estimators=10, random_state=0)
                                     .fit(X, data.y), enc)
    return data, out


def _cf_of(res, label) -> np.ndarray:
    return res.counterfactuals_encoded[(res.counterfactuals["query_id"] == label).to_numpy()][0]


@pytest.mark.parametrize("kind", ["tree", "forest", "forest4"])
@pytest.mark.parametrize("norm", NORMS, ids=["l1", "l0", "linf", "mixed"])
@pytest.mark.parametrize("with_data", [False, True], ids=["one-milp", "staged"])
def test_milp_backend_trees_match_brute_force(mixed_more, kind, norm, with_data):
    """backend="milp" on trees and forests: δ_min <= brute-force optimum <= δ_max <= δ_min + ε
    (grid of every candidate optimum, sklearn predict), the CE valid and plausible — with one
    MILP over the box (no data) and with the staged radii from the MO seed (data)."""
    data, models = mixed_more
    model = models[kind]
    queries = data.frame.iloc[:12]
    res = MACE(model, data if with_data else None, norm=norm, epsilon=EPS, backend="milp",
               time_limit=GUARD_S).explain(queries)
    assert _check_against_brute_force(model, queries, res, norm, slack=1e-9) >= 3


@pytest.mark.parametrize("norm", [pytest.param("l1", marks=pytest.mark.slow), "l0",
                                  pytest.param("linf", marks=pytest.mark.slow)])
def test_milp_backend_agrees_with_smt_on_forests(mixed_more, norm):
    """A 10-tree forest of full depth: both backends find every CE, their distances agree
    within ε and each lower bound lies below the other's CE."""
    data, models = mixed_more
    model = models["forest10"]
    queries = data.frame.iloc[:12]
    a = MACE(model, data, norm=norm, epsilon=EPS, backend="smt").explain(queries)
    b = MACE(model, data, norm=norm, epsilon=EPS, backend="milp").explain(queries)
    assert (a.status == b.status).all(), (a.status, b.status, b.messages)
    found = a.status == "found"
    assert found.sum() >= 3
    ca, cb = a.certificates[found], b.certificates[found]
    assert (np.abs(ca["delta_max"] - cb["delta_max"]) <= EPS + 1e-9).all()
    assert (cb["delta_min"] <= ca["delta_max"] + 1e-9).all()
    assert (ca["delta_min"] <= cb["delta_max"] + 1e-9).all()
    assert (cb["sat_calls"] == 0).all()
    Q = model.encoder.transform(queries)
    for i, label in enumerate(queries.index):
        if found[label]:
            _check_plausible_and_valid(model, Q[i], _cf_of(b, label), int(b.target_class[label]))


def test_milp_backend_on_trees_honours_actionability_overrides(mixed_more):
    """An override (c1 immutable, as the no-age rows of Table 4) holds in every MILP CE, and
    the optimum matches the SMT backend's under the same override."""
    data, models = mixed_more
    model = models["forest"]
    queries = data.frame.iloc[:12]
    acts = {"c1": "immutable"}
    a = MACE(model, data, norm="l1", actionability=acts, backend="smt").explain(queries)
    b = MACE(model, data, norm="l1", actionability=acts, backend="milp").explain(queries)
    assert (a.status == b.status).all()
    Q = model.encoder.transform(queries)
    found = a.status == "found"
    assert found.sum() >= 3
    for i, label in enumerate(queries.index):
        if found[label]:  # model space (the raw round trip of 0.41 is 0.41000000000000003)
            assert _cf_of(b, label)[0] == Q[i, 0]
    assert (np.abs(a.certificates.loc[found, "delta_max"]
                   - b.certificates.loc[found, "delta_max"]) <= EPS + 1e-9).all()


@pytest.mark.parametrize("norm", [pytest.param("l1", marks=pytest.mark.slow),
                                  pytest.param("linf", marks=pytest.mark.slow), "l0"])
def test_milp_hint_on_forests_keeps_the_smt_certificate(mixed_more, norm):
    """hint="milp" on a forest: the distance matches plain SMT within ε, z3 still proves the
    lower bound (at least one SAT call per query), with fewer SAT calls overall."""
    data, models = mixed_more
    model = models["forest10"]
    queries = data.frame.iloc[:12]
    plain = MACE(model, data, norm=norm, epsilon=EPS, backend="smt").explain(queries)
    hinted = MACE(model, data, norm=norm, epsilon=EPS, hint="milp", backend="smt").explain(queries)
    assert (plain.status == hinted.status).all()
    found = plain.status == "found"
    assert found.sum() >= 3
    a, b = plain.certificates[found], hinted.certificates[found]
    assert (np.abs(a["delta_max"] - b["delta_max"]) <= EPS + 1e-9).all()
    assert (b["delta_max"] - b["delta_min"] <= EPS).all()
    assert (b["sat_calls"] >= 1).all()
    assert b["sat_calls"].sum() < a["sat_calls"].sum()
    Q = model.encoder.transform(queries)
    for i, label in enumerate(queries.index):
        if found[label]:
            _check_plausible_and_valid(model, Q[i], _cf_of(hinted, label),
                                       int(hinted.target_class[label]))


def test_milp_backend_survives_the_highs_presolve_bug():
    """HiGHS 1.16's presolve called this feasible MILP (a 30-tree forest, α = β = 1/2, the
    stage at radius 0.115) infeasible, so the backend reported the MO point (0.115) as
    optimal where a CE at 0.0972 exists; the stages run without presolve."""
    data = from_frame(_mixed_frame(300, 0), "y", schema=_mixed_schema())
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    X = enc.transform(data.frame)
    model = rc.models.wrap(RandomForestClassifier(n_estimators=30, random_state=0)
                           .fit(X, data.y), enc)
    query = data.frame.loc[[14]]
    norm = {"l1": 0.5, "linf": 0.5}
    smt_res = MACE(model, data, norm=norm, backend="smt").explain(query)
    milp_res = MACE(model, data, norm=norm, backend="milp").explain(query)
    assert smt_res.status[14] == milp_res.status[14] == "found"
    s_lo, s_hi = smt_res.certificates.loc[14, ["delta_min", "delta_max"]]
    m_lo, m_hi = milp_res.certificates.loc[14, ["delta_min", "delta_max"]]
    assert s_hi == pytest.approx(0.0972, abs=1e-4)
    assert m_lo <= s_hi + 1e-9 and abs(m_hi - s_hi) <= EPS


def test_milp_backend_on_a_three_class_forest():
    """Three classes: every rival gets its own vote row (np.argmax: earlier classes win ties);
    the MILP optimum for each target class matches brute force."""
    rng = np.random.default_rng(5)
    frame = _mixed_frame(300, 3).drop(columns="y")
    score = frame.c1 / 10 + frame.n / 6 + (frame.cat == "b") * 0.5 + rng.normal(0, 0.1, 300)
    frame["y"] = np.digitize(score, [0.6, 1.1])
    data = from_frame(frame, "y", schema=_mixed_schema())
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    X = enc.transform(data.frame)
    model = rc.models.wrap(RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0)
                           .fit(X, data.y), enc)
    queries = data.frame.iloc[:6]
    checked = 0
    for target in range(3):
        res = MACE(model, data, norm="l1", backend="milp", target_class=target).explain(queries)
        checked += _check_against_brute_force(model, queries, res, "l1", slack=1e-9)
    assert checked >= 6


def test_grid_kmax_is_the_last_grid_step_sent_left():
    """grid_kmax against a scan of k/steps <= t in float64 (thresholds on, just off and
    between grid points, outside [0, 1])."""
    from robustce.solvers.tree_encoding import grid_kmax

    rng = np.random.default_rng(0)
    for steps in (0, 1, 3, 7, 73, 99999, 1478115):
        grid = np.arange(steps + 1) / max(steps, 1) if steps else np.zeros(1)
        on = grid[rng.choice(len(grid), size=min(len(grid), 300), replace=False)]
        t = np.concatenate([on, np.nextafter(on, -np.inf), np.nextafter(on, np.inf),
                            rng.uniform(-0.2, 1.2, 50), [-1.0, 2.0, np.inf, -np.inf]])
        expect = np.searchsorted(grid, t, side="right") - 1  # last grid value <= t
        np.testing.assert_array_equal(grid_kmax(np.full(len(t), steps), t), expect)


def test_tree_milp_stage_timeouts_are_honest(mixed_more, monkeypatch):
    """A stage that hits its time limit without a CE proves nothing: the MILP backend then
    reports a timeout with the bound proven so far (the MO point as the best CE), while the
    hint skips the stage and goes on to a larger ball (z3 still proves the bound)."""
    from robustce.methods.mace_milp import _Stage, _TreeMILP
    from robustce.solvers.milp import SolveResult, SolveStatus

    data, models = mixed_more
    model = models["forest10"]
    queries = data.frame.iloc[:12]
    real = _TreeMILP._stage
    calls: list[float | None] = []

    def stalls_first(self, x, target, tau, delta, box, time_limit, floor=0.0):
        calls.append(delta)
        if len(calls) == 1:
            return _Stage(False, SolveResult(SolveStatus.TIME_LIMIT, time=0.0), None)
        return real(self, x, target, tau, delta, box, time_limit, floor)

    plain = MACE(model, data, norm="l1", backend="milp").explain(queries)
    label = next(lab for lab in queries.index
                 if plain.status[lab] == "found" and plain.certificates.loc[lab, "delta_min"] > 0)
    monkeypatch.setattr(_TreeMILP, "_stage", stalls_first)
    milp = MACE(model, data, norm="l1", backend="milp").explain(queries.loc[[label]])
    assert milp.status[label] == "timeout" and len(calls) == 1
    assert milp.certificates.loc[label, "delta_min"] == 0.0
    calls.clear()
    hinted = MACE(model, data, norm="l1", hint="milp", backend="smt").explain(queries.loc[[label]])
    assert hinted.status[label] == "found" and len(calls) > 1
    assert abs(hinted.certificates.loc[label, "delta_max"]
               - plain.certificates.loc[label, "delta_max"]) <= EPS + 1e-9
