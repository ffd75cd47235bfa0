"""Speed of NearestNeighbour and of the metrics: batched vs per-query, measured in one run.

NearestNeighbour on 10 000 adult queries (CARLA adult, the loader's five immutable features,
``education-num`` increase-only) against

* ``loop_rebuild`` — what one writes without batching (and what RobustX does): per query,
  filter the training points of the target class by immutables and monotone features, build a
  KD-tree over them and query it;
* ``loop_shared`` — the same explainer's index (one tree per class) asked one query at a time;
* ``explain_per_query`` — the public API called once per query (``explain(one_row)``) on one
  explainer whose index is built once: how a user loop over applicants looks.

Both baselines get the encoded training data and the model's predictions for free (computed
before timing); the batched path is timed end to end (``explain``: encoding, prediction, index
construction, search, re-validation). Results are checked to agree (same CE distances).

The metrics part times :func:`robustce.evaluation.evaluate`'s vectorised distances, validity
and sparsity against a per-query loop computing the same numbers, and checks equality.

    python benchmarks/bench_nn.py            # 10 000 queries, 3 repeats of the batched path
    python benchmarks/bench_nn.py --quick    # 2 000 queries, 1 repeat

Without the offline datasets (``ROBUSTCE_DATA`` or ``../shared/datasets``) it falls back to
the built-in synthetic loan data. ``run(quick)`` returns one dict per measurement.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

import robustce as rc
from robustce.evaluation import metrics as M
from robustce.methods.nearest_neighbour import NearestNeighbour

ROOT = Path(__file__).resolve().parents[1]


def _data() -> rc.data.Dataset:
    if "ROBUSTCE_DATA" not in os.environ:
        shared = (ROOT / ".." / "shared" / "datasets").resolve()
        if shared.is_dir():
            os.environ["ROBUSTCE_DATA"] = str(shared)
    try:
        data = rc.datasets.load("adult")
        schema = data.schema.with_actionability(**{"education-num": "increase"})
    except rc.errors.RobustCEError:
        data = rc.datasets.load("synthetic_loan", n_samples=40_000, random_state=0)
        schema = data.schema
    return dataclasses.replace(data, schema=schema)


def _loop_rebuild(model: Any, Xtr: np.ndarray, pred: np.ndarray, X: np.ndarray,
                  targets: np.ndarray) -> np.ndarray:
    """Per query: filter reachable target-class points, build a tree, query it."""
    enc = model.encoder
    imm, inc, dec = enc.immutable_mask_, enc.increasing_mask_, enc.decreasing_mask_
    out = np.full(len(X), np.nan)
    for i, (x, t) in enumerate(zip(X, targets, strict=True)):
        cand = Xtr[pred == t]
        diff = cand - x
        ok = np.all(np.abs(diff[:, imm]) <= 1e-9, axis=1)
        ok &= np.all(diff[:, inc] >= -1e-7, axis=1) & np.all(diff[:, dec] <= 1e-7, axis=1)
        if ok.any():
            dist, _ = cKDTree(cand[ok]).query(x, k=1, p=1)
            out[i] = dist
    return out


def _loop_metrics(model: Any, X: np.ndarray, C: np.ndarray, t: np.ndarray) -> np.ndarray:
    enc = model.encoder
    rows = []
    for x, c, k in zip(X, C, t, strict=True):
        d = np.abs(c - x)
        a, b = enc.level_indices(x[None]), enc.level_indices(c[None])
        deltas = []
        for j, blk in enumerate(enc.blocks_):
            f = blk.feature
            if f.kind.is_numeric:
                span = f.upper - f.lower
                deltas.append(abs(a[0, j] - b[0, j]) / span if span > 0 else 0.0)
            elif f.kind is rc.data.FeatureKind.ORDINAL:
                deltas.append(abs(a[0, j] - b[0, j]) / (f.n_levels - 1))
            else:
                deltas.append(float(a[0, j] != b[0, j]))
        deltas = np.array(deltas)
        rows.append([float(model.predict(c[None])[0] == k), (d > 1e-9).sum(), d.sum(),
                     np.sqrt((d * d).sum()), d.max(), deltas.sum(), (deltas > 0).sum()])
    return np.array(rows)


def _vector_metrics(model: Any, X: np.ndarray, C: np.ndarray, t: np.ndarray) -> np.ndarray:
    enc = model.encoder
    delta = M.feature_deltas(enc, X, C)
    return np.column_stack([M.validity(model, C, t), M.proximity(X, C, "l0"),
                            M.proximity(X, C, "l1"), M.proximity(X, C, "l2"),
                            M.proximity(X, C, "linf"), delta.sum(axis=1), (delta > 0).sum(axis=1)])


def _best(fn: Any, repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def run(quick: bool = False) -> list[dict[str, Any]]:
    n_queries = 2_000 if quick else 10_000
    repeats = 1 if quick else 3
    data = _data()
    train, test = data.split(test_size=0.3, random_state=0)
    model = rc.models.MLP((20, 10), epochs=2, random_state=0).fit(train)
    pool = test.frame if len(test) >= n_queries else data.frame
    rows = np.random.default_rng(0).choice(len(pool), size=n_queries, replace=False)
    queries = pool.iloc[np.sort(rows)]
    X = model.encoder.transform(queries)
    targets = 1 - model.predict(X)

    # end to end: a fresh explainer each time (encoding, prediction, index, search, re-validation)
    fast_s, res = _best(lambda: NearestNeighbour(model, train).explain(queries), repeats)

    # search only: like the baselines, the training data is encoded and classified beforehand;
    # timed: building the two class indices and one batched search
    def search() -> tuple[float, list]:
        nn = NearestNeighbour(model, train)
        nn._training()
        t0 = time.perf_counter()
        out = nn._explain_batch(X, targets)
        return time.perf_counter() - t0, out

    search_s = min(search()[0] for _ in range(max(repeats, 3)))
    Xtr = model.encoder.transform(train.frame)
    pred = model.predict(Xtr)
    loop_s, loop_dist = _best(lambda: _loop_rebuild(model, Xtr, pred, X, targets), 1)
    nn = NearestNeighbour(model, train)
    nn.index(0), nn.index(1)

    def shared() -> list:
        return [nn._explain_batch(X[i:i + 1], targets[i:i + 1])[0] for i in range(len(X))]

    shared_s, _ = _best(shared, 1)

    # what a user loop looks like: explain() called once per query on one explainer (its index
    # built once); compared with one explain() call on all queries
    def per_query_explain() -> np.ndarray:
        one = NearestNeighbour(model, train)
        return np.array([one.explain(queries.iloc[i:i + 1]).certificates["distance"].iloc[0]
                         for i in range(len(queries))], dtype=float)

    per_call_s, call_dist = _best(per_query_explain, 1)
    fast_dist = res.certificates["distance"].to_numpy(dtype=float)
    agree = bool(np.array_equal(np.isnan(fast_dist), np.isnan(loop_dist))
                 and np.allclose(fast_dist[~np.isnan(fast_dist)], loop_dist[~np.isnan(loop_dist)],
                                 rtol=1e-9, atol=1e-12))

    pos, C = res.first_counterfactuals()
    Xq, tq = res.queries_encoded[pos], res.target_class.to_numpy()[pos]
    mv_s, mv = _best(lambda: _vector_metrics(model, Xq, C, tq), max(repeats, 3))
    ml_s, ml = _best(lambda: _loop_metrics(model, Xq, C, tq), 1)
    metrics_agree = bool(np.allclose(mv, ml, rtol=1e-9, atol=1e-12))
    found = int((res.status == "found").sum())
    base = {"dataset": data.name, "n_queries": n_queries, "n_found": found}
    calls_agree = bool(np.array_equal(np.isnan(fast_dist), np.isnan(call_dist))
                       and np.allclose(fast_dist[~np.isnan(fast_dist)], call_dist[~np.isnan(call_dist)],
                                       rtol=1e-9, atol=1e-12))
    return [
        {**base, "benchmark": "nn_explain", "baseline": "explain_per_query", "fast_s": fast_s,
         "baseline_s": per_call_s, "speedup": per_call_s / fast_s, "agree": calls_agree},
        {**base, "benchmark": "nn_explain", "baseline": "loop_rebuild", "fast_s": fast_s,
         "baseline_s": loop_s, "speedup": loop_s / fast_s, "agree": agree},
        {**base, "benchmark": "nn_search", "baseline": "loop_rebuild", "fast_s": search_s,
         "baseline_s": loop_s, "speedup": loop_s / search_s, "agree": agree},
        {**base, "benchmark": "nn_search", "baseline": "loop_shared", "fast_s": search_s,
         "baseline_s": shared_s, "speedup": shared_s / search_s, "agree": True},
        {**base, "benchmark": "metrics", "baseline": "loop", "n_ces": len(C), "fast_s": mv_s,
         "baseline_s": ml_s, "speedup": ml_s / mv_s, "agree": metrics_agree},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 000 queries, one repeat")
    args = parser.parse_args()
    rows = run(quick=args.quick)
    print(f"dataset {rows[0]['dataset']}: {rows[0]['n_queries']} queries, "
          f"{rows[0]['n_found']} with a CE")
    print(f"{'benchmark':<18} {'baseline':<13} {'batched s':>10} {'baseline s':>11} "
          f"{'speedup':>8}  agree")
    for r in rows:
        print(f"{r['benchmark']:<18} {r['baseline']:<13} {r['fast_s']:>10.4f} "
              f"{r['baseline_s']:>11.4f} {r['speedup']:>7.1f}×  {r['agree']}")
    for r in rows:
        if r["baseline"] in ("loop_rebuild", "explain_per_query"):
            print(f"{r['benchmark']} vs {r['baseline']}: {r['speedup']:.1f}× (target ≥ 20×)")


if __name__ == "__main__":
    main()
