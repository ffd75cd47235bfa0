"""ROAR and RBR speed: time per CE against MILP-R on the same queries, measured in one run.

Diabetes (``rc.datasets.load``), 80/20 split with seed 0, the APΔS Table 1 network for it (one
hidden ReLU layer of 8 units, 100 epochs, batch 8, lr 0.01) trained on the training split; the
first 10 test rows the model puts in class 0 (``--quick``: 5) are explained towards class 1.

* ``roar per CE`` — :class:`ROAR` (ROAR-LIME, δ_max 0.1, the library defaults): wall time of one
  batched ``explain`` call divided by the number of queries.
* ``rbr per CE`` — :class:`RBR` (the authors' defaults: ε₊ = ε₋ = 1.5, σ = 1, 1000 neighbours,
  200 samples, 500 steps), the same.
* baseline: :class:`MILPRobust` (MILP-R, δ = 0.11 as APΔS on diabetes, library defaults) on the
  same queries, wall time / queries. ``ratio`` = baseline / ours (> 1: faster than MILP-R).

Each method first explains one query untimed (lazy imports and start-up are not per-CE costs).

    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_roar_rbr.py [--quick]

``run(quick)`` returns one dict per measurement (see ``run_all.py``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

import robustce as rc
from robustce.methods import RBR, ROAR, MILPRobust

ROOT = Path(__file__).resolve().parents[1]


def _per_query(ex: Any, q: Any) -> tuple[float, Any]:
    ex.explain(q.iloc[:1])  # warm-up, untimed: lazy imports (sklearn, highspy), torch init
    t0 = time.perf_counter()
    res = ex.explain(q)
    return (time.perf_counter() - t0) / len(q), res


def run(quick: bool = False) -> list[dict[str, Any]]:
    if "ROBUSTCE_DATA" not in os.environ:
        shared = (ROOT / ".." / "shared" / "datasets").resolve()
        if shared.is_dir():
            os.environ["ROBUSTCE_DATA"] = str(shared)
    n_queries = 5 if quick else 10
    try:
        data = rc.datasets.load("diabetes")
    except rc.errors.DatasetUnavailableError as exc:
        print(f"skipping diabetes: {exc}")
        return []
    train, test = data.split(test_size=0.2, random_state=0)
    model = rc.models.MLP((8,), epochs=100, batch_size=8, lr=0.01, random_state=0).fit(train)
    pred = model.predict(model.encoder.transform(test.frame))
    q = test.frame.iloc[np.flatnonzero(pred == 0)[:n_queries]]
    base, mr = _per_query(MILPRobust(model, train, shift=0.11, time_limit=60.0), q)
    rows: list[dict[str, Any]] = []
    for label, ex in (("roar", ROAR(model, train, delta_max=0.1, random_state=0)),
                      ("rbr", RBR(model, train, random_state=0))):
        secs, res = _per_query(ex, q)
        rows.append({
            "name": f"{label} per CE / diabetes / vs MILP-R (n_queries={len(q)})",
            "seconds": secs, "baseline_seconds": base, "ratio": base / secs,
            "found": int((res.status == "found").sum()),
            "baseline_found": int((mr.status == "found").sum()),
            "statuses": res.status.value_counts().to_dict(),
        })
        print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 queries")
    args = ap.parse_args()
    for r in run(args.quick):
        print(f"{r['name']}: {r['seconds']:.4f} s vs {r['baseline_seconds']:.4f} s "
              f"= {r['ratio']:.2f}× (found {r['found']} vs {r['baseline_found']})")
