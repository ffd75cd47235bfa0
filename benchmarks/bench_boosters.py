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

``--dice-anchor``: issue 32's speed anchor. MILPNearest (ℓ1 nearest CE, optimality certified)
on the 100-tree depth-4 XGBoost adult pipeline against DiCE-genetic (one CE per query,
actionability passed to dice-ml) and MACE's SMT backend (ℓ1, ε = 1e-3) on the same queries in
the same run: median seconds per query and the ratios DiCE / MILPNearest and SMT / MILPNearest;
per method the validity (share of queries whose CE the user's own pipeline puts in class 1),
the mean model-space ℓ1 distance of the CEs and, on the queries all of them answered, the mean
ℓ1 ratio against MILPNearest's.

``--forest``: issue 32's second speed target. A 100-tree random forest (scikit-learn defaults,
fully grown, ``random_state=0``) on the offline diabetes data (``ROBUSTCE_DATA``; Pregnancies,
DiabetesPedigreeFunction and Age immutable as the schema says), the first rows predicted 0,
target 1: ``MILPNearest`` (ℓ1, certified optimal within its MIP gap) and ``MACE`` with the MILP
backend (ℓ1, ε = 1e-3) against MACE's SMT backend (the anchor) on the same queries in the same
run, each with the same per-query time limit. Per method: coverage (queries answered within
ε = 1e-3 — MACE's ``found``, MILPNearest's certified optima), median and max seconds per query,
and whether every CE is valid for the forest.

    python benchmarks/bench_boosters.py [--quick] [--milp-nearest | --dice-anchor | --forest]
                                        [--time-limit S] [--n-queries N]
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
        pipe, model, ds = _adult_xgboost()
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


def _adult_xgboost() -> tuple[Any, Any, Any]:
    """The 100-tree depth-4 XGBoost adult pipeline (raw frame), its import and the data."""
    ds = rc.datasets.load("adult")
    pipe = _adult_pipeline(ds, _boosters()["xgboost"])
    return pipe, rc.models.from_sklearn(pipe, ds), ds


def _anchor_stats(res: Any, model: Any, pipe: Any, columns: list[str]) -> dict[str, Any]:
    """Median and max seconds per query, queries found, validity for the user's pipeline
    (share of all queries whose rank-0 CE it puts in class 1) and the model-space ℓ1 of each
    query's rank-0 CE (a Series by query id)."""
    rank0 = res.counterfactuals.groupby("query_id", sort=False).head(1)
    accepted = pipe.predict(rank0[columns]) == 1
    per = rc.evaluation.evaluate(res, model, metrics=["proximity_l1"])["proximity_l1"]
    return {"median_s": float(res.timings.median()), "max_s": float(res.timings.max()),
            "found": int((res.status == "found").sum()),
            "valid": float(accepted.sum() / len(res.status)), "l1": per}


def run_dice_anchor(quick: bool = False, time_limit: float = 30.0) -> list[dict[str, Any]]:
    """MILPNearest against DiCE-genetic and MACE SMT on the XGBoost adult pipeline."""
    if "xgboost" not in _boosters():
        return []
    if rc.methods.DiCE.missing_dependency():
        raise SystemExit(rc.methods.DiCE.missing_dependency())
    pipe, model, ds = _adult_xgboost()
    X = ds.frame
    columns = list(X.columns)
    n = 5 if quick else 20
    queries = X[model.predict(X) == 0].iloc[:n]
    runs = {
        "milp_nearest": rc.methods.MILPNearest(model, ds, norm="l1", target_class=1,
                                               time_limit=time_limit),
        "dice_genetic": rc.methods.DiCE(model, ds, method="genetic", n_counterfactuals=1,
                                        target_class=1, random_state=0),
        "mace_smt": rc.methods.MACE(model, ds, norm="l1", epsilon=1e-3, backend="smt",
                                    target_class=1, time_limit=2 * time_limit),
    }
    res = {name: ex.explain(queries) for name, ex in runs.items()}
    stats = {name: _anchor_stats(r, model, pipe, columns) for name, r in res.items()}
    near = stats["milp_nearest"]
    common = near["l1"].index
    for st in stats.values():
        common = common.intersection(st["l1"].index)
    optimal = int(res["milp_nearest"].certificates["optimal"].fillna(False).astype(bool).sum())
    rows = []
    for name in ("dice_genetic", "mace_smt"):
        st = stats[name]
        rows.append({
            "name": f"MILPNearest ℓ1 (certified optimal) vs {name} on the 100-tree depth-4 "
                    "xgboost adult pipeline (median per query)",
            "seconds": near["median_s"], "baseline_seconds": st["median_s"],
            "ratio": st["median_s"] / max(near["median_s"], 1e-12), "n_queries": n,
            "time_limit": time_limit,
            "milp_found": near["found"], "milp_optimal": optimal,
            "milp_valid": round(near["valid"], 3), f"{name}_found": st["found"],
            f"{name}_valid": round(st["valid"], 3),
            "milp_l1_mean": round(float(near["l1"].mean()), 4),
            f"{name}_l1_mean": round(float(st["l1"].mean()), 4),
            f"{name}_l1_over_milp_on_common": round(float(
                (st["l1"][common] / near["l1"][common]).mean()), 3) if len(common) else None,
            "n_common": len(common),
            "milp_max_s": round(near["max_s"], 3), f"{name}_max_s": round(st["max_s"], 3),
        })
    return rows


def _diabetes_forest() -> tuple[Any, Any]:
    """The 100-tree random forest on diabetes (model space: the robustce encoding) and the
    data."""
    from sklearn.ensemble import RandomForestClassifier

    ds = rc.datasets.load("diabetes")
    enc = rc.data.Encoder(ds.schema).fit(ds.frame)
    forest = RandomForestClassifier(n_estimators=100, random_state=0, n_jobs=1)
    forest.fit(enc.transform(ds.frame), ds.y)
    return rc.models.wrap(forest, enc), ds


def run_forest(quick: bool = False, time_limit: float = 60.0,
               n_queries: int | None = None) -> list[dict[str, Any]]:
    """MILPNearest and MACE (MILP backend) against MACE's SMT backend on the diabetes
    forest."""
    model, ds = _diabetes_forest()
    n = n_queries or (3 if quick else 8)
    queries = ds.frame[model.predict(ds.frame) == 0].iloc[:n]
    runs = {
        "milp_nearest": rc.methods.MILPNearest(model, ds, norm="l1", target_class=1,
                                               time_limit=time_limit),
        "mace_milp": rc.methods.MACE(model, ds, norm="l1", epsilon=1e-3, backend="milp",
                                     target_class=1, time_limit=time_limit),
        "mace_smt": rc.methods.MACE(model, ds, norm="l1", epsilon=1e-3, backend="smt",
                                    target_class=1, time_limit=time_limit),
    }
    stats = {}
    for name, ex in runs.items():
        res = ex.explain(queries)
        found = res.status == "found"
        covered = found & (res.certificates["optimal"].fillna(False).astype(bool)
                           if name == "milp_nearest" else found)
        cfs = res.counterfactuals
        stats[name] = {
            "covered": int(covered.sum()), "found": int(found.sum()),
            "median_s": float(res.timings.median()), "max_s": float(res.timings.max()),
            "valid": bool((model.predict(cfs[list(queries.columns)]) == 1).all()),
            "seconds": [round(float(t), 2) for t in res.timings],
        }
    anchor = stats["mace_smt"]
    rows = []
    for name in ("milp_nearest", "mace_milp"):
        st = stats[name]
        rows.append({
            "name": f"{name} ℓ1 on a 100-tree random forest on diabetes vs MACE SMT "
                    "(median per query)",
            "seconds": st["median_s"], "baseline_seconds": anchor["median_s"],
            "ratio": anchor["median_s"] / max(st["median_s"], 1e-12), "n_queries": n,
            "time_limit": time_limit, "covered_at_eps_1e-3": st["covered"],
            "found": st["found"], "max_s": round(st["max_s"], 2), "valid": st["valid"],
            "per_query_s": st["seconds"], "smt_covered": anchor["covered"],
            "smt_max_s": round(anchor["max_s"], 2), "smt_per_query_s": anchor["seconds"],
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--milp-nearest", action="store_true",
                        help="MILPNearest vs MACE's MILP backend (XGBoost adult, forest diabetes)")
    parser.add_argument("--dice-anchor", action="store_true",
                        help="MILPNearest vs DiCE-genetic and MACE SMT (XGBoost adult)")
    parser.add_argument("--forest", action="store_true",
                        help="MILPNearest and MACE MILP vs MACE SMT (random forest, diabetes)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds per query (--milp-nearest, --dice-anchor: 30; "
                             "--forest: 60)")
    parser.add_argument("--n-queries", type=int, default=None, help="queries (--forest)")
    args = parser.parse_args()
    limit = args.time_limit
    rows = (run_milp_nearest(args.quick, limit or 30.0) if args.milp_nearest
            else run_dice_anchor(args.quick, limit or 30.0) if args.dice_anchor
            else run_forest(args.quick, limit or 60.0, args.n_queries) if args.forest
            else run(args.quick))
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
