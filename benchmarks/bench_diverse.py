"""Speed of DiverseRobust (Leofante & Potyka) per query, against DiCE and a sequential loop,
measured in one run on the paper's settings.

Per dataset (diabetes with α = 50, spambase with α = 1000; 20-10 ReLU MLP; angle filter
β = 0.5, γ = 0.1, at most 5 CEs, L1; all features free as in the paper):

* ``build`` — encoding and classifying the training data and building the two KD-trees (once);
* ``method time`` — the time the method itself spends on one query (``Explanations.timings``,
  as the paper's "Time" column) in one-row ``explain`` calls, trees built: median over queries;
* ``explain(one row)`` — the same calls end to end (encoding the raw row, re-validation, decoding
  and packing the result: a fixed cost shared by every method), median (what one applicant
  waits for);
* ``explain(all)`` — one call for all queries, end to end, divided by n;
* ``explain(k rows)`` — one call for the k queries DiCE is timed on, end to end, divided by k,
  against one DiCE call over the same k queries (dice-ml explains them one after another);
* ``CPU`` — the same medians in CPU seconds of this process (``time.process_time``), which a
  busy shared machine inflates far less than wall time;
* baselines measured on the same queries, model and machine:
  ``loop`` — the authors' prototype written plainly: per query a KD-tree over the target class,
  a Python greedy filter, and a line search with one forward pass per step and survivor (its
  CEs are checked to be the same as ours); ``dice-random`` / ``dice-genetic`` — dice-ml 0.12 via
  :class:`robustce.methods.DiCE` (5 CEs per query, its default parameters except the post-hoc
  sparsity pass of random, off in the adapter — its output is not returned), median and mean
  per query (its time varies a lot between queries: on diabetes genetic's mean is several times
  its median), on the first few queries only (it is slow); skipped when dice-ml is not installed. dice-ml's
  gradient method (tens of CPU seconds per query here) is not timed: it is slower than both.

Targets (issue 14): median per query < 5 ms on diabetes, < 50 ms on spambase, and ≥ 100× the
fastest DiCE method (the summary prints each comparison: medians, means, CPU, batched).

    python benchmarks/bench_diverse.py            # 20 queries, DiCE on 10 (diabetes) / 5 (spambase)
    python benchmarks/bench_diverse.py --quick    # 10 queries, DiCE on 2 / 1

``run(quick)`` returns one dict per measurement (``name``, ``seconds``, ``baseline_seconds``,
``ratio``) for ``benchmarks/run_all.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

import robustce as rc
from robustce.methods import DiverseRobust

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"diabetes": 50, "spambase": 1000}  # α per dataset (the paper)
PARAMS = {"n_counterfactuals": 5, "beta": 0.5, "gamma": 0.1, "norm": "l1", "filter": "angle"}


def _setup(name: str, n_queries: int) -> tuple[Any, Any, Any]:
    if "ROBUSTCE_DATA" not in os.environ:
        shared = (ROOT / ".." / "shared" / "datasets").resolve()
        if shared.is_dir():
            os.environ["ROBUSTCE_DATA"] = str(shared)
    data = rc.datasets.load(name)
    free = data.schema.with_actionability(**{n: "free" for n in data.schema.immutable})
    data = dataclasses.replace(data, schema=free)
    train, test = data.split(test_size=0.2, random_state=0)
    model = rc.models.MLP((20, 10), epochs=30, random_state=0).fit(train)
    queries = test.frame[model.predict(test.frame) == 0].iloc[:n_queries]
    return model, train, queries


def _loop(model: Any, train: Any, queries: Any, alpha: int) -> list[np.ndarray]:
    """The sequential prototype: per query a tree, a Python filter, a per-step line search."""
    enc = model.encoder
    Xtr = enc.transform(train.frame)
    pred = model.predict(Xtr)
    out = []
    for x in enc.transform(queries):
        t = 1 - int(model.predict(x[None])[0])
        cand = np.unique(Xtr[pred == t], axis=0)
        _, idx = cKDTree(cand).query(x, k=min(alpha, len(cand)), p=1)
        kept: list[tuple[np.ndarray, np.ndarray]] = []
        for j in np.atleast_1d(idx):
            u = cand[j] - x
            u = u / np.linalg.norm(u)
            if all(abs(float(u @ v)) <= PARAMS["beta"] for _, v in kept):
                kept.append((cand[j], u))
                if len(kept) == PARAMS["n_counterfactuals"]:
                    break
        ces = []
        for c, _ in kept:
            lo, hi, best = x.copy(), c.copy(), c.copy()
            while np.abs(hi - lo).sum() > PARAMS["gamma"]:
                mid = 0.5 * (lo + hi)
                p = enc.project(mid[None])
                if model.predict(p)[0] == t:
                    hi, best = mid, p[0]
                else:
                    lo = mid
            ces.append(best)
        out.append(np.array(ces))
    return out


def _same_sets(res: Any, loop: list[np.ndarray]) -> bool:
    ids = res.counterfactuals["query_id"].to_numpy()
    for qid, ces in zip(res.queries.index, loop, strict=True):
        ours = res.counterfactuals_encoded[ids == qid]
        if ours.shape != ces.shape or not np.allclose(ours, ces, atol=1e-9):
            return False
    return True


def _dice_times(model: Any, train: Any, queries: Any, method: str
                ) -> tuple[list[float], list[float], int]:
    """(wall seconds, CPU seconds, found) of one-row DiCE explain calls."""
    from robustce.methods.dice import DiCE

    ex = DiCE(model, train, n_counterfactuals=PARAMS["n_counterfactuals"], method=method,
              random_state=0)
    times, cpu, found = [], [], 0
    for i in range(len(queries)):
        t0, c0 = time.perf_counter(), time.process_time()
        r = ex.explain(queries.iloc[[i]])
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        found += int(r.status.iloc[0] == "found")
    return times, cpu, found


def _dice_batched(model: Any, train: Any, queries: Any, method: str) -> float:
    """Wall seconds per query of one DiCE ``explain`` call over all ``queries``."""
    from robustce.methods.dice import DiCE

    ex = DiCE(model, train, n_counterfactuals=PARAMS["n_counterfactuals"], method=method,
              random_state=0)
    ex.explain(queries.iloc[:1])  # warm-up: dice-ml's data and model objects, imports
    t0 = time.perf_counter()
    ex.explain(queries)
    return (time.perf_counter() - t0) / len(queries)


def run(quick: bool = False) -> list[dict[str, Any]]:
    n_queries = 10 if quick else 20
    rows: list[dict[str, Any]] = []
    try:
        import dice_ml  # noqa: F401

        have_dice = True
    except ImportError:
        have_dice = False
    for name, alpha in SETTINGS.items():
        model, train, queries = _setup(name, n_queries)
        n_dice = (2 if name == "diabetes" else 1) if quick else (10 if name == "diabetes" else 5)
        base = {"dataset": name, "alpha": alpha, "n_queries": len(queries)}

        ex = DiverseRobust(model, train, alpha=alpha, **PARAMS)
        t0 = time.perf_counter()
        ex._nn._training()
        ex.index(0), ex.index(1)
        build_s = time.perf_counter() - t0

        ex.explain(queries.iloc[[0]])  # warm-up (imports, caches)
        per_call, method, call_cpu, method_cpu = [], [], [], []
        X = model.encoder.transform(queries)
        for i in range(len(queries)):
            t0, c0 = time.perf_counter(), time.process_time()
            r = ex.explain(queries.iloc[[i]])
            per_call.append(time.perf_counter() - t0)
            call_cpu.append(time.process_time() - c0)
            method.append(float(r.timings.iloc[0]))
            c0 = time.process_time()
            ex._explain_batch(X[i:i + 1], np.ones(1, dtype=np.int64))
            method_cpu.append(time.process_time() - c0)
        call_s, method_s = statistics.median(per_call), statistics.median(method)
        call_c, method_c = statistics.median(call_cpu), statistics.median(method_cpu)
        t0 = time.perf_counter()
        res = ex.explain(queries)
        batched_s = (time.perf_counter() - t0) / len(queries)
        valid = bool((model.predict(res.counterfactuals_encoded) == 1).all())
        n_ces = float(res.counterfactuals.groupby("query_id").size().mean())

        t0 = time.perf_counter()
        loop = _loop(model, train, queries, alpha)
        loop_s = (time.perf_counter() - t0) / len(queries)
        agree = _same_sets(res, loop)
        common = {**base, "valid": valid, "mean_ces": round(n_ces, 2)}
        tag = f"DiverseRobust {name} (α={alpha})"
        rows.append({**common, "name": f"{tag}: KD-trees + training encoding, built once",
                     "seconds": build_s, "baseline_seconds": None, "ratio": None})
        rows.append({**common, "name": f"{tag}: method time per query (one-row calls, median) "
                     "vs sequential loop", "kind": "method", "seconds": method_s,
                     "baseline_seconds": loop_s, "ratio": loop_s / method_s, "agree": agree})
        rows.append({**common, "name": f"{tag}: explain(one row) end to end, median vs "
                     "sequential loop", "kind": "call", "seconds": call_s,
                     "baseline_seconds": loop_s, "ratio": loop_s / call_s, "agree": agree})
        rows.append({**common, "name": f"{tag}: explain(all) end to end, per query vs "
                     "sequential loop", "kind": "batched", "seconds": batched_s,
                     "baseline_seconds": loop_s, "ratio": loop_s / batched_s, "agree": agree})
        rows.append({**common, "name": f"{tag}: CPU time per query, method (median)",
                     "kind": "method-cpu", "seconds": method_c, "baseline_seconds": None,
                     "ratio": None})
        rows.append({**common, "name": f"{tag}: CPU time per query, explain(one row) (median)",
                     "kind": "call-cpu", "seconds": call_c, "baseline_seconds": None,
                     "ratio": None})
        if have_dice:
            few = queries.iloc[:n_dice]
            ours_few = []
            for _ in range(5):
                t0 = time.perf_counter()
                ex.explain(few)
                ours_few.append((time.perf_counter() - t0) / n_dice)
            few_s = statistics.median(ours_few)
            for method_name in ("genetic", "random"):
                times, cpu, found = _dice_times(model, train, few, method_name)
                dice_s, dice_c = statistics.median(times), statistics.median(cpu)
                dice_few = _dice_batched(model, train, few, method_name)
                rows.append({**common, "name": f"{tag}: explain({n_dice} rows) per query vs "
                             f"DiCE-{method_name} explain({n_dice} rows) per query, end to end",
                             "kind": "dice-batched", "seconds": few_s,
                             "baseline_seconds": dice_few, "ratio": dice_few / few_s})
                what = f"DiCE-{method_name} explain(one row) median ({n_dice} queries, {found} found)"
                mean_what = what.replace("median", "mean")
                for kind, ours, theirs, label in (
                        ("method-mean", statistics.mean(method), statistics.mean(times),
                         "method wall, mean"),
                        ("call", call_s, dice_s, "explain(one row) wall"),
                        ("method", method_s, dice_s, "method wall"),
                        ("call-cpu", call_c, dice_c, "explain(one row) CPU"),
                        ("method-cpu", method_c, dice_c, "method CPU")):
                    rows.append({**common, "name": f"{tag}: {label} vs "
                                 f"{mean_what if kind == 'method-mean' else what}",
                                 "kind": f"dice-{kind}", "seconds": ours,
                                 "baseline_seconds": theirs, "ratio": theirs / ours})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 queries, DiCE on 2 / 1")
    args = parser.parse_args()
    rows = run(quick=args.quick)
    for r in rows:
        base = "" if r["baseline_seconds"] is None else \
            f"  baseline {r['baseline_seconds'] * 1e3:9.2f} ms  ratio {r['ratio']:8.1f}×"
        check = f"  agree={r['agree']}" if "agree" in r else ""
        print(f"{r['name']:<95} {r['seconds'] * 1e3:8.2f} ms{base}{check}  valid={r['valid']}")
    for name, limit in (("diabetes", 5e-3), ("spambase", 50e-3)):
        for kind, what in (("method", "method time"), ("call", "explain(one row)"),
                           ("batched", "explain(all) per query"), ("method-cpu", "method CPU"),
                           ("call-cpu", "explain(one row) CPU")):
            r = [r for r in rows if r["dataset"] == name and r.get("kind") == kind]
            if r:
                s = r[0]["seconds"]
                print(f"{name}: {what} {s * 1e3:.2f} ms (target < {limit * 1e3:.0f} ms): "
                      f"{'met' if s < limit else 'NOT met'}")
        for kind in ("dice-method", "dice-method-mean", "dice-call", "dice-method-cpu",
                     "dice-call-cpu", "dice-batched"):
            dice = [r["ratio"] for r in rows if r["dataset"] == name and r.get("kind") == kind]
            if dice:
                print(f"{name}: {kind[5:]} vs the fastest DiCE method {min(dice):.0f}× "
                      "(target ≥ 100×)")

if __name__ == "__main__":
    main()
