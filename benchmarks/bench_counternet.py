"""CounterNet / RoCourseNet: training time per epoch and inference time per 1 000 queries.

* **training** — CounterNet vs RoCourseNet (paper defaults: T = 7, K = 2, ε = 0.1, Adam inner
  steps) on the same rows of RoCourseNet's loan data (year 2007, a random subset: loan's 449 152
  rows take far longer than a benchmark run on a shared CPU), the authors' loan network
  ((200, 50), (50,), (50,)), batch 128. Per-epoch time is the mean over epochs 2.. (epoch 1 pays
  the one-off torch.func warm-up); the full-loan epoch time is extrapolated linearly in rows.
  The paper's Table 8 ratio (RoCourseNet / CounterNet training time) is the anchor.
* **inference** — one CE per query for 1 000 loan test queries: the amortised forward pass
  (``counterfactuals``: network + projection to exact encodings) and the full ``explain``
  (encoding, re-validation, packing), against Wachter on CounterNet's own predictor for the
  same queries (per 1 000 queries; Wachter on a subset in ``--quick``). The forward pass is
  reported as wall time and as process CPU time (what it costs on a core of its own: on a shared,
  oversubscribed machine the wall time mostly measures waiting for a core).

    python benchmarks/bench_counternet.py            # 10 000 training rows, 1 000 queries
    python benchmarks/bench_counternet.py --quick    # 2 000 rows, Wachter on 200 queries

``run(quick)`` returns one dict per measurement (for ``benchmarks/run_all.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

import robustce as rc
from robustce.methods import CounterNet, RoCourseNet, Wachter

FULL_LOAN_ROWS = 449_152  # years 1994-2009, the paper's data


def _data(n_train: int, n_test: int):
    # 2007: 40 % approvals; early years (1994: 96 %) give a constant predictor and no valid CE
    data = rc.datasets.load("loan", years=[2007])
    rows = np.random.default_rng(0).choice(len(data), size=n_train + n_test, replace=False)
    part = data.subset(np.sort(rows))
    return part.split(test_size=n_test / (n_train + n_test), random_state=0)


def _epoch_seconds(model: CounterNet) -> float:
    t = np.asarray(model.epoch_times_)
    return float(t[1:].mean() if len(t) > 1 else t.mean())


def run(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    n_train, epochs, n_wachter = (2_000, 2, 200) if quick else (10_000, 3, 1_000)
    train, test = _data(n_train, 1_000)
    kw = dict(epochs=epochs, batch_size=128, random_state=0, progress=False, device=device)
    cn = CounterNet(**kw).fit(train)
    rcn = RoCourseNet(**kw).fit(train)
    cn_s, rcn_s = _epoch_seconds(cn), _epoch_seconds(rcn)
    rows: list[dict[str, Any]] = [{
        "name": f"training epoch on {len(train)} loan rows: RoCourseNet (T=7, K=2) vs CounterNet",
        "seconds": rcn_s, "baseline_seconds": cn_s, "ratio": cn_s / rcn_s,
        "benchmark": "counternet_train_epoch", "dataset": "loan 2007 subset", "n": len(train),
        "device": device, "load_average_1min": os.getloadavg()[0],
        "rocoursenet_over_counternet": rcn_s / cn_s,
        "full_loan_epoch_s_counternet": cn_s * FULL_LOAN_ROWS / len(train),
        "full_loan_epoch_s_rocoursenet": rcn_s * FULL_LOAN_ROWS / len(train),
        "full_loan_50_epochs_h_rocoursenet": 50 * rcn_s * FULL_LOAN_ROWS / len(train) / 3600,
    }]

    X = cn.encoder.transform(test.frame)
    cn.counterfactuals(X[:10])  # warm-up
    wall, cpu = [], []
    for _ in range(20):
        w0, c0 = time.perf_counter(), time.process_time()
        cn.counterfactuals(X)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    forward_s, forward_cpu_s = float(np.median(wall)), float(np.median(cpu))
    t0 = time.perf_counter()
    e = cn.explain(test.frame)
    explain_s = time.perf_counter() - t0
    wq = test.frame.iloc[:n_wachter]
    t0 = time.perf_counter()
    w = Wachter(cn.model, train, random_state=0).explain(wq)
    wachter_s = (time.perf_counter() - t0) * len(test) / len(wq)
    rows.append({
        "name": "1 000 loan queries, one CE each: CounterNet forward pass vs Wachter (same model)",
        "seconds": forward_s, "baseline_seconds": wachter_s, "ratio": wachter_s / forward_s,
        "benchmark": "counternet_inference", "dataset": "loan 2007", "n_queries": len(test),
        "forward_ms_per_1000": forward_s * 1e3, "forward_cpu_ms_per_1000": forward_cpu_s * 1e3,
        "explain_ms_per_1000": explain_s * 1e3,
        "wachter_s_per_1000": wachter_s, "wachter_queries_timed": len(wq),
        "counternet_found": float((e.status == "found").mean()),
        "wachter_found": float((w.status == "found").mean()),
        "under_10ms": forward_s * 1e3 < 10, "under_10ms_cpu": forward_cpu_s * 1e3 < 10,
        "load_average_1min": os.getloadavg()[0],
    })
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    for row in run(args.quick, args.device):
        print(json.dumps(row, default=float))


if __name__ == "__main__":
    main()
