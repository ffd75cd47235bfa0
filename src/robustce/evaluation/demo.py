"""``robustce demo``: the whole pipeline on built-in data, no download.

1. An MLP is trained on ``synthetic_loan`` following PROPLACE's retraining protocol (base model
   on a random half D1 of the training split; a small family retrained on all of it or on D1
   minus 1 % — the models the CEs should stay valid for).
2. The first rejected test applicants are explained with every available method of
   :data:`DEMO_METHODS` (robust ones with a :class:`~robustce.robustness.ParameterShift` δ).
3. Validity, proximity, plausibility (LOF), validity after retraining (``vr``), Δ-validity
   (``v_delta``, exact test) and time are measured; the summary table is printed and an HTML +
   Markdown report (with a 2-D picture of the methods on ``moons``) and the Explanations are
   written.
4. The same applicants' data explained for a scikit-learn decision tree and a small random
   forest by MACE (nearest CE with a certified lower bound) and MO, the nearest reachable
   training point (:func:`mace_config`): a second table, also in the report.

The first part is a benchmark run (:func:`~robustce.evaluation.runner.run_benchmark`) with one
dataset and one seed, so ``out_dir`` has the runner's layout (``cells/``, ``explanations/``,
``table.csv``); the tree part is a second run in ``out_dir/trees``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from robustce.data.builtin import LOAN_CONSTRAINTS
from robustce.evaluation.report import default_figures, figure_toy, format_table, write_report
from robustce.evaluation.results import BenchmarkResult
from robustce.evaluation.runner import run_benchmark, select_queries
from robustce.methods.registry import (
    available_methods,
    build_explainer,
    converter_for,
    get_method,
    param_annotations,
    trains_own_model,
)
from robustce.robustness.shift import ParameterShift

__all__ = ["DEMO_METHODS", "DemoResult", "demo_config", "mace_config", "run_demo"]

#: the methods the demo runs, in table order (those not importable are skipped)
DEMO_METHODS = ("nearest_neighbour", "diverse_robust", "wachter", "milp_nearest", "milp_robust",
                "proplace", "apas", "counternet", "rocoursenet")
DEFAULT_DELTA = 0.03


@dataclass
class DemoResult:
    result: BenchmarkResult
    paths: dict[str, Path]
    seconds: float
    methods: list[str]
    trees: BenchmarkResult | None = None  # MACE and MO on a tree and a forest


def _method_entries(names: list[str], delta: float, time_limit: float, epochs: int = 50,
                    hidden: list[int] | None = None) -> list[dict[str, Any]]:
    """Config entries: every ParameterShift-typed parameter gets δ, ``time_limit`` the limit;
    methods that train their own predictor (CounterNet, RoCourseNet) train ``epochs`` with an
    encoder of the demo MLP's ``hidden`` sizes (a network the exact Δ-test decides quickly)."""
    out = []
    for name in names:
        params: dict[str, Any] = {}
        if trains_own_model(name):
            params["epochs"] = epochs
            if hidden:
                params["hidden"] = [list(hidden), [hidden[-1]], [hidden[-1]]]
        for key, (hint, _) in param_annotations(get_method(name)).items():
            found = converter_for(hint)
            if found is not None and found[0] is ParameterShift:
                params[key] = delta
        if "time_limit" in get_method(name).param_names():
            params["time_limit"] = time_limit
        out.append({"name": name, "params": params})
    return out


#: training epochs of the methods that train their own predictor: (quick, full). Quick trains
#: on half the rows, so it takes twice the epochs for the same number of optimiser steps (with
#: 20, CounterNet's and RoCourseNet's heads reached the target class for none of the queries)
OWN_EPOCHS = {True: 100, False: 50}


def demo_config(*, quick: bool = False, delta: float = DEFAULT_DELTA,
                methods: list[str] | None = None) -> dict[str, Any]:
    """The benchmark configuration the demo runs (a dict in the TOML schema)."""
    names = [m for m in (methods or DEMO_METHODS) if m in available_methods()]
    hidden = [16, 8]  # also quick: with 10-5, a retrained member of the vr family collapsed to
    # a constant model (ConstantModelWarning) on the quick data
    metrics = ["validity", "proximity_l1", "raw_l1", "sparsity", "lof", "vr", "v_delta", "time"]
    evaluation: dict[str, Any] = {
        "retrain": {"protocol": "proplace", "n_retrain": 2 if quick else 5,
                    "n_drop": 1 if quick else 5},
        "lof_neighbors": 10,
        "delta": delta,
    }
    return {
        "name": "robustce demo",
        "seeds": [0],
        "datasets": [{"name": "synthetic_loan",
                      "params": {"n_samples": 1000 if quick else 2000, "random_state": 0}}],
        "methods": _method_entries(names, delta, time_limit=5.0 if quick else 15.0,
                                   epochs=OWN_EPOCHS[quick], hidden=hidden),
        "model": {"hidden_layers": hidden, "epochs": 30 if quick else 50,
                  "lr": 1e-2 if quick else 5e-3},
        "split": {"test_size": 0.2},
        "queries": {"n": 6 if quick else 20, "from_class": 0},
        "evaluation": evaluation,
        "metrics": metrics,
        "on_error": "record",
    }


def mace_config(*, quick: bool = False) -> dict[str, Any]:
    """The tree part of the demo: MACE (ℓ1, ε = 1e-3) and MO on ``synthetic_loan`` for a
    decision tree and a 30-tree random forest (depth 8; small, so the demo stays short)."""
    params = {"n_samples": 1000 if quick else 2000, "random_state": 0}
    models = {"tree": {"kind": "tree"},
              "forest": {"kind": "forest", "n_estimators": 10 if quick else 30, "max_depth": 8}}
    return {
        "name": "robustce demo: trees",
        "seeds": [0],
        "datasets": [{"name": "synthetic_loan", "label": f"synthetic_loan-{k}", "params": params,
                      "model": m} for k, m in models.items()],
        "methods": [{"name": "mace", "params": {"norm": "l1", "time_limit": 5.0 if quick else 15.0}},
                    {"name": "minimum_observable", "params": {"norm": "l1"}}],
        "split": {"test_size": 0.2},
        "queries": {"n": 6 if quick else 20, "from_class": 0},
        "evaluation": {"lof_neighbors": 10},
        "metrics": ["validity", "proximity_l1", "raw_l1", "sparsity", "lof", "time"],
        "on_error": "record",
    }


def toy_figure(methods: list[str], *, quick: bool = False, delta: float = DEFAULT_DELTA) -> Any:
    """Decision boundary of a small MLP on ``moons`` with each method's CEs."""
    from robustce.data.registry import load
    from robustce.models.mlp import MLP

    data = load("moons", n_samples=400, noise=0.15, random_state=0)
    train, test = data.split(test_size=0.2, random_state=0)
    model = MLP((32, 16), epochs=300, lr=1e-2, batch_size=32, random_state=0).fit(train)
    queries = select_queries(model, test, 5 if quick else 10, from_class=0)
    expl = {}
    # the picture shows the MLP's boundary: methods with their own predictor are not drawn
    for entry in _method_entries([m for m in methods if not trains_own_model(m)], delta,
                                 time_limit=5.0):
        try:
            explainer = build_explainer(entry["name"], model, train, seed=0, **entry["params"])
            expl[entry["name"]] = explainer.explain(queries)
        except Exception:  # noqa: BLE001 - one failing method must not lose the picture
            continue
    return figure_toy(model, train, expl, title="two moons: decision boundary (P=0.5) and CEs")


def run_demo(out_dir: str | Path = "robustce-demo", *, quick: bool = False,
             delta: float = DEFAULT_DELTA, progress: bool = True,
             stream: TextIO | None = None) -> DemoResult:
    """Run the demo into ``out_dir`` (fresh: earlier cells there are recomputed)."""
    stream = stream or sys.stdout
    t0 = time.perf_counter()
    out = Path(out_dir)
    cfg = demo_config(quick=quick, delta=delta)
    names = [m["name"] for m in cfg["methods"]]
    print(f"robustce demo: synthetic_loan, {cfg['queries']['n']} rejected applicants, methods: "
          f"{', '.join(names) or '(none available)'}", file=stream)
    result = run_benchmark(cfg, out, progress=progress, resume=False)
    table = result.table()
    trees = run_benchmark(mace_config(quick=quick), out / "trees", progress=progress, resume=False)
    tree_table = trees.table()
    figures = list(default_figures(table))
    try:
        figures.append(("Counterfactuals on a 2-D toy dataset", toy_figure(names, quick=quick, delta=delta),
                        "A small MLP on `moons`: shaded by P(class 1), black line = decision boundary; "
                        "crosses are rejected test points, arrows lead to each method's CE."))
    except Exception as exc:  # noqa: BLE001
        print(f"(toy figure skipped: {type(exc).__name__}: {exc})", file=stream)
    notes = [
        "Data: synthetic_loan (built in), split 80/20 with seed 0.",
        "Model: ReLU MLP trained on a random half D1 of the training split (PROPLACE protocol); "
        f"vr = share of {cfg['evaluation']['retrain']['n_retrain'] + cfg['evaluation']['retrain']['n_drop']}"
        " retrained models (on D1∪D2, or D1 minus 1 %) that keep each CE's target class.",
        f"Δ-validity (v_delta): exact test against ParameterShift(δ={delta}) on every weight and bias."
        if "delta" in cfg["evaluation"] else "Δ-validity: the exact Δ-test is not available here.",
        "Table: mean ± std over the queries that received a CE; coverage = share of queries with a CE.",
        "Constraints: synthetic_loan's own relations ("
        + ", ".join(f"`{r}`" for r in LOAN_CONSTRAINTS["relations"])
        + ") apply to every method, as by default: the exact methods encode them, the others "
        "drop the CEs that break them.",
    ]
    if any(trains_own_model(m) for m in names):
        notes.append("CounterNet and RoCourseNet train their own predictor (on the whole "
                     "training split) with the CE generator: their validity and Δ-validity are "
                     "measured on that predictor; vr is left blank (the retrained family is of "
                     "the MLP above, not of their predictor).")
    notes.append("Trees: a scikit-learn decision tree and a 30-tree random forest on the same "
                 "data, explained by MACE (nearest CE under MACE's normalised ℓ1, within "
                 "ε = 1e-3 of the optimum, certified) and MO (the nearest reachable training "
                 "point the model accepts).")
    cell_notes = [*result.notes(), *trees.notes()]  # each reads every cell: once
    notes.extend([*result.class_notes(), *cell_notes])
    own_uncovered = quick and any(trains_own_model(m) for _, m in result.coverage_reasons())
    own_note = (f"--quick trains CounterNet and RoCourseNet for {OWN_EPOCHS[True]} epochs, "
                "too few for their explainer head to reach the target class; "
                f"`robustce demo` without --quick trains {OWN_EPOCHS[False]}.")
    if own_uncovered:
        notes.append(own_note)
    for err in [*result.errors, *trees.errors]:
        notes.append(f"{err['method']}: failed — {err.get('error', '?')}")
    paths = write_report(table, out, title="robustce demo — synthetic loan applications",
                         figures=figures, notes=notes,
                         extra_tables={"MACE and MO on a decision tree and a random forest":
                                       tree_table})
    seconds = time.perf_counter() - t0
    print(file=stream)
    print(format_table(table), file=stream)
    print(file=stream)
    print("MACE (certified nearest CE) and MO on a decision tree and a random forest:",
          file=stream)
    print(format_table(tree_table), file=stream)
    print(file=stream)
    for line in cell_notes:
        print(f"note: {line}", file=stream)
    if own_uncovered:
        print(f"note: {own_note}", file=stream)
    for err in [*result.errors, *trees.errors]:
        print(f"warning: {err['method']} failed: {err.get('error', '?')}", file=stream)
    print(f"report:       {paths['html']}", file=stream)
    print(f"markdown:     {paths['markdown']}", file=stream)
    print(f"explanations: {out / 'explanations'}", file=stream)
    print(f"done in {seconds:.1f} s", file=stream)
    return DemoResult(result, paths, seconds, names, trees)
