"""Benchmark runner: methods × datasets × seeds, resumable, parallel through joblib.

A *cell* is one (dataset, seed, method). For every (dataset, seed) the runner loads the data,
splits it with the seed, trains the MLP once (shared by all methods of that group within a
run), picks the queries (the first ``queries.n`` test rows the model predicts as
``queries.from_class``), and — if the config asks — builds the retrained model family and the
parameter shift used by the robustness metrics. Each cell then explains the queries and
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
import json
import math
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, parallel_config
from tqdm.auto import tqdm

from robustce.errors import ConfigError, RobustCEError, ValidationError
from robustce.evaluation.config import BenchmarkConfig, DatasetEntry, MethodEntry, parse_config
from robustce.utils import atomic_write

__all__ = [
    "BenchmarkResult",
    "GroupContext",
    "cell_id",
    "load_results",
    "prepare_group",
    "retrained_family",
    "run_benchmark",
    "run_cell",
    "select_queries",
]

CELL_FORMAT = 1
# torch's global RNG is seeded inside MLP.fit; threads (threading/dask processes=False
# backends) must not interleave there, or a model's initial weights depend on scheduling.
_TRAIN_LOCK = threading.Lock()


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


class LocalFamily:
    """Models retrained from scratch with other seeds (used when no families module exists).

    ``predict(X)`` -> (n_models, n) labels, ``len(family)`` = number of models.
    """

    def __init__(self, models: list[Any], description: str = "retrained"):
        self.models = list(models)
        self.description = description

    def __len__(self) -> int:
        return len(self.models)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.models)

    def predict(self, X: Any) -> np.ndarray:
        return np.stack([m.predict(X) for m in self.models])

    def __repr__(self) -> str:
        return f"LocalFamily({len(self)} {self.description} models)"


def retrained_family(train: Any, model_params: Mapping[str, Any], seed: int, *,
                     protocol: str = "proplace", n_retrain: int = 5, n_drop: int = 5,
                     n_models: int = 5, drop_fraction: float | None = None) -> tuple[Any, Any]:
    """``(base_model, family)`` for "validity after retraining".

    ``protocol="proplace"``: :func:`robustce.models.families.proplace_family` — the base model
    is trained on a random half D1 of ``train``, ``n_retrain`` models on all of ``train`` and
    ``n_drop`` on D1 minus ``drop_fraction`` (default 1 %) of its rows. ``protocol="seeds"``
    (also the fallback when the families module is missing): the base model on ``train`` with
    ``seed``, ``n_models`` models on ``train`` (minus ``drop_fraction``, default 0) with other
    seeds.
    """
    from robustce.models.mlp import MLP

    params = {k: v for k, v in dict(model_params).items() if k != "random_state"}
    if protocol == "proplace":
        try:
            from robustce.models.families import proplace_family
        except ImportError:
            proplace_family = None
        if proplace_family is not None:
            return proplace_family(train, params, n_retrain=n_retrain, n_drop=n_drop,
                                   drop_fraction=0.01 if drop_fraction is None else drop_fraction,
                                   random_state=seed)
        n_models = n_retrain + n_drop
    elif protocol != "seeds":
        raise ValidationError(f"unknown retraining protocol {protocol!r}; expected proplace or seeds")
    base = MLP(**params, random_state=seed).fit(train)
    rng = np.random.default_rng([int(seed), 7919])
    frac = float(drop_fraction or 0.0)
    models = []
    for _ in range(int(n_models)):
        sub = train.subset(rng.uniform(size=len(train)) >= frac) if frac > 0 else train
        m = MLP(**params, random_state=int(rng.integers(2**31 - 1)))
        models.append(m.fit(sub, encoder=base.encoder))
    return base, LocalFamily(models)


def select_queries(model: Any, test: Any, n: int, from_class: int = 0) -> pd.DataFrame:
    """The first ``n`` rows of ``test`` that ``model`` predicts as ``from_class``."""
    pred = model.predict(test.frame)
    rows = test.frame[pred == int(from_class)]
    if len(rows) == 0:
        raise ValidationError(f"no test row is predicted as class {from_class}; nothing to explain")
    return rows.iloc[: int(n)]


def prepare_group(config: BenchmarkConfig, dataset: DatasetEntry, seed: int) -> GroupContext:
    """Load, split, train, select queries and build the robustness references of one group."""
    from robustce.data.registry import load
    from robustce.models.mlp import MLP
    from robustce.robustness.shift import ParameterShift

    t0 = time.perf_counter()
    ctx = GroupContext(dataset.label, seed, config.group_fingerprint(dataset, seed))
    data = load(dataset.name, data_home=config.data_home, **dataset.params)
    split = config.split
    train, test = data.split(test_size=split.get("test_size", 0.2), random_state=seed,
                             stratify=split.get("stratify", True))
    retrain = config.evaluation.get("retrain")
    with _TRAIN_LOCK:
        if retrain:
            model, ctx.family = retrained_family(train, config.model, seed, **retrain)
        else:
            model = MLP(**config.model, random_state=seed).fit(train)
    ctx.train, ctx.test, ctx.model = train, test, model
    ctx.queries = select_queries(model, test, config.queries["n"], config.queries["from_class"])
    if "delta" in config.evaluation:
        ctx.shift = ParameterShift(delta=config.evaluation["delta"])
    ctx.prepare_s = time.perf_counter() - t0
    return ctx


def _prepare_safe(config: BenchmarkConfig, dataset: DatasetEntry, seed: int) -> GroupContext:
    try:
        return prepare_group(config, dataset, seed)
    except Exception as exc:
        if config.on_error == "raise":
            raise
        return GroupContext(dataset.label, seed, config.group_fingerprint(dataset, seed),
                            error=f"{type(exc).__name__}: {exc}")


# --- one cell ---------------------------------------------------------------------------------
def cell_id(dataset: str, seed: int, method: str) -> str:
    return f"{dataset}__seed{seed}__{method}"


def run_cell(config: BenchmarkConfig, ctx: GroupContext, method: MethodEntry
             ) -> tuple[dict[str, Any], Any]:
    """Explain the group's queries with one method and evaluate. Returns (record, Explanations)."""
    record: dict[str, Any] = {
        "format": CELL_FORMAT,
        "cell": cell_id(ctx.dataset, ctx.seed, method.label),
        "dataset": ctx.dataset,
        "seed": ctx.seed,
        "method": method.label,
        "method_name": method.name,
        "params": method.params,
        "fingerprint": config.cell_fingerprint(_dataset_entry(config, ctx.dataset), ctx.seed, method),
    }
    if ctx.error is not None:
        record.update(ok=False, error=f"group preparation failed: {ctx.error}")
        return record, None
    t0 = time.perf_counter()
    try:
        from robustce.evaluation.metrics import check_metrics, evaluate, summarise

        explainer = method.build(ctx.model, ctx.train, ctx.seed)
        t_explain = time.perf_counter()
        expl = explainer.explain(ctx.queries)
        explain_s = time.perf_counter() - t_explain
        if len(expl.counterfactuals):
            per_query = evaluate(expl, ctx.model, data=ctx.train, family=ctx.family,
                                 shift=ctx.shift, metrics=config.metrics,
                                 lof_neighbors=config.evaluation.get("lof_neighbors", 10))
        else:  # no CE for any query: nothing to measure, coverage says it
            names = check_metrics(config.metrics, data=ctx.train, family=ctx.family, shift=ctx.shift)
            per_query = pd.DataFrame(columns=names, index=pd.Index([], name="query_id"), dtype=float)
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
    record.update(
        ok=True,
        n_queries=len(expl),
        status_counts=expl.status_counts(),
        coverage=expl.coverage,
        explain_s=explain_s,
        seconds=time.perf_counter() - t0,
        time_per_query_s=float(expl.timings.mean()),
        metrics=[c for c in per_query.columns],
        per_query=_records(pq),
        summary={str(k): _scalar(v) for k, v in dict(summary).items()},
    )
    return record, expl


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


def _read_cell(path: Path) -> dict[str, Any] | None:
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and rec.get("format") == CELL_FORMAT else None


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
) -> BenchmarkResult:
    """Run (or resume) a benchmark. ``config`` is validated before anything else happens.

    ``out_dir`` (or the config's ``out_dir``) receives ``cells/*.json``, ``explanations/``,
    ``config.json``, ``per_query.csv`` and ``table.csv``. ``n_jobs``/``backend`` override the
    config's. Cells already on disk with a matching fingerprint are skipped (error cells too,
    unless ``retry_errors``); ``resume=False`` recomputes every cell.
    """
    config = parse_config(config)
    out = Path(out_dir) if out_dir is not None else config.out_dir
    if out is None:
        raise ConfigError("out_dir: no output directory given (config `out_dir` or argument)")
    jobs = config.n_jobs if n_jobs is None else int(n_jobs)
    if jobs == 0:
        raise ConfigError("n_jobs: must be non-zero (-1 = all cores)")
    be = backend if backend is not None else config.backend
    if be is not None:
        from robustce.evaluation.config import check_backend

        check_backend(be, "backend")
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "config.json") as fh:
        json.dump(config.raw, fh, indent=1, default=str)

    # which cells are left?
    pending: list[tuple[DatasetEntry, int, MethodEntry]] = []
    for d, s, m in config.cells():
        rec = _read_cell(out / "cells" / f"{cell_id(d.label, s, m.label)}.json")
        fresh = rec is not None and rec.get("fingerprint") == config.cell_fingerprint(d, s, m)
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


# --- results -----------------------------------------------------------------------------------
@dataclass
class BenchmarkResult:
    """The cells of a run (read back from disk) and the tables built from them."""

    config: BenchmarkConfig | None
    cells: list[dict[str, Any]] = field(default_factory=list)
    out_dir: Path | None = None

    @property
    def name(self) -> str:
        return self.config.name if self.config is not None else "benchmark"

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [c for c in self.cells if not c.get("ok")]

    @property
    def per_query(self) -> pd.DataFrame:
        """One row per (dataset, seed, method, query with a CE); metric columns."""
        frames = []
        for c in self.cells:
            if not c.get("ok") or not c.get("per_query"):
                continue
            f = pd.DataFrame(c["per_query"])
            f.insert(0, "method", c["method"])
            f.insert(0, "seed", c["seed"])
            f.insert(0, "dataset", c["dataset"])
            frames.append(f)
        if not frames:
            return pd.DataFrame(columns=["dataset", "seed", "method", "query_id"])
        out = pd.concat(frames, ignore_index=True)
        for col in out.columns[4:]:
            conv = pd.to_numeric(out[col], errors="coerce")
            if conv.notna().sum() >= out[col].notna().sum():
                out[col] = conv.astype(float)
        return out

    @property
    def metric_names(self) -> list[str]:
        names: list[str] = []
        for c in self.cells:
            for m in c.get("metrics", []):
                if m not in names and m != "query_id":
                    names.append(m)
        return names

    def per_cell(self) -> pd.DataFrame:
        """One row per cell: coverage, status counts, seconds, per-cell summary values."""
        rows = []
        for c in self.cells:
            row = {"dataset": c["dataset"], "seed": c["seed"], "method": c["method"],
                   "ok": bool(c.get("ok")), "error": c.get("error", "")}
            if c.get("ok"):
                row.update(coverage=c.get("coverage"), n_queries=c.get("n_queries"),
                           seconds=c.get("seconds"), time_per_query_s=c.get("time_per_query_s"))
                row.update({f"n_{k}": v for k, v in c.get("status_counts", {}).items()})
                row.update({f"summary_{k}": v for k, v in c.get("summary", {}).items()})
            rows.append(row)
        return pd.DataFrame(rows)

    def table(self) -> pd.DataFrame:
        """Mean and std of each metric per (dataset, method), pooled over seeds and queries.

        Columns are a MultiIndex (metric, "mean"/"std"); ``coverage`` is per seed, the others
        per query; ``time_s`` is the method's time per query.
        """
        keys = self._method_order()
        pq = self.per_query
        metrics = [m for m in self.metric_names if m not in pq.columns
                   or pd.api.types.is_numeric_dtype(pq[m])]
        cells = self.per_cell()
        rows: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
        for d, m in keys:
            row: dict[tuple[str, str], float] = {}
            sel = cells[(cells["dataset"] == d) & (cells["method"] == m)] if len(cells) else cells
            ok = sel[sel["ok"]] if len(sel) else sel
            cov = ok["coverage"].astype(float) if len(ok) else pd.Series(dtype=float)
            row[("coverage", "mean")], row[("coverage", "std")] = _mean_std(cov)
            q = pq[(pq["dataset"] == d) & (pq["method"] == m)]
            for name in metrics:
                values = q[name] if name in q.columns else pd.Series(dtype=float)
                row[(name, "mean")], row[(name, "std")] = _mean_std(values)
            if "time" not in metrics:  # the metric gives it per query; else per cell
                tq = ok["time_per_query_s"].astype(float) if len(ok) else pd.Series(dtype=float)
                row[("time_s", "mean")], row[("time_s", "std")] = _mean_std(tq)
            row[("n", "mean")], row[("n", "std")] = float(len(q)), float("nan")
            row[("errors", "mean")] = float(len(sel) - len(ok))
            row[("errors", "std")] = float("nan")
            rows[(d, m)] = row
        table = pd.DataFrame.from_dict(rows, orient="index")
        if len(table):
            table.index = pd.MultiIndex.from_tuples(table.index, names=["dataset", "method"])
            table.columns = pd.MultiIndex.from_tuples(table.columns, names=["metric", "stat"])
        return table

    def _method_order(self) -> list[tuple[str, str]]:
        if self.config is not None:
            return [(d.label, m.label) for d in self.config.datasets for m in self.config.methods]
        seen: list[tuple[str, str]] = []
        for c in self.cells:
            if (c["dataset"], c["method"]) not in seen:
                seen.append((c["dataset"], c["method"]))
        return seen

    def display_table(self, columns: Any = None) -> pd.DataFrame:
        """The table restricted to ``columns`` (default: the config's metrics, or the headline
        ones — coverage, validity, proximity, plausibility, robustness, time — when the
        config computed every metric)."""
        from robustce.evaluation.report import HEADLINE_COLUMNS

        table = self.table()
        if len(table) == 0:
            return table
        if columns is None:
            if self.config is not None and self.config.metrics is not None:
                return table
            columns = HEADLINE_COLUMNS
        keep = [c for c in columns if c in table.columns.get_level_values(0)]
        return table[keep]

    def format(self, digits: int = 3, columns: Any = None) -> str:
        """The (display) table as plain text: ``mean ± std`` per metric."""
        from robustce.evaluation.report import format_table

        return format_table(self.display_table(columns), digits=digits)

    def __repr__(self) -> str:
        return f"BenchmarkResult({self.name!r}, cells={len(self.cells)}, errors={len(self.errors)})"


def _mean_std(values: pd.Series) -> tuple[float, float]:
    v = pd.to_numeric(values, errors="coerce").dropna().astype(float)
    if len(v) == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=0))


def load_results(out_dir: str | Path, config: BenchmarkConfig | Mapping[str, Any] | None = None
                 ) -> BenchmarkResult:
    """Read the cells of a run directory (only those of ``config``, if given, and fresh)."""
    out = Path(out_dir)
    if config is None and (out / "config.json").exists():
        try:
            config = parse_config(json.loads((out / "config.json").read_text()))
        except (RobustCEError, ValueError):
            config = None
    if config is not None:
        config = parse_config(config)
        cells = []
        for d, s, m in config.cells():
            rec = _read_cell(out / "cells" / f"{cell_id(d.label, s, m.label)}.json")
            if rec is not None and rec.get("fingerprint") == config.cell_fingerprint(d, s, m):
                cells.append(rec)
    else:
        cells = [r for p in sorted((out / "cells").glob("*.json")) if (r := _read_cell(p))]
    return BenchmarkResult(config, cells, out)
