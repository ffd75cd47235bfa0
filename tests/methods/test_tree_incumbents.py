"""The incumbents of MILPNearest's tree MILP (issue 32's speed work): single-feature moves at
the ensemble's split bounds, the feasible box they live in (:meth:`FeasibleSet.bounds`, the
one actionability rule), and the last stage that certifies an incumbent within the MIP gap.

The moves are checked against a dense scan of each feature (no one-feature change beats the
best valid move), the certificate against brute force over leaf boxes
(``test_milp_nearest_trees._brute_force``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.methods import MACE, MILPNearest
from robustce.methods.feasible import FeasibleSet
from robustce.methods.minimum_observable import reachable
from robustce.solvers.tree_encoding import pull_towards_query, single_feature_moves

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def mixed():
    """A forest on two continuous columns (one increase-only), an integer, a 3-level
    categorical and an immutable binary."""
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({
        "a": rng.uniform(0, 10, n), "b": rng.uniform(0, 1, n),
        "k": rng.integers(0, 6, n), "c": rng.choice(["x", "y", "z"], n),
        "s": rng.integers(0, 2, n),
    })
    score = df.a / 10 + df.b + 0.1 * df.k + (df.c == "z") * 0.4 + 0.2 * df.s
    df["y"] = (score + rng.normal(0, 0.1, n) > 1.2).astype(int)
    schema = Schema([Feature("a", "continuous", lower=0.0, upper=10.0),
                     Feature("b", "continuous", lower=0.0, upper=1.0, actionability="increase"),
                     Feature("k", "integer", lower=0, upper=5),
                     Feature("c", "categorical", categories=("x", "y", "z")),
                     Feature("s", "binary", actionability="immutable")])
    data = from_frame(df, "y", schema=schema)
    enc = rc.data.Encoder(schema).fit(data.frame)
    forest = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
    forest.fit(enc.transform(data.frame), data.y)
    model = rc.models.wrap(forest, enc)
    return data, model


def test_bounds_fix_immutables_and_bound_one_sided_columns(mixed):
    data, model = mixed
    enc = model.encoder
    X = enc.transform(data.frame.iloc[:20])
    lo, hi = FeasibleSet(enc).bounds(X)
    dlo, dhi = enc.domain(X)
    assert (lo >= dlo).all() and (hi <= dhi).all() and (lo <= hi).all()
    imm, inc = enc.immutable_mask_, enc.increasing_mask_
    np.testing.assert_array_equal(lo[:, imm], X[:, imm])
    np.testing.assert_array_equal(hi[:, imm], X[:, imm])
    np.testing.assert_array_equal(lo[:, inc], X[:, inc])
    free = ~imm & ~inc
    np.testing.assert_array_equal(lo[:, free], dlo[:, free])
    # one query (1-D) gives that query's row
    lo0, hi0 = FeasibleSet(enc).bounds(X[3])
    np.testing.assert_array_equal(lo0, lo[3])
    np.testing.assert_array_equal(hi0, hi[3])


def test_moves_change_one_feature_inside_the_box(mixed):
    data, model = mixed
    ex = MILPNearest(model, data, target_class=1)
    enc = model.encoder
    owner = enc.feature_of_column_
    for q in enc.transform(data.frame[model.predict(data.frame) == 0].iloc[:5]):
        lo, hi = FeasibleSet(enc).bounds(q)
        P = single_feature_moves(ex._ensemble_, enc, q, lo, hi)
        assert len(P)
        assert ((P >= lo) & (P <= hi)).all()
        changed = P != q
        per_feature = np.zeros((len(P), len(enc.blocks_)), dtype=bool)
        for j in range(changed.shape[1]):
            per_feature[:, owner[j]] |= changed[:, j]
        assert (per_feature.sum(axis=1) == 1).all()
        # valid encodings: projecting changes nothing
        np.testing.assert_array_equal(enc.project(P, lo, hi), P)
        # the immutable binary never moves
        s = enc.block("s").start
        assert (P[:, s] == q[s]).all()


def test_no_one_feature_change_beats_the_best_valid_move(mixed):
    """Scan each continuous column on a dense grid and each integer / category level: the
    nearest valid point found that way is never nearer than the best valid move."""
    data, model = mixed
    ex = MILPNearest(model, data, target_class=1)
    enc = model.encoder
    dist = rc.distance.Distance("l1", space="raw")
    grid = np.linspace(0.0, 1.0, 4001)
    checked = 0
    for q in enc.transform(data.frame[model.predict(data.frame) == 0].iloc[:12]):
        lo, hi = FeasibleSet(enc).bounds(q)
        P = single_feature_moves(ex._ensemble_, enc, q, lo, hi)
        ok = model.predict(P) == 1
        best = dist.rowwise(q, P[ok], enc).min() if ok.any() else np.inf
        scans = []
        for name in ("a", "b", "k"):
            j = enc.block(name).start
            vals = grid[(grid >= lo[j]) & (grid <= hi[j])]
            S = np.repeat(q[None], len(vals), axis=0)
            S[:, j] = vals
            scans.append(enc.project(S, lo, hi))
        c = enc.block("c")
        S = np.repeat(q[None], 3, axis=0)
        S[:, c.slice] = np.eye(3)
        scans.append(S)
        S = np.vstack(scans)
        valid = model.predict(S) == 1
        if valid.any():
            scanned = dist.rowwise(q, S[valid], enc).min()
            assert best <= scanned + 1e-9
            checked += 1
    assert checked >= 3


def test_an_optimal_incumbent_is_certified_within_the_gap(mixed):
    """When the best incumbent is the optimum (here: the certificate's cut-off stage), the
    certificate says so honestly: bound = distance · (1 − mip_gap), gap = mip_gap, status
    ``cutoff``; the CE is the incumbent, valid, and a fresh solve without warm start (no
    incumbent, one MILP over the whole box) finds the same distance."""
    data, model = mixed
    queries = data.frame[model.predict(data.frame) == 0].iloc[:10]
    warm = MILPNearest(model, data, target_class=1, time_limit=30).explain(queries)
    cold = MILPNearest(model, data, target_class=1, warm_start=False,
                       time_limit=30).explain(queries)
    assert (warm.status == "found").all() and (cold.status == "found").all()
    np.testing.assert_allclose(warm.certificates["distance"], cold.certificates["distance"],
                               rtol=2e-4, atol=1e-9)
    cut = warm.certificates["solver_status"] == "cutoff"
    assert cut.any()
    c = warm.certificates[cut]
    assert c["optimal"].all()
    np.testing.assert_allclose(c["bound"], c["distance"] * (1 - 1e-4), rtol=1e-9)
    np.testing.assert_allclose(c["gap"], 1e-4)
    cfs = warm.counterfactuals[warm.feature_names]
    assert (model.predict(cfs) == 1).all()


def test_pulling_towards_the_query_keeps_points_valid_and_never_costlier(mixed):
    """Feature tweaking's valid candidates, pulled back: each result is valid, every column
    at least as close to the query as its start, and no costlier; some get cheaper."""
    data, model = mixed
    ex = MILPNearest(model, data, target_class=1)
    enc = model.encoder
    improved = 0
    for q in enc.transform(data.frame[model.predict(data.frame) == 0].iloc[:8]):
        C = ex._tweaker().candidates(q, 1)
        C = C[ex._valid_mask(q, 1, 1e-6, C)]
        if not len(C):
            continue
        X = C[np.argsort(ex._objective_values(q, C))[:4]]
        Y = pull_towards_query(ex._ensemble_, enc, q, X, *FeasibleSet(enc).bounds(q),
                               valid=lambda P, q=q: ex._valid_mask(q, 1, 1e-6, P),
                               cost=lambda P, q=q: ex._objective_values(q, P))
        assert model.predict(Y).tolist() == [1] * len(Y)
        assert (np.abs(Y - q) <= np.abs(X - q) + 1e-12).all()
        cx, cy = ex._objective_values(q, X), ex._objective_values(q, Y)
        assert (cy <= cx + 1e-12).all()
        improved += int((cy < cx - 1e-9).sum())
    assert improved > 0


def test_mace_tree_milp_seed_is_valid_and_no_farther_than_the_mo_point(mixed):
    """MACE's tree-MILP seed: a CE of the model, reachable under MACE's actionability, never
    farther than the MO training point (and nearer on some queries); MACE's answers stay
    within ε of MILPNearest's certified optimum (the seed moves only the radii)."""
    data, model = mixed
    enc = model.encoder
    queries = data.frame[model.predict(data.frame) == 0].iloc[:8]
    mace = MACE(model, data, norm="l1", epsilon=1e-3, backend="milp", target_class=1,
                time_limit=30)
    nearer = 0
    for q in enc.transform(queries):
        seed = mace._milp._seed(q, 1, mace._smt_input().box(q, mace._acts))
        assert seed is not None
        assert model.predict(seed[None])[0] == 1
        assert reachable(enc, q, seed[None], mace._acts)[0]
        mo = mace._seed(q, 1, [])
        if mo is not None:
            assert mace._distance(q, seed) <= mace._distance(q, mo) + 1e-12
            nearer += int(mace._distance(q, seed) < mace._distance(q, mo) - 1e-9)
    assert nearer > 0
    res = mace.explain(queries)
    opt = MILPNearest(model, data, target_class=1, time_limit=30).explain(queries)
    assert (res.status == "found").all() and (opt.status == "found").all()
    J = len(enc.blocks_)
    d_mace = res.certificates["delta_max"].to_numpy() * J
    d_opt = opt.certificates["distance"].to_numpy()
    assert (d_mace >= d_opt * (1 - 1e-4) - 1e-9).all()
    assert (d_mace <= d_opt + 1e-3 * J + 1e-9).all()
