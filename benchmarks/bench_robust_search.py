"""Wacht-R, Proto-R and RobXNN speed against MILP-R on the same queries, measured in one run.

Diabetes with every feature free (the loader marks three continuous features immutable, which
leaves neighbour-based methods such as RobXNN without candidates), the APΔS Table 1 network
(one hidden layer of 8 ReLUs, lr 0.01, batch 8, 100 epochs; 80/20 split, trained on the random
half D1 of the training split, seed 0), δ = 0.02 (at APΔS's δ = 0.11 this network reaches a
margin of at most 0.58 and no method finds a Δ-robust CE); the first 10 test rows the
model puts in class 0 (``--quick``: 5). Per method: seconds per query (the batch's wall time
divided by the queries: Wacht-R, Proto-R and RobX explain the batch at once, MILP-R one query
after another) and seconds per CE found; baseline: :class:`MILPRobust` (library defaults) on the
same queries. ``ratio`` = MILP-R seconds / method seconds (> 1: faster than MILP-R).

    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_robust_search.py [--quick]

``run(quick)`` returns one dict per measurement (see ``run_all.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

import robustce as rc
from robustce.methods import MILPRobust, ProtoRobust, RobX, WachterRobust
from robustce.models.families import split_halves

ROOT = Path(__file__).resolve().parents[1]
DELTA = 0.02


def _setup(seed: int = 0) -> tuple[Any, Any, Any]:
    data = rc.datasets.load("diabetes")
    data = dataclasses.replace(data, schema=data.schema.with_actionability(
        **{name: "free" for name in data.schema.immutable}))
    train, test = data.split(test_size=0.2, random_state=seed)
    d1, _ = split_halves(train, random_state=seed)
    model = rc.models.MLP((8,), epochs=100, batch_size=8, lr=0.01, random_state=seed).fit(d1)
    return train, test, model


def _timed(explainer: Any, q: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    res = explainer.explain(q)
    return time.perf_counter() - t0, res


def run(quick: bool = False) -> list[dict[str, Any]]:
    if "ROBUSTCE_DATA" not in os.environ:
        shared = (ROOT / ".." / "shared" / "datasets").resolve()
        if shared.is_dir():
            os.environ["ROBUSTCE_DATA"] = str(shared)
    train, test, model = _setup()
    pred = model.predict(model.encoder.transform(test.frame))
    q = test.frame.iloc[np.flatnonzero(pred == 0)[: 5 if quick else 10]]
    base_s, base = _timed(MILPRobust(model, train, shift=DELTA, time_limit=60.0), q)
    base_found = int((base.status == "found").sum())
    methods = {
        "Wacht-R": WachterRobust(model, train, shift=DELTA, time_limit=120.0),
        "Proto-R": ProtoRobust(model, train, shift=DELTA, time_limit=120.0),
        "RobXNN": RobX(model, train, random_state=0),
    }
    rows = []
    for label, ex in methods.items():
        s, res = _timed(ex, q)
        found = int((res.status == "found").sum())
        rows.append({
            "name": f"{label} per query / diabetes δ={DELTA} / vs MILP-R (n_queries={len(q)})",
            "seconds": s / len(q), "baseline_seconds": base_s / len(q),
            "ratio": (base_s / len(q)) / (s / len(q)),
            "found": found, "baseline_found": base_found,
            "seconds_per_found": s / found if found else float("nan"),
            "baseline_seconds_per_found": base_s / base_found if base_found else float("nan"),
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
