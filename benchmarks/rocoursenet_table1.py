"""RoCourseNet Table 1 protocol on the shift datasets (german org/upt, student GP/MS, loan years;
appendix B's simulated covariate and label shifts, parts D1/D2).

Per part Dᵢ of the dataset (``data.groups``): split it (stratified, ``--test-size``), train on
Dᵢ's train split, explain Dᵢ's test split (one CE per query, the CE aims at the class opposite
to the part's own prediction), then report

* validity — share of queries whose CE the part's own predictor puts in the opposite class;
* robust validity — share of (query, other part) pairs where the *other* part's predictor gives
  the query's CE the opposite of the own prediction of the query;
* robust validity to class c (``robust_validity_to_0`` / ``_1``) — the same over the queries
  whose CE aims at class c only (averaged over the parts that have such queries);
* proximity — mean L1 distance between query and CE in model space (queries with a CE);

averaged over parts (the paper's protocol, section 4). A query without a CE counts as invalid in
both validity columns.

Methods. CounterNet and RoCourseNet are trained end to end on each part (their predictor is the
model whose validity counts). The post-hoc baselines (``Wachter`` = the paper's VanillaCF,
``ROAR`` = ROAR-LIME, ``RBR``; ``WachterRobust``, ``ProtoRobust``, ``MILPRobust`` with the exact
Δ-test at ``--delta``) explain a separate predictor per part, as in the authors' code
(``BirkhoffG/RoCourseNet`` ``scripts/experiment.py``: relax ``PredictiveTrainingModule`` with
``sizes = [50, 10, 50]``, lr 0.003, the dataset's epochs and batch size): a robustce
:class:`~robustce.models.MLP` ((50, 10, 50), lr 0.003, same epochs and batch size) trained once
per part and shared by all post-hoc methods; robust validity is measured on the MLP of the other
part. Differences from the authors' predictor: ReLU instead of leaky ReLU, no dropout, binary
cross-entropy instead of a squared error on the sigmoid output.

The scoring and the per-part training come from :mod:`robustce.evaluation.part_shift`, which
also runs the named configuration ``robustce benchmark rocoursenet-table1`` (resumable, with a
report); this script adds the experiment switches below (encodings, years, method overrides).

Hyperparameters are the authors' per dataset (``CONFIGS``); ``--epochs`` / ``--quick`` shorten
training, ``--queries N`` explains the first N test rows of each part only (loan, smoke runs).
Each row also gives ``time_s``: wall time of the CE step per query (CounterNet and
RoCourseNet: one batched forward pass, ``counterfactuals``; post-hoc: one ``explain`` call).

    python benchmarks/rocoursenet_table1.py german student          # authors' epochs
    python benchmarks/rocoursenet_table1.py german --quick          # 10 epochs
    python benchmarks/rocoursenet_table1.py covariate label         # appendix B, Table 7
    python benchmarks/rocoursenet_table1.py student --actionability free  # no immutables
    python benchmarks/rocoursenet_table1.py german --methods CounterNet Wachter ROAR RBR
    python benchmarks/rocoursenet_table1.py german --methods RoCourseNet \
        --rocoursenet shift_features="'softmax'" --encoding authors   # the authors' attacker
    python benchmarks/rocoursenet_table1.py loan --encoding authors --years 1994 1995 \
        --methods CounterNet --epochs 50   # loan with Term one-hot, two years only

``by_part`` also gives each part's test accuracy, base rate (majority share), share of class 1
and share predicted 1 (a constant predictor shows as 0 or 1).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import numpy as np

import robustce as rc
from robustce.evaluation.part_shift import (
    part_predictors,
    posthoc_parts,
    score_parts,
    trained_parts,
)
from robustce.methods import CounterNet, RoCourseNet

# the authors' per-dataset settings (scripts/utils_configs.py in BirkhoffG/RoCourseNet)
CONFIGS: dict[str, dict[str, Any]] = {
    "german": dict(dataset="rocoursenet_german", hidden=((100, 50), (20,), (20,)), lr=0.003,
                   batch_size=256, lambdas=(1.0, 1.0, 0.1), epochs=100, n_steps=10),
    "student": dict(dataset="rocoursenet_student", hidden=((50, 10), (10,), (10,)), lr=0.01,
                    batch_size=128, lambdas=(1.0, 0.2, 0.1), epochs=100, n_steps=7),
    "loan": dict(dataset="loan", hidden=((50, 10), (10,), (50, 50)), lr=0.003, batch_size=128,
                 lambdas=(1.0, 0.2, 0.1), epochs=5, n_steps=7),
    # appendix B's simulated shifts (built in, 1000 rows per part; cov_configs / label_configs)
    "covariate": dict(dataset="covariate_shift", hidden=((50, 10), (10,), (10,)), lr=0.01,
                      batch_size=128, lambdas=(1.0, 0.2, 0.1), epochs=50, n_steps=7),
    "label": dict(dataset="label_shift", hidden=((50, 10), (10,), (10,)), lr=0.01,
                  batch_size=128, lambdas=(1.0, 0.2, 0.1), epochs=50, n_steps=7),
}

# the authors' encoding (scripts/utils_configs.py data_config): "continous_cols" min-max scaled,
# "discret_cols" one-hot; our loaders code some of these as ordinals/binaries (--encoding)
AUTHORS_COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "german": (("Duration", "Credit amount", "Installment rate", "Age", "Existing credits",
                "Number people"), ("Present residence", "Status", "History")),
    "student": (("failures", "age"), ("G2", "G1", "higher", "goout", "Mjob", "Fjob", "health",
                                      "freetime", "absences", "Walc", "famrel", "Medu", "Fedu")),
    # paper-era repo bkghz-orange-blue/counternet_adv, assets/configs/adv/loan.json: Term is
    # one-hot (its 36 observed values), NewExist min-max scaled
    "loan": (("NoEmp", "NewExist", "CreateJob", "RetainedJob", "DisbursementGross", "GrAppv",
              "SBA_Appv"), ("State", "Term", "UrbanRural", "LowDoc", "Sector_Points")),
}

TRAINED = ("CounterNet", "RoCourseNet")
POSTHOC = ("Wachter", "ROAR", "RBR", "WachterRobust", "ProtoRobust", "MILPRobust")
DELTA_ROBUST = ("WachterRobust", "ProtoRobust", "MILPRobust")  # these take shift=δ
# the baselines' predictor in the authors' runs: m_config "sizes" and the script's lr default
BASELINE_MLP = dict(hidden_layers=(50, 10, 50), lr=0.003)


def authors_encoding(data: rc.data.Dataset, name: str) -> rc.data.Dataset:
    """``data`` re-typed as the authors encode it (:meth:`~robustce.data.Dataset.with_kinds`):
    their continuous columns numeric (an ordinal with numeric levels becomes an integer
    feature over its levels' range), their discrete columns one-hot; actionability kept."""
    if name not in AUTHORS_COLUMNS:
        raise SystemExit(f"--encoding authors is defined for {sorted(AUTHORS_COLUMNS)} only")
    continuous, discrete = AUTHORS_COLUMNS[name]
    if sorted(continuous + discrete) != sorted(data.schema.names):
        raise SystemExit(f"{name}: the authors' columns {continuous + discrete} do not match the "
                         f"loader's {data.schema.names}")
    numeric = {c: "integer" for c in continuous if data.schema[c].kind.has_levels}
    return data.with_kinds(numeric | dict.fromkeys(discrete, "categorical"))


def evaluate(name: str, epochs: int | None = None, test_size: float = 0.25, seed: int = 0,
             methods: tuple[str, ...] = TRAINED, actionability: str = "loader",
             n_queries: int | None = None, delta: float = 0.05,
             method_params: dict[str, dict[str, Any]] | None = None,
             encoding: str = "loader", years: tuple[int, ...] | None = None
             ) -> list[dict[str, Any]]:
    """Rows of the table for one dataset (see the module docstring)."""
    return list(iter_rows(name, epochs, test_size, seed, methods, actionability, n_queries,
                          delta, method_params, encoding, years))


def iter_rows(name: str, epochs: int | None = None, test_size: float = 0.25, seed: int = 0,
              methods: tuple[str, ...] = TRAINED, actionability: str = "loader",
              n_queries: int | None = None, delta: float = 0.05,
              method_params: dict[str, dict[str, Any]] | None = None,
              encoding: str = "loader", years: tuple[int, ...] | None = None
              ) -> Iterator[dict[str, Any]]:
    """:func:`evaluate`, one row per method as soon as it is done."""
    unknown = [m for m in methods if m not in TRAINED + POSTHOC]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; choose from {TRAINED + POSTHOC}")
    cfg = dict(CONFIGS[name])
    data = rc.datasets.load(cfg.pop("dataset"), **({"years": range(1994, 2010)}
                                                   if name == "loan" else {}))
    if encoding == "authors":
        data = authors_encoding(data, name)
    if years is not None:  # loan: a subset of the years (encoding and bounds from all 16)
        if name != "loan":
            raise SystemExit("--years applies to loan only")
        data = data.subset(np.flatnonzero(np.isin(data.groups, years)))
    if actionability == "free":  # every feature may change, as in the authors' runs
        free = {f: "free" for f in data.schema.immutable}
        data = dataclasses.replace(data, schema=data.schema.with_actionability(**free))
    n_steps = cfg.pop("n_steps")
    if epochs is not None:
        cfg["epochs"] = epochs
    splits = {g: p.split(test_size=test_size, random_state=seed)
              for g, p in data.by_group().items()}
    common = {"dataset": name, "epochs": cfg["epochs"], "parts": len(splits),
              **({"years": list(years)} if years is not None else {}),
              "actionability": actionability, "encoding": encoding}
    mlps, mlp_s = None, float("nan")
    for method in methods:
        if method in TRAINED:
            cls = RoCourseNet if method == "RoCourseNet" else CounterNet
            extra = {"n_steps": n_steps} if cls is RoCourseNet else {}
            extra.update((method_params or {}).get(method, {}))
            parts, predict, times = trained_parts(cls, cfg | extra, splits, seed, n_queries)
            yield {**common, "method": method, **score_parts(parts, predict), **times,
                   "params": extra}
            continue
        if mlps is None:  # one predictor per part, shared by every post-hoc method
            mlps, mlp_s = part_predictors(BASELINE_MLP | {"epochs": cfg["epochs"],
                                                          "batch_size": cfg["batch_size"]},
                                          splits, seed)
        params = dict((method_params or {}).get(method, {}))
        if method in DELTA_ROBUST:
            params.setdefault("shift", delta)
        parts = posthoc_parts(getattr(rc.methods, method), params, mlps, splits, seed, n_queries)
        yield {**common, "method": method,
               **score_parts(parts, {g: m.predict for g, m in mlps.items()}),
               "train_s": mlp_s, "predictor": "MLP(50, 10, 50)",
               **({"delta": params["shift"]} if method in DELTA_ROBUST else {})}


def _literals(pairs: list[str]) -> dict[str, Any]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--rocoursenet / --counternet expect KEY=VALUE, got {pair!r}")
        out[key] = ast.literal_eval(value)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="+", choices=sorted(CONFIGS))
    ap.add_argument("--methods", nargs="+", default=list(TRAINED), choices=TRAINED + POSTHOC)
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--quick", action="store_true",
                    help="10 epochs and the first 20 test rows of each part (a smoke run; "
                         "on german 10 epochs leave a constant predictor)")
    ap.add_argument("--queries", type=int, default=None,
                    help="explain only the first N test rows of each part")
    ap.add_argument("--delta", type=float, default=0.05,
                    help="δ of the exact Δ-test for WachterRobust / ProtoRobust / MILPRobust")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--years", type=int, nargs="+", default=None,
                    help="loan: these years only (the schema's bounds and one-hot levels still "
                         "come from all 16 years)")
    ap.add_argument("--rocoursenet", nargs="*", default=[], metavar="KEY=VALUE",
                    help="RoCourseNet parameters beyond the dataset's, e.g. epsilon=0.3 "
                         "shift_features='all' (values are Python literals)")
    ap.add_argument("--counternet", nargs="*", default=[], metavar="KEY=VALUE",
                    help="CounterNet parameters beyond the dataset's, e.g. "
                         "validity_dropout=True")
    ap.add_argument("--actionability", choices=("loader", "free"), default="loader",
                    help="loader: the loader's immutable features stay fixed; free: every "
                         "feature may change (the authors' runs)")
    ap.add_argument("--encoding", choices=("loader", "authors"), default="loader",
                    help="loader: the loader's feature kinds (ordinals thermometer-coded); "
                         "authors: the authors' continuous / one-hot split (AUTHORS_COLUMNS)")
    args = ap.parse_args()
    epochs = 10 if args.quick and args.epochs is None else args.epochs
    n_queries = 20 if args.quick and args.queries is None else args.queries
    for name in args.datasets:
        for row in iter_rows(name, epochs=epochs, seed=args.seed, methods=tuple(args.methods),
                             actionability=args.actionability, n_queries=n_queries,
                             delta=args.delta, encoding=args.encoding,
                             years=None if args.years is None else tuple(args.years),
                             method_params={"RoCourseNet": _literals(args.rocoursenet),
                                            "CounterNet": _literals(args.counternet)}):
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
