"""PROPLACE speed on the four datasets of its Table 1, measured in one run.

Per dataset (CARLA adult, compas, give_me_some_credit, heloc via ``rc.datasets.load``; the
networks, δ and k of ``benchmarks/configs/proplace_baselines_*.toml`` and the paper's README:
80/20 split with seed 0, the model trained on the random half D1 of the training split, the
explainers given the whole training split as the runner does):

* ``proplace per CE`` — median seconds per CE found of :class:`PROPLACE` on the first 50
  test rows the model puts in class 0 (``--quick``: 10), the pool certification excluded (it is shared by
  all queries and reported separately); baseline: :class:`MILPRobust` (MILP-R, growth 1.25,
  30 rounds, as in the Table 1 configs) on the same queries (its found ones). Target: PROPLACE median ≤ 0.3 s.
* ``pool certification`` — the candidate pool of RobustNearestNeighbour (distinct training points
  the model puts in class 1): one batched exact Δ-test (interval bounds and a weight attack for
  all points at once, then a MILP for the rest) vs one ``exact_worst_case`` call per point. Both
  must agree on every point.

    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_proplace.py [--quick]

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
from robustce.methods import PROPLACE, MILPRobust
from robustce.models.families import split_halves
from robustce.robustness import ParameterShift, exact_worst_case

ROOT = Path(__file__).resolve().parents[1]

#: dataset -> (hidden layers, epochs, δ, k): the authors' settings (configs/proplace_baselines_*)
TABLE1 = {
    "adult": ((10, 10), 20, 0.035, 20),
    "compas": ((20, 20), 50, 0.025, 20),
    "give_me_some_credit": ((20, 20), 3, 0.045, 20),
    "heloc": ((20, 20), 50, 0.025, 23),
}


def _setup(name: str, seed: int = 0) -> tuple[Any, Any, Any]:
    hidden, epochs, _, _ = TABLE1[name]
    data = rc.datasets.load(name)
    train, test = data.split(test_size=0.2, random_state=seed)
    d1, _ = split_halves(train, random_state=seed)
    model = rc.models.MLP(hidden, epochs=epochs, batch_size=32, lr=0.01, weight_decay=2e-4,
                          random_state=seed).fit(d1)
    return train, test, model


def _queries(model: Any, test: Any, n: int) -> Any:
    pred = model.predict(model.encoder.transform(test.frame))
    return test.frame.iloc[np.flatnonzero(pred == 0)[:n]]


def run(quick: bool = False) -> list[dict[str, Any]]:
    if "ROBUSTCE_DATA" not in os.environ:
        shared = (ROOT / ".." / "shared" / "datasets").resolve()
        if shared.is_dir():
            os.environ["ROBUSTCE_DATA"] = str(shared)
    n_queries = 10 if quick else 50
    n_pool_loop = 300 if quick else 1000
    rows: list[dict[str, Any]] = []
    for name, (_, _, delta, k) in TABLE1.items():
        try:
            train, test, model = _setup(name)
        except rc.errors.DatasetUnavailableError as exc:
            print(f"skipping {name}: {exc}")
            continue
        q = _queries(model, test, n_queries)
        ex = PROPLACE(model, train, shift=delta, k=k, time_limit=60.0)
        t0 = time.perf_counter()
        info = ex.neighbours.certify_pool(1)
        pool_s = time.perf_counter() - t0
        res = ex.explain(q)
        found = res.status == "found"
        pp = float(np.median(res.timings[found])) if found.any() else float("nan")
        mr = MILPRobust(model, train, shift=delta, growth=1.25, max_rounds=30, time_limit=60.0).explain(q)
        base = float(np.median(mr.timings[mr.status == "found"]))
        cert = res.certificates[found]
        rows.append({
            "name": f"proplace per CE (median) / {name} / vs MILP-R (n_queries={len(q)})",
            "seconds": pp, "baseline_seconds": base, "ratio": base / pp,
            "found": int(found.sum()), "p90_seconds": float(np.quantile(res.timings[found], 0.9)),
            "mean_iterations": float(cert.iterations.mean()) if len(cert) else float("nan"),
            "max_networks": int(cert.n_networks.max()) if len(cert) else 0,
            "statuses": res.status.value_counts().to_dict(),
            "target_ok": pp <= 0.3,
        })
        # pool certification: batched vs one test per point, on the same points
        Xtr = model.encoder.transform(train.frame)
        cand = np.unique(Xtr[model.predict(Xtr) == 1], axis=0)
        sub = cand[np.random.default_rng(0).permutation(len(cand))[:n_pool_loop]]
        net, shift = model.network(), ParameterShift(delta)
        t0 = time.perf_counter()
        batched = exact_worst_case(net, sub, shift, 1, decide_only=True, tol=ex.sigma)
        b_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        single = [exact_worst_case(net, x[None], shift, 1, decide_only=True, tol=ex.sigma).robust[0]
                  for x in sub]
        l_s = time.perf_counter() - t0
        rows.append({
            "name": f"pool certification / {name} / batched vs per point (n={len(sub)})",
            "seconds": b_s, "baseline_seconds": l_s, "ratio": l_s / b_s,
            "agree": bool(np.array_equal(batched.robust, np.array(single))),
            "full_pool_seconds": pool_s, "pool": f"{info.n_certified}/{info.n_candidates}",
        })
        print(rows[-2], rows[-1], sep="\n", flush=True)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 queries, 300 pool points per loop")
    args = ap.parse_args()
    for r in run(args.quick):
        print(f"{r['name']}: {r['seconds']:.4f} s vs {r['baseline_seconds']:.4f} s "
              f"= {r['ratio']:.1f}×")
