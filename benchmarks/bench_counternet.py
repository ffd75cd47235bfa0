"""CounterNet / RoCourseNet: training time per epoch and inference time per 1 000 queries.

* **training** — CounterNet vs RoCourseNet (paper defaults: T = 7, K = 2, ε = 0.1, Adam inner
  steps) on the same rows of RoCourseNet's loan data (year 2007, a random subset: loan's 449 152
  rows take far longer than a benchmark run on a shared CPU), the network of the authors' loan
  script (``BirkhoffG/RoCourseNet`` ``scripts/utils_configs.py``: encoder (50, 10), predictor
  (10,), explainer (50, 50); 5 epochs), batch 128. Per-epoch time is the mean over epochs 2.. (epoch 1 pays
  the one-off torch.func warm-up); the full-loan epoch time is extrapolated linearly in rows.
  The paper's Table 8 ratio (RoCourseNet / CounterNet training time) is the anchor.
* **inference** — one CE per query for 1 000 loan test queries: the amortised forward pass
  (``counterfactuals``: network + projection to exact encodings) and the full ``explain``
  (encoding, re-validation, packing), against Wachter on CounterNet's own predictor for the
  same queries (per 1 000 queries; Wachter on a subset in ``--quick``). The forward pass is
  reported as wall time and as process CPU time (what it costs on a core of its own: on a shared,
  oversubscribed machine the wall time mostly measures waiting for a core).
* **ROAR / RBR vs one forward pass** — the RoCourseNet paper's Table 9 comparison (ROAR ≈ 200×,
  RBR ≈ 500× the RoCourseNet inference time per CE, loan): :class:`ROAR` (ROAR-LIME) and
  :class:`RBR` with their defaults explain the first ``n_posthoc`` test queries on CounterNet's
  own predictor (the network the paper's baselines would explain differs only in its head;
  their cost is dominated by LIME sampling / the neighbour segments and the descent), time per
  CE = one ``explain`` wall time / queries; against the forward pass on the *same* queries, per
  CE batched (``counterfactuals`` on all of them / queries) and one query at a time (the
  latency of a single request, the paper's "single CF example"). A CounterNet trained for
  ``INFERENCE_EPOCHS`` serves (long enough that its predictor is not constant, so there are CEs
  to find): a forward pass costs the same whatever the weights, and RoCourseNet's network is
  the same shape.

    python benchmarks/bench_counternet.py            # 10 000 training rows, 1 000 queries
    python benchmarks/bench_counternet.py --quick    # 2 000 rows, Wachter on 200 queries,
                                                     # ROAR / RBR on 20 (full: 100)
    python benchmarks/bench_counternet.py --posthoc-only   # only the ROAR / RBR rows

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
from robustce.methods import RBR, ROAR, CounterNet, RoCourseNet, Wachter

FULL_LOAN_ROWS = 449_152  # years 1994-2009, the paper's data
LOAN_NET = ((50, 10), (10,), (50, 50))  # the authors' loan script
LOAN_EPOCHS = 5  # the authors' loan script
INFERENCE_EPOCHS = 20


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
    n_posthoc = 20 if quick else 100
    train, test = _data(n_train, 1_000)
    kw = dict(hidden=LOAN_NET, epochs=epochs, batch_size=128, random_state=0, progress=False,
              device=device)
    cn = CounterNet(**kw).fit(train)
    rcn = RoCourseNet(**kw).fit(train)
    # a few epochs leave the small loan network a constant predictor (no CE to time): the
    # inference rows use a CounterNet trained to a working predictor
    cn = CounterNet(**{**kw, "epochs": INFERENCE_EPOCHS}).fit(train)
    cn_s, rcn_s = _epoch_seconds(cn), _epoch_seconds(rcn)
    rows: list[dict[str, Any]] = [{
        "name": f"training epoch on {len(train)} loan rows: RoCourseNet (T=7, K=2) vs CounterNet",
        "seconds": rcn_s, "baseline_seconds": cn_s, "ratio": cn_s / rcn_s,
        "benchmark": "counternet_train_epoch", "dataset": "loan 2007 subset", "n": len(train),
        "device": device, "load_average_1min": os.getloadavg()[0],
        "rocoursenet_over_counternet": rcn_s / cn_s,
        "full_loan_epoch_s_counternet": cn_s * FULL_LOAN_ROWS / len(train),
        "full_loan_epoch_s_rocoursenet": rcn_s * FULL_LOAN_ROWS / len(train),
        "full_loan_training_min_rocoursenet": LOAN_EPOCHS * rcn_s * FULL_LOAN_ROWS / len(train) / 60,
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
    rows += _posthoc_vs_forward(cn, train, X[:n_posthoc])
    return rows


def run_posthoc(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    """Only the ROAR / RBR vs forward-pass rows."""
    n_train, n_posthoc = (2_000, 20) if quick else (10_000, 100)
    train, test = _data(n_train, 1_000)
    cn = CounterNet(hidden=LOAN_NET, epochs=INFERENCE_EPOCHS, batch_size=128, random_state=0,
                    progress=False, device=device).fit(train)
    return _posthoc_vs_forward(cn, train, cn.encoder.transform(test.frame)[:n_posthoc])


def _forward_per_ce(cn: CounterNet, X: np.ndarray, repeats: int = 20) -> tuple[float, float]:
    """Median seconds per CE of the forward pass: batched over X, and one query per call."""
    batched, single = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        cn.counterfactuals(X)
        batched.append((time.perf_counter() - t0) / len(X))
    for x in X:
        t0 = time.perf_counter()
        cn.counterfactuals(x[None, :])
        single.append(time.perf_counter() - t0)
    return float(np.median(batched)), float(np.median(single))


def _posthoc_vs_forward(cn: CounterNet, train: Any, X: np.ndarray) -> list[dict[str, Any]]:
    batched_s, single_s = _forward_per_ce(cn, X)
    rows = []
    for label, ex in (("ROAR (ROAR-LIME)", ROAR(cn.model, train, random_state=0)),
                      ("RBR", RBR(cn.model, train, random_state=0))):
        ex.explain(X[:1])  # warm-up, untimed: lazy imports, torch and sklearn start-up
        t0 = time.perf_counter()
        res = ex.explain(X)
        per_ce = (time.perf_counter() - t0) / len(X)
        rows.append({
            "name": f"{label} per CE vs CounterNet forward pass per CE, {len(X)} loan queries "
                    "(batched)",
            "seconds": batched_s, "baseline_seconds": per_ce, "ratio": per_ce / batched_s,
            "benchmark": "posthoc_vs_forward", "method": label, "dataset": "loan 2007",
            "n_queries": len(X), "method_s_per_ce": per_ce,
            "forward_batched_s_per_ce": batched_s, "forward_single_s_per_ce": single_s,
            "ratio_vs_single_query_forward": per_ce / single_s,
            "found": float((res.status == "found").mean()),
            "paper_ratio": 200 if label.startswith("ROAR") else 500,
            "load_average_1min": os.getloadavg()[0],
        })
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--posthoc-only", action="store_true",
                    help="only ROAR / RBR against the forward pass (no RoCourseNet training)")
    args = ap.parse_args()
    for row in (run_posthoc if args.posthoc_only else run)(args.quick, args.device):
        print(json.dumps(row, default=float))


if __name__ == "__main__":
    main()
