"""Speed of the exact Δ-robustness test on 20-10 and 50-50 ReLU networks.

For each network, the same counterfactuals (random points of [0, 1]^d, target = the predicted
class) are certified in several ways, all in one run:

* ``pipeline`` — ``is_delta_robust``: interval bounds, base network and weight attack for all
  points at once, then a decision MILP (cutoff at tol, stop at the first flipping incumbent)
  only for the undecided ones. Reported per counterfactual, with the share each stage decided.
* ``milp_only`` — the baseline: a full worst-case MILP for every counterfactual (no prechecks,
  solved to optimality), i.e. the plain MILP formulation of the Δ-test.
* ``one_test`` — median time of one MILP Δ-test (decision mode), i.e. the cost of the cases the
  prechecks cannot decide; ``reuse`` — the same with one model per batch whose input bounds are
  re-fixed per point (vs a model rebuilt per point).
* ``gurobi`` — the full MILP with Gurobi, when gurobipy is installed (size-limited licence).
* ``milp_build`` — building a 600-variable, 200-row MILP (50 000 coefficients) in two batch
  calls vs one ``add_constrs`` call per row (what the encodings avoid); was a timed unit test.

    python benchmarks/bench_exact.py            # 200 points per network
    python benchmarks/bench_exact.py --quick    # 40 points

``run(quick)`` returns one dict per measurement (for ``benchmarks/run_all.py``).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from robustce.models.network import ReLUNetwork
from robustce.robustness import ParameterShift, exact_worst_case, is_delta_robust
from robustce.solvers import MILP, available_solvers

N_INPUTS = 10
CONFIGS = (((20, 10), 0.01), ((50, 50), 0.005))


def _network(hidden: tuple[int, ...], seed: int = 0) -> ReLUNetwork:
    rng = np.random.default_rng(seed)
    sizes = [N_INPUTS, *hidden, 1]
    return ReLUNetwork([(rng.normal(0, 1 / np.sqrt(a), size=(b, a)), rng.normal(0, 0.1, size=b))
                        for a, b in zip(sizes[:-1], sizes[1:], strict=True)])


def _median_ms(times: np.ndarray) -> float:
    return float(np.median(times) * 1e3) if len(times) else float("nan")


def _build(per_row: bool) -> MILP:
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(100, 500)), np.hstack([np.eye(100), -np.eye(100)])
    m = MILP()
    x = m.add_vars(500, 0, 1)
    b = m.add_vars(100, 0, 1, "B")
    xb = np.concatenate([x[:100], b])
    if per_row:
        for i in range(100):
            m.add_constrs(A[i:i + 1], ub=1.0, cols=x)
        for i in range(100):
            m.add_constrs(B[i:i + 1], ub=0.0, cols=xb)
    else:
        m.add_constrs(A, ub=1.0, cols=x)
        m.add_constrs(B, ub=0.0, cols=xb)
    m.set_objective(x, rng.normal(size=500))
    m._materialise()
    return m


def _build_rows(reps: int) -> list[dict[str, Any]]:
    times = {}
    for per_row in (False, True):
        _build(per_row)  # warm-up
        t0 = time.perf_counter()
        for _ in range(reps):
            m = _build(per_row)
        times[per_row] = (time.perf_counter() - t0) / reps
        assert m.n_constrs == 200
    return [{"name": "MILP build, 200 rows x 500 cols: batch add_constrs vs one call per row",
             "seconds": times[False], "baseline_seconds": times[True],
             "ratio": times[True] / times[False], "benchmark": "milp_build", "n": 200}]


def run(quick: bool = False) -> list[dict[str, Any]]:
    n = 40 if quick else 200
    rows: list[dict[str, Any]] = _build_rows(3 if quick else 10)
    for hidden, delta in CONFIGS:
        net = _network(hidden)
        arch = "-".join(map(str, hidden))
        X = np.random.default_rng(1).uniform(size=(n, N_INPUTS))
        t = net.predict(X)
        shift = ParameterShift(delta)
        exact_worst_case(net, X[:2], shift, t[:2], precheck=False)  # warm-up (imports, HiGHS)

        t0 = time.perf_counter()
        robust, res = is_delta_robust(net, X, shift, t, return_result=True)
        pipe_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        full = exact_worst_case(net, X, shift, t, precheck=False)
        full_s = time.perf_counter() - t0
        agree = bool(np.array_equal(robust, full.robust))
        decided = {k: float(np.mean(res.decided_by == k)) for k in ("interval", "attack", "milp")}
        rows.append({
            "name": f"exact Δ-test {arch} (δ={delta}): pipeline vs MILP for every point, per point",
            "seconds": pipe_s / n, "baseline_seconds": full_s / n, "ratio": full_s / pipe_s,
            "benchmark": "exact_delta_test", "network": arch, "n": n, "delta": delta,
            "decided_by_interval": decided["interval"], "decided_by_attack": decided["attack"],
            "decided_by_milp": decided["milp"], "robust_share": float(robust.mean()),
            "agree": agree,
        })

        dec = exact_worst_case(net, X, shift, t, precheck=False, decide_only=True)
        reuse = exact_worst_case(net, X, shift, t, precheck=False, decide_only=True, mode="reuse")
        one = _median_ms(dec.time)
        hard = res.decided_by == "milp"  # the points the prechecks could not decide
        rows.append({
            "name": f"one MILP Δ-test {arch}, points the prechecks leave undecided: decision MILP "
                    f"rebuilt per point vs reused model vs full worst-case MILP (median)",
            "seconds": _median_ms(dec.time[hard]) / 1e3,
            "baseline_seconds": _median_ms(full.time[hard]) / 1e3,
            "ratio": _median_ms(full.time[hard]) / _median_ms(dec.time[hard]),
            "benchmark": "exact_delta_test_hard", "network": arch, "n": int(hard.sum()),
            "median_ms": _median_ms(dec.time[hard]), "reuse_median_ms": _median_ms(reuse.time[hard]),
            "full_median_ms": _median_ms(full.time[hard]),
            "max_ms": float(dec.time[hard].max() * 1e3) if hard.any() else float("nan"),
        })
        rows.append({
            "name": f"one MILP Δ-test {arch}: decision MILP vs full worst-case MILP (median per point)",
            "seconds": one / 1e3, "baseline_seconds": _median_ms(full.time) / 1e3,
            "ratio": _median_ms(full.time) / one, "benchmark": "exact_delta_test_one", "network": arch,
            "n": n, "median_ms": one, "p90_ms": float(np.percentile(dec.time, 90) * 1e3),
            "full_median_ms": _median_ms(full.time),
            "agree": bool(np.array_equal(dec.robust, full.robust)),
        })
        rows.append({
            "name": f"one MILP Δ-test {arch}: model reused per batch vs rebuilt per point (median)",
            "seconds": _median_ms(reuse.time) / 1e3, "baseline_seconds": one / 1e3,
            "ratio": one / _median_ms(reuse.time), "benchmark": "exact_delta_test_reuse", "network": arch,
            "n": n, "agree": bool(np.array_equal(reuse.robust, dec.robust)),
        })
        if "gurobi" in available_solvers():
            g = exact_worst_case(net, X[: min(n, 40)], shift, t[: min(n, 40)], precheck=False,
                                 solver="gurobi")
            ok = [s is not None and s.value != "error" for s in g.solver_status]
            if all(ok):
                rows.append({
                    "name": f"one MILP Δ-test {arch}: Gurobi vs HiGHS, full worst-case MILP (median)",
                    "seconds": _median_ms(g.time) / 1e3,
                    "baseline_seconds": _median_ms(full.time[: len(g.time)]) / 1e3,
                    "ratio": _median_ms(full.time[: len(g.time)]) / _median_ms(g.time),
                    "benchmark": "exact_delta_test_gurobi", "network": arch, "n": len(g.time),
                    "max_abs_diff_vs_highs": float(np.nanmax(np.abs(g.value - full.value[: len(g.time)]))),
                })
            else:
                rows.append({"name": f"gurobi {arch}: skipped (licence limit?)", "benchmark": "gurobi",
                             "network": arch, "skipped": True})
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if r.get("skipped"):
            print(r["name"])
            continue
        extra = ""
        if "reuse_median_ms" in r:
            extra = f"  (reused model: {r['reuse_median_ms']:.2f} ms; max {r['max_ms']:.1f} ms; n={r['n']})"
        if "decided_by_interval" in r:
            extra = (f"  decided by interval {r['decided_by_interval']:.0%}, attack "
                     f"{r['decided_by_attack']:.0%}, MILP {r['decided_by_milp']:.0%}; "
                     f"robust {r['robust_share']:.0%}")
        checks = " ".join(f"{k}={r[k]}" for k in ("agree",) if k in r)
        print(f"{r['name']}\n    {r['seconds'] * 1e3:8.2f} ms vs {r['baseline_seconds'] * 1e3:8.2f} ms "
              f"-> x{r['ratio']:.1f}{extra} {checks}")
    print(f"(n per network as listed; {N_INPUTS} inputs; HiGHS single-threaded; "
          f"times are wall-clock on this machine, baselines measured in the same run)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 points per network")
    _print(run(quick=parser.parse_args().quick))
