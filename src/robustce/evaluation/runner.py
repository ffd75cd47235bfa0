"""Benchmark runner: methods × datasets × seeds, resumable, parallel through joblib.

A *cell* is one (dataset, seed, method). For every (dataset, seed) the runner loads the data,
splits it with the seed, trains the MLP once (shared by all methods of that group within a
run), builds — if the config asks — the retrained model family and the parameter shift used by
the robustness metrics, and picks the queries (by default the first ``queries.n`` test rows the
model predicts as ``queries.from_class``; see :func:`select_queries`). Each cell then explains the queries and
evaluates the metrics; its result is written atomically to ``out_dir/cells/<cell>.json`` as
soon as it arrives (the Explanations go to ``out_dir/explanations/<cell>/``). A rerun skips
cells whose file exists with the same fingerprint, so an interruption loses at most the cells
in progress.

Parallelism: ``n_jobs`` joblib workers; ``backend="dask"`` (or any joblib backend) runs the same
code through ``joblib.parallel_config`` — for Dask, the current ``distributed`` client is used,
or a local cluster is started for the run.

The final table (:meth:`BenchmarkResult.table`) gives mean ± std of every metric per dataset
and method, pooled over seeds and queries, plus coverage (share of queries with a CE).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import math
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, parallel_config
from tqdm.auto import tqdm

from robustce.errors import ConfigError, ValidationError
from robustce.evaluation.config import BenchmarkConfig, parse_config
from robustce.evaluation.config_schema import DatasetEntry, MethodEntry
from robustce.evaluation.results import CELL_FORMAT, BenchmarkResult, cell_id, load_results, read_cell
from robustce.utils import atomic_write

__all__ = [
    "MISSING_DATA",
    "GroupContext",
    "check_data",
    "failed_for_missing_data",
    "missing_data",
    "query_classes",
    "load_entry",
    "prepare_group",
    "retrain_protocol",
    "run_benchmark",
    "run_cell",
    "select_queries",
]

# torch's global RNG is seeded inside MLP.fit; threads (threading/dask processes=False
# backends) must not interleave there, or a model's initial weights depend on scheduling.
_TRAIN_LOCK = threading.Lock()

#: ``cause`` of a cell that failed because a dataset file was missing: retried on every run
MISSING_DATA = "missing_data"


# --- per (dataset, seed) context --------------------------------------------------------------
@dataclass
class GroupContext:
    """Everything the cells of one (dataset, seed) share."""

    dataset: str
    seed: int
    fingerprint: str
    train: Any = None
    test: Any = None
    model: Any = None
    queries: pd.DataFrame | None = None
    family: Any = None
    shift: Any = None
    prepare_s: float = 0.0
    error: str | None = None
    skipped: str | None = None  # why the group's cells are skipped (an optional dataset's file)
    cause: str | None = None  # what made ``error``: MISSING_DATA, or None (anything else)
    lof: Any = None  # LOFScorer of train, fitted once for every cell of the group (LOF metrics)
    from_class: int | None = None  # queries.from_class / target_class resolved on the data
    target_class: int | None = None  # None: left to the method
    d1: Any = None  # the rows the model was trained on, under a protocol with a D1


def retrain_protocol(train: Any, model_params: Mapping[str, Any], seed: int, retrain: Mapping[str, Any],
                     d2: Any = None) -> tuple[Any, Any]:
    """``(model to explain, family)`` for "validity after retraining", from
    :mod:`robustce.models.families`: ``protocol = "proplace"`` →
    :func:`~robustce.models.families.proplace_family` (the model is trained on a random half D1
    of ``train``), ``"seeds"`` → :func:`~robustce.models.families.seed_family` (the model on all
    of ``train``, the family with other seeds), ``"continued"`` →
    :func:`~robustce.models.families.continued_family` (the model on D1, the family trained on
    from it on D2; ``d2``: the loaded dataset of ``retrain["d2"]`` as D2, the model then
    trained on all of ``train``). A model table of another ``kind`` (e.g. ``sklearn_mlp``)
    gives the scikit-learn estimator as the protocol's model specification.

    ``"proplace"`` options: ``member_model`` (MLP parameters merged over ``model_params`` for
    the retrained models), ``shared_drop``, ``same_init_retrain`` / ``same_init_drop`` (model
    positions past ``n_retrain`` / ``n_drop`` are left out, so a smaller scale keeps the
    protocol)."""
    from robustce.evaluation.config_sections import sklearn_model_class
    from robustce.models.families import continued_family, proplace_family, seed_family

    params: Any = {k: v for k, v in dict(model_params).items() if k != "random_state"}
    kind = params.pop("kind", "mlp")
    if kind != "mlp":
        params = sklearn_model_class(kind)(**params)
    opts = dict(retrain)
    protocol = opts.pop("protocol", "proplace")
    opts.pop("method_data", None)  # which data the methods see: the runner's business
    opts.pop("d2_params", None)  # the runner loads d2
    if opts.pop("d2", None) is not None:
        opts["d2"] = d2
    if protocol == "proplace":
        member_model = opts.pop("member_model", None)
        if member_model is not None:
            opts["member_params"] = {**dict(params), **member_model}
        for key, count in (("same_init_retrain", "n_retrain"), ("same_init_drop", "n_drop")):
            if key in opts:
                opts[key] = [i for i in opts[key] if i <= opts.get(count, 10)]
        return proplace_family(train, params, random_state=seed, **opts)
    if protocol == "seeds":
        return seed_family(train, params, random_state=seed, **opts)
    if protocol == "continued":
        return continued_family(train, params, random_state=seed, **opts)
    raise ValidationError(f"unknown retraining protocol {protocol!r}; expected proplace, seeds "
                          "or continued")


def train_sklearn_model(spec: Mapping[str, Any], train: Any, seed: int) -> Any:
    """A scikit-learn model of ``spec["kind"]`` (``tree``, ``forest``, ``logistic``,
    ``sklearn_mlp``; the other keys are its constructor parameters, ``random_state = seed``)
    fitted on the encoded training split and wrapped with :func:`robustce.models.wrap`."""
    from robustce.data import Encoder
    from robustce.evaluation.config_sections import sklearn_model_class
    from robustce.models import wrap

    params = {k: v for k, v in spec.items() if k != "kind"}
    cls = sklearn_model_class(spec["kind"])
    if "random_state" in inspect.signature(cls.__init__).parameters:
        params["random_state"] = seed
    enc = Encoder(train.schema).fit(train.frame)
    est = cls(**params).fit(enc.transform(train.frame), train.y)
    return wrap(est, enc)


def select_queries(model: Any, test: Any, n: int, from_class: int = 0, *, family: Any = None,
                   order: str = "first", random_state: int | None = None,
                   replace: bool = False, draws: int | None = None,
                   robust_shift: Any = None) -> pd.DataFrame:
    """``n`` rows of ``test`` that ``model`` predicts as ``from_class``: the first ``n``
    (``order="first"``) or ``n`` drawn at random without replacement and kept in data order
    (``order="random"``, seeded by ``random_state``). With a ``family``, only rows that every
    member of it also predicts as ``from_class`` qualify (PROPLACE's authors explain points
    rejected by the model and by all of its retrained versions).

    ``replace=True`` (``order="random"`` only) draws ``n`` rows with replacement, in draw
    order, as the PROPLACE authors' ``get_test_data`` does: a row drawn twice is explained
    twice. The query ids are then the draw positions 0..n-1 (index name ``draw``), since a
    query id names one query. ``draws`` (with ``replace``): ``min(draws, rows)`` rows are
    drawn and the first ``n`` that qualify are kept (ids: their draw positions).

    ``robust_shift`` (a :class:`~robustce.robustness.ParameterShift`): only rows whose class
    ``from_class`` is Δ-robust for the model at that shift qualify, by the exact Δ-test (the
    APΔS authors' ``verify_soundness``: a query whose own class a shift in Δ can flip is not
    explained). A row whose test ends undecided (timeout) does not qualify."""
    from robustce.robustness import is_delta_robust

    keep = model.predict(test.frame) == int(from_class)
    where = "test row"
    if family is not None:
        keep &= (family.predict(test.frame) == int(from_class)).all(axis=0)
        where = "row (of the model and every retrained model)"
    rows = test.frame[keep]
    if len(rows) == 0:
        raise ValidationError(f"no {where} is predicted as class {from_class}; nothing to explain")
    if robust_shift is not None and not replace:
        rows = rows[is_delta_robust(model, rows, robust_shift, target_class=int(from_class))]
        if len(rows) == 0:
            raise ValidationError(f"no {where} of class {from_class} is Δ-robust at "
                                  f"δ = {robust_shift.delta:g}; nothing to explain")
    if order == "first":
        return rows.iloc[: int(n)]
    if order != "random":
        raise ValidationError(f"queries order must be 'first' or 'random', got {order!r}")
    if replace:
        size = int(n) if draws is None else min(int(draws), len(rows))
        pick = np.random.default_rng(random_state).choice(len(rows), size=size, replace=True)
        drawn = rows.iloc[pick].set_axis(pd.RangeIndex(size, name="draw"))
        if robust_shift is not None:
            drawn = drawn[is_delta_robust(model, drawn, robust_shift, target_class=int(from_class))]
            if len(drawn) == 0:
                raise ValidationError(f"no drawn row's class {from_class} is Δ-robust at "
                                      f"δ = {robust_shift.delta:g}; nothing to explain")
        return drawn.iloc[: int(n)]
    if len(rows) <= int(n):
        return rows
    pick = np.random.default_rng(random_state).choice(len(rows), size=int(n), replace=False)
    return rows.iloc[np.sort(pick)]


def load_entry(config: BenchmarkConfig, dataset: DatasetEntry, seed: int) -> Any:
    """The data of one ``[[datasets]]`` entry: loaded, subsampled to ``rows`` (with ``seed``),
    with ``all_continuous`` every feature made continuous (:func:`as_continuous`) and with
    ``all_free`` every feature made free to change."""
    from robustce.data.registry import load

    data = load(dataset.name, data_home=config.data_home, **dataset.params)
    if dataset.rows is not None and len(data) > dataset.rows:
        rows = np.random.default_rng(seed).choice(len(data), size=dataset.rows, replace=False)
        data = data.subset(np.sort(rows))
    if dataset.all_continuous:
        data = as_continuous(data)
    if dataset.all_free:
        data = data.all_free()
    return data


def as_continuous(data: Any) -> Any:
    """``data`` with every feature continuous on its model-space column: a binary feature
    becomes its 0/1 column (1 = its second category), an integer one a real number in the same
    bounds; actionability is kept. The encoded columns are unchanged, so a network trained on
    either is the same — only the domain the methods search differs (the papers' MILPs that
    treat every column as a real number in [0, 1], e.g. PROPLACE's). Features with more than
    two levels have no single column: they raise a ``ValidationError``."""
    from robustce.data import Feature, Schema
    from robustce.data.schema import FeatureKind

    cols, features = {}, []
    for f in data.schema.features:
        v = data.frame[f.name]
        if f.kind is FeatureKind.BINARY:
            cols[f.name], lo, hi = (v == f.categories[1]).astype(float), 0.0, 1.0
        elif f.kind.is_numeric:
            cols[f.name], lo, hi = v.astype(float), f.lower, f.upper
        else:
            raise ValidationError(f"all_continuous: feature {f.name!r} is {f.kind} with "
                                  f"{len(f.categories)} levels, which no single continuous "
                                  "column represents")
        features.append(Feature(f.name, "continuous", lo, hi, actionability=f.actionability))
    frame = pd.DataFrame(cols, index=data.frame.index)
    return dataclasses.replace(data, frame=frame, schema=Schema(features))


def prepare_group(config: BenchmarkConfig, dataset: DatasetEntry, seed: int) -> GroupContext:
    """Load, split, train, select queries and build the robustness references of one group.
    An ``optional`` dataset whose file cannot be had gives a context with ``skipped`` set."""
    from robustce.errors import DatasetUnavailableError
    from robustce.models.mlp import MLP
    from robustce.robustness.shift import ParameterShift

    t0 = time.perf_counter()
    ctx = GroupContext(dataset.label, seed, config.group_fingerprint(dataset, seed))
    try:
        data = load_entry(config, dataset, seed)
    except DatasetUnavailableError as exc:
        if not dataset.optional:
            raise
        ctx.skipped = f"dataset {dataset.name!r} is unavailable: {exc}"
        return ctx
    ctx.from_class, ctx.target_class = query_classes(config.queries, data)
    split = config.split
    train, test = data.split(test_size=split.get("test_size", 0.2), random_state=seed,
                             stratify=split.get("stratify", True))
    retrain = dataset.evaluation.get("retrain")
    d2 = None
    if retrain and "d2" in retrain:
        from robustce.data.registry import load

        d2 = load(retrain["d2"], data_home=config.data_home, **retrain.get("d2_params", {}))
    with _TRAIN_LOCK:
        if retrain:
            model, ctx.family = retrain_protocol(train, dataset.model, seed, retrain, d2=d2)
        elif dataset.model.get("kind", "mlp") != "mlp":
            model = train_sklearn_model(dataset.model, train, seed)
        else:
            model = MLP(**dataset.model, random_state=seed).fit(train)
    ctx.train, ctx.test, ctx.model = train, test, model
    if retrain and "d1_index" in ctx.family.meta:
        ctx.d1 = train.subset(np.sort(train.frame.index.get_indexer(ctx.family.meta["d1_index"])))
    method_data = retrain.get("method_data", "all") if retrain else "all"
    if method_data == "d1":  # D2 arrives with the retraining
        ctx.train = ctx.d1
    elif method_data == "d1_all":  # and D1's share of the test rows (the authors' d.X1)
        ctx.train = _with_test_half(data, ctx.d1, test, seed)
    q = config.queries
    if "delta" in dataset.evaluation:
        ctx.shift = ParameterShift(delta=dataset.evaluation["delta"])
    source = {"train": ctx.train, "d1": ctx.d1}.get(q.get("source", "test"), test)
    if q.get("source") == "all":  # the rows the model was trained on, and the test rows
        fitted = train if ctx.d1 is None else ctx.d1
        source = data.subset(np.sort(data.frame.index.get_indexer(
            fitted.frame.index.append(test.frame.index))))
    family = ctx.family if q.get("family_agrees", False) else None
    ctx.queries = select_queries(model, source, q["n"], ctx.from_class, family=family,
                                 order=q.get("order", "first"), random_state=seed,
                                 replace=q.get("replace", False),
                                 draws=dataset.query_draws or q.get("draws"),
                                 robust_shift=ctx.shift if q.get("own_class_robust") else None)
    ctx.lof = _group_lof(config, dataset, ctx)
    ctx.prepare_s = time.perf_counter() - t0
    return ctx


def _with_test_half(data: Any, d1: Any, test: Any, seed: int) -> Any:
    """D1 and a random half of the test split (drawn with the seed), in ``data``'s row order:
    the PROPLACE authors halve the data first and split each half 80/20, so their ``d.X1``
    (the robust-neighbour pool, the LOF reference) is D1's training rows and its test rows."""
    from robustce.models.families import split_halves

    half, _ = split_halves(test, random_state=np.random.default_rng([int(seed), 7177]))
    rows = data.frame.index.get_indexer(d1.frame.index.append(half.frame.index))
    return data.subset(np.sort(rows))


def _group_lof(config: BenchmarkConfig, dataset: DatasetEntry, ctx: GroupContext) -> Any:
    """The group's LOF scorer, fitted here for the queries' target class when a LOF metric is
    asked for: the cells run in worker processes that each receive a copy of the context, so a
    scorer fitted per cell would refit (GMC: ≈ 20 s a fit) for every method."""
    from robustce.evaluation.metrics import check_metrics, lof_scorer

    names = config.metrics
    if names is None:  # every metric whose inputs the group has
        names = check_metrics(None, data=ctx.train, family=ctx.family, shift=ctx.shift)
    if not {"lof", "lof_inlier"} & set(names):
        return None
    scorer = lof_scorer(ctx.train, ctx.model.encoder, dataset.evaluation.get("lof_neighbors", 10))
    if ctx.target_class is not None:
        scorer.estimator(ctx.target_class)
    return scorer


def _prepare_safe(config: BenchmarkConfig, dataset: DatasetEntry, seed: int) -> GroupContext:
    from robustce.errors import DatasetUnavailableError

    try:
        return prepare_group(config, dataset, seed)
    except Exception as exc:
        if config.on_error == "raise":
            raise
        return GroupContext(dataset.label, seed, config.group_fingerprint(dataset, seed),
                            error=f"{type(exc).__name__}: {exc}",
                            cause=MISSING_DATA if isinstance(exc, DatasetUnavailableError)
                            else None)


# --- the data a configuration needs ---------------------------------------------------------------
def _entry_files(dataset: Any) -> tuple[str, ...]:
    """The files the loader of one ``[[datasets]]`` entry reads (built-ins: none)."""
    from robustce.data.loaders import CATALOG, files_for
    from robustce.data.registry import get_spec

    retrain = (getattr(dataset, "evaluation", None) or {}).get("retrain") or {}
    extra = files_for(retrain["d2"], retrain.get("d2_params")) if retrain.get("d2") in CATALOG else ()
    if dataset.name in CATALOG:
        return tuple(dict.fromkeys((*files_for(dataset.name, dataset.params), *extra)))
    return (*get_spec(dataset.name).files, *extra)  # a registered dataset (built-ins: none)


def missing_data(config: Any) -> list[tuple[str, str]]:
    """``(dataset, file)`` for every file a (non-optional) dataset of ``config`` (a
    :class:`BenchmarkConfig` or a part-shift one) needs that is neither on disk
    (``data_home``, ``$ROBUSTCE_DATA``, the cache) nor downloadable now."""
    from robustce.data.download import ensure_file, locate
    from robustce.errors import DatasetUnavailableError

    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for d in config.datasets:
        if getattr(d, "optional", False):
            continue
        for rel in _entry_files(d):
            if rel in seen or locate(rel, config.data_home) is not None:
                continue
            seen.add(rel)
            try:
                ensure_file(rel, config.data_home)
            except DatasetUnavailableError:
                out.append((d.name, rel))
    return out


def check_data(config: Any) -> None:
    """Stop before any work, with one line naming the missing files and where they go, when a
    dataset of ``config`` cannot be had (:class:`~robustce.errors.DatasetUnavailableError`)."""
    import os

    from robustce.data.download import ENV_DATA, search_dirs
    from robustce.errors import DatasetUnavailableError

    missing = missing_data(config)
    if not missing:
        return
    dirs, _ = search_dirs(config.data_home)
    where = (f"data_home {dirs[0]}" if config.data_home is not None
             else f"${ENV_DATA} ({os.environ[ENV_DATA]})" if os.environ.get(ENV_DATA)
             else f"a folder named by ${ENV_DATA}")
    names = ", ".join(f"{rel} ({name})" for name, rel in missing[:8])
    more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
    raise DatasetUnavailableError(
        f"benchmark {config.name!r} needs data that is not here and cannot be downloaded: "
        f"{names}{more}; put these files, with these relative paths, under {where} and rerun "
        "(cells that failed for missing data are retried by themselves)")


# --- one cell ---------------------------------------------------------------------------------
def run_cell(config: BenchmarkConfig, ctx: GroupContext, method: MethodEntry
             ) -> tuple[dict[str, Any], Any]:
    """Explain the group's queries with one method and evaluate. Returns (record, Explanations)."""
    dataset = _dataset_entry(config, ctx.dataset)
    params = config.method_params(dataset, method)
    record: dict[str, Any] = {
        "format": CELL_FORMAT,
        "cell": cell_id(ctx.dataset, ctx.seed, method.label),
        "dataset": ctx.dataset,
        "seed": ctx.seed,
        "method": method.label,
        "method_name": method.name,
        "params": params,
        "fingerprint": config.cell_fingerprint(dataset, ctx.seed, method),
    }
    if ctx.error is not None:
        record.update(ok=False, error=f"group preparation failed: {ctx.error}")
        if ctx.cause is not None:
            record["cause"] = ctx.cause
        return record, None
    reason = ctx.skipped or method.cls.missing_dependency()
    if reason is not None:  # a clean skip: recorded, not an error, retried on the next run
        record.update(ok=False, skipped=True, error=reason)
        return record, None
    t0 = time.perf_counter()
    try:
        from robustce.evaluation.metrics import check_metrics, evaluate, summarise

        # a method that trains its own predictor (CounterNet, RoCourseNet) is trained on the
        # training split; its CEs are measured on that predictor, and the retrained family (of
        # the benchmark's model, not of this method) gives it no ``vr``
        own = method.trains_own_model
        model, family = (None, None) if own else (ctx.model, ctx.family)
        quiet = {"progress": False} if own and "progress" in method.cls.param_names() else {}
        explainer = method.build(model, ctx.train, ctx.seed, {**params, **quiet})
        if own:
            model = explainer.model
        t_explain = time.perf_counter()
        expl = explainer.explain(ctx.queries, target_class=ctx.target_class)
        explain_s = time.perf_counter() - t_explain
        perturb = dataset.evaluation.get("perturb")
        metrics = config.metrics
        if own and metrics is not None:
            usable = set(check_metrics(None, data=ctx.train, family=None, shift=ctx.shift))
            metrics = [m for m in metrics if m in usable or m.startswith("set_distance_")]
        if perturb is not None:  # the set distances come from the perturbation protocol
            metrics = [m for m in (metrics or check_metrics(None, data=ctx.train, family=family,
                                                            shift=ctx.shift))
                       if not m.startswith("set_distance_")]
        if len(expl.counterfactuals):
            per_query = evaluate(expl, model, data=ctx.train, family=family,
                                 shift=ctx.shift, metrics=metrics,
                                 lof_neighbors=dataset.evaluation.get("lof_neighbors", 10),
                                 lof=ctx.lof)
        else:  # no CE for any query: nothing to measure, coverage says it
            names = check_metrics(metrics, data=ctx.train, family=family, shift=ctx.shift)
            per_query = pd.DataFrame(columns=names, index=pd.Index([], name="query_id"), dtype=float)
        if perturb is not None:
            per_query = _with_set_distances(config, ctx, explainer, expl, per_query, perturb)
        summary = summarise(per_query, expl)
    except Exception as exc:
        if config.on_error == "raise":
            raise
        record.update(ok=False, error=f"{type(exc).__name__}: {exc}",
                      traceback=traceback.format_exc(limit=8),
                      seconds=time.perf_counter() - t0)
        return record, None
    pq = per_query.copy()
    pq.index.name = "query_id"
    pq = pq.reset_index()
    # a CE whose query did not end ``found`` (a MACE timeout's best point) counts in the
    # metrics but is not certified: the table counts those (``uncertified``)
    pq["status"] = expl.status.reindex(pq["query_id"]).to_numpy() if len(pq) else []
    record.update(
        ok=True,
        n_queries=len(expl),
        status_counts=expl.status_counts(),
        reasons=_reasons(expl),
        classes=_class_labels(ctx),
        coverage=expl.coverage,
        explain_s=explain_s,
        seconds=time.perf_counter() - t0,
        time_per_query_s=float(expl.timings.mean()),
        metrics=[c for c in per_query.columns],
        per_query=_records(pq),
        summary={str(k): _scalar(v) for k, v in dict(summary).items()},
    )
    return record, expl


def _class_labels(ctx: GroupContext) -> dict[str, str | None]:
    """The group's query classes by label: ``{"from": "rejected", "target": "approved"}``."""
    names = ctx.train.class_names

    def label(k: int | None) -> str | None:
        return None if k is None else str(names[k])

    return {"from": label(ctx.from_class), "target": label(ctx.target_class)}


def _reasons(expl: Any, limit: int = 5) -> dict[str, int]:
    """``"status: message"`` -> queries, for the queries without a certified CE (at most
    ``limit`` distinct ones, the most frequent first): why a method's coverage is low."""
    other = ~expl.status.isin(["found", "already_target"])
    text = expl.status[other] + ": " + expl.messages[other].astype(str)
    counts = text.str.rstrip(": ").value_counts()
    return {str(k): int(v) for k, v in counts.iloc[:limit].items()}


def query_classes(queries: Mapping[str, Any], data: Any) -> tuple[int, int | None]:
    """``(from_class, target_class)`` of a ``[queries]`` table on one dataset, as indices:
    labels are looked up in ``data.class_names``; ``target_class = "favourable"`` is the
    dataset's declared favourable class; binary data: a missing one is the other class
    (``from_class`` defaults to 0); ``None`` target leaves it to the method."""
    target = queries.get("target_class")
    if target == "favourable" and "favourable" not in map(str, data.class_names):
        if data.favourable is None:
            raise ValidationError(f"queries.target_class = 'favourable': dataset {data.name!r} "
                                  f"declares no favourable class ({data.class_mapping()})")
        target = data.favourable
    target = None if target is None else data.class_index(target)
    source = queries.get("from_class")
    if source is None:
        source = 1 - target if target is not None and data.n_classes == 2 else 0
    source = data.class_index(source)
    if target is None and data.n_classes == 2:
        target = 1 - source
    return source, target


def _with_set_distances(config: BenchmarkConfig, ctx: GroupContext, explainer: Any, expl: Any,
                        per_query: pd.DataFrame, perturb: Mapping[str, Any]) -> pd.DataFrame:
    """Add the ``set_distance_*`` columns of the input-perturbation protocol (per query, the
    mean over ``n_repeats`` perturbed copies) for the metrics the config asks for."""
    from robustce.evaluation.perturbation import input_robustness, per_query_set_distances

    wanted = [m for m in (config.metrics or [f"set_distance_{k}_{p}" for k in ("sum", "max")
                                             for p in ("l1", "l2")])
              if m.startswith("set_distance_")]
    if not wanted:
        return per_query
    table = input_robustness(explainer, ctx.queries, ctx.train, explanations=expl,
                             random_state=np.random.default_rng([int(ctx.seed), 104729]),
                             **perturb)
    sd = per_query_set_distances(table).reindex(per_query.index)
    out = per_query.copy()
    for m in wanted:
        out[m] = sd[m].to_numpy()
    return out


def failed_for_missing_data(record: Mapping[str, Any]) -> bool:
    """Whether a cell record failed because a dataset file was missing (``cause``; records
    written before causes were recorded: a ``DatasetUnavailableError`` in its error)."""
    if record.get("ok"):
        return False
    return (record.get("cause") == MISSING_DATA
            or str(record.get("error", "")).startswith("group preparation failed: "
                                                      "DatasetUnavailableError"))


def _dataset_entry(config: BenchmarkConfig, label: str) -> DatasetEntry:
    return next(d for d in config.datasets if d.label == label)


def _scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, int | float | str | bool) or v is None:
        return v
    return repr(v)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): _scalar(v) for k, v in row.items()} for row in frame.to_dict("records")]


# --- persistence -------------------------------------------------------------------------------
def _write_cell(out_dir: Path, record: dict[str, Any], expl: Any) -> None:
    if expl is not None:
        expl.save(out_dir / "explanations" / record["cell"])
    with atomic_write(out_dir / "cells" / f"{record['cell']}.json") as fh:
        json.dump(record, fh, indent=1, allow_nan=False)


# --- the run -----------------------------------------------------------------------------------
@contextlib.contextmanager
def _backend(backend: str | None, n_jobs: int) -> Iterator[None]:
    if backend is None:
        yield
        return
    if backend == "dask":
        try:
            from distributed import Client, LocalCluster, default_client
        except ImportError:
            raise ConfigError("backend 'dask' needs dask[distributed] (pip install 'robustce[dask]')"
                              ) from None
        try:
            default_client()
        except ValueError:  # no client yet: start a local cluster for this run
            workers = n_jobs if n_jobs > 0 else None
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster):
                with parallel_config(backend="dask"):
                    yield
            return
    with parallel_config(backend=backend):
        yield


def run_benchmark(
    config: BenchmarkConfig | Mapping[str, Any],
    out_dir: str | Path | None = None,
    *,
    n_jobs: int | None = None,
    backend: str | None = None,
    progress: bool = True,
    retry_errors: bool = False,
    resume: bool = True,
    check: bool = True,
) -> BenchmarkResult:
    """Run (or resume) a benchmark. ``config`` is validated before anything else happens, and
    (``check``) the files of its datasets: :func:`check_data` stops with one line naming the
    missing ones.

    ``out_dir`` (or the config's ``out_dir``) receives ``cells/*.json``, ``explanations/``,
    ``config.json``, ``per_query.csv`` and ``table.csv``. ``n_jobs``/``backend`` override the
    config's. Cells already on disk with a matching fingerprint are skipped (error cells too,
    unless ``retry_errors``; cells that failed for missing data are always retried);
    ``resume=False`` recomputes every cell.

    Parameters
    ----------
    config : a :class:`BenchmarkConfig` or its mapping (as a TOML file holds).
    out_dir : the output directory (default: the config's ``out_dir``).
    n_jobs, backend : joblib workers and backend, overriding the config's.
    progress : show progress bars.
    retry_errors : recompute cells that failed before.
    resume : skip the cells already on disk (False: recompute all).
    check : check that the datasets' files are there before any work.

    Returns
    -------
    BenchmarkResult
        ``.table()`` is the summary table.

    Examples
    --------
    >>> import tempfile
    >>> config = {"seeds": [0], "model": {"kind": "logistic"}, "queries": {"n": 3},
    ...           "metrics": ["validity", "proximity_l1"],
    ...           "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 200}}],
    ...           "methods": [{"name": "nearest_neighbour"}, {"name": "milp_nearest"}]}
    >>> with tempfile.TemporaryDirectory() as out:
    ...     result = rc.evaluation.run_benchmark(config, out, progress=False)
    ...     again = rc.evaluation.run_benchmark(config, out, progress=False)  # resumes from the cells on disk
    >>> result, again.per_query.equals(result.per_query)
    (BenchmarkResult('benchmark', cells=2, errors=0, skipped=0), True)
    >>> result.table()[["coverage", "validity"]].round(3)
    metric                           coverage      validity
    stat                                 mean  std     mean  std
    dataset        method
    synthetic_loan nearest_neighbour    0.333  0.0      1.0  0.0
                   milp_nearest         1.000  0.0      1.0  0.0
    """
    config = parse_config(config)
    if check:
        check_data(config)
    out = Path(out_dir) if out_dir is not None else config.out_dir
    if out is None:
        raise ConfigError("out_dir: no output directory given (config `out_dir` or argument)")
    jobs = config.n_jobs if n_jobs is None else int(n_jobs)
    if jobs == 0:
        raise ConfigError("n_jobs: must be non-zero (-1 = all cores)")
    be = backend if backend is not None else config.backend
    if be is not None:
        from robustce.evaluation.config_values import check_backend

        check_backend(be, "backend")
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "config.json") as fh:
        json.dump(config.raw, fh, indent=1, default=str)

    # which cells are left?
    pending: list[tuple[DatasetEntry, int, MethodEntry]] = []
    for d, s, m in config.cells():
        rec = read_cell(out / "cells" / f"{cell_id(d.label, s, m.label)}.json")
        fresh = rec is not None and rec.get("fingerprint") == config.cell_fingerprint(d, s, m) \
            and not rec.get("skipped") \
            and not failed_for_missing_data(rec)  # looked at again (extra installed? data in?)
        if resume and fresh and (rec.get("ok") or not retry_errors):
            continue
        pending.append((d, s, m))
    groups: list[tuple[DatasetEntry, int]] = []
    for d, s, _ in pending:
        if (d, s) not in groups:
            groups.append((d, s))

    with _backend(be, jobs):
        contexts: dict[tuple[str, int], GroupContext] = {}
        if groups:
            bar = tqdm(total=len(groups), desc="train", unit="model", disable=not progress,
                       file=sys.stderr, leave=False)
            par = Parallel(n_jobs=min(jobs, len(groups)) if jobs > 0 else jobs,
                           return_as="generator_unordered")
            for ctx in par(delayed(_prepare_safe)(config, d, s) for d, s in groups):
                contexts[(ctx.dataset, ctx.seed)] = ctx
                bar.update(1)
            bar.close()
        if pending:
            bar = tqdm(total=len(pending), desc="cells", unit="cell", disable=not progress,
                       file=sys.stderr)
            par = Parallel(n_jobs=min(jobs, len(pending)) if jobs > 0 else jobs,
                           return_as="generator_unordered")
            tasks = (delayed(run_cell)(config, contexts[(d.label, s)], m) for d, s, m in pending)
            for record, expl in par(tasks):
                _write_cell(out, record, expl)
                bar.set_postfix_str(record["cell"], refresh=False)
                bar.update(1)
            bar.close()

    result = load_results(out, config)
    with atomic_write(out / "per_query.csv") as fh:
        result.per_query.to_csv(fh, index=False)
    with atomic_write(out / "table.csv") as fh:
        result.table().to_csv(fh)
    return result
