"""(δ, ε)-robust CEs for boosted trees: the exact test's speed and the robust nearest CE against
the plain nearest CE, on raw UCI Adult (``ColumnTransformer`` with ``OneHotEncoder`` and
``StandardScaler``; 100-tree, depth-4 XGBoost and LightGBM; via ``ROBUSTCE_DATA``).

Per booster, in one run:

* the exact (δ, ε)-test (:class:`robustce.robustness.EnsembleCertifier`): milliseconds per CE
  over 2 000 rows in one call, and per call on single rows (the latency a service sees);
* MILPNearest (ℓ1, certified optimum) and EnsembleRobust (ℓ1, certified optimum over the
  (δ, ε)-robust points) on the first rows predicted ``<=50K``: coverage, median seconds per
  query, mean ℓ1, how many CEs the exact test certifies robust, how many a sample of 200
  ensembles drawn from the set (corners and uniform) flips, and whether the user's own
  pipeline accepts every CE.

    python benchmarks/bench_ensemble_robust.py [--quick] [--delta D] [--epsilon E]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd
from bench_boosters import _adult_pipeline, _boosters  # the same pipelines

import robustce as rc
from robustce.models.boosting import AdditiveTrees
from robustce.models.trees import TreeView
from robustce.robustness import EnsembleCertifier, EnsembleShift


def sampled_flips(parts: AdditiveTrees, X: np.ndarray, target: int, shift: EnsembleShift,
                  n: int = 200, seed: int = 0) -> np.ndarray:
    """Per row of ``X``: whether any of ``n`` ensembles drawn from the set (every other one
    at the box's corners, the rest uniform) predicts another class than ``target``."""
    rng = np.random.default_rng(seed)
    flipped = np.zeros(len(X), dtype=bool)
    eps = np.asarray(shift.epsilon, dtype=np.float64)
    for s in range(n):
        trees = []
        for t in parts.trees:
            inner = t.left >= 0
            u = rng.choice([-1.0, 1.0], inner.sum()) if s % 2 == 0 else rng.uniform(
                -1, 1, inner.sum())
            thr = t.threshold.copy()
            thr[inner] += u * (eps if eps.ndim == 0 else eps[t.feature[inner]])
            v = rng.choice([-1.0, 1.0], t.value.shape) if s % 2 == 0 else rng.uniform(
                -1, 1, t.value.shape)
            trees.append(TreeView(t.feature, thr, t.left, t.right, t.value + v * shift.delta,
                                  t.n_features))
        flipped |= AdditiveTrees(trees, parts.output, parts.baseline).predict(X) != target
    return flipped


def run(quick: bool = False, delta: float = 0.005, epsilon: float = 0.005) -> list[dict[str, Any]]:
    ds = rc.datasets.load("adult")
    X = ds.frame
    n = 6 if quick else 20
    shift = EnsembleShift(delta, epsilon)
    rows = []
    for name, clf in _boosters().items():
        pipe = _adult_pipeline(ds, clf)
        model = rc.models.from_sklearn(pipe, ds)
        Xm = model.encoder.transform(X.iloc[:2000])
        cert = EnsembleCertifier(shift)
        cert.certify(model, Xm[:10], None)  # the vote form is built once per model
        t0 = time.perf_counter()
        batch = cert.certify(model, Xm, None)
        per_ce = (time.perf_counter() - t0) / len(Xm) * 1e3
        t0 = time.perf_counter()
        for i in range(100):
            cert.certify(model, Xm[i:i + 1], None)
        per_call = (time.perf_counter() - t0) / 100 * 1e3
        rows.append({"booster": name, "work": "(δ, ε)-test",
                     "ms per CE (2 000 in one call)": round(per_ce, 3),
                     "ms per single-row call": round(per_call, 3),
                     "rows robust": f"{int(batch.robust.sum())}/{len(Xm)}"})
        queries = X[model.predict(X) == 0].iloc[:n]
        for method, kw in (("milp_nearest", {}),
                           ("ensemble_robust", {"delta": delta, "epsilon": epsilon})):
            ex = rc.methods.build_explainer(method, model, ds, norm="l1", time_limit=60, **kw)
            res = ex.explain(queries)
            fr = res.to_frame()
            found = (fr["status"] == "found").to_numpy()
            Z = model.encoder.transform(res.counterfactuals[list(X.columns)])
            certs = cert.certify(model, Z, 1) if len(Z) else None
            flips = sampled_flips(model.additive_trees(), Z, 1, shift) if len(Z) else []
            rows.append({
                "booster": name, "work": method, "coverage": f"{int(found.sum())}/{n}",
                "median s/query": round(float(res.timings.median()), 3),
                "max s/query": round(float(res.timings.max()), 3),
                "optimal": int(fr["optimal"].fillna(False).astype(bool).sum()),
                "mean l1": round(float(fr.loc[found, "distance"].mean()), 4),
                "(δ, ε)-robust": f"{int(certs.robust.sum()) if certs else 0}/{len(Z)}",
                "flipped by 200 sampled ensembles": int(np.sum(flips)),
                "pipeline accepts all": bool((pipe.predict(res.counterfactuals[X.columns]) == 1).all()),
            })
    return rows


def _markdown(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    def cell(v: Any) -> str:
        return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)

    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--delta", type=float, default=0.005)
    ap.add_argument("--epsilon", type=float, default=0.005)
    a = ap.parse_args()
    rows = run(a.quick, a.delta, a.epsilon)
    print(f"δ = {a.delta}, ε = {a.epsilon} (model space)")
    for work, group in pd.DataFrame(rows).groupby("work", sort=False):
        print(f"\n{work}\n")
        print(_markdown(group.dropna(axis=1, how="all").drop(columns="work")))


if __name__ == "__main__":
    main()
