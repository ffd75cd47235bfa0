"""``Explanations``: what every explainer returns — CEs, statuses, certificates, timings.

One object for every method (captum/alibi style): per query it holds zero, one or many
counterfactuals (encoded and decoded), a status, the method's certificate fields, the time
spent, and the metadata needed to reproduce the run (method, parameters, versions).

Statuses (``STATUSES``):

* ``found`` — at least one CE, re-validated by a forward pass of the model;
* ``already_target`` — the model already gives the query the target class; nothing to do;
* ``infeasible`` — proven: no point satisfies the constraints (e.g. everything immutable);
* ``not_found`` — a heuristic search ended without a valid CE (no infeasibility claim);
* ``timeout`` — the time budget ran out before an answer;
* ``no_robust_point`` — valid CEs exist but none passed the robustness requirement;
* ``error`` — the method failed for this query (message says why).

Saved as a directory of JSON + CSV files (no pickle): ``meta.json``, ``queries.csv``,
``counterfactuals.csv`` and ``summary.csv``; encoded arrays are written with 17 significant
digits so a round trip is exact.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.utils import replace_dir, temp_dir_beside

__all__ = ["STATUSES", "Explanations", "QueryResult"]

STATUSES = ("found", "already_target", "infeasible", "not_found", "timeout", "no_robust_point",
            "error")
FORMAT_VERSION = 1


@dataclass
class QueryResult:
    """One query's outcome, as an explainer hook returns it. ``cfs`` are encoded rows (m, d)."""

    status: str
    cfs: np.ndarray | None = None
    certificate: dict[str, Any] = field(default_factory=dict)
    time: float | None = None
    message: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValidationError(f"unknown status {self.status!r}; expected one of {STATUSES}")
        if self.cfs is not None:
            self.cfs = np.atleast_2d(np.asarray(self.cfs, dtype=np.float64))


class Explanations:
    """Counterfactual explanations for a batch of queries.

    Attributes
    ----------
    queries : DataFrame — raw query rows; their index labels are the ``query_id``\\ s.
    status : Series — per query, one of :data:`STATUSES`.
    counterfactuals : DataFrame — long format, one row per CE: raw feature columns, then
        ``query_id`` and ``cf_rank`` (0 = the method's first/best CE).
    counterfactuals_encoded : ndarray — the same CEs in model space, row-aligned.
    certificates : DataFrame — per query, the method's certificate columns (documented on
        each method class in ``certificate_columns``).
    timings : Series — seconds spent per query.
    meta : dict — method name, parameters, target classes, versions.
    """

    def __init__(
        self,
        *,
        queries: pd.DataFrame,
        queries_encoded: np.ndarray,
        target_class: Sequence[int],
        results: Sequence[QueryResult],
        feature_names: Sequence[str],
        decode: Any,
        meta: dict[str, Any] | None = None,
    ):
        n = len(queries)
        if len(results) != n or len(target_class) != n:
            raise ValidationError("one result and one target class per query are required")
        self.queries = queries
        self.queries_encoded = np.asarray(queries_encoded, dtype=np.float64)
        ids = queries.index
        self.status = pd.Series([r.status for r in results], index=ids, name="status", dtype=object)
        self.messages = pd.Series([r.message for r in results], index=ids, name="message",
                                  dtype=object)
        self.timings = pd.Series([float(r.time or 0.0) for r in results], index=ids, name="time_s")
        self.target_class = pd.Series(np.asarray(target_class, dtype=np.int64), index=ids,
                                      name="target_class")
        self.certificates = pd.DataFrame([r.certificate for r in results], index=ids)
        sizes = np.array([0 if r.cfs is None else len(r.cfs) for r in results], dtype=np.int64)
        d = self.queries_encoded.shape[1]
        blocks = [r.cfs for r, m in zip(results, sizes, strict=True) if m]
        self.counterfactuals_encoded = np.vstack(blocks) if blocks else np.zeros((0, d))
        owner = np.repeat(np.arange(n, dtype=np.int64), sizes)
        rank = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        if len(self.counterfactuals_encoded):
            cf = decode(self.counterfactuals_encoded).reset_index(drop=True)
        else:
            cf = queries.iloc[:0].reset_index(drop=True)
        cf = cf[list(feature_names)]
        cf["query_id"] = ids[owner] if len(owner) else pd.Series([], dtype=ids.dtype)
        cf["cf_rank"] = rank
        self.counterfactuals = cf
        self.meta = dict(meta or {})

    # --- views --------------------------------------------------------------------------
    @property
    def query_ids(self) -> pd.Index:
        return self.queries.index

    @property
    def feature_names(self) -> list[str]:
        return [c for c in self.counterfactuals.columns if c not in ("query_id", "cf_rank")]

    @property
    def method(self) -> str:
        return str(self.meta.get("method", "unknown"))

    def __len__(self) -> int:
        return len(self.queries)

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.status.value_counts().items())
        return f"Explanations(method={self.method!r}, queries={len(self)}, {counts})"

    def status_counts(self) -> dict[str, int]:
        return {s: int((self.status == s).sum()) for s in STATUSES}

    @property
    def coverage(self) -> float:
        """Share of queries needing a CE that got one (found / (all − already_target))."""
        need = (self.status != "already_target").sum()
        return float((self.status == "found").sum() / need) if need else float("nan")

    def cf_positions(self, query_id: Any) -> np.ndarray:
        """Row positions in ``counterfactuals`` belonging to ``query_id``."""
        if query_id not in self.queries.index:
            raise ValidationError(f"unknown query_id {query_id!r}")
        return np.flatnonzero((self.counterfactuals["query_id"] == query_id).to_numpy())

    def for_query(self, query_id: Any) -> pd.DataFrame:
        """Raw CEs of one query."""
        return self.counterfactuals.iloc[self.cf_positions(query_id)][self.feature_names]

    def first_counterfactuals(self) -> tuple[np.ndarray, np.ndarray]:
        """(query positions, encoded CE) of the rank-0 CE of every query that has one."""
        first = (self.counterfactuals["cf_rank"] == 0).to_numpy()
        pos = self.queries.index.get_indexer(self.counterfactuals["query_id"][first])
        return pos, self.counterfactuals_encoded[first]

    def to_frame(self) -> pd.DataFrame:
        """One row per query: status, target class, number of CEs, time, message,
        certificate columns."""
        n_cfs = self.counterfactuals.groupby("query_id").size()
        out = pd.DataFrame(
            {
                "status": self.status,
                "target_class": self.target_class,
                "n_counterfactuals": n_cfs.reindex(self.query_ids, fill_value=0).astype(np.int64),
                "time_s": self.timings,
                "message": self.messages,
            }
        )
        out = out.rename_axis("query_id")
        return out.join(self.certificates) if len(self.certificates.columns) else out

    def show(self, query_id: Any, file: Any = None) -> str:
        """Print (and return) the changed features of each CE of one query: ``old → new``."""
        query = self.queries.loc[query_id]
        lines = [f"query {query_id}: {self.status[query_id]}"
                 + (f" ({self.messages[query_id]})" if self.messages[query_id] else "")]
        for rank, (_, cf) in enumerate(self.for_query(query_id).iterrows()):
            changed = [(c, query[c], cf[c]) for c in self.feature_names if not _same(query[c], cf[c])]
            lines.append(f"  CE {rank}:" + (" no change" if not changed else ""))
            lines.extend(f"    {c}: {_fmt(a)} → {_fmt(b)}" for c, a, b in changed)
        text = "\n".join(lines)
        print(text, file=file)
        return text

    # --- persistence --------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write the explanations to directory ``path`` atomically (JSON + CSV).

        An existing Explanations directory at ``path`` is replaced; any other non-empty
        directory (or a file) is refused with a :class:`ValidationError`."""
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise ValidationError(f"cannot save explanations to {path}: it exists and is not a directory")
        if path.is_dir() and any(path.iterdir()) and not (path / "meta.json").exists():
            raise ValidationError(
                f"refusing to replace {path}: it is a non-empty directory that is not a saved "
                "Explanations directory (no meta.json); choose a new or empty path"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_dir_beside(path)
        try:
            meta = {
                "format_version": FORMAT_VERSION,
                "meta": _jsonable(self.meta),
                "feature_dtypes": {c: str(t) for c, t in self.queries.dtypes.items()},
                "index_dtype": str(self.queries.index.dtype),
                "index_name": self.queries.index.name,
                "n_encoded": int(self.queries_encoded.shape[1]),
                "certificate_columns": list(self.certificates.columns),
            }
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
            q = self.queries.rename_axis("query_id").reset_index()
            enc_cols = [f"enc_{i}" for i in range(self.queries_encoded.shape[1])]
            pd.concat([q, pd.DataFrame(self.queries_encoded, columns=enc_cols)], axis=1).to_csv(
                tmp / "queries.csv", index=False, float_format="%.17g")
            pd.concat([self.counterfactuals.reset_index(drop=True),
                       pd.DataFrame(self.counterfactuals_encoded, columns=enc_cols)], axis=1).to_csv(
                tmp / "counterfactuals.csv", index=False, float_format="%.17g")
            summary = self.to_frame().reset_index()
            summary.to_csv(tmp / "summary.csv", index=False, float_format="%.17g")
            replace_dir(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> Explanations:
        """Read a directory written by :meth:`save`. A missing or unreadable file raises
        :class:`~robustce.errors.ValidationError` naming it."""
        path = Path(path)
        try:
            meta = json.loads((path / "meta.json").read_text())
        except FileNotFoundError:
            raise ValidationError(f"{path} is not a saved Explanations directory (no meta.json)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValidationError(f"{path / 'meta.json'} is not valid JSON: {exc}") from None
        if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
            version = meta.get("format_version") if isinstance(meta, dict) else None
            raise ValidationError(f"unsupported Explanations format {version!r}")
        missing = [k for k in ("meta", "feature_dtypes", "index_dtype", "index_name", "n_encoded",
                               "certificate_columns") if k not in meta]
        if missing:
            raise ValidationError(f"{path / 'meta.json'} lacks the keys {missing}")
        dtypes = meta["feature_dtypes"]
        n_enc = meta["n_encoded"]
        enc_cols = [f"enc_{i}" for i in range(n_enc)]
        read_dtypes = {c: _read_dtype(t) for c, t in dtypes.items()}
        q = _read_csv(path / "queries.csv", dtype=read_dtypes)
        ids = pd.Index(q["query_id"].astype(meta["index_dtype"]).to_numpy(), name=meta["index_name"])
        queries = _restore(q[list(dtypes)], dtypes).set_axis(ids)
        cf = _read_csv(path / "counterfactuals.csv", dtype=read_dtypes)
        summary = _read_csv(path / "summary.csv", keep_default_na=False,
                            na_values={"time_s": [""]})
        obj = cls.__new__(cls)
        obj.queries = queries
        obj.queries_encoded = q[enc_cols].to_numpy(dtype=np.float64)
        obj.status = pd.Series(summary["status"].to_numpy(), index=ids, name="status", dtype=object)
        obj.messages = pd.Series(summary["message"].astype(str).to_numpy(), index=ids,
                                 name="message", dtype=object)
        obj.timings = pd.Series(summary["time_s"].to_numpy(dtype=float), index=ids, name="time_s")
        obj.target_class = pd.Series(summary["target_class"].to_numpy(dtype=np.int64), index=ids,
                                     name="target_class")
        cert_cols = meta["certificate_columns"]
        certs = _read_csv(path / "summary.csv")[cert_cols] if cert_cols else pd.DataFrame()
        obj.certificates = certs.set_axis(ids) if cert_cols else pd.DataFrame(index=ids)
        feats = list(dtypes)
        counter = _restore(cf[feats], dtypes)
        counter["query_id"] = cf["query_id"].astype(meta["index_dtype"]).to_numpy()
        counter["cf_rank"] = cf["cf_rank"].astype(np.int64)
        obj.counterfactuals = counter
        obj.counterfactuals_encoded = cf[enc_cols].to_numpy(dtype=np.float64).reshape(-1, n_enc)
        obj.meta = meta["meta"]
        return obj


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(np.isclose(float(a), float(b), rtol=1e-9, atol=1e-12))
    except (TypeError, ValueError):
        return a == b


def _fmt(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.6g}"
    return str(v)


def _read_csv(path: Path, **kw: Any) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **kw)
    except FileNotFoundError:
        raise ValidationError(f"{path.parent} is not a complete Explanations directory "
                              f"(no {path.name})") from None
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{path} cannot be read as CSV: {exc}") from None


def _read_dtype(dtype: str) -> Any:
    return object if dtype in ("object", "str", "string", "category") else None


def _restore(frame: pd.DataFrame, dtypes: dict[str, str]) -> pd.DataFrame:
    out = frame.copy()
    for c, t in dtypes.items():
        try:
            out[c] = out[c].astype(t)
        except (TypeError, ValueError):
            pass
    return out


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, float | int | str | bool) or obj is None:
        return obj
    if hasattr(obj, "to_dict"):
        return _jsonable(obj.to_dict())
    return repr(obj)
