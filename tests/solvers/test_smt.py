"""z3 encodings for MACE: variables linked to the encoder, characteristic formulae that agree
with the models' own float64 predictions, exact float thresholds, a sound distance ball."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import z3
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.data import Feature, Schema
from robustce.solvers import smt
from robustce.solvers.smt import SMTInput, _grid_kmax

LEVELS = ("low", "mid", "high")
CATS = ("a", "b", "c")


def _schema() -> Schema:
    return Schema([
        Feature("c1", "continuous", lower=0.0, upper=10.0),
        Feature("c2", "continuous", lower=-5.0, upper=5.0, actionability="increase"),
        Feature("n", "integer", lower=0, upper=6),
        Feature("level", "ordinal", categories=LEVELS),
        Feature("cat", "categorical", categories=CATS),
        Feature("flag", "binary", categories=(0, 1), actionability="immutable"),
    ])


def _frame(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = pd.DataFrame({
        "c1": rng.uniform(0, 10, n).round(3), "c2": rng.uniform(-5, 5, n).round(3),
        "n": rng.integers(0, 7, n), "level": rng.choice(LEVELS, n), "cat": rng.choice(CATS, n),
        "flag": rng.integers(0, 2, n),
    })
    score = (f.c1 / 10 - f.c2 / 10 + f.n / 6 + f.level.map({"low": 0, "mid": 0.4, "high": 0.8})
             + (f.cat == "b") * 0.5 - f.flag * 0.3 + rng.normal(0, 0.15, n))
    return f, (score > 0.9).astype(int).to_numpy()


@pytest.fixture(scope="module", params=["thermometer", "integer"])
def world(request):
    frame, y = _frame(400, 0)
    enc = rc.data.Encoder(_schema(), ordinal_encoding=request.param).fit(frame)
    return enc, enc.transform(frame), y


def _fix(inp: SMTInput, x: np.ndarray) -> list[z3.BoolRef]:
    return [inp.equal(i, v) for i, v in enumerate(inp.values(x))]


def _holds(inp: SMTInput, x: np.ndarray, formula) -> bool:
    return _holds_all(inp, x[None], formula)[0]


def _holds_all(inp: SMTInput, X: np.ndarray, formula) -> list[bool]:
    """Whether the formula holds at each (fixed) row of X (a fresh solver per row)."""
    out = []
    for x in X:
        s = z3.Solver()
        s.add(*inp.domain, *_fix(inp, x))
        s.add(*(formula if isinstance(formula, list) else [formula]))
        r = s.check()
        assert r != z3.unknown
        out.append(r == z3.sat)
    return out


def _value_at(inp: SMTInput, x: np.ndarray, formula: z3.BoolRef) -> bool:
    """Evaluate a formula over the input variables only (no auxiliaries) at row x."""
    subs = [(v.var, inp._const(v, val)) for v, val in zip(inp.vars, inp.values(x), strict=True)]
    out = z3.simplify(z3.substitute(formula, *subs))
    assert z3.is_true(out) or z3.is_false(out)
    return z3.is_true(out)


def test_variables_decode_to_the_encoders_rows(world):
    enc, X, _ = world
    inp = SMTInput(enc)
    kinds = {v.block.name: v.sort for v in inp.vars}
    assert kinds["c1"] == "real" and kinds["n"] == "grid" and kinds["flag"] == "bool"
    assert kinds["cat"] == "level"
    for x in X[:20]:
        s = z3.Solver()
        s.add(*inp.domain, *_fix(inp, x))
        assert s.check() == z3.sat
        m = s.model()
        np.testing.assert_array_equal(inp.decode(m), x)
        cols = [m.eval(inp.column(j), model_completion=True) for j in range(len(x))]
        np.testing.assert_allclose([float(c.as_fraction()) for c in cols], x, rtol=0, atol=1e-15)


def test_domain_admits_only_valid_encodings(world):
    enc, _, _ = world
    inp = SMTInput(enc)
    s = z3.Solver()
    s.add(*inp.domain)
    for _ in range(25):
        assert s.check() == z3.sat
        x = inp.decode(s.model())
        np.testing.assert_array_equal(enc.project(x[None])[0], x)
        s.add(z3.Not(z3.And(_fix(inp, x))))


def test_grid_threshold_is_exact_for_float64():
    for steps in (1, 3, 7, 10, 99999, 1477718):
        grid = np.arange(steps + 1, dtype=np.float64) / steps
        for t in np.concatenate([grid[: min(50, len(grid))], grid[-5:], [-0.1, 0.5, 1.2]]):
            for tt in (t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf)):
                expect = int(np.flatnonzero(grid <= tt).max()) if (grid <= tt).any() else -1
                assert _grid_kmax(steps, float(tt)) == expect


def test_continuous_threshold_splits_clear_the_split_margin(world):
    """A real column goes left iff x <= t − m and right iff x >= t + m (m the split margin,
    so a decoded raw row keeps its side); the points between satisfy neither."""
    enc, X, _ = world
    inp = SMTInput(enc)
    t = 0.3
    m = float(inp.margins(np.array([0]), np.array([t]))[0])
    lower, upper = enc.blocks_[0].feature.lower, enc.blocks_[0].feature.upper
    assert m == pytest.approx(2.0 ** -40 * max(abs(lower), abs(upper)) / (upper - lower))
    x = X[0].copy()
    for value, left, right in ((t - m, True, False), (np.nextafter(t - m, -np.inf), True, False),
                               (t + m, False, True), (np.nextafter(t + m, np.inf), False, True),
                               (t, False, False), (np.nextafter(t, np.inf), False, False),
                               (np.nextafter(t - m, np.inf), False, False)):
        x[0] = value
        assert _holds(inp, x, inp.le(0, t)) is left
        assert _holds(inp, x, inp.gt(0, t)) is right


def _grid_points(enc: rc.data.Encoder, X: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Random valid encodings, plus the data rows."""
    rng = np.random.default_rng(seed)
    frame, _ = _frame(n, seed + 100)
    G = enc.transform(frame)
    G[:, 0] = rng.uniform(0, 1, n)  # continuous columns anywhere
    return np.vstack([G, X[:n]])


@pytest.mark.parametrize("kind", ["tree", "forest"])
def test_tree_formulae_agree_with_sklearn(world, kind):
    enc, X, y = world
    est = (DecisionTreeClassifier(max_depth=6, random_state=0) if kind == "tree"
           else RandomForestClassifier(n_estimators=7, max_depth=4, min_samples_leaf=3, random_state=0))
    est.fit(X, y)
    model = rc.models.wrap(est, enc)
    trees = model.trees()
    inp = SMTInput(enc)
    G = _grid_points(enc, X, 20, 1)
    pred = model.predict(G)
    assert 0 < pred.mean() < 1
    for target in (0, 1):
        if kind == "tree":
            phi = smt.tree_formula(trees[0], inp, target)
            assert [_value_at(inp, x, phi) for x in G] == list(pred == target)
        else:
            phi = smt.forest_formula(trees, inp, target)
            assert _holds_all(inp, G[:20], phi) == list(pred[:20] == target)


def _sequential_leaf_paths(tree, inp, lo, hi, prune):
    """Reference for smt._leaf_paths_all: one tree, one node at a time, depth-first with the
    right branch popped first; a child's box narrowed by its test only when pruning."""
    out, todo = [], [(0, True, lo, hi)]
    while todo:
        node, cond, plo, phi = todo.pop()
        if tree.left[node] < 0:
            out.append((node, cond))
            continue
        f, t = int(tree.feature[node]), float(tree.threshold[node])
        if phi[f] <= t or plo[f] > t:
            todo.append((int(tree.left[node] if phi[f] <= t else tree.right[node]), cond, plo, phi))
            continue
        for child, pred, go_left in ((int(tree.left[node]), inp.le(f, t), True),
                                     (int(tree.right[node]), inp.gt(f, t), False)):
            if pred is False:
                continue
            clo, chi = plo, phi
            if prune is not None:
                clo, chi = plo.copy(), phi.copy()
                (chi if go_left else clo)[f] = t
                if prune(clo[None], chi[None])[0]:
                    continue
            todo.append((child, cond if pred is True else (pred if cond is True
                                                           else z3.And(cond, pred)), clo, chi))
    return out


def test_all_trees_at_once_give_the_sequential_walks_paths_and_the_routed_leaf(world):
    enc, X, y = world
    est = RandomForestClassifier(n_estimators=12, random_state=1).fit(X, y)
    model = rc.models.wrap(est, enc)
    trees = model.trees()
    inp = SMTInput(enc)
    rng = np.random.default_rng(0)
    G = _grid_points(enc, X, 30, 2)
    for x in G[:6]:
        for r in (None, 0.5, 0.2, 0.05):
            lo, hi = np.zeros(len(x)), np.ones(len(x))
            prune = None
            if r is not None:  # keep the L∞ ball of radius r around x: prune boxes missing it
                lo, hi = np.maximum(lo, x - 2 * r), np.minimum(hi, x + 2 * r)

                def prune(plo, phi, x=x, r=r):
                    return np.any((plo > x + r) | (phi < x - r), axis=1)
            got = smt._leaf_paths_all(trees, inp, lo, hi, prune)
            assert len(got) == len(trees)
            for tree, paths in zip(trees, got, strict=True):
                ref = _sequential_leaf_paths(tree, inp, lo, hi, prune)
                assert [leaf for leaf, _ in paths] == [leaf for leaf, _ in ref]
                for (_, a), (_, b) in zip(paths, ref, strict=True):
                    assert (a is True and b is True) or a.eq(b)
            # semantics: a point kept by the box and the ball reaches a listed leaf, the one
            # scikit-learn routes it to, and only that leaf's condition holds there
            pts = G[np.all((G >= lo) & (G <= hi), axis=1)]
            if r is not None:
                pts = pts[np.all(np.abs(pts - x) <= r, axis=1)]
            for p in pts[rng.permutation(len(pts))[:3]]:
                for k, (est_k, paths) in enumerate(zip(est.estimators_, got, strict=True)):
                    routed = int(est_k.apply(p[None].astype(np.float32))[0])
                    holds = [leaf for leaf, c in paths
                             if c is True or _value_at(inp, p, c)]
                    assert holds == [routed], (k, holds, routed)


def test_forest_tie_goes_to_the_first_class():
    # two one-split stumps voting opposite ways on one feature: the vote ties inside (0.3, 0.6]
    frame = pd.DataFrame({"a": np.linspace(0, 1, 11)})
    enc = rc.data.Encoder(Schema([Feature("a", "continuous", lower=0.0, upper=1.0)])).fit(frame)
    X = enc.transform(frame)
    est = RandomForestClassifier(n_estimators=2, max_depth=1, bootstrap=False, random_state=0)
    est.fit(X, (X[:, 0] > 0.45).astype(int))
    t1, t2 = est.estimators_
    t2.tree_.threshold[0] = 0.75  # tree 2 says class 1 only above 0.75
    model = rc.models.wrap(est, enc)
    inp = SMTInput(enc)
    trees = model.trees()
    for a in (0.1, 0.5, 0.9):
        x = np.array([a])
        p = int(model.predict(x[None])[0])
        assert _holds(inp, x, smt.forest_formula(trees, inp, p))
        assert not _holds(inp, x, smt.forest_formula(trees, inp, 1 - p))
    assert int(model.predict(np.array([[0.5]]))[0]) == 0  # the tie at 0.5 goes to class 0


@pytest.mark.parametrize("kind", ["lr", "mlp"])
def test_network_formula_agrees_with_the_forward_pass(world, kind):
    enc, X, y = world
    est = (LogisticRegression(max_iter=500) if kind == "lr"
           else MLPClassifier((6, 5), max_iter=600, random_state=0))
    est.fit(X, y)
    model = rc.models.wrap(est, enc)
    weights = model.network().weights
    inp = SMTInput(enc)
    G = _grid_points(enc, X, 10, 2)
    logit = model.logits(G)[:, 0]
    tau = 1e-6
    G = G[np.abs(logit) > 1e-4]
    logit = logit[np.abs(logit) > 1e-4]
    for target in (0, 1):
        wins = logit >= tau if target == 1 else logit <= -tau
        phi = smt.network_formula(weights, inp, target, tau=tau)  # unstable neurons as If
        assert _holds_all(inp, G[:3], phi) == list(wins[:3])
        for x, w in zip(G, wins, strict=True):  # every neuron stable on a point box
            phi = smt.network_formula(weights, inp, target, box=(x, x), tau=tau)
            assert _holds_all(inp, x[None], phi) == [bool(w)]


def test_ball_contains_every_point_within_the_radius(world):
    enc, X, _ = world
    inp = SMTInput(enc)
    from robustce.methods.mace import mace_distance
    G = _grid_points(enc, X, 200, 3)
    for q in X[:5]:
        delta = mace_distance(enc, q, G, "linf") * len(enc.blocks_)  # max_j δ_j per row
        for r in (0.05, 0.2, 0.6):
            lo, hi = inp.ball(q, r)
            inside = G[delta <= r]
            assert np.all(inside >= lo) and np.all(inside <= hi)


def test_actionability_box_matches_the_constraints(world):
    enc, X, _ = world
    inp = SMTInput(enc)
    q = X[3]
    lo, hi = inp.box(q)
    s = z3.Solver()
    s.add(*inp.domain, *inp.actionability(q))
    for _ in range(30):
        assert s.check() == z3.sat
        x = inp.decode(s.model())
        assert np.all(x >= lo) and np.all(x <= hi)
        assert x[enc.block("flag").start] == q[enc.block("flag").start]
        assert x[enc.block("c2").start] >= q[enc.block("c2").start]
        s.add(z3.Not(z3.And(_fix(inp, x))))


def test_check_reports_unknown_when_no_time_is_left(world):
    enc, _, _ = world
    inp = SMTInput(enc)
    s = z3.Solver()
    s.add(*inp.domain)
    assert smt.check(s, inp, timeout=0.0).status == "unknown"
    assert smt.check(s, inp, timeout=5.0).status == "sat"


def test_l1_ball_bounds_are_the_lp_optimum_and_sound():
    """Against scipy's LP over the same set (exactness), and random points of the set
    (soundness); never looser than interval arithmetic over the box."""
    from scipy.optimize import linprog

    from robustce.solvers.smt import interval_bounds, l1_ball_bounds

    rng = np.random.default_rng(0)
    d, n = 7, 5
    W, b = rng.normal(size=(n, d)), rng.normal(size=n)
    x = rng.uniform(0, 1, d)
    lo, hi = np.zeros(d), np.ones(d)
    lo[2] = hi[2] = x[2]  # an immutable column
    w = rng.uniform(0.2, 2.0, d)
    w[4] = 0.0            # a column the distance does not charge
    budget = 0.3
    zl, zu = l1_ball_bounds(W, b, x, lo, hi, w, budget)
    # LP: variables y (d) and t (d) with t >= |y - x|, Σ w t <= budget
    A = np.block([[np.eye(d), -np.eye(d)], [-np.eye(d), -np.eye(d)], [np.zeros((1, d)), w[None]]])
    ub = np.r_[x, -x, budget]
    bounds = [(lo[j], hi[j]) for j in range(d)] + [(0, None)] * d
    for i in range(n):
        top = linprog(np.r_[-W[i], np.zeros(d)], A_ub=A, b_ub=ub, bounds=bounds, method="highs")
        bot = linprog(np.r_[W[i], np.zeros(d)], A_ub=A, b_ub=ub, bounds=bounds, method="highs")
        assert zu[i] == pytest.approx(-top.fun + b[i], abs=1e-7)
        assert zl[i] == pytest.approx(bot.fun + b[i], abs=1e-7)
    # random points of the set lie inside the bounds
    for _ in range(2000):
        y = np.clip(x + rng.laplace(0, 0.05, d), lo, hi)
        if w @ np.abs(y - x) <= budget:
            z = W @ y + b
            assert np.all(z >= zl) and np.all(z <= zu)
    il, iu = interval_bounds([(W, b)], lo, hi)[0]
    assert np.all(zl >= il - 1e-9) and np.all(zu <= iu + 1e-9)
    assert np.any(zu < iu - 1e-3)  # and tighter somewhere
