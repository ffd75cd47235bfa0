"""Speed of the nearest-CE MILPs: the incumbent cutoff and incumbent box vs the plain solve.

``new`` is the library default (``warm_start=True, box_from_incumbent=True,
bound_tightening="interval", relax_first=True``: the nearest valid, actionable training point
gives the solve a cutoff and, under l1/linf, a box that tightens the interval bounds — under l1
exact first-layer bounds over the incumbent's L1 ball, with the row distance ≤ cutoff; HiGHS runs
without presolve and without primal heuristics; a first solve with the wide integer grids relaxed
whose rounded solution, where it meets that solve's dual bound within the gap, is the optimum;
its one-time candidate pool is built before the timed queries and reported as
``new_prepare_ms``); ``old`` is main's previous per-query solve (``warm_start=False,
box_from_incumbent=False, bound_tightening="interval", relax_first=False``: interval bounds over
the whole actionable domain, no cutoff, HiGHS defaults). Both run on the same queries,
interleaved query by query in one process, and the benchmark asserts that their optimal
distances agree within the MIP gap (MILPNearest) and that every MILP-R CE of both is Δ-robust
(MILP-R: the number of queries whose final CE distance differs is reported — near-tied nearest
CEs can change the margin schedule).

Rows:

* ``milp_nearest`` on a 34-10-1 network over 34 continuous features (synthetic data) and on the
  adult 20-10 network (CARLA adult, mixed types), raw-space L1;
* ``milp_nearest_deep`` on a 34-50-50-50-1 network (the same synthetic data): where big-M
  quality decides — new with ``bound_tightening="lp"`` and with ``"interval"`` vs old;
* ``delta_test_deep``: the exact Δ-test's worst-case MILP (δ = 0.01, exact value) on the same
  network at test points, with LP-tightened vs interval bounds (``DeltaMILP``), same value
  asserted;
* ``milp_robust`` (MILP-R) on the PROPLACE Table 1 datasets with the networks and δ of
  ``benchmarks/configs/proplace_baselines_*.toml`` (trained here on the 80 % split, not the
  D1 half, which changes no timing question): same CE distance, same Δ-robustness verdict.

    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_milp.py            # 30 / 10 queries
    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_milp.py --quick    # 10 / 4 queries
    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_milp.py --no-deep  # without the deep rows
    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_milp.py --robust-only adult --rob-queries 40

``run(quick)`` returns one dict per row.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

import robustce as rc
from robustce.data import Feature, Schema, from_frame, loaders
from robustce.methods.milp_nearest import MILPNearest
from robustce.methods.milp_robust import MILPRobust
from robustce.models.network import margin_terms
from robustce.robustness.delta_milp import DeltaMILP
from robustce.robustness.exact import point_layer_bounds
from robustce.robustness.shift import ParameterShift

OLD = {"warm_start": False, "box_from_incumbent": False, "bound_tightening": "interval",
       "relax_first": False}
PROPLACE = {  # dataset: (loader, hidden layers, epochs, delta) from the proplace-table1 configs
    "adult": ("load_adult", (10, 10), 20, 0.035),
    "compas": ("load_compas", (20, 20), 50, 0.025),
    "gmc": ("load_give_me_some_credit", (20, 20), 3, 0.045),
    "heloc": ("load_heloc", (20, 20), 50, 0.025),
}


def _synthetic(n: int = 4000, d: int = 34, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    w = rng.normal(size=d)
    score = X @ w + 0.5 * np.sin(3 * X[:, 0]) + rng.normal(0, 0.3, size=n)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(d)])
    frame["y"] = (score > np.median(score)).astype(int)
    schema = Schema([Feature(f"x{i}", "continuous", lower=0.0, upper=1.0) for i in range(d)])
    return from_frame(frame, "y", schema)


def _queries(data, model, n: int):
    frame = data.frame
    pred = model.predict(frame)
    return frame[pred == 0].iloc[:n]


def _compare(make, queries, check_robust: bool = False,
             allow_timeouts: bool = False) -> dict[str, Any]:
    """Per query: new and old explainer, interleaved; times and distances."""
    new, old = make({}), make(OLD)
    # one-time preparation (the incumbent's candidate pool: training rows of the target class,
    # encoded and scored once per explainer), timed apart from the per-CE times
    t0 = time.perf_counter()
    if new.data is not None:
        new._candidates(1)
    prepare_ms = (time.perf_counter() - t0) * 1e3
    t_new, t_old, d_new, d_old, same_status = [], [], [], [], []
    gap = new.mip_gap
    n_timeouts = {"new": 0, "old": 0}  # solves that ended without proven optimality
    n_diff = 0  # MILP-R: queries whose final CE distance differs
    for i in range(len(queries)):
        q = queries.iloc[[i]]
        res = {}
        for tag, ex in (("old", old), ("new", new)) if i % 2 else (("new", new), ("old", old)):
            res[tag] = ex.explain(q)
            # per-CE time as the explainer records it (the query's solve path, without the
            # explain() call's DataFrame handling, which both share)
            (t_new if tag == "new" else t_old).append(float(res[tag].timings.iloc[0]))
        sn, so = res["new"].status.iloc[0], res["old"].status.iloc[0]
        same_status.append(sn == so or (allow_timeouts and "timeout" in (sn, so)))
        n_timeouts["new"] += sn == "timeout" or not bool(res["new"].certificates["optimal"].iloc[0])
        n_timeouts["old"] += so == "timeout" or not bool(res["old"].certificates["optimal"].iloc[0])
        dn = float(res["new"].certificates["distance"].iloc[0])
        do = float(res["old"].certificates["distance"].iloc[0])
        d_new.append(dn)
        d_old.append(do)
        if sn == so == "found" and not check_robust:
            opt = bool(res["new"].certificates["optimal"].iloc[0]) and \
                bool(res["old"].certificates["optimal"].iloc[0])
            if opt:
                assert abs(dn - do) <= gap * max(dn, do) + 1e-6, (i, dn, do)
        if check_robust and sn == so == "found":
            assert res["new"].certificates["delta_status"].iloc[0] == "robust"
            assert res["old"].certificates["delta_status"].iloc[0] == "robust"
            n_diff += abs(dn - do) > 1e-6 * max(1.0, dn, do)
    assert all(same_status), "new and old gave different statuses"
    t_new, t_old = np.array(t_new), np.array(t_old)
    return {"n": len(queries), "new_prepare_ms": prepare_ms,
            "new_ms": float(np.median(t_new) * 1e3),
            "old_ms": float(np.median(t_old) * 1e3),
            "speedup_median": float(np.median(t_old) / np.median(t_new)),
            "speedup_total": float(t_old.sum() / t_new.sum()),
            "not_optimal_new": n_timeouts["new"], "not_optimal_old": n_timeouts["old"],
            "n_distance_differs": n_diff,
            "max_abs_dist_diff": float(np.nanmax(np.abs(np.array(d_new) - np.array(d_old))))
            if len(d_new) else float("nan")}


def run_deep(n: int = 2) -> list[dict[str, Any]]:
    """The deeper-network rows: MILPNearest (LP-tightened and interval bounds, each vs old)
    and the exact Δ-test's MILP with and without LP bound tightening."""
    syn, syn_test = _synthetic().split(0.2, random_state=0)
    deep = rc.models.MLP((50, 50, 50), epochs=30, random_state=0).fit(syn)
    rows = []
    for bt in ("lp", "interval"):
        r = _compare(lambda p, b=bt: MILPNearest(deep, syn, time_limit=20,
                                                **{"bound_tightening": b, **p}),
                     _queries(syn_test, deep, n), allow_timeouts=True)
        rows.append({"row": f"milp_nearest_deep (new: bound_tightening={bt})",
                     "network": "34-50-50-50-1", "data": "synthetic 34 continuous", **r})
        print(rows[-1], flush=True)
    rows.append(run_delta_deep(deep, syn_test, max(2 * n, 4)))
    print(rows[-1], flush=True)
    return rows


def run_delta_deep(model, data, n: int, delta: float = 0.01) -> dict[str, Any]:
    """Exact worst-case MILP of the Δ-test per point: LP-tightened ("new") vs interval
    ("old") bounds, interleaved; the two values must agree."""
    net = model.network()
    X = model.encoder.transform(data.frame.iloc[:n])
    t = net.predict(X)
    shift = ParameterShift(delta)
    inn = shift.interval(net)
    bounds = point_layer_bounds(net, X, np.full(len(X), delta), True)
    terms = margin_terms(bounds[-1][0], bounds[-1][1], t)
    eng = {bt: DeltaMILP(net, inn, shift, solver="highs", time_limit=20.0, threads=1,
                         mode="rebuild", box=None, mip_gap=1e-9, abs_gap=1e-9,
                         bound_tightening=bt) for bt in ("lp", "interval")}
    times = {"lp": [], "interval": []}
    n_exact = 0
    for i in range(len(X)):
        b_i = [(lo[i], hi[i]) for lo, hi in bounds]
        out = {}
        for bt in (("lp", "interval") if i % 2 == 0 else ("interval", "lp")):
            t0 = time.perf_counter()
            out[bt] = eng[bt].solve(X[i], int(t[i]), b_i, terms[i], 20.0, False, 1e-6)
            times[bt].append(time.perf_counter() - t0)
        v_new, v_old = out["lp"].value, out["interval"].value
        if np.isfinite(v_new) and np.isfinite(v_old):
            n_exact += 1
            assert abs(v_new - v_old) <= 1e-5 * max(1.0, abs(v_old)), (i, v_new, v_old)
    tn, to = np.array(times["lp"]), np.array(times["interval"])
    return {"row": "delta_test_deep (new: lp, old: interval bounds)", "network": "34-50-50-50-1",
            "data": f"synthetic, δ={delta}", "n": len(X), "new_ms": float(np.median(tn) * 1e3),
            "old_ms": float(np.median(to) * 1e3), "speedup_median": float(np.median(to) / np.median(tn)),
            "speedup_total": float(to.sum() / tn.sum()), "not_optimal_new": len(X) - n_exact,
            "not_optimal_old": len(X) - n_exact, "n_distance_differs": 0,
            "max_abs_dist_diff": float("nan")}


def run(quick: bool = False, deep: bool = True, rob_queries: int | None = None,
        robust_only: list[str] | None = None) -> list[dict[str, Any]]:
    """All rows; ``rob_queries``: queries per MILP-R row (default 10, 4 with ``quick``);
    ``robust_only``: only the MILP-R rows of these PROPLACE datasets."""
    n_near = 10 if quick else 30
    n_rob = rob_queries or (4 if quick else 10)
    rows: list[dict[str, Any]] = []
    if robust_only is None:
        rows += _nearest_rows(n_near)
    for ds, (loader, hidden, epochs, delta) in PROPLACE.items():
        if robust_only is not None and ds not in robust_only:
            continue
        data = getattr(loaders, loader)()
        train, test = data.split(0.2, random_state=0)
        model = rc.models.MLP(hidden, epochs=epochs, batch_size=32, lr=0.01, weight_decay=2e-4,
                              random_state=0).fit(train)
        r = _compare(lambda p, m=model, t=train, d=delta: MILPRobust(
            m, t, shift=d, growth=1.25, max_rounds=30, time_limit=60, **p),
            _queries(test, model, n_rob), check_robust=True)
        rows.append({"row": "milp_robust", "network": "-".join(map(str, hidden)), "data": ds, **r})
        print(rows[-1], flush=True)

    # deeper network: big-M quality decides; per-solve time limit 20 s (a solve that ends
    # without proven optimality still counts its time; optima compared where both are optimal)
    if deep and robust_only is None:
        rows += run_deep(max(n_rob // 2, 2))
    return rows


def _nearest_rows(n_near: int) -> list[dict[str, Any]]:
    """The MILPNearest rows (34-10-1 synthetic, adult 20-10)."""
    rows: list[dict[str, Any]] = []
    syn, syn_test = _synthetic().split(0.2, random_state=0)
    model = rc.models.MLP((10,), epochs=30, random_state=0).fit(syn)
    r = _compare(lambda p: MILPNearest(model, syn, time_limit=60, **p),
                 _queries(syn_test, model, n_near))
    rows.append({"row": "milp_nearest", "network": "34-10-1", "data": "synthetic 34 continuous",
                 **r})
    print(rows[-1], flush=True)

    adult = loaders.load_adult()
    train, test = adult.split(0.2, random_state=0)
    model = rc.models.MLP((20, 10), epochs=20, random_state=0).fit(train)
    r = _compare(lambda p: MILPNearest(model, train, time_limit=60, **p),
                 _queries(test, model, n_near))
    rows.append({"row": "milp_nearest", "network": "adult 20-10", "data": "adult", **r})
    print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deep", action="store_true", help="only the deeper-network row")
    ap.add_argument("--no-deep", action="store_true", help="all rows but the deeper-network ones")
    ap.add_argument("--rob-queries", type=int, default=None,
                    help="queries per MILP-R row (default 10; 4 with --quick)")
    ap.add_argument("--robust-only", nargs="+", choices=sorted(PROPLACE), default=None,
                    help="only the MILP-R rows of these datasets")
    args = ap.parse_args()
    rows = run_deep() if args.deep else run(args.quick, deep=not args.no_deep,
                                            rob_queries=args.rob_queries,
                                            robust_only=args.robust_only)
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
