"""The exact MILPs on deep networks (issue 33): back-substituted bounds vs plain intervals.

Every row runs the new path (``bounds_method="crown"`` / ``bound_tightening="crown"``: CROWN-
style bounds, per-neuron big-M and stable neurons from them, the reduced last layer) and the
old path (interval bounds only) on the same inputs in the same run, interleaved, and checks
that they agree (same worst-case value; same status; same distance where both are optimal).
RobustX (Gurobi) is not installed here: no anchor column.

* ``delta_full`` — the full worst-case MILP of the Δ-test alone (``exact_worst_case``,
  ``precheck=False``, exact value) per point; random 10-input networks 50-50-50 and 100-100
  (``bench_exact.py``'s generator), δ = 0.005; with the mean number of neurons that need a
  binary (interval vs back-substituted bounds).
* ``delta_decide`` — the decision path (``is_delta_robust``) per row on the same networks.
* ``milp_nearest`` — MILPNearest on a 34-50-50-1 network (``bench_milp.py``'s synthetic data).
* ``milp_robust`` — MILP-R on that network at δ = 0.005 and on adult 13-50-50-1 at δ = 0.05
  (where Δ-robust training points exist); ``milp_robust_status`` — MILP-R at δ = 0.05 on the
  synthetic 34-50-50-1 network (new path only): statuses and why (see benchmarks/README.md).
* ``proplace`` — PROPLACE on adult 13-50-50-50-1 at δ = 0.035 (its adult configuration).
* ``ideal_cuts`` — the full worst-case MILP on 10-50-50-50-1 with and without five rounds of
  root cuts from the ideal single-neuron formulation (:mod:`robustce.solvers.relu_cuts`),
  interleaved: time, the share of the root LP gap the cuts close, same optimum.
* ``gurobi`` — HiGHS against Gurobi (where ``gurobipy`` is installed; its free licence is
  size-limited) on the same MILPs, interleaved: the full worst-case MILP on 10-50-50-50-1 and
  10-100-100-1, MILPNearest and MILP-R (δ = 0.005) on 34-50-50-1.

    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_deep.py [--quick] [--rows a b]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import robustce as rc
from robustce.data import loaders
from robustce.methods import MILPNearest, MILPRobust
from robustce.models.network import ReLUNetwork
from robustce.robustness import ExactDeltaCertifier, ParameterShift, exact_worst_case, is_delta_robust
from robustce.robustness.bounds import crown_point_bounds, interval_point_bounds, n_unstable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_milp import _queries, _synthetic  # noqa: E402

ROWS = ("delta_full", "delta_decide", "milp_nearest", "milp_robust", "milp_robust_status",
        "proplace", "ideal_cuts", "gurobi")


def _network(hidden: tuple[int, ...], d: int = 10, seed: int = 0) -> ReLUNetwork:
    rng = np.random.default_rng(seed)
    sizes = [d, *hidden, 1]
    return ReLUNetwork([(rng.normal(0, 1 / np.sqrt(a), size=(b, a)), rng.normal(0, 0.1, size=b))
                        for a, b in zip(sizes[:-1], sizes[1:], strict=True)])


def _summary(t_new: list[float], t_old: list[float]) -> dict[str, Any]:
    tn, to = np.array(t_new), np.array(t_old)
    return {"new_ms": float(np.median(tn) * 1e3), "old_ms": float(np.median(to) * 1e3),
            "new_max_ms": float(tn.max() * 1e3), "old_max_ms": float(to.max() * 1e3),
            "speedup_median": float(np.median(to) / np.median(tn)),
            "speedup_total": float(to.sum() / tn.sum())}


def delta_full(n: int, delta: float = 0.005) -> list[dict[str, Any]]:
    rows = []
    shift = ParameterShift(delta)
    for hidden in ((50, 50, 50), (100, 100)):
        net = _network(hidden)
        X = np.random.default_rng(1).uniform(size=(n, 10))
        inn = shift.interval(net)
        unst = (float(n_unstable(interval_point_bounds(inn, X)).mean()),
                float(n_unstable(crown_point_bounds(inn, X)).mean()))
        times: dict[str, list[float]] = {"crown": [], "interval": []}
        n_opt = 0
        for i in range(n):
            out = {}
            for m in (("crown", "interval") if i % 2 == 0 else ("interval", "crown")):
                t0 = time.perf_counter()
                out[m] = exact_worst_case(net, X[i:i + 1], shift, None, precheck=False,
                                          time_limit=60, bounds_method=m)
                times[m].append(time.perf_counter() - t0)
            vn, vo = out["crown"].value[0], out["interval"].value[0]
            assert out["crown"].status[0] == out["interval"].status[0] or "timeout" in (
                out["crown"].status[0], out["interval"].status[0]), i
            if np.isfinite(vn) and np.isfinite(vo):
                n_opt += 1
                assert abs(vn - vo) <= 1e-5 * max(1.0, abs(vo)), (i, vn, vo)
        rows.append({"row": "delta_full", "network": "10-" + "-".join(map(str, hidden)) + "-1",
                     "setting": f"δ={delta}, full worst-case MILP, exact value", "n": n,
                     "solved_both": n_opt, "unstable_interval": unst[0], "unstable_crown": unst[1],
                     **_summary(times["crown"], times["interval"])})
        print(rows[-1], flush=True)
    return rows


def delta_decide(n: int, delta: float = 0.005) -> list[dict[str, Any]]:
    rows = []
    shift = ParameterShift(delta)
    for hidden in ((50, 50, 50), (100, 100)):
        net = _network(hidden)
        X = np.random.default_rng(2).uniform(size=(n, 10))
        times: dict[str, list[float]] = {"crown": [], "interval": []}
        status = {}
        for rep in range(2):
            for m in (("crown", "interval") if rep == 0 else ("interval", "crown")):
                t0 = time.perf_counter()
                rob, res = is_delta_robust(net, X, shift, None, time_limit=60, bounds_method=m,
                                           return_result=True)
                times[m].append((time.perf_counter() - t0) / n)
                status[m] = list(res.status)
                if m == "crown":
                    by = pd.Series(res.decided_by).value_counts().to_dict()
        assert status["crown"] == status["interval"]
        rows.append({"row": "delta_decide", "network": "10-" + "-".join(map(str, hidden)) + "-1",
                     "setting": f"δ={delta}, is_delta_robust per row (decided by: {by})", "n": n,
                     **_summary(times["crown"], times["interval"])})
        print(rows[-1], flush=True)
    return rows


def _deep_synthetic():
    syn, syn_test = _synthetic().split(0.2, random_state=0)
    return syn, syn_test, rc.models.MLP((50, 50), epochs=30, random_state=0).fit(syn)


def _compare(make_new, make_old, queries) -> dict[str, Any]:
    new, old = make_new(), make_old()
    t_new, t_old, stat_new, stat_old, opt_new = [], [], [], [], 0
    for i in range(len(queries)):
        q = queries.iloc[[i]]
        res = {}
        for tag, ex in (("new", new), ("old", old)) if i % 2 == 0 else (("old", old), ("new", new)):
            t0 = time.perf_counter()
            res[tag] = ex.explain(q)
            (t_new if tag == "new" else t_old).append(time.perf_counter() - t0)
        sn, so = res["new"].status.iloc[0], res["old"].status.iloc[0]
        stat_new.append(sn)
        stat_old.append(so)
        cn, co = res["new"].certificates.iloc[0], res["old"].certificates.iloc[0]
        opt_new += bool(cn.get("optimal", False))
        if sn == so == "found" and bool(cn.get("optimal")) and bool(co.get("optimal")):
            dn, do = float(cn["distance"]), float(co["distance"])
            assert abs(dn - do) <= 1e-4 * max(1.0, dn, do), (i, dn, do)
    return {"n": len(queries), "status_new": pd.Series(stat_new).value_counts().to_dict(),
            "status_old": pd.Series(stat_old).value_counts().to_dict(), "optimal_new": opt_new,
            **_summary(t_new, t_old)}


def milp_nearest(n: int) -> list[dict[str, Any]]:
    syn, syn_test, model = _deep_synthetic()
    r = _compare(lambda: MILPNearest(model, syn, time_limit=60),
                 lambda: MILPNearest(model, syn, time_limit=60, bound_tightening="interval"),
                 _queries(syn_test, model, n))
    row = {"row": "milp_nearest", "network": "34-50-50-1", "setting": "synthetic, l1", **r}
    print(row, flush=True)
    return [row]


def _robust_pair(model, train, delta):
    def new():
        return MILPRobust(model, train, shift=delta, growth=1.25, max_rounds=30, time_limit=60)

    def old():
        return MILPRobust(model, train, shift=delta, growth=1.25, max_rounds=30, time_limit=60,
                          bound_tightening="interval",
                          certifier=ExactDeltaCertifier(delta, time_limit=60, worst_case=True,
                                                        bounds_method="interval"))
    return new, old


def milp_robust(n: int) -> list[dict[str, Any]]:
    rows = []
    syn, syn_test, model = _deep_synthetic()
    new, old = _robust_pair(model, syn, 0.005)
    rows.append({"row": "milp_robust", "network": "34-50-50-1", "setting": "synthetic, δ=0.005",
                 **_compare(new, old, _queries(syn_test, model, n))})
    print(rows[-1], flush=True)
    adult = loaders.load_adult()
    train, test = adult.split(0.2, random_state=0)
    am = rc.models.MLP((50, 50), epochs=20, batch_size=32, lr=0.01, weight_decay=2e-4,
                       random_state=0).fit(train)
    new, old = _robust_pair(am, train, 0.05)
    rows.append({"row": "milp_robust", "network": "adult 13-50-50-1", "setting": "adult, δ=0.05",
                 **_compare(new, old, _queries(test, am, n))})
    print(rows[-1], flush=True)
    return rows


def milp_robust_status(n: int) -> list[dict[str, Any]]:
    """MILP-R at δ = 0.05 on the synthetic 34-50-50-1 network: why it gives up."""
    syn, syn_test, model = _deep_synthetic()
    net = model.network()
    X = model.encoder.transform(syn.frame)
    X1 = X[net.predict(X) == 1]
    top = X1[np.argsort(-net.forward(X1)[:, 0])[:50]]
    res = exact_worst_case(net, top, ParameterShift(0.05), 1, decide_only=True, time_limit=10)
    ex = MILPRobust(model, syn, shift=0.05, growth=1.25, max_rounds=30, time_limit=60)
    rows = []
    qs = _queries(syn_test, model, n)
    for i in range(n):
        t0 = time.perf_counter()
        r = ex.explain(qs.iloc[[i]])
        c = r.certificates.iloc[0]
        rows.append({"row": "milp_robust_status", "network": "34-50-50-1",
                     "setting": "synthetic, δ=0.05, new path", "n": 1,
                     "new_ms": (time.perf_counter() - t0) * 1e3, "status_new": r.status.iloc[0],
                     "rounds": c.get("rounds"), "tau": c.get("tau"),
                     "robust_top50_training_points": int(res.robust.sum()),
                     "message": r.messages.iloc[0]})
        print(rows[-1], flush=True)
    return rows


def proplace(n: int, delta: float = 0.035) -> list[dict[str, Any]]:
    """PROPLACE on adult 13-50-50-50-1 (the PROPLACE adult δ): new vs interval Δ-tests."""
    from robustce.methods import PROPLACE

    adult = loaders.load_adult()
    train, test = adult.split(0.2, random_state=0)
    am = rc.models.MLP((50, 50, 50), epochs=20, batch_size=32, lr=0.01, weight_decay=2e-4,
                       random_state=0).fit(train)
    tol = 1e-4 - 5e-5  # PROPLACE's σ − t

    def old():
        return PROPLACE(am, train, shift=delta, time_limit=60, certifier=ExactDeltaCertifier(
            delta, time_limit=10, tol=tol, worst_case=True, bounds_method="interval"))
    row = {"row": "proplace", "network": "adult 13-50-50-50-1", "setting": f"adult, δ={delta}",
           **_compare(lambda: PROPLACE(am, train, shift=delta, time_limit=60), old,
                      _queries(test, am, n))}
    print(row, flush=True)
    return [row]


def ideal_cuts(n: int, delta: float = 0.005, rounds: int = 5) -> list[dict[str, Any]]:
    """Root cuts of the ideal single-neuron formulation: does the tighter root pay?"""
    from robustce.robustness.bounds import MILP_SLACK, crown_point_bounds
    from robustce.robustness.delta_milp import DeltaMILP
    from robustce.robustness.exact import margin_terms, point_layer_bounds

    net = _network((50, 50, 50))
    X = np.random.default_rng(1).uniform(size=(n, 10))
    shift = ParameterShift(delta)
    inn = shift.interval(net)
    iv = point_layer_bounds(net, X, np.full(n, delta))
    lb = crown_point_bounds(inn, X)
    t = (net.predict(X) == 1).astype(np.int64)  # the predicted class, as exact_worst_case(None)
    terms = np.maximum(margin_terms(iv[-1][0], iv[-1][1], t),
                       margin_terms(lb.lower[-1], lb.upper[-1], t))
    times: dict[int, list[float]] = {0: [], rounds: []}
    closed = []
    for i in range(n):
        b_i = lb.row(i, MILP_SLACK)[:-1] + [(iv[-1][0][i], iv[-1][1][i])]
        um_i = lb.row_upper_min(i, MILP_SLACK)
        value = {}
        for k in ((0, rounds) if i % 2 == 0 else (rounds, 0)):
            eng = DeltaMILP(net, inn, shift, solver="highs", time_limit=60, threads=1,
                            mode="rebuild", box=None, mip_gap=1e-9, abs_gap=1e-9,
                            reduce_last=True, cut_rounds=k)
            t0 = time.perf_counter()
            out = eng.solve(X[i], int(t[i]), b_i, terms[i], 60.0, False, 1e-6, upper_min=um_i)
            times[k].append(time.perf_counter() - t0)
            value[k] = out.value
            if k:
                root = eng.last_root_bounds
                closed.append((root[-1] - root[0]) / (out.value - root[0]))
        assert abs(value[0] - value[rounds]) <= 1e-6 * max(1.0, abs(value[0])), (i, value)
    row = {"row": "ideal_cuts", "network": "10-50-50-50-1",
           "setting": f"δ={delta}, full MILP, {rounds} rounds of root cuts (new) vs none (old)",
           "n": n, "root_gap_closed_median": float(np.median(closed)),
           **_summary(times[rounds], times[0])}
    print(row, flush=True)
    return [row]


def gurobi(n: int, delta: float = 0.005) -> list[dict[str, Any]]:
    """HiGHS ("old") against Gurobi ("new") on the same MILPs, interleaved."""
    if "gurobi" not in rc.solvers.available_solvers():
        print("gurobi: gurobipy is not installed; row skipped", flush=True)
        return []
    rows = []
    shift = ParameterShift(delta)
    for hidden in ((50, 50, 50), (100, 100)):
        net = _network(hidden)
        X = np.random.default_rng(1).uniform(size=(2 * n, 10))
        times: dict[str, list[float]] = {"gurobi": [], "highs": []}
        for i in range(2 * n):
            val = {}
            for s in (("gurobi", "highs") if i % 2 == 0 else ("highs", "gurobi")):
                t0 = time.perf_counter()
                val[s] = exact_worst_case(net, X[i:i + 1], shift, None, precheck=False,
                                          time_limit=60, solver=s).value[0]
                times[s].append(time.perf_counter() - t0)
            assert abs(val["gurobi"] - val["highs"]) <= 1e-5 * max(1.0, abs(val["highs"])), val
        rows.append({"row": "gurobi", "network": "10-" + "-".join(map(str, hidden)) + "-1",
                     "setting": f"δ={delta}, full worst-case MILP; new = Gurobi, old = HiGHS",
                     "n": 2 * n, **_summary(times["gurobi"], times["highs"])})
        print(rows[-1], flush=True)
    syn, syn_test, model = _deep_synthetic()
    qs = _queries(syn_test, model, n)
    rows.append({"row": "gurobi", "network": "34-50-50-1",
                 "setting": "MILPNearest, l1; new = Gurobi, old = HiGHS",
                 **_compare(lambda: MILPNearest(model, syn, time_limit=60, solver="gurobi"),
                            lambda: MILPNearest(model, syn, time_limit=60), qs)})
    print(rows[-1], flush=True)

    def robust(solver: str) -> MILPRobust:
        return MILPRobust(model, syn, shift=delta, growth=1.25, max_rounds=30, time_limit=60,
                          solver=solver)
    rows.append({"row": "gurobi", "network": "34-50-50-1",
                 "setting": f"MILP-R δ={delta}; new = Gurobi, old = HiGHS",
                 **_compare(lambda: robust("gurobi"), lambda: robust("highs"), qs)})
    print(rows[-1], flush=True)
    return rows


def run(quick: bool = False, rows: tuple[str, ...] = ROWS) -> list[dict[str, Any]]:
    """The rows named in ``rows`` (all by default); ``quick``: fewer points / queries."""
    k = 1 if quick else 2
    sizes = {"delta_full": 4 * k, "delta_decide": 50 * k, "milp_nearest": 3 * k,
             "milp_robust": 2 * k, "milp_robust_status": k, "proplace": 2 * k,
             "ideal_cuts": 4 * k, "gurobi": 2 * k}
    out: list[dict[str, Any]] = []
    for name in rows:
        out += globals()[name](sizes[name])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS))
    args = ap.parse_args()
    print(pd.DataFrame(run(args.quick, tuple(args.rows))).to_string(index=False))


if __name__ == "__main__":
    main()
