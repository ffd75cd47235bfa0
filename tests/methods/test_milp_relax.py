"""MILPNearest's ``relax_first``: a first solve with the fine, wide integer grids relaxed, whose
rounded solution is returned only when it meets that solve's dual bound within the MIP gap.
Checked against brute force over a small lattice domain and against the full MILP (both
directions: the same status, the same optimum within the gap), and the returned CEs really are
valid lattice points. Also the incumbent's segment search (:meth:`MILPNearest._segment`)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.methods.milp_nearest import MILPNearest
from robustce.models.network import class_margin

MIP_GAP = 1e-4


def _grid_data(seed: int, upper: int, n: int = 400):
    """One wide integer grid ``g`` in 0..``upper``, one small one (0..5), one binary and one
    immutable integer."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "g": rng.integers(0, upper + 1, size=n), "k": rng.integers(0, 6, size=n),
        "f": rng.integers(0, 2, size=n), "age": rng.integers(18, 30, size=n),
    })
    score = (frame["g"] / upper - 0.3 * frame["k"] / 5 + 0.4 * frame["f"]
             + 0.02 * (frame["age"] - 18) + rng.normal(0, 0.2, size=n))
    frame["y"] = (score > score.median()).astype(int)
    schema = Schema([
        Feature("g", "integer", lower=0, upper=upper),
        Feature("k", "integer", lower=0, upper=5),
        Feature("f", "binary", categories=(0, 1)),
        Feature("age", "integer", lower=18, upper=29, actionability="immutable"),
    ])
    return from_frame(frame, "y", schema)


def _wide(seed: int):
    """A fine wide grid: 0..100 000, a step costs 1e-5 of the L1 distance."""
    return _grid_data(seed, 100_000)


def _coarse(seed: int):
    """A wide but coarse grid: 0..99, a step costs 0.01 of the L1 distance (far above the
    gap)."""
    return _grid_data(seed, 99)


def _lattice(q: np.ndarray) -> np.ndarray:
    """Every actionable point of :func:`_wide`'s encoded domain for query ``q`` (gain, k, f
    free; age fixed): 100 001 · 6 · 2 rows."""
    gain = np.arange(100_001) / 100_000
    ks = np.arange(6) / 5
    rows = [np.column_stack([gain, np.full(gain.size, k), np.full(gain.size, f),
                             np.full(gain.size, q[3])])
            for k, f in itertools.product(ks, (0.0, 1.0))]
    return np.vstack(rows)


def _fitted(seed: int):
    data = _wide(seed)
    model = rc.models.MLP((8, 6), epochs=20, lr=0.01, random_state=seed).fit(data)
    return data, model


def _coarse_lattice(q: np.ndarray) -> np.ndarray:
    return np.array([[h, k, f, q[3]] for h in np.arange(100) / 99 for k in np.arange(6) / 5
                     for f in (0.0, 1.0)])


@pytest.mark.parametrize("make", [pytest.param(_wide, marks=pytest.mark.slow), _coarse])
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])  # seed 1: make test-all
def test_relax_first_matches_brute_force_over_the_lattice(make, seed, monkeypatch):
    """The fine grid as the library relaxes it; the coarse grid relaxed too (the fineness
    rule switched off), so that its rounding often costs more than the gap and only the gap
    test stands between the rounded point and a wrong optimality claim."""
    import robustce.nearest.network as mn

    if make is _coarse:
        monkeypatch.setattr(mn, "_RELAX_STEP_SHARE", 1e12)
    data = make(seed)
    model = rc.models.MLP((8, 6), epochs=20, lr=0.01, random_state=seed).fit(data)
    ex = MILPNearest(model, data, time_limit=30)
    assert ex.encoder.n_features_out_ == 4
    net = model.network()
    lattice, steps = (_lattice, 100_000) if make is _wide else (_coarse_lattice, 99)
    X = ex.encoder.transform(data.frame[model.predict(data.frame) == 0].iloc[:6])
    n_relaxed = 0
    for q in X:
        P = lattice(q)
        for tau in (ex.tau, 0.3, 1.0):
            ok = class_margin(net.forward(P), 1) >= tau
            r = ex._nearest(q, 1, tau, 30)
            if not ok.any():
                assert r.status == "infeasible"
                continue
            best = float(ex._objective_values(q, P[ok]).min())
            assert r.status == "found" and r.optimal
            n_relaxed += "relaxed" in r.message
            d = float(ex._objective_values(q, r.cf[None])[0])
            # never better than the lattice optimum, and within the MIP gap of it
            assert best - 1e-9 <= d <= best * (1 + MIP_GAP) + 1e-9, (d, best, r.message)
            # a valid lattice CE: on the grid, actionable, margin reached by a forward pass
            assert np.allclose(r.cf[0] * steps, np.round(r.cf[0] * steps), atol=1e-6)
            assert np.allclose(r.cf[1] * 5, np.round(r.cf[1] * 5), atol=1e-9)
            assert r.cf[2] in (0.0, 1.0) and r.cf[3] == q[3]
            assert class_margin(net.forward(r.cf[None]), 1)[0] >= tau
    if make is _wide:
        assert n_relaxed  # the relaxation decided some of them (else this tests nothing new)


@pytest.mark.parametrize("norm", ["l1", "linf", "l0"])
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_relax_first_same_status_and_optimum_as_the_full_milp(seed, norm):
    """Both directions: the relaxation-first solve finds a CE exactly when the full MILP does,
    at the same objective within the gap (``l0`` / ``linf`` objectives carry the L1
    tie-break)."""
    data, model = _fitted(seed)
    fast = MILPNearest(model, data, norm=norm, time_limit=30)
    full = MILPNearest(model, data, norm=norm, time_limit=30, relax_first=False)
    X = fast.encoder.transform(data.frame[model.predict(data.frame) == 0].iloc[:8])
    rng = np.random.default_rng(seed)
    n_relaxed = 0
    for q in X:
        for tau in (fast.tau, float(rng.uniform(0.2, 3.0))):
            a, b = fast._nearest(q, 1, tau, 30), full._nearest(q, 1, tau, 30)
            assert a.status == b.status, (a.status, b.status, tau)
            if a.status != "found":
                continue
            n_relaxed += "relaxed" in a.message
            assert a.optimal and b.optimal
            assert abs(a.objective - b.objective) <= MIP_GAP * max(a.objective, b.objective) + 1e-9
    assert n_relaxed


def test_relax_first_leaves_coarse_grids_to_the_milp():
    """A grid whose step costs more than the gap allows is never relaxed (its rounding could
    not meet the bound): with only such grids the relaxation is not tried."""
    data, model = _fitted(0)
    ex = MILPNearest(model, data, time_limit=30, mip_gap=1e-9)  # no step is fine enough
    q = ex.encoder.transform(data.frame[model.predict(data.frame) == 0].iloc[:1])[0]
    r = ex._nearest(q, 1, ex.tau, 30)
    assert r.status == "found" and "relaxed" not in r.message


def test_segment_point_reaches_the_margin_between_query_and_step():
    data, model = _fitted(1)
    ex = MILPNearest(model, data, time_limit=30)
    net = model.network()
    cont = ex._continuous_columns(with_grid=True)
    X = ex.encoder.transform(data.frame[model.predict(data.frame) == 0].iloc[:10])
    n_shorter = 0
    for q in X:
        x = ex._linear_steps(q, 1, 0.5, cont)
        if x is None:
            continue
        s = ex._segment(q, x, cont, 1, 0.5)
        assert s is not None  # x itself reaches the margin
        assert class_margin(net.forward(s[None]), 1)[0] >= 0.5
        lo, hi = np.minimum(q, x), np.maximum(q, x)
        assert np.all(s >= lo - 1e-12) and np.all(s <= hi + 1e-12)
        assert np.allclose(s[0] * 100_000, np.round(s[0] * 100_000), atol=1e-6)
        assert ex._objective_values(q, s[None])[0] <= ex._objective_values(q, x[None])[0] + 1e-12
        n_shorter += ex._objective_values(q, s[None])[0] < ex._objective_values(q, x[None])[0]
    assert n_shorter


@pytest.mark.parametrize("make", [pytest.param(_wide, marks=pytest.mark.slow), _coarse])
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])  # seed 1: make test-all
def test_relaxation_claims_only_optima_within_the_gap(make, seed, monkeypatch):
    """:meth:`MILPNearest._from_relaxation` alone, from a far incumbent (a feasible lattice
    point at the median distance), with every wide grid relaxed (coarse ones too, where a
    rounding step costs far more than the gap): every optimum it claims is within the gap of
    the brute-force optimum — the coarse grid's roundings must fall back to the MILP — and a
    rounded CE it hands back as a better incumbent is valid."""
    import robustce.nearest.network as mn
    from robustce.nearest import Incumbent

    monkeypatch.setattr(mn, "_RELAX_STEP_SHARE", 1e12)
    data = make(seed)
    model = rc.models.MLP((8, 6), epochs=20, lr=0.01, random_state=seed).fit(data)
    ex = MILPNearest(model, data, time_limit=30)
    net = model.network()
    lattice, steps = (_lattice, 100_000) if make is _wide else (_coarse_lattice, 99)
    X = ex.encoder.transform(data.frame[model.predict(data.frame) == 0].iloc[:8])
    claims = fallbacks = 0
    for q in X:
        P = lattice(q)
        for tau in (ex.tau, 0.5):
            ok = class_margin(net.forward(P), 1) >= tau
            if not ok.any():
                continue
            z = ex._objective_values(q, P[ok])
            best = float(z.min())
            far = int(np.argsort(z)[len(z) // 2])
            inc = Incumbent(P[ok][far].copy(), float(z[far]))
            cutoff = inc.objective + 1e-7 * (1.0 + inc.objective)
            m = ex._new_milp(30, warm=True, seeded=True)
            dom, _ = ex._encode_nearest(m, q, 1, tau, inc, cutoff)
            r, better = ex._from_relaxation(m, dom, q, 1, tau, inc, cutoff, 30)
            if r is not None:
                claims += 1
                d = float(ex._objective_values(q, r.cf[None])[0])
                assert best - 1e-9 <= d <= best * (1 + MIP_GAP) + 1e-9, (d, best)
            else:
                fallbacks += 1
            for x in [c.x for c in (better,) if c is not None] + ([r.cf] if r else []):
                assert class_margin(net.forward(x[None]), 1)[0] >= tau
                assert ex.actionable(q, x[None], tol=0.0)[0]
                assert np.allclose(x[0] * steps, np.round(x[0] * steps), atol=1e-6)
                assert x[3] == q[3]
    assert claims + fallbacks > 0
    if make is _wide:
        assert claims > 0


def test_a_bound_below_the_rounded_point_by_more_than_the_gap_is_no_claim(monkeypatch):
    """The decision rule itself: the relaxation's solution is a valid CE, but its bound lies
    below it by more than the gap — nothing is claimed (the caller solves the full MILP) and
    the point comes back as a better incumbent; with the bound within the gap it is claimed."""
    from robustce.nearest import Incumbent
    from robustce.solvers.milp import MILP, SolveResult, SolveStatus

    data = _wide(0)
    model = rc.models.MLP((8, 6), epochs=20, lr=0.01, random_state=0).fit(data)
    ex = MILPNearest(model, data, time_limit=30)
    net = model.network()
    q = ex.encoder.transform(data.frame[model.predict(data.frame) == 0].iloc[:1])[0]
    P = _lattice(q)
    ok = class_margin(net.forward(P), 1) >= ex.tau
    z = ex._objective_values(q, P[ok])
    order = np.argsort(z)
    good = P[ok][order[len(z) // 4]]  # a valid CE, not the optimum
    far = Incumbent(P[ok][order[len(z) // 2]].copy(), float(z[order[len(z) // 2]]))
    z_good = float(ex._objective_values(q, good[None])[0])
    cutoff = far.objective * (1 + 1e-7) + 1e-7
    for bound, claimed in ((z_good * (1 - 1e-2), False), (z_good * (1 - 1e-6), True)):
        m = ex._new_milp(30, warm=True, seeded=True)
        dom, _ = ex._encode_nearest(m, q, 1, ex.tau, far, cutoff)
        values = np.zeros(m.n_vars)
        values[dom.index] = good

        def fake(*args, values=values, bound=bound, **kwargs):
            return SolveResult(SolveStatus.OPTIMAL, objective=bound, bound=bound, values=values)

        monkeypatch.setattr(MILP, "solve_relaxation", fake)
        r, better = ex._from_relaxation(m, dom, q, 1, ex.tau, far, cutoff, 30)
        assert (r is not None) == claimed
        if claimed:
            assert np.array_equal(r.cf, good) and r.optimal and r.bound <= r.objective
        else:
            assert better is not None and np.array_equal(better.x, good)
            assert abs(better.objective - z_good) <= 1e-12
