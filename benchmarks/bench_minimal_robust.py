"""MILP-R's minimal margins (issue 51): the first Δ-robust CE against the refined one.

Jiang et al.'s loop returns the first CE that passes the exact Δ-test; raising the margin
overshoots, so that CE keeps more worst-case margin than it needs. ``minimal=True`` (the
default since issue 51) refines the margin between the last margin shown not Δ-robust and the
first robust one (:mod:`robustce.methods.margin_loop`). Per query, interleaved in one run:
``minimal=False`` and ``minimal=True`` on the same network, same δ; reported: L1 distance,
worst-case margin, rounds, time, and how much nearer the refined CE is. Every returned CE is
re-checked Δ-robust by an independent call of the exact test (``is_delta_robust``, decision
path) and valid by a forward pass.

Networks: 34-10-1 (the issue's MCER comparison: δ = 0.005) and 34-50-50-1 on
``bench_milp.py``'s synthetic data; adult 13-50-50-1 at δ = 0.05 where ROBUSTCE_DATA is set.

    python benchmarks/bench_minimal_robust.py [--n 10] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import robustce as rc
from robustce.methods import MILPRobust
from robustce.robustness import ParameterShift, is_delta_robust

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_milp import _queries, _synthetic  # noqa: E402


def _setups(quick: bool) -> list[tuple[str, Any, Any, Any, float]]:
    syn, syn_test = _synthetic().split(0.2, random_state=0)
    out = [("34-10-1", syn, syn_test,
            rc.models.MLP((10,), epochs=30, random_state=0).fit(syn), 0.005)]
    if not quick:
        out.append(("34-50-50-1", syn, syn_test,
                    rc.models.MLP((50, 50), epochs=30, random_state=0).fit(syn), 0.005))
        try:
            from robustce.data import loaders

            train, test = loaders.load_adult().split(0.2, random_state=0)
            am = rc.models.MLP((50, 50), epochs=20, batch_size=32, lr=0.01, weight_decay=2e-4,
                               random_state=0).fit(train)
            out.append(("adult 13-50-50-1", train, test, am, 0.05))
        except rc.errors.RobustCEError as exc:  # no offline data: the synthetic rows only
            print(f"adult skipped: {exc}", file=sys.stderr)
    return out


def compare(name: str, train: Any, test: Any, model: Any, delta: float, n: int) -> dict[str, Any]:
    """Both settings per query, interleaved; one summary row."""
    shift = ParameterShift(delta)
    make = {flag: MILPRobust(model, train, shift=delta, time_limit=120, minimal=flag)
            for flag in (False, True)}
    queries = _queries(test, model, n)
    per: dict[bool, dict[str, list[float]]] = {f: {"l1": [], "wc": [], "rounds": [], "s": []}
                                               for f in (False, True)}
    both = checked = 0
    for i in range(len(queries)):
        q = queries.iloc[[i]]
        got = {}
        for flag in ((False, True) if i % 2 == 0 else (True, False)):
            t0 = time.perf_counter()
            got[flag] = make[flag].explain(q)
            per[flag]["s"].append(time.perf_counter() - t0)
        if not all(r.status.iloc[0] == "found" for r in got.values()):
            continue
        both += 1
        for flag, r in got.items():
            cert = r.certificates.iloc[0]
            per[flag]["l1"].append(float(cert["distance"]))
            per[flag]["wc"].append(float(cert["worst_case_margin"]))
            per[flag]["rounds"].append(float(cert["rounds"]))
            cf = r.counterfactuals_encoded
            assert model.predict(r.counterfactuals[r.feature_names]).tolist() == [1]
            assert is_delta_robust(model, cf, shift, 1).all(), (name, i, flag)
            checked += 1
    first, refined = per[False], per[True]
    nearer = [100 * (a - b) / a for a, b in zip(first["l1"], refined["l1"], strict=True)]
    return {
        "network": name, "delta": delta, "queries": len(queries), "both_found": both,
        "robust_rechecked": checked,
        "l1_first_median": statistics.median(first["l1"]) if both else None,
        "l1_minimal_median": statistics.median(refined["l1"]) if both else None,
        "nearer_pct_median": statistics.median(nearer) if both else None,
        "nearer_pct_max": max(nearer) if both else None,
        "farther_queries": sum(x < -1e-9 for x in nearer),
        "worst_margin_first_median": statistics.median(first["wc"]) if both else None,
        "worst_margin_minimal_median": statistics.median(refined["wc"]) if both else None,
        "rounds_first_mean": float(np.mean(first["rounds"])) if both else None,
        "rounds_minimal_mean": float(np.mean(refined["rounds"])) if both else None,
        "time_ratio_median": statistics.median(
            b / a for a, b in zip(first["s"], refined["s"], strict=True)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10, help="queries per network (default 10)")
    ap.add_argument("--quick", action="store_true", help="34-10-1 only")
    args = ap.parse_args()
    for setup in _setups(args.quick):
        print(compare(*setup, n=args.n), flush=True)


if __name__ == "__main__":
    main()
