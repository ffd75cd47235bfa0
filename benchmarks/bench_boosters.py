"""MACE on imported gradient-boosted pipelines: XGBoost and LightGBM, 100 trees of depth 4, on raw
UCI Adult (``ColumnTransformer`` with ``OneHotEncoder`` and ``StandardScaler``; via
``ROBUSTCE_DATA``).

Per booster: the import (``rc.models.from_sklearn``: the booster's dump read and every split
mapped to model space; equality with the pipeline checked on every row), then MACE (ℓ1,
ε = 1e-3, the training data's seed) on the first rows predicted ``<=50K`` with the MILP
backend (:mod:`robustce.solvers.tree_encoding` over ``AdditiveTrees.vote_trees``) against the
SMT backend (z3) in the same run: median seconds per query, the ratio SMT / MILP, whether the
user's own pipeline accepts every CE, and whether the two backends' ``[delta_min, delta_max]``
intervals overlap on every query.

``--milp-nearest``: MILPNearest (ℓ1, its optimality certified by the solver) through the same
tree MILP (:mod:`robustce.solvers.tree_encoding`) on the 100-tree depth-4 XGBoost adult pipeline
and on a 100-tree random forest (scikit-learn defaults, fully grown) on diabetes, against MACE's
MILP backend (ℓ1, ε = 1e-3) in the same run, both with the training data and a per-query time
limit: median and max seconds per query, coverage (``found``) and certified optima, the ratio
MACE / MILPNearest of the medians, whether the pipeline accepts every CE.

    python benchmarks/bench_boosters.py [--quick] [--milp-nearest [--time-limit S]]
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from typing import Any

import numpy as np
import pandas as pd

import robustce as rc


def _boosters() -> dict[str, Any]:
    out: dict[str, Any] = {}
    if importlib.util.find_spec("xgboost") is not None:
        from xgboost import XGBClassifier

        out["xgboost"] = XGBClassifier(n_estimators=100, max_depth=4, random_state=0, n_jobs=1)
    if importlib.util.find_spec("lightgbm") is not None:
        from lightgbm import LGBMClassifier

        out["lightgbm"] = LGBMClassifier(n_estimators=100, max_depth=4, num_leaves=16,
                                         random_state=0, n_jobs=1, verbose=-1)
    return out


def _adult_pipeline(ds: Any, clf: Any) -> Any:
    """``clf`` behind a ``ColumnTransformer`` (``OneHotEncoder`` on the string columns,
    ``StandardScaler`` on the numbers), fitted on the raw adult frame ``ds``."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    X = ds.frame
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    num = [c for c in X.columns if c not in cat]
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                             ("num", StandardScaler(), num)])
    return Pipeline([("pre", pre), ("clf", clf)]).fit(X, ds.y)


def run(quick: bool = False) -> list[dict[str, Any]]:
    ds = rc.datasets.load("adult")
    X = ds.frame
    n = 6 if quick else 20
    rows = []
    for name, clf in _boosters().items():
        pipe = _adult_pipeline(ds, clf)
        t0 = time.perf_counter()
        model = rc.models.from_sklearn(pipe, ds)
        t_import = time.perf_counter() - t0
        same = bool((model.predict(X) == model.estimator_predict(X)).all())
        queries = X[model.predict(X) == 0].iloc[:n]
        res = {be: rc.methods.MACE(model, ds, norm="l1", epsilon=1e-3, backend=be,
                                   time_limit=60).explain(queries) for be in ("smt", "milp")}
        accepted = all(bool((pipe.predict(r.counterfactuals[X.columns]) == 1).all())
                       for r in res.values())
        a, b = res["smt"].certificates, res["milp"].certificates
        overlap = bool((np.maximum(a["delta_min"], b["delta_min"])
                        <= np.minimum(a["delta_max"], b["delta_max"]) + 1e-9).all())
        t_milp, t_smt = float(res["milp"].timings.median()), float(res["smt"].timings.median())
        rows.append({
            "name": f"MACE ℓ1 on a 100-tree depth-4 {name} adult pipeline: MILP vs SMT "
                    "(median per query)",
            "seconds": t_milp, "baseline_seconds": t_smt, "ratio": t_smt / max(t_milp, 1e-12),
            "n_queries": n, "import_s": round(t_import, 2), "agree": same and accepted and overlap,
            "found_milp": int((res["milp"].status == "found").sum()),
            "found_smt": int((res["smt"].status == "found").sum()),
            "max_milp_s": round(float(res["milp"].timings.max()), 3),
            "max_smt_s": round(float(res["smt"].timings.max()), 3),
        })
    return rows


def _nearest_row(name: str, model: Any, data: Any, queries: pd.DataFrame, accept: Any,
                 time_limit: float) -> dict[str, Any]:
    """MILPNearest (ℓ1) against MACE's MILP backend on ``queries`` (one row of results)."""
    near = rc.methods.MILPNearest(model, data, norm="l1", target_class=1,
                                  time_limit=time_limit).explain(queries)
    mace = rc.methods.MACE(model, data, norm="l1", epsilon=1e-3, backend="milp", target_class=1,
                           time_limit=time_limit).explain(queries)
    t_near, t_mace = float(near.timings.median()), float(mace.timings.median())
    cfs = near.counterfactuals
    return {
        "name": f"MILPNearest ℓ1 on {name}: vs MACE MILP (median per query)",
        "seconds": t_near, "baseline_seconds": t_mace, "ratio": t_mace / max(t_near, 1e-12),
        "n_queries": len(queries), "time_limit": time_limit,
        "found": int((near.status == "found").sum()),
        "optimal": int(near.certificates["optimal"].fillna(False).astype(bool).sum()),
        "max_s": round(float(near.timings.max()), 3),
        "found_mace": int((mace.status == "found").sum()),
        "max_mace_s": round(float(mace.timings.max()), 3),
        "accepted": bool((accept(cfs[list(queries.columns)]) == 1).all()),
    }


def run_milp_nearest(quick: bool = False, time_limit: float = 30.0) -> list[dict[str, Any]]:
    """MILPNearest on the XGBoost adult pipeline and on a 100-tree forest on diabetes."""
    from sklearn.ensemble import RandomForestClassifier

    n = 4 if quick else 10
    rows = []
    boosters = _boosters()
    if "xgboost" in boosters:
        ds = rc.datasets.load("adult")
        pipe = _adult_pipeline(ds, boosters["xgboost"])
        model = rc.models.from_sklearn(pipe, ds)
        queries = ds.frame[model.predict(ds.frame) == 0].iloc[:n]
        rows.append(_nearest_row("a 100-tree depth-4 xgboost adult pipeline", model, ds,
                                 queries, pipe.predict, time_limit))
    ds = rc.datasets.load("diabetes")
    enc = rc.data.Encoder(ds.schema).fit(ds.frame)
    forest = RandomForestClassifier(n_estimators=100, random_state=0, n_jobs=1)
    forest.fit(enc.transform(ds.frame), ds.y)
    model = rc.models.wrap(forest, enc)
    queries = ds.frame[model.predict(ds.frame) == 0].iloc[:n]
    rows.append(_nearest_row("a 100-tree random forest on diabetes", model, ds, queries,
                             model.predict, time_limit))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--milp-nearest", action="store_true",
                        help="MILPNearest vs MACE's MILP backend (XGBoost adult, forest diabetes)")
    parser.add_argument("--time-limit", type=float, default=30.0,
                        help="seconds per query (--milp-nearest)")
    args = parser.parse_args()
    rows = (run_milp_nearest(args.quick, args.time_limit) if args.milp_nearest
            else run(args.quick))
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
