"""Reading a benchmark run back: cell files → :class:`BenchmarkResult` (per-query rows, per-cell
rows, the mean ± std table).

A run directory holds one JSON file per finished cell, ``cells/<dataset>__seed<s>__<method>.json``
(format :data:`CELL_FORMAT`), written by :mod:`robustce.evaluation.runner`. Everything here only
reads: :func:`load_results` works on a finished run, an interrupted one, or one copied from
another machine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from robustce.errors import RobustCEError
from robustce.evaluation.config import BenchmarkConfig, parse_config

__all__ = ["CELL_FORMAT", "BenchmarkResult", "cell_id", "load_results", "read_cell"]

#: version of the cell files; files of another format are ignored (recomputed by a rerun)
CELL_FORMAT = 1


def cell_id(dataset: str, seed: int, method: str) -> str:
    return f"{dataset}__seed{seed}__{method}"


def read_cell(path: Path, fmt: Any = CELL_FORMAT) -> dict[str, Any] | None:
    """One cell file, or None if it is missing, unreadable or not of format ``fmt``."""
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and rec.get("format") == fmt else None


# --- the result -----------------------------------------------------------------------------------
@dataclass
class BenchmarkResult:
    """The cells of a run (read back from disk) and the tables built from them.

    Parameters
    ----------
    config : the run's :class:`BenchmarkConfig` (None when it could not be read back).
    cells : one record per cell (a dataset, seed and method), as written to disk.
    out_dir : the run's output directory, or None.

    Examples
    --------
    >>> import tempfile
    >>> config = {"seeds": [0], "model": {"kind": "logistic"}, "queries": {"n": 3},
    ...           "metrics": ["validity", "proximity_l1"],
    ...           "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 200}}],
    ...           "methods": [{"name": "nearest_neighbour"}, {"name": "milp_nearest"}]}
    >>> with tempfile.TemporaryDirectory() as out:
    ...     result = rc.evaluation.run_benchmark(config, out, progress=False)
    >>> result.name, len(result.cells), result.errors, result.metric_names
    ('benchmark', 2, [], ['validity', 'proximity_l1'])
    >>> result.per_query[["method", "query_id", "validity", "status"]]
                  method  query_id  validity status
    0  nearest_neighbour         1       1.0  found
    1       milp_nearest         1       1.0  found
    2       milp_nearest         8       1.0  found
    3       milp_nearest        16       1.0  found
    """

    config: BenchmarkConfig | None
    cells: list[dict[str, Any]] = field(default_factory=list)
    out_dir: Path | None = None

    @property
    def name(self) -> str:
        return self.config.name if self.config is not None else "benchmark"

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The cells that failed (skipped ones are not errors)."""
        return [c for c in self.cells if not c.get("ok") and not c.get("skipped")]

    @property
    def skipped(self) -> list[dict[str, Any]]:
        """The cells skipped with a reason (``error``): a method whose optional extra is not
        installed, an ``optional`` dataset whose file is unavailable."""
        return [c for c in self.cells if c.get("skipped")]

    def skip_reasons(self) -> dict[str, list[str]]:
        """Reason -> the cells skipped for it, in cell order."""
        out: dict[str, list[str]] = {}
        for c in self.skipped:
            out.setdefault(str(c.get("error", "")), []).append(c["cell"])
        return out

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
                   "ok": bool(c.get("ok")), "skipped": bool(c.get("skipped")),
                   "error": c.get("error", "")}
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
        per query; ``time_s`` is the method's time per query. A (dataset, method) whose every
        cell was skipped has no row (:meth:`skip_reasons` says why).
        """
        skipped = {(c["dataset"], c["method"]) for c in self.skipped}
        done = {(c["dataset"], c["method"]) for c in self.cells if not c.get("skipped")}
        keys = [k for k in self._method_order() if k not in skipped - done]
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
            if "status" in q.columns and (q["status"].notna() & (q["status"] != "found")).any():
                # n = queries with a CE = coverage·(queries) + these
                row[("uncertified", "mean")] = float(
                    (q["status"].notna() & (q["status"] != "found")).sum())
                row[("uncertified", "std")] = float("nan")
            row[("errors", "mean")] = float(len(sel) - len(ok)
                                            - (int(sel["skipped"].sum()) if len(sel) else 0))
            row[("errors", "std")] = float("nan")
            rows[(d, m)] = row
        table = pd.DataFrame.from_dict(rows, orient="index")
        if ("uncertified", "mean") in table.columns:  # beside n, whatever row had it first
            cols = [c for c in table.columns if c[0] != "uncertified"]
            at = cols.index(("n", "std")) + 1
            table = table[[*cols[:at], ("uncertified", "mean"), ("uncertified", "std"),
                           *cols[at:]]]
        if len(table):
            table.index = pd.MultiIndex.from_tuples(table.index, names=["dataset", "method"])
            table.columns = pd.MultiIndex.from_tuples(table.columns, names=["metric", "stat"])
        return table

    def uncertified(self) -> pd.DataFrame:
        """The CEs counted in the table whose query did not end ``found`` (e.g. a MACE query
        that hit its time limit returns its best point, without a certificate): dataset, seed,
        method, query_id, status."""
        pq = self.per_query
        cols = ["dataset", "seed", "method", "query_id", "status"]
        if "status" not in pq.columns:
            return pd.DataFrame(columns=cols)
        sel = pq[pq["status"].notna() & (pq["status"] != "found")]
        return sel[cols].reset_index(drop=True)

    def coverage_reasons(self) -> dict[tuple[str, str], dict[str, int]]:
        """(dataset, method) -> ``"status: message"`` -> queries, for the methods whose
        coverage is 0 in every finished cell: why no query got a CE."""
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for c in self.cells:
            if c.get("ok"):
                groups.setdefault((c["dataset"], c["method"]), []).append(c)
        out: dict[tuple[str, str], dict[str, int]] = {}
        for key, cells in groups.items():
            if any(c.get("coverage") != 0 for c in cells):
                continue  # some cell got a CE: the method covers this dataset
            merged: dict[str, int] = {}
            for c in cells:
                for text, n in c.get("reasons", {}).items():
                    merged[text] = merged.get(text, 0) + int(n)
            if merged:
                out[key] = merged
        return out

    def class_notes(self) -> list[str]:
        """Per dataset, the classes its queries were explained from and toward, by label
        (``"synthetic_loan: rows predicted rejected, explained toward approved"``)."""
        seen: dict[str, dict[str, Any]] = {}
        for c in self.cells:
            if c.get("ok") and c.get("classes") and c["dataset"] not in seen:
                seen[c["dataset"]] = c["classes"]
        return [f"{d}: rows predicted {k.get('from')}, explained toward "
                f"{k.get('target') or 'the method default'}" for d, k in seen.items()]

    def notes(self) -> list[str]:
        """Lines for a report or the terminal: which CEs are uncertified, and why a method
        has no CE at all."""
        lines = []
        unc = self.uncertified()
        if len(unc):
            shown = "; ".join(f"{r.dataset} {r.method} seed {r.seed} query {r.query_id} "
                              f"({r.status})" for r in unc.iloc[:5].itertuples())
            more = f"; and {len(unc) - 5} more" if len(unc) > 5 else ""
            lines.append(f"uncertified: {len(unc)} CE{'s' if len(unc) > 1 else ''} counted in "
                         f"the metrics (n) but not in coverage: {shown}{more}")
        for (d, m), reasons in self.coverage_reasons().items():
            why = "; ".join(f"{n} {text}" for text, n in reasons.items())
            lines.append(f"{d} {m}: no query got a CE — {why}")
        return lines

    def _method_order(self) -> list[tuple[str, str]]:
        if self.config is not None:
            return [(d.label, m.label) for d in self.config.datasets for m in self.config.methods
                    if m.runs_on(d.label)]
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
        return (f"BenchmarkResult({self.name!r}, cells={len(self.cells)}, errors={len(self.errors)}, "
                f"skipped={len(self.skipped)})")


def _mean_std(values: pd.Series) -> tuple[float, float]:
    v = pd.to_numeric(values, errors="coerce").dropna().astype(float)
    if len(v) == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=0))


def load_results(out_dir: str | Path, config: BenchmarkConfig | Mapping[str, Any] | None = None
                 ) -> BenchmarkResult:
    """Read the cells of a run directory (only those of ``config``, if given, and fresh).

    Parameters
    ----------
    out_dir : the run directory.
    config : the configuration whose cells to read, or None (all cells there).

    Returns
    -------
    BenchmarkResult

    Examples
    --------
    >>> import tempfile
    >>> config = {"seeds": [0], "model": {"kind": "logistic"}, "queries": {"n": 3},
    ...           "metrics": ["validity", "proximity_l1"],
    ...           "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 200}}],
    ...           "methods": [{"name": "nearest_neighbour"}, {"name": "milp_nearest"}]}
    >>> with tempfile.TemporaryDirectory() as out:
    ...     _ = rc.evaluation.run_benchmark(config, out, progress=False)
    ...     result = rc.evaluation.load_results(out)  # e.g. in a later session
    >>> result
    BenchmarkResult('benchmark', cells=2, errors=0, skipped=0)
    >>> result.table()["validity"]["mean"].tolist()
    [1.0, 1.0]
    """
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
            rec = read_cell(out / "cells" / f"{cell_id(d.label, s, m.label)}.json")
            if rec is not None and rec.get("fingerprint") == config.cell_fingerprint(d, s, m):
                cells.append(rec)
    else:
        cells = [r for p in sorted((out / "cells").glob("*.json")) if (r := read_cell(p))]
    return BenchmarkResult(config, cells, out)
