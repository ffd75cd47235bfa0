"""Counterfactual methods on XGBoost and LightGBM credit models (issue 32): one Markdown table.

Per dataset (adult, give_me_some_credit "gmc", heloc; robustce's dataset registry, offline via
``ROBUSTCE_DATA``) and booster, the user's model is a scikit-learn pipeline on the raw frame —
``ColumnTransformer`` (``OneHotEncoder`` for text columns, ``StandardScaler`` for numbers) then
``XGBClassifier`` / ``LGBMClassifier`` (100 trees, depth 4; row subsampling 0.8, so that a new
seed is a new model) — imported with :func:`robustce.models.from_sklearn`.

Protocol (PROPLACE §5 applied to boosters, :func:`robustce.models.proplace_family`): the
training split (80 %) is cut into halves D1/D2; the explained model is trained on D1 and the
explainers get D1; the family for ``vr`` is ``n_retrain`` pipelines retrained on D1 ∪ D2 (new
data) and ``n_drop`` on D1 minus 1 % of its rows, each with its own seed. Queries: ``n_queries``
test rows the model puts in class 0 (a random sample, ``random_state``), target class 1.

Columns, per method: coverage (share of queries with a CE), validity (share of the CEs that
the *user's own fitted pipeline* puts in the target class, ``pipe.predict`` on the raw CE
rows), ℓ1 (model-space distance of the rank-0 CE), LOF (10-LOF against D1's target-class
rows; ≈ 1 inlier), vr (share of the family's models that give the CE its target class), time
(median seconds per query) — means over the queries with a CE.

The method rows are a parameter: :data:`METHODS` maps a row name to a :class:`MethodRow`
(a function of the :class:`Setting`: model, data, family, ...), and :func:`run` takes any list
of rows, so a new method is one more row::

    from booster_table import DEFAULT_ROWS, MethodRow, run, to_markdown
    robust = MethodRow("robust ensemble CE", lambda s: MyRobustCE(s.model, s.train, ...))
    print(to_markdown(run(rows=[*DEFAULT_ROWS, robust])))

Extra columns likewise: ``run(columns={"(δ, ε)-robust %": fn})`` with ``fn(setting, result)``
returning one number per row.

    python benchmarks/booster_table.py [--quick] [--datasets adult heloc] [--boosters xgboost]
        [--methods NN RobX FeatureTweaking DiCE-genetic RNN-family MILPNearest]
        [--queries 20] [--out benchmarks/booster_table.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import robustce as rc

#: the table's dataset names and their registry names
DATASETS = {"adult": "adult", "gmc": "give_me_some_credit", "heloc": "heloc"}
BOOSTERS = ("xgboost", "lightgbm")


def booster(name: str, random_state: int = 0) -> Any:
    """The unfitted booster of the table: 100 trees of depth 4, rows subsampled at 0.8."""
    if name == "xgboost":
        from xgboost import XGBClassifier

        return XGBClassifier(n_estimators=100, max_depth=4, subsample=0.8,
                             random_state=random_state, n_jobs=1)
    if name == "lightgbm":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(n_estimators=100, max_depth=4, num_leaves=16, subsample=0.8,
                              subsample_freq=1, random_state=random_state, n_jobs=1, verbose=-1)
    raise ValueError(f"unknown booster {name!r}; one of {BOOSTERS}")


def pipeline(frame: pd.DataFrame, clf: Any) -> Any:
    """The user's pipeline on the raw frame (unfitted)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    text = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    num = [c for c in frame.columns if c not in text]
    parts = [("num", StandardScaler(), num)]
    if text:
        parts.insert(0, ("cat", OneHotEncoder(handle_unknown="ignore"), text))
    return Pipeline([("pre", ColumnTransformer(parts)), ("clf", clf)])


@dataclass
class Setting:
    """Everything a method row is built from, for one dataset and booster."""

    dataset: str
    booster: str
    pipe: Any                      # the user's fitted pipeline (raw frames)
    model: Any                     # its import (rc.models.from_sklearn)
    train: rc.data.Dataset         # D1: what the model and the explainers see
    test: rc.data.Dataset
    family: Any                    # the retrained ModelFamily for vr
    spec: Any                      # the unfitted pipeline the family retrains
    random_state: int = 0
    cache: dict[str, Any] = field(default_factory=dict)
    shift: Any = None              # the (δ, ε)-set (EnsembleShift) of the robust row and column

    @property
    def columns(self) -> list[str]:
        return list(self.train.frame.columns)

    def certifier_family(self) -> Any:
        """A second family, independent of the one vr is measured on: pipelines retrained on
        D1 minus a random 10 % with new seeds (what can be simulated before new data
        arrives); built once, for RobustNearestNeighbour's FamilyCertifier."""
        if "certifier_family" not in self.cache:
            _, fam = rc.models.seed_family(self.train, self.spec, n_models=5, drop_fraction=0.1,
                                           random_state=self.random_state + 1)
            self.cache["certifier_family"] = fam
        return self.cache["certifier_family"]


@dataclass(frozen=True)
class MethodRow:
    """A row of the table: its name and how to build the explainer for a setting."""

    name: str
    build: Callable[[Setting], Any]


def _rnn_family(s: Setting) -> Any:
    return rc.methods.RobustNearestNeighbour(
        s.model, s.train, certifier=rc.robustness.FamilyCertifier(s.certifier_family()),
        norm="l1", target_class=1)


#: every row the command line can name
METHODS: dict[str, MethodRow] = {row.name: row for row in (
    MethodRow("NN", lambda s: rc.methods.NearestNeighbour(s.model, s.train, norm="l1",
                                                          target_class=1)),
    MethodRow("RobX", lambda s: rc.methods.RobX(s.model, s.train, norm="l1", target_class=1,
                                                random_state=s.random_state)),
    MethodRow("FeatureTweaking", lambda s: rc.methods.PlausibleFeatureTweaking(
        s.model, s.train, norm="l1", target_class=1)),
    MethodRow("DiCE-genetic", lambda s: rc.methods.DiCE(
        s.model, s.train, method="genetic", n_counterfactuals=1, target_class=1,
        random_state=s.random_state)),
    MethodRow("RNN-family", _rnn_family),
    MethodRow("MILPNearest", lambda s: rc.methods.MILPNearest(s.model, s.train, norm="l1",
                                                              target_class=1, time_limit=30)),
    MethodRow("EnsembleRobust", lambda s: rc.methods.EnsembleRobust(
        s.model, s.train, delta=s.shift.delta, epsilon=s.shift.epsilon, norm="l1",
        target_class=1, time_limit=60)),
)}
#: the rows issue 32 asks for
DEFAULT_ROWS = tuple(METHODS[n] for n in ("MILPNearest", "EnsembleRobust", "RobX", "NN",
                                          "FeatureTweaking", "DiCE-genetic"))
#: the (δ, ε)-set of the robust row and of the "(δ, ε)-robust" column (model space)
SHIFT = rc.robustness.EnsembleShift(delta=0.005, epsilon=0.005)


def robust_share(s: Setting, res: Any) -> float:
    """Share of the rank-0 CEs that the exact (δ, ε)-test proves robust at ``s.shift``."""
    pos, C = res.first_counterfactuals()
    if not len(C):
        return float("nan")
    certs = rc.robustness.EnsembleCertifier(s.shift).certify(s.model, C,
                                                             res.target_class.to_numpy()[pos])
    return float(certs.robust.mean())


def build_setting(dataset: str, booster_name: str, *, n_retrain: int = 5, n_drop: int = 5,
                  random_state: int = 0, shift: Any = None) -> Setting:
    """Load, split, train the D1 model and its retrained family, import."""
    data = rc.datasets.load(DATASETS.get(dataset, dataset))
    train, test = data.split(test_size=0.2, random_state=random_state)
    spec = pipeline(train.frame, booster(booster_name, random_state))
    base, family = rc.models.proplace_family(train, spec, n_retrain=n_retrain, n_drop=n_drop,
                                             test=test, random_state=random_state)
    d1, _ = rc.models.split_halves(train, random_state)
    return Setting(dataset, booster_name, base.estimator, base, d1, test, family, spec,
                   random_state, shift=SHIFT if shift is None else shift)


def _queries(s: Setting, n: int) -> pd.DataFrame:
    neg = s.test.frame[s.model.predict(s.test.frame) == 0]
    return neg.sample(min(n, len(neg)), random_state=s.random_state)


def evaluate_row(s: Setting, row: MethodRow, queries: pd.DataFrame, lof: Any,
                 columns: Mapping[str, Callable[[Setting, Any], float]] | None = None
                 ) -> dict[str, Any]:
    """One table row: build, explain, measure."""
    t0 = time.perf_counter()
    out: dict[str, Any] = {"dataset": s.dataset, "booster": s.booster, "method": row.name}
    try:
        explainer = row.build(s)
        res = explainer.explain(queries)
    except Exception as exc:  # a method that cannot run here is a row that says why
        out["note"] = f"{type(exc).__name__}: {exc}"[:160]
        return out
    found = res.status == "found"
    cfs = res.counterfactuals
    rank0 = cfs.groupby("query_id", sort=False).head(1)
    targets = res.target_class.loc[rank0["query_id"]].to_numpy()
    per = rc.evaluation.evaluate(res, s.model, data=s.train, family=s.family,
                                 metrics=["proximity_l1", "lof", "vr"], lof=lof)
    out.update({
        "coverage": float(found.mean()),
        "validity": float((s.pipe.predict(rank0[s.columns]) == targets).mean())
        if len(rank0) else np.nan,
        "l1": float(per["proximity_l1"].mean()) if len(per) else np.nan,
        "lof": float(per["lof"].mean()) if len(per) else np.nan,
        "vr": float(per["vr"].mean()) if len(per) else np.nan,
        "time_s": float(res.timings.median()),
        "wall_s": time.perf_counter() - t0,
    })
    for name, fn in (columns or {}).items():
        out[name] = fn(s, res)
    out["robust"] = robust_share(s, res)
    return out


def run(datasets: Sequence[str] = tuple(DATASETS), boosters: Sequence[str] = BOOSTERS,
        rows: Sequence[MethodRow] = DEFAULT_ROWS, *, n_queries: int = 20, n_retrain: int = 5,
        n_drop: int = 5, random_state: int = 0, shift: Any = None,
        columns: Mapping[str, Callable[[Setting, Any], float]] | None = None,
        log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True)
        ) -> pd.DataFrame:
    """The table as a DataFrame (one row per dataset × booster × method); ``attrs["settings"]``
    holds each setting's accuracies and family."""
    from robustce.evaluation.plausibility import lof_scorer

    out, settings = [], []
    for ds in datasets:
        for b in boosters:
            if importlib.util.find_spec(b) is None:
                log(f"skip {b}: not installed")
                continue
            t0 = time.perf_counter()
            s = build_setting(ds, b, n_retrain=n_retrain, n_drop=n_drop,
                              random_state=random_state, shift=shift)
            acc = float((s.model.predict(s.test.frame) == s.test.y).mean())
            settings.append({"dataset": ds, "booster": b, "n_train_d1": len(s.train),
                             "test_accuracy": acc,
                             "family": f"{len(s.family)} ({n_retrain} on D1∪D2, {n_drop} on "
                                       "D1 minus 1 %)",
                             "family_accuracy": float(np.mean(s.family.accuracies)),
                             "train_s": time.perf_counter() - t0})
            log(f"{ds}/{b}: trained in {settings[-1]['train_s']:.1f} s, accuracy {acc:.3f}")
            queries = _queries(s, n_queries)
            lof = lof_scorer(s.train, s.model.encoder, 10)
            for row in rows:
                r = evaluate_row(s, row, queries, lof, columns)
                r["n_queries"] = len(queries)
                out.append(r)
                log(f"  {row.name}: {r.get('wall_s', float('nan')):.1f} s"
                    + (f" ({r['note']})" if "note" in r else ""))
    table = pd.DataFrame(out)
    table.attrs["settings"] = settings
    return table


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    if isinstance(v, float | np.floating):
        return f"{v:.{digits}f}"
    return str(v)


def to_markdown(table: pd.DataFrame, extra: Sequence[str] = ()) -> str:
    """The Markdown table (and one line per setting: accuracies, family)."""
    cols = ["coverage", "validity", "l1", "lof", "vr", "robust", *extra, "time_s"]
    head = ["dataset", "booster", "method", "coverage", "validity", "ℓ1", "LOF", "vr",
            "(δ, ε)-robust", *extra, "time (s)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in table.iterrows():
        cells = [str(r["dataset"]), str(r["booster"]), str(r["method"])]
        for c in cols:
            cells.append(_fmt(r.get(c), 4 if c == "time_s" else 3))
        if isinstance(r.get("note"), str):
            cells[-1] += f" ({r['note']})"
        lines.append("| " + " | ".join(cells) + " |")
    settings = table.attrs.get("settings", [])
    if settings:
        lines += ["", "| dataset | booster | D1 rows | test accuracy | family | family accuracy "
                  "| training (s) |", "|---|---|---|---|---|---|---|"]
        for s in settings:
            lines.append(f"| {s['dataset']} | {s['booster']} | {s['n_train_d1']} | "
                         f"{s['test_accuracy']:.3f} | {s['family']} | "
                         f"{s['family_accuracy']:.3f} | {s['train_s']:.1f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), help="table names "
                        f"({', '.join(DATASETS)}) or registry names")
    parser.add_argument("--boosters", nargs="+", default=list(BOOSTERS), choices=BOOSTERS)
    parser.add_argument("--methods", nargs="+", default=[r.name for r in DEFAULT_ROWS],
                        choices=list(METHODS))
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--n-retrain", type=int, default=5)
    parser.add_argument("--n-drop", type=int, default=5)
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument("--delta", type=float, default=SHIFT.delta,
                        help="δ of the robust row and the (δ, ε)-robust column")
    parser.add_argument("--epsilon", type=float, default=SHIFT.epsilon, help="ε (model space)")
    parser.add_argument("--quick", action="store_true", help="heloc, xgboost, 5 queries, "
                        "family of 2 + 2")
    parser.add_argument("--out", help="also write the table (with a header) to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.datasets, args.boosters, args.queries = ["heloc"], ["xgboost"], 5
        args.n_retrain = args.n_drop = 2
    warnings.filterwarnings("ignore", category=UserWarning)
    t0 = time.perf_counter()
    table = run(args.datasets, args.boosters, [METHODS[m] for m in args.methods],
                n_queries=args.queries, n_retrain=args.n_retrain, n_drop=args.n_drop,
                random_state=args.random_state,
                shift=rc.robustness.EnsembleShift(args.delta, args.epsilon))
    text = to_markdown(table)
    total = time.perf_counter() - t0
    print(text)
    print(f"\ntotal {total:.0f} s")
    if args.out:
        cmd = "python benchmarks/booster_table.py " + " ".join(argv if argv is not None
                                                               else sys.argv[1:])
        header = (f"<!-- generated by benchmarks/booster_table.py -->\n\n"
                  f"Command: `{cmd.strip()}` (ROBUSTCE_DATA=shared offline datasets); "
                  f"{platform.machine()}, {_cores()} CPU cores shared with other jobs; "
                  f"total {total:.0f} s.\n\n")
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(header + text + "\n")


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


if __name__ == "__main__":
    main()
