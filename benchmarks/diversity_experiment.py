"""Robustness to input changes, measured: DiverseRobust vs DiCE vs single-CE methods
(Leofante & Potyka, §6 protocol; not a speed benchmark — its table goes to EXPERIMENTS.md).

Per dataset: the paper's 20-10 ReLU network (100 epochs, batch 8), all features free (the
paper has no actionability constraints), the first ``--queries`` test rows the model puts in
class 0; for each query and each of ``--repeats`` repeats a perturbed copy
x₂ ~ N(x, diag(0.0008 · range)) (variance, clipped to the training range, redrawn until the
model keeps x's class — :mod:`robustce.evaluation.perturbation`); every method explains x and
x₂ and the two CE sets are compared by set-distance_Σ and set-distance_max (eq. 4–5).

Methods: DiverseRobust (angle filter, β = 0.5, γ = 0.1, ≤ 5 CEs, α = 50 on diabetes/no2 and
1000 otherwise; with and without minimisation; L1 and L2), DiCE (dice-ml, random and genetic by
default, ``--dice gradient`` for the paper's gradient method; 5 CEs, default parameters; skipped
without dice-ml), NearestNeighbour (L1, L2) and MILPNearest (L1). Time and CPU per query are
those of the ``explain`` call on the original queries (wall clock and this process's CPU).
Distances are in model space [0, 1]^d, the paper's units (the authors' ``normalised_l1``
divides by the row count of a (1, d) array, i.e. by 1).

    python benchmarks/diversity_experiment.py                      # diabetes, 20 × 3
    python benchmarks/diversity_experiment.py --datasets diabetes no2 --queries 20 --repeats 3
    python benchmarks/diversity_experiment.py --quick              # 5 queries × 1 repeat
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import robustce as rc
from robustce.evaluation.perturbation import input_robustness
from robustce.evaluation.set_metrics import k_distance_batch, k_diversity_batch

ROOT = Path(__file__).resolve().parents[1]
ALPHA = {"diabetes": 50, "no2": 50}  # 1000 for the others (the paper)
#: the paper's "credit" set has 2 000 rows and 10 variables: a seeded subsample of CARLA's
#: give-me-some-credit (115 527 rows, 10 features) of that size
ROWS = {"give_me_some_credit": 2000}


def _setup(name: str, n_queries: int, seed: int = 0) -> tuple[Any, Any, Any]:
    if "ROBUSTCE_DATA" not in os.environ:
        shared = (ROOT / ".." / "shared" / "datasets").resolve()
        if shared.is_dir():
            os.environ["ROBUSTCE_DATA"] = str(shared)
    data = rc.datasets.load(name)
    free = data.schema.with_actionability(**{n: "free" for n in data.schema.immutable})
    data = dataclasses.replace(data, schema=free)
    if name in ROWS and len(data) > ROWS[name]:
        rows = np.random.default_rng(seed).choice(len(data), size=ROWS[name], replace=False)
        data = data.subset(np.sort(rows))
    train, test = data.split(test_size=0.2, random_state=seed)
    model = rc.models.MLP((20, 10), epochs=100, batch_size=8, random_state=seed).fit(train)
    queries = test.frame[model.predict(test.frame) == 0].iloc[:n_queries]
    return model, train, queries


def _methods(name: str, dice_methods: tuple[str, ...]) -> list[tuple[str, str, Any]]:
    """(label, norm the row is reported in, factory(model, train))."""
    alpha = ALPHA.get(name, 1000)
    out: list[tuple[str, str, Any]] = []
    for norm in ("l1", "l2"):
        for minimise in (True, False):
            label = f"DiverseRobust {norm.upper()}{'' if minimise else ' no-min'}"
            out.append((label, norm, lambda m, t, n=norm, mi=minimise: rc.methods.DiverseRobust(
                m, t, alpha=alpha, beta=0.5, gamma=0.1, norm=n, minimise=mi)))
    if dice_methods:
        for method in dice_methods:
            for norm in ("l1", "l2"):  # one run, reported in both norms
                out.append((f"DiCE-{method} {norm.upper()}", norm,
                            lambda m, t, me=method: rc.methods.DiCE(m, t, method=me, random_state=0)))
    for norm in ("l1", "l2"):
        out.append((f"NearestNeighbour {norm.upper()}", norm,
                    lambda m, t, n=norm: rc.methods.NearestNeighbour(m, t, norm=n)))
    out.append(("MILPNearest L1", "l1", lambda m, t: rc.methods.MILPNearest(m, t, norm="l1",
                                                                             time_limit=30)))
    out.append(("MILPNearest L1 (in L2)", "l2", lambda m, t: rc.methods.MILPNearest(
        m, t, norm="l1", time_limit=30)))
    return out


def _ms(v: pd.Series) -> str:
    v = pd.to_numeric(v, errors="coerce").dropna()
    return f"{v.mean():.2f} ± {v.std(ddof=0):.2f}" if len(v) else "—"


def run(datasets: list[str], n_queries: int, n_repeats: int, seed: int = 0,
        dice_methods: tuple[str, ...] = ("random", "genetic"), only: Any = None) -> pd.DataFrame:
    try:
        import dice_ml  # noqa: F401
    except ImportError:
        dice_methods = ()
    rows = []
    for name in datasets:
        model, train, queries = _setup(name, n_queries, seed)
        d = model.encoder.n_features_out_
        cache: dict[str, tuple[Any, pd.DataFrame, float]] = {}
        for label, norm, factory in _methods(name, tuple(dice_methods)):
            if only and not any(w in label for w in only):
                continue
            key = label.rsplit(" ", 1)[0] if label.startswith(("DiCE", "MILPNearest")) else label
            if key.startswith("MILPNearest"):
                key = "MILPNearest"
            if key not in cache:
                ex = factory(model, train)
                t0, c0 = time.perf_counter(), time.process_time()
                expl = ex.explain(queries)
                wall = (time.perf_counter() - t0) / len(queries)
                cpu = (time.process_time() - c0) / len(queries)
                table = input_robustness(ex, queries, train, explanations=expl,
                                         n_repeats=n_repeats, random_state=seed)
                cache[key] = (expl, table, wall, cpu)
            expl, table, wall, cpu = cache[key]
            owner = expl.queries.index.get_indexer(expl.counterfactuals["query_id"])
            C = expl.counterfactuals_encoded
            kd = k_distance_batch(expl.queries_encoded, C, owner, norm)
            kv = k_diversity_batch(C, owner, len(expl), norm)
            ok = table["perturbed"] & table["n_cfs"].gt(0) & table["n_cfs_perturbed"].gt(0)
            rows.append({
                "dataset": name, "d": d, "method": label,
                "coverage": f"{float((expl.status == 'found').mean()):.0%}",
                "valid (both sets)": f"{float(table.loc[ok, 'valid'].mean()):.0%}" if ok.any() else "—",
                "CEs/query": f"{np.bincount(owner, minlength=len(expl)).mean():.1f}",
                "k-distance": _ms(pd.Series(kd)), "k-diversity": _ms(pd.Series(kv)),
                "set-distance Σ": _ms(table.loc[ok, f"set_distance_sum_{norm}"]),
                "set-distance max": _ms(table.loc[ok, f"set_distance_max_{norm}"]),
                "pairs": int(ok.sum()),
                "time/query (s)": f"{wall:.3f}",
                "CPU/query (s)": f"{cpu:.3f}",
            })
            print(" | ".join(str(v) for v in rows[-1].values()), flush=True)  # progress
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["diabetes"])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="5 queries × 1 repeat")
    parser.add_argument("--out", help="also write the table to this CSV file")
    parser.add_argument("--only", nargs="*", help="run only the methods whose label contains one "
                        "of these words")
    parser.add_argument("--dice", nargs="*", default=["random", "genetic"],
                        help="DiCE methods to run (none: skip DiCE)")
    args = parser.parse_args()
    q, r = (5, 1) if args.quick else (args.queries, args.repeats)
    table = run(args.datasets, q, r, args.seed, tuple(args.dice), args.only)
    print(_markdown(table))
    if args.out:
        table.to_csv(args.out, index=False)


def _markdown(table: pd.DataFrame) -> str:
    cells = [list(map(str, table.columns))] + [[str(v) for v in row] for row in table.to_numpy()]
    lines = ["| " + " | ".join(r) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("---" for _ in table.columns) + "|")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
