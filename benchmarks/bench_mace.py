"""MACE (SMT, z3) time per counterfactual on adult, per model class, against the paper's Table 6.

Protocol (Karimi et al. 2020, §5 and Table 6): scikit-learn models with default parameters
(decision tree, random forest, logistic regression) and an MLP with two hidden layers of 10,
trained on adult (CARLA pre-processing, via ``ROBUSTCE_DATA``); factual samples are test rows
the model classifies as negative (class 0); MACE with ε = 1e-3 and the ℓ1 distance. We report
the median and mean wall-clock seconds per query (SMT; for the MLP also SMT with
``hint="milp"`` — the MILP incumbent as δ_max, z3 proving the lower bound — and for LR and the
MLP the MILP backend) (``explain`` timings: building the formulae,
every SAT call, the forward-pass checks), the coverage (status ``found`` or ``infeasible``), the
mean number of SAT calls, and whether every CE is no farther than MO (the nearest plausible
training point predicted positive, measured here with an independent distance computation).

The baseline column is the paper's Table 6 mean time for adult, ℓ1, ε = 1e-3 (one Xeon core,
PySMT + Z3); it was not measured in this run, so the ratio compares machines as well as code.

    python benchmarks/bench_mace.py [--quick]
    python benchmarks/bench_mace.py --kinds forest,forest:smt-hint,forest:milp --n 20

(``kind:backend``: ``smt`` by default, ``smt-hint`` — SMT with ``hint="milp"`` —, ``milp``;
the MILP backend and the hint cover trees and forests as well as LR and the MLP.)
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import robustce as rc
from robustce.methods.mace import MACE, mace_distance

#: Table 6 of the paper, adult, ℓ1, MACE (ε = 1e-3): mean seconds per CE
PAPER_TABLE6_ADULT_L1 = {"tree": 9.58, "forest": 55.79, "lr": 3.55, "mlp": 34101.0}


def _models(train: Any, enc: rc.data.Encoder, quick: bool) -> dict[str, Any]:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    X, y = enc.transform(train.frame), train.y
    ests = {
        "tree": DecisionTreeClassifier(random_state=0),
        "forest": RandomForestClassifier(random_state=0, n_jobs=1),
        "lr": LogisticRegression(max_iter=1000),
        "mlp": MLPClassifier((10, 10), max_iter=300, random_state=0),
    }
    return {k: rc.models.wrap(e.fit(X, y), enc) for k, e in ests.items()}


def run(quick: bool = False, kinds: tuple[str, ...] = ("tree", "forest", "lr", "mlp", "mlp:smt-hint",
                                                     "lr:milp", "mlp:milp"),
        n_queries: int | None = None, time_limit: float = 60.0) -> list[dict[str, Any]]:
    data = rc.datasets.load("adult")
    if quick:
        rows = np.random.default_rng(0).choice(len(data), size=8000, replace=False)
        data = data.subset(np.sort(rows))
    train, test = data.split(test_size=0.2, random_state=0)
    enc = rc.data.Encoder(data.schema).fit(train.frame)
    models = _models(train, enc, quick)
    Xtr = enc.transform(train.frame)
    n = n_queries or (4 if quick else 20)
    out = []
    for spec in kinds:
        kind, _, backend = spec.partition(":")
        backend = backend or "smt"
        model = models[kind]
        slow = kind == "mlp" and backend.startswith("smt")
        neg = test.frame[model.predict(test.frame) == 0].iloc[: (max(2, n // 2) if slow else n)]
        # "smt-hint": the SMT backend with the MILP incumbent as δ_max (certificate still z3's)
        ex = MACE(model, train, norm="l1", epsilon=1e-3, time_limit=time_limit,
                  backend="smt" if backend == "smt-hint" else backend,
                  hint="milp" if backend == "smt-hint" else None)
        t0 = time.perf_counter()
        res = ex.explain(neg)
        total = time.perf_counter() - t0
        t = res.timings.to_numpy()
        st = res.status.value_counts().to_dict()
        # MO under the same distance, computed independently of MACE's seed
        Q = enc.transform(neg)
        pos = model.predict(Xtr) == 1
        never_farther = True
        for i, label in enumerate(neg.index):
            if res.status[label] != "found":
                continue
            ok = pos & np.all(Xtr[:, enc.immutable_mask_] == Q[i, enc.immutable_mask_], axis=1)
            if ok.any():
                mo = mace_distance(enc, Q[i], Xtr[ok], "l1").min()
                never_farther &= bool(res.certificates.loc[label, "delta_max"] <= mo + 1e-12)
        covered = res.status.isin(["found", "infeasible"]).mean()
        out.append({
            "name": f"MACE {backend} l1 eps=1e-3 / adult / {kind}: median s per CE vs paper Table 6 mean "
                    f"(n={len(neg)})",
            "seconds": float(np.median(t)),
            "mean_s": float(t.mean()),
            "max_s": float(t.max()),
            "baseline_seconds": PAPER_TABLE6_ADULT_L1[kind],
            "ratio": PAPER_TABLE6_ADULT_L1[kind] / float(np.median(t)),
            "coverage": float(covered),
            "statuses": st,
            "sat_calls_mean": float(res.certificates["sat_calls"].mean()),
            "agree_never_farther_than_mo": never_farther,
            "total_s": total,
        })
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--kinds", default="tree,forest,lr,mlp,mlp:smt-hint,lr:milp,mlp:milp",
                    help="model[:backend] list (backend smt by default; smt-hint = SMT with "
                         "the MILP incumbent as hint)")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    for row in run(args.quick, tuple(args.kinds.split(",")), args.n, args.time_limit):
        print(f"{row['name']}: median {row['seconds']:.3f} s, mean {row['mean_s']:.3f} s, "
              f"max {row['max_s']:.3f} s (paper {row['baseline_seconds']:g} s, ratio "
              f"{row['ratio']:.1f}x); coverage {row['coverage']:.0%} {row['statuses']}; "
              f"SAT calls {row['sat_calls_mean']:.1f}; never farther than MO: "
              f"{row['agree_never_farther_than_mo']}", flush=True)


if __name__ == "__main__":
    main()
