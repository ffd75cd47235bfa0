"""The fast MILPNearest path (incumbent cutoff, incumbent box, tuned HiGHS) returns the same
optimum as the plain solve (no incumbent, interval bounds over the whole actionable domain, no LP bound
tightening)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.methods.milp_nearest import MILPNearest
from robustce.nearest import incumbent_box

PLAIN = {"warm_start": False, "box_from_incumbent": False, "bound_tightening": "interval"}


def _mixed(seed: int, n: int = 300):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "a": rng.uniform(size=n), "b": rng.uniform(size=n), "c": rng.uniform(size=n),
        "k": rng.integers(0, 4, size=n), "cat": rng.choice(["u", "v", "w"], size=n),
        "f": rng.integers(0, 2, size=n),
    })
    score = (frame["a"] - frame["b"] + 0.5 * frame["c"] + 0.2 * frame["k"]
             + (frame["cat"] == "v") * 0.4 - 0.3 * frame["f"] + rng.normal(0, 0.2, size=n))
    frame["y"] = (score > score.median()).astype(int)
    schema = Schema([
        Feature("a", "continuous", lower=0.0, upper=1.0),
        Feature("b", "continuous", lower=0.0, upper=1.0, actionability="decrease"),
        Feature("c", "continuous", lower=0.0, upper=1.0),
        Feature("k", "integer", lower=0, upper=3, actionability="increase"),
        Feature("cat", "categorical", categories=("u", "v", "w")),
        Feature("f", "binary", categories=(0, 1)),
    ])
    return from_frame(frame, "y", schema)


@pytest.mark.parametrize("norm", ["l1", "linf", "l0"])
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_fast_path_same_optimum_as_plain_solve(norm, seed):
    data = _mixed(seed)
    model = rc.models.MLP((8, 6), epochs=15, lr=0.01, random_state=seed).fit(data)
    queries = data.frame[model.predict(data.frame) == 0].iloc[:4]
    fast = MILPNearest(model, data, norm=norm, time_limit=30).explain(queries)
    plain = MILPNearest(model, data, norm=norm, time_limit=30, **PLAIN).explain(queries)
    assert list(fast.status) == list(plain.status)
    found = (fast.status == "found").to_numpy()
    assert found.any()
    cf, cp = fast.certificates[found], plain.certificates[found]
    assert cf["optimal"].astype(bool).all() and cp["optimal"].astype(bool).all()
    d_f, d_p = cf["distance"].to_numpy(float), cp["distance"].to_numpy(float)
    # the objectives of both are optimal within the MIP gap; l0/linf carry a 1e-3 L1 tie-break
    tol = 1e-4 * np.maximum(d_f, d_p) + (2e-3 * 4 if norm != "l1" else 1e-6)
    assert np.all(np.abs(d_f - d_p) <= tol), (d_f, d_p)


def test_incumbent_is_valid_actionable_and_no_better_than_the_optimum():
    data = _mixed(2)
    model = rc.models.MLP((8,), epochs=15, lr=0.01, random_state=0).fit(data)
    ex = MILPNearest(model, data, time_limit=30)
    X = ex.encoder.transform(data.frame[model.predict(data.frame) == 0].iloc[:5])
    for q in X:
        inc = ex.incumbent(q, 1, ex.tau)
        assert inc is not None
        assert model.network().margin(inc.x[None], 1)[0] >= ex.tau
        assert ex.actionable(q, inc.x[None])[0]
        opt = ex._nearest(q, 1, ex.tau, 30)
        assert opt.optimal and opt.objective <= inc.objective + 1e-6


def test_incumbent_box_holds_every_point_within_the_radius():
    rng = np.random.default_rng(0)
    q = rng.uniform(size=6)
    w = np.array([1.0, 0.5, 0.5, 2.0, 0.0, 1.0])
    lo, hi = incumbent_box(q, np.zeros(6), np.ones(6), w, 0.3)
    P = rng.uniform(size=(20000, 6))
    inside_ball = (np.abs(P - q) * w).sum(axis=1) <= 0.3  # l1 ball (and linf ⊂ box per column)
    assert inside_ball.any()
    assert np.all((P[inside_ball] >= lo - 1e-12) & (P[inside_ball] <= hi + 1e-12))
    assert lo[4] == 0.0 and hi[4] == 1.0  # a zero-weight column is not bounded
    kind = np.array(["binary", "continuous", "continuous", "binary", "continuous", "grid"], dtype=object)
    steps = np.array([0, 0, 0, 0, 0, 4])
    lo2, hi2 = incumbent_box(q, np.zeros(6), np.ones(6), w, 0.3, kind, steps)
    assert np.all(lo2[[0, 3]] % 1 == 0) and np.all(hi2[[0, 3]] % 1 == 0)
    assert np.allclose(lo2[5] * 4, np.round(lo2[5] * 4)) and np.allclose(hi2[5] * 4, np.round(hi2[5] * 4))


def test_parallel_chunks_give_the_sequential_answers():
    data = _mixed(0)
    model = rc.models.MLP((8, 6), epochs=15, lr=0.01, random_state=0).fit(data)
    queries = data.frame[model.predict(data.frame) == 0].iloc[:5]
    seq = MILPNearest(model, data, time_limit=30).explain(queries)
    par = MILPNearest(model, data, time_limit=30, n_jobs=2).explain(queries)
    assert list(seq.status) == list(par.status)
    assert np.allclose(seq.certificates["distance"].astype(float),
                       par.certificates["distance"].astype(float), atol=1e-6)


class _BoxOnly(MILPNearest):
    """The fast path without the L1-ball bounds (interval bounds over the incumbent box)."""

    _ball_bounds = False


def _continuous(seed: int, d: int = 12, n: int = 400):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(d)])
    score = X @ rng.normal(size=d) + 0.3 * np.sin(4 * X[:, 0])
    frame["y"] = (score > np.median(score)).astype(int)
    schema = Schema([Feature(f"x{i}", "continuous", lower=0.0, upper=1.0) for i in range(d)])
    return from_frame(frame, "y", schema)


@pytest.mark.parametrize("make_data", [_continuous, _mixed])
def test_l1_ball_bounds_same_optimum_fewer_binaries(make_data):
    data = make_data(3)
    model = rc.models.MLP((16,), epochs=20, lr=0.01, random_state=0).fit(data)
    queries = data.frame[model.predict(data.frame) == 0].iloc[:5]
    ball = MILPNearest(model, data, time_limit=30)
    box = _BoxOnly(model, data, time_limit=30)
    plain = MILPNearest(model, data, time_limit=30, **PLAIN)
    r_ball, r_box, r_plain = (e.explain(queries) for e in (ball, box, plain))
    assert list(r_ball.status) == list(r_plain.status) == list(r_box.status)
    found = (r_ball.status == "found").to_numpy()
    assert found.any()
    for r in (r_ball, r_box, r_plain):
        assert r.certificates["optimal"][found].astype(bool).all()
    d_ball = r_ball.certificates["distance"][found].to_numpy(float)
    d_plain = r_plain.certificates["distance"][found].to_numpy(float)
    np.testing.assert_allclose(d_ball, d_plain, rtol=1e-4, atol=1e-6)
    assert np.all(r_ball.certificates["margin"][found].to_numpy(float) >= ball.tau - 1e-9)
    # the ball's bounds never need more binaries than the box's
    from robustce.solvers.milp import MILP
    counts = []
    for q in ball.encoder.transform(queries):
        inc = ball.incumbent(q, 1, ball.tau)
        if inc is None:
            continue
        cut = inc.objective * (1 + 1e-7) + 1e-7
        counts.append([e._encode_nearest(MILP("highs"), q, 1, e.tau, inc, cut)[1].n_binaries
                       for e in (ball, box)])
    counts = np.array(counts)
    assert len(counts) and np.all(counts[:, 0] <= counts[:, 1])
    if make_data is _continuous:  # 12 free continuous columns: the ball is much smaller
        assert counts[:, 0].sum() < counts[:, 1].sum()


def test_seeded_incumbent_is_valid_and_the_optimum_unchanged():
    """MILP-R seeds each round's incumbent with the query's earlier CEs: the seeded incumbent
    is valid and actionable at the new margin, and the optimum is the plain solve's."""
    data = _mixed(4)
    model = rc.models.MLP((8, 6), epochs=15, lr=0.01, random_state=0).fit(data)
    ex = MILPNearest(model, data, time_limit=30)
    plain = MILPNearest(model, data, time_limit=30, **PLAIN)
    X = ex.encoder.transform(data.frame[model.predict(data.frame) == 0].iloc[:4])
    net = model.network()
    n_checked = 0
    for q in X:
        first = ex._nearest(q, 1, ex.tau, 30)
        assert first.status == "found"
        tau2 = float(net.margin(first.cf[None], 1)[0]) + 0.5  # out of reach of the seed itself
        inc = ex.incumbent(q, 1, tau2, seeds=first.cf[None])
        seeded = ex._nearest(q, 1, tau2, 30, seeds=first.cf[None])
        ref = plain._nearest(q, 1, tau2, 30)
        assert seeded.status == ref.status
        if inc is not None:
            assert net.margin(inc.x[None], 1)[0] >= tau2
            assert ex.actionable(q, inc.x[None])[0]
        if ref.status == "found":
            n_checked += 1
            assert seeded.optimal and ref.optimal
            assert abs(seeded.objective - ref.objective) <= 1e-4 * ref.objective + 1e-6
    assert n_checked
