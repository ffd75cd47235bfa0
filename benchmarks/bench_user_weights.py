"""Cost of certifying the user's own weights instead of the folded network (issue 29, finding 3).

An imported model's certificates range over the estimator's own layers behind a fixed input
map (``model.network()``); before, they ranged over the folded network (the preprocessing
merged into layer 1, Linear→Linear multiplied, BatchNorm absorbed: ``network().weights``). Both
are timed in the same run on the same counterfactuals (raw German credit rows, target = the
predicted class):

* ``decide`` — ``is_delta_robust`` (intervals, attack, decision MILPs), ms per row;
* ``exact`` — ``exact_worst_case`` with no prechecks (a full worst-case MILP per row), median ms;
* ``robust`` — how many rows each proves Δ-robust (the folded count is what was claimed).

Models: the README's ``Pipeline([ColumnTransformer, MLPClassifier((20, 10))])`` and a torch
``Linear-BatchNorm-ReLU-Linear-Linear-ReLU-Linear`` module behind the same ColumnTransformer.

    python benchmarks/bench_user_weights.py            # 100 rows
    python benchmarks/bench_user_weights.py --quick    # 30 rows
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

import robustce as rc
from robustce.models.network import ReLUNetwork
from robustce.robustness import ParameterShift, exact_worst_case, is_delta_robust

DELTA = 0.01


def _models() -> tuple[Any, list[tuple[str, Any]]]:
    import torch
    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from torch import nn

    ds = rc.datasets.load("german_raw")
    cat = [c for c in ds.frame.columns if not pd.api.types.is_numeric_dtype(ds.frame[c])]
    num = [c for c in ds.frame.columns if c not in cat]

    def pre() -> ColumnTransformer:
        return ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                                  ("num", StandardScaler(), num)])

    pipe = Pipeline([("pre", pre()), ("clf", MLPClassifier((20, 10), max_iter=600,
                                                           random_state=0))]).fit(ds.frame, ds.y)
    ct = pre().fit(ds.frame)
    Z = torch.tensor(np.asarray(ct.transform(ds.frame), dtype=np.float32))
    y = torch.tensor(np.asarray(ds.y), dtype=torch.float32)
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(Z.shape[1], 20), nn.BatchNorm1d(20), nn.ReLU(),
                           nn.Linear(20, 10), nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
    opt = torch.optim.Adam(module.parameters(), lr=0.01)
    for _ in range(300):
        opt.zero_grad()
        nn.functional.binary_cross_entropy_with_logits(module(Z)[:, 0], y).backward()
        opt.step()
    module.eval()
    return ds, [("sklearn pipeline MLP 20-10", rc.models.from_sklearn(pipe, ds)),
                ("torch Linear-BN-ReLU-Linear-Linear-ReLU-Linear", rc.models.from_torch(module, ct, ds))]


def _time(net: ReLUNetwork, X: np.ndarray, t: np.ndarray, shift: ParameterShift
          ) -> dict[str, float]:
    t0 = time.perf_counter()
    rob = is_delta_robust(net, X, shift, target_class=t)
    decide = (time.perf_counter() - t0) / len(X) * 1e3
    res = exact_worst_case(net, X, shift, target_class=t, precheck=False)
    return {"decide_ms": decide, "exact_median_ms": float(np.median(res.time) * 1e3),
            "robust": int(rob.sum())}


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Two rows per model (``run_all`` shape): the decision pipeline and the full MILP, each
    user-weight certificates (``seconds``) against the folded ones (``baseline_seconds``)."""
    ds, models = _models()
    n = 30 if quick else 100
    X_raw = ds.frame.sample(n, random_state=0)
    shift = ParameterShift(DELTA)
    out = []
    for name, model in models:
        user = model.network()
        folded = ReLUNetwork(user.weights)  # what the certificates ranged over before
        X = model.encode(X_raw)
        t = folded.predict(X)
        before, after = _time(folded, X, t, shift), _time(user, X, t, shift)
        for key, what in (("decide_ms", "is_delta_robust per row"),
                          ("exact_median_ms", "full worst-case MILP, median")):
            out.append({"name": f"{what}, {name} {user!r}: user weights vs folded (δ={DELTA})",
                        "seconds": after[key] / 1e3, "baseline_seconds": before[key] / 1e3,
                        "ratio": before[key] / after[key], "n": n,
                        "robust_user": after["robust"], "robust_folded": before["robust"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    for r in run(args.quick):
        print(f"{r['name']}, {r['n']} rows:")
        print(f"  folded {r['baseline_seconds'] * 1e3:8.2f} ms   user weights "
              f"{r['seconds'] * 1e3:8.2f} ms   ({1 / r['ratio']:.2f}× the time); proven robust: "
              f"folded {r['robust_folded']}, user weights {r['robust_user']}")


if __name__ == "__main__":
    main()
