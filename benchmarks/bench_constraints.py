"""What constraints cost and why they are needed (issue 34).

Part 1 — **cost**: MILPNearest (raw-space L1) and MILP-R on adult (the PROPLACE Table 1
network: 10-10, δ = 0.035), the same queries without constraints (the baseline) and with
relations between raw features, and with relations plus ``max_changes = 2``; queries interleaved
so that load changes hit every configuration alike. Reported per configuration: queries solved,
median and total seconds per query, the ratio of total time to the baseline's, the median L1 of
the CEs, and that every constrained CE satisfies the constraints (``Constraints.satisfied`` on
the raw rows).

Part 2 — **the problem**: on the demo data (``synthetic_loan``, its MLP) the methods run
*without* constraints, and the share of their CEs that violate the relations the data ships
with (``data.meta["constraints"]``: ``years_employed <= age - 16``, ``debt <= income``; every
generated row satisfies both) is counted per relation.

    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_constraints.py              # 50 queries
    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_constraints.py --quick      # 8 queries
    python benchmarks/bench_constraints.py --only demo

``run(quick)`` returns the rows of both parts.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

import robustce as rc
from robustce.data import Constraints, loaders
from robustce.data.builtin import synthetic_loan
from robustce.methods.milp_nearest import MILPNearest
from robustce.methods.milp_robust import MILPRobust
from robustce.nearest import feature_distance

#: relations on adult's raw features (a plausibility policy: hours within a legal week,
#: capital losses no larger than gains plus a margin, and no fortune from capital gains)
ADULT_RELATIONS = ["`hours-per-week` <= 60", "`capital-loss` <= `capital-gain` + 2000",
                   "`capital-gain` <= 20000"]
CONFIGS = {"none": None, "relations": {"relations": ADULT_RELATIONS},
           "relations+max_changes=2": {"relations": ADULT_RELATIONS, "max_changes": 2}}
#: the methods of part 2 (registry names), with small settings
DEMO_METHODS = {"milp_nearest": {}, "milp_robust": {"shift": 0.02},
                "nearest_neighbour": {}, "wachter": {}, "mace": {"epsilon": 1e-3},
                "roar": {}, "rbr": {}, "dice": {"n_counterfactuals": 3},
                "diverse_robust": {"n_counterfactuals": 3}}


def _queries(data: Any, model: Any, n: int) -> pd.DataFrame:
    pred = model.predict(data.frame)
    return data.frame.iloc[np.flatnonzero(pred == 0)[:n]]


def cost_rows(n: int, time_limit: float = 60.0) -> list[dict[str, Any]]:
    """Part 1: MILPNearest and MILP-R on adult with and without constraints."""
    adult = loaders.load_adult()
    train, test = adult.split(0.2, random_state=0)
    model = rc.models.MLP((10, 10), epochs=20, batch_size=32, lr=0.01, weight_decay=2e-4,
                          random_state=0).fit(train)
    queries = _queries(test, model, n)
    enc = model.encoder
    rows: list[dict[str, Any]] = []
    for method in ("milp_nearest", "milp_robust"):
        ex = {}
        for name, spec in CONFIGS.items():
            if method == "milp_nearest":
                ex[name] = MILPNearest(model, train, time_limit=time_limit, constraints=spec)
            else:
                ex[name] = MILPRobust(model, train, shift=0.035, growth=1.25, max_rounds=30,
                                      time_limit=time_limit, constraints=spec)
        times = {k: [] for k in CONFIGS}
        found = {k: 0 for k in CONFIGS}
        l1 = {k: [] for k in CONFIGS}
        sat = {k: True for k in CONFIGS}
        for i in range(len(queries)):  # interleaved: one query through every configuration
            q = queries.iloc[[i]]
            for name, e in ex.items():
                t0 = time.perf_counter()
                res = e.explain(q)
                times[name].append(time.perf_counter() - t0)
                if res.status.iloc[0] != "found":
                    continue
                found[name] += 1
                cf = res.counterfactuals
                l1[name].append(float(feature_distance(enc, enc.transform(q)[0],
                                                       res.counterfactuals_encoded[:1],
                                                       "l1")[0]))
                if CONFIGS[name] is not None:
                    c = Constraints.from_dict({"max_changes": None, **CONFIGS[name]})
                    c.validate(train.schema)
                    sat[name] &= bool(c.satisfied(cf[train.schema.names].iloc[:1]
                                                  .reset_index(drop=True),
                                                  q.reset_index(drop=True)).all())
        base = float(np.sum(times["none"]))
        for name in CONFIGS:
            rows.append({"part": "cost", "method": method, "constraints": name,
                         "queries": len(queries), "found": found[name],
                         "median_s": float(np.median(times[name])),
                         "total_s": float(np.sum(times[name])),
                         "ratio_vs_none": float(np.sum(times[name])) / base,
                         "median_l1": float(np.median(l1[name])) if l1[name] else np.nan,
                         "all_satisfy": sat[name]})
            print(rows[-1], flush=True)
    return rows


def demo_rows(n: int) -> list[dict[str, Any]]:
    """Part 2: how often unconstrained CEs break the demo data's relations."""
    data = synthetic_loan(2000, random_state=0)
    train, test = data.split(0.2, random_state=0)
    model = rc.models.MLP((16,), epochs=60, random_state=0).fit(train)
    queries = _queries(test, model, n)
    shipped = data.meta["constraints"]["relations"]
    # the shipped relations (the issue's: nobody works before 16, debt within one income)
    c = Constraints(shipped).validate(data.schema)
    rows: list[dict[str, Any]] = []
    for method, params in DEMO_METHODS.items():
        cls = rc.methods.registry.get_method(method)
        if cls.missing_dependency():
            continue
        ex = rc.methods.registry.build_explainer(method, model, train, time_limit=30.0,
                                                 **params)
        if "random_state" in cls.param_names():
            ex.random_state = 0
        res = ex.explain(queries)
        cfs = res.counterfactuals
        raw = cfs[data.schema.names].reset_index(drop=True)
        viol = c.violations(raw)
        row = {"part": "demo", "method": method, "queries": len(queries), "ces": len(cfs),
               **{f"violates {t}": float(viol[t].mean()) if len(cfs) else np.nan
                  for t in viol.columns},
               "violates any": float(viol.any(axis=1).mean()) if len(cfs) else np.nan}
        rows.append(row)
        print(row, flush=True)
    return rows


def run(quick: bool = False, only: str | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if only in (None, "cost"):
        rows += cost_rows(8 if quick else 50)
    if only in (None, "demo"):
        rows += demo_rows(10 if quick else 50)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("cost", "demo"), default=None)
    args = ap.parse_args()
    rows = run(args.quick, args.only)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        for part in ("cost", "demo"):
            sub = pd.DataFrame([r for r in rows if r["part"] == part])
            if len(sub):
                print(sub.dropna(axis=1, how="all").to_string(index=False))


if __name__ == "__main__":
    main()
