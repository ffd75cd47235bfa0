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
from robustce.utils import check_destination, replace_dir, temp_dir_beside

__all__ = ["STATUSES", "Explanations", "QueryResult"]

STATUSES = ("found", "already_target", "infeasible", "not_found", "timeout", "no_robust_point",
            "error")
FORMAT_VERSION = 1


@dataclass
class QueryResult:
    """One query's outcome, as an explainer hook returns it. ``cfs`` are encoded rows (m, d).

    Parameters
    ----------
    status : one of :data:`STATUSES`.
    cfs : the CEs in model space, shape (m, d), or None.
    certificate : the method's certificate fields for this query.
    time : seconds spent.
    message : why (for statuses other than ``found``).

    Examples
    --------
    What a method's ``_explain_one`` hook returns for one query (see
    :class:`~robustce.methods.Explainer`):

    >>> QueryResult("found", cfs=[0.2, 0.9, 1.0]).cfs.shape        # one CE, d = 3
    (1, 3)
    >>> QueryResult("not_found", message="no point on the grid").cfs is None
    True
    """

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

    Every explainer's ``explain`` builds one; users read it, save it (``save``) and load it
    (``Explanations.load``).

    Parameters
    ----------
    queries : the raw query rows (their index labels become the ``query_id``\\ s).
    queries_encoded : the same rows in model space, shape (n, d).
    target_class : the target class index per query.
    results : one :class:`QueryResult` per query, in order.
    feature_names : the raw feature columns.
    decode : a function from model-space rows to a raw DataFrame (the encoder's
        ``inverse_transform``).
    meta : method name, parameters, versions.

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

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> model = rc.models.wrap(LogisticRegression().fit(enc.transform(data.frame), data.y), enc,
    ...                        class_names=data.class_names)
    >>> rejected = data.frame[model.predict(data.frame) == 0].head(3)
    >>> res = rc.methods.MILPNearest(model, data).explain(rejected)
    >>> res
    Explanations(method='milp_nearest', queries=3, found=3)
    >>> res.to_frame()[["status", "target_label", "n_counterfactuals"]]
             status target_label  n_counterfactuals
    query_id
    0         found     approved                  1
    1         found     approved                  1
    4         found     approved                  1
    >>> model.predict(res.counterfactuals[res.feature_names]).tolist()   # each CE is approved
    [1, 1, 1]
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
        if len(self.counterfactuals_encoded):  # one frame from the decoded columns' arrays
            decoded = decode(self.counterfactuals_encoded)
            cols: dict[str, Any] = {name: decoded[name].array for name in feature_names}
            cols["query_id"], cols["cf_rank"] = ids[owner], rank
            cf = pd.DataFrame(cols, copy=False)
        else:
            cf = queries.iloc[:0].reset_index(drop=True)[list(feature_names)]
            cf["query_id"] = pd.Series([], dtype=ids.dtype)
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

    def class_label(self, k: int) -> str:
        """The label of class ``k`` (the model's ``class_names``), else ``str(k)``."""
        names = self.meta.get("class_names") or []
        return str(names[k]) if 0 <= k < len(names) else str(k)

    def _check_query_id(self, query_id: Any) -> None:
        try:
            known = query_id in self.queries.index
        except TypeError:  # unhashable
            known = False
        if not known:
            ids = [str(i) for i in self.queries.index[:10]]
            more = f", ... ({len(self)} in all)" if len(self) > 10 else ""
            raise ValidationError(f"unknown query_id {query_id!r}; the query ids are "
                                  f"{', '.join(ids)}{more}")

    def cf_positions(self, query_id: Any) -> np.ndarray:
        """Row positions in ``counterfactuals`` belonging to ``query_id``."""
        self._check_query_id(query_id)
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
        """One row per query: status, target class (and ``target_label``, its name, where the
        model's class names are known), number of CEs, time, message, certificate columns."""
        n_cfs = self.counterfactuals.groupby("query_id").size()
        labels = ({"target_label": self.target_class.map(self.class_label).astype(object)}
                  if self.meta.get("class_names") else {})
        out = pd.DataFrame(
            {
                "status": self.status,
                "target_class": self.target_class,
                **labels,
                "n_counterfactuals": n_cfs.reindex(self.query_ids, fill_value=0).astype(np.int64),
                "time_s": self.timings,
                "message": self.messages,
            }
        )
        out = out.rename_axis("query_id")
        return out.join(self.certificates) if len(self.certificates.columns) else out

    def show(self, query_id: Any, file: Any = None) -> str:
        """Print (and return) the changed features of each CE of one query: ``old → new``,
        with the target class named by its label. An unknown ``query_id`` raises a
        :class:`~robustce.errors.ValidationError` naming the valid ones."""
        self._check_query_id(query_id)
        query = self.queries.loc[query_id]
        lines = [f"query {query_id}: {self.status[query_id]}"
                 + f" (toward {self.class_label(int(self.target_class[query_id]))})"
                 + (f" ({self.messages[query_id]})" if self.messages[query_id] else "")]
        for rank, (_, cf) in enumerate(self.for_query(query_id).iterrows()):
            changed = [(c, query[c], cf[c]) for c in self.feature_names if not _same(query[c], cf[c])]
            lines.append(f"  CE {rank}:" + (" no change" if not changed else ""))
            lines.extend(f"    {c}: {_fmt(a)} → {_fmt(b)}" for c, a, b in changed)
        text = "\n".join(lines)
        print(text, file=file)
        return text

    @classmethod
    def concat(cls, parts: Sequence[Explanations]) -> Explanations:
        """One object from the explanations of disjoint query batches of one explainer (the
        first part's metadata)."""
        if not parts:
            raise ValidationError("concat needs at least one Explanations object")
        if len(parts) == 1:
            return parts[0]
        obj = cls.__new__(cls)
        obj.queries = pd.concat([p.queries for p in parts])
        if not obj.queries.index.is_unique:
            raise ValidationError("concat: the parts share query ids")
        obj.queries_encoded = np.vstack([p.queries_encoded for p in parts])
        for name in ("status", "messages", "timings", "target_class"):
            setattr(obj, name, pd.concat([getattr(p, name) for p in parts]))
        obj.certificates = pd.concat([p.certificates for p in parts])
        obj.counterfactuals = pd.concat([p.counterfactuals for p in parts], ignore_index=True)
        obj.counterfactuals_encoded = np.vstack([p.counterfactuals_encoded for p in parts])
        obj.meta = dict(parts[0].meta)
        if isinstance(obj.meta.get("constraints"), dict) and "active" in obj.meta["constraints"] and all(
                isinstance(p.meta.get("constraints"), dict) for p in parts):
            # the tight relations are listed per CE row: every part's, in the rows' order
            obj.meta["constraints"] = {**obj.meta["constraints"], "active": [
                a for p in parts for a in p.meta["constraints"].get("active", [])]}
        return obj

    # --- persistence --------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write the explanations to directory ``path`` atomically (JSON + CSV).

        An existing Explanations directory at ``path`` is replaced; any other non-empty
        directory (or a file) is refused with a :class:`ValidationError`."""
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise ValidationError(f"cannot save explanations to {path}: it exists and is not a directory")
        check_destination(path, "cannot save explanations to")
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
                # text certificate columns ("p": "inf") are read back as text, not numbers
                "certificate_text_columns": [
                    c for c in self.certificates.columns
                    if not pd.api.types.is_numeric_dtype(self.certificates[c])
                    and self.certificates[c].dropna().map(lambda v: isinstance(v, str)).all()
                    and self.certificates[c].notna().any()],
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
        """Read a directory written by :meth:`save`. A missing, unreadable or inconsistent file
        (truncated or non-numeric CSV, missing columns, a summary that does not match the
        queries, a wrong ``n_encoded``) raises :class:`~robustce.errors.ValidationError` naming
        the file and what is wrong."""
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
        dtypes, n_enc, cert_cols = meta["feature_dtypes"], meta["n_encoded"], meta["certificate_columns"]
        if not isinstance(dtypes, dict) or not all(isinstance(t, str) for t in dtypes.values()):
            raise ValidationError(f"{path / 'meta.json'}: feature_dtypes must map columns to dtype names")
        if isinstance(n_enc, bool) or not isinstance(n_enc, int) or n_enc < 1:
            raise ValidationError(f"{path / 'meta.json'}: n_encoded must be a positive integer, "
                                  f"got {n_enc!r}")
        if not isinstance(cert_cols, list) or not isinstance(meta["meta"], dict):
            raise ValidationError(f"{path / 'meta.json'}: certificate_columns must be a list and "
                                  "meta a dict")
        enc_cols = [f"enc_{i}" for i in range(n_enc)]
        read_dtypes = {c: _read_dtype(t) for c, t in dtypes.items()}
        feats = list(dtypes)

        q = _read_csv(path / "queries.csv", dtype=read_dtypes)
        _require_columns(q, path / "queries.csv", ["query_id", *feats, *enc_cols])
        _no_extra_encoded(q, path / "queries.csv", n_enc)
        ids = pd.Index(_column(q, "query_id", meta["index_dtype"], path / "queries.csv").to_numpy(),
                       name=meta["index_name"])
        if not ids.is_unique:
            raise ValidationError(f"{path / 'queries.csv'}: query_id values are not unique")
        queries = _restore(q[feats], dtypes).set_axis(ids)
        queries_encoded = _numeric(q, enc_cols, path / "queries.csv")

        cf = _read_csv(path / "counterfactuals.csv", dtype=read_dtypes)
        _require_columns(cf, path / "counterfactuals.csv", [*feats, "query_id", "cf_rank", *enc_cols])
        _no_extra_encoded(cf, path / "counterfactuals.csv", n_enc)
        cf_ids = _column(cf, "query_id", meta["index_dtype"], path / "counterfactuals.csv")
        unknown = ~cf_ids.isin(ids)
        if unknown.any():
            raise ValidationError(f"{path / 'counterfactuals.csv'}: query_id {cf_ids[unknown].iloc[0]!r} "
                                  "is not one of the saved queries")
        ranks = _numeric(cf, ["cf_rank"], path / "counterfactuals.csv")[:, 0]
        if len(ranks) and (np.any(ranks < 0) or np.any(ranks != np.round(ranks))):
            raise ValidationError(f"{path / 'counterfactuals.csv'}: cf_rank must hold non-negative integers")

        summary = _read_csv(path / "summary.csv", keep_default_na=False, na_values={"time_s": [""]})
        _require_columns(summary, path / "summary.csv", ["query_id", "status", "message", "time_s",
                                                         "target_class", "n_counterfactuals", *cert_cols])
        if len(summary) != len(ids):
            raise ValidationError(f"{path / 'summary.csv'} has {len(summary)} rows but there are "
                                  f"{len(ids)} queries")
        counts = _numeric(summary, ["n_counterfactuals"], path / "summary.csv")[:, 0]
        have = cf_ids.value_counts().reindex(ids, fill_value=0).to_numpy()
        if not np.array_equal(counts, have):
            i = int(np.flatnonzero(counts != have)[0])
            raise ValidationError(f"{path / 'counterfactuals.csv'} has {have[i]} CE(s) for query "
                                  f"{ids[i]!r} but summary.csv says {int(counts[i])} (a truncated file?)")
        status = summary["status"].astype(str)
        bad = ~status.isin(STATUSES)
        if bad.any():
            raise ValidationError(f"{path / 'summary.csv'}: unknown status {status[bad].iloc[0]!r}")
        timings = _numeric(summary, ["time_s"], path / "summary.csv", allow_nan=True)[:, 0]
        targets = _numeric(summary, ["target_class"], path / "summary.csv")[:, 0]
        if np.any(targets != np.round(targets)) or np.any(targets < 0):
            raise ValidationError(f"{path / 'summary.csv'}: target_class must hold class indices")

        obj = cls.__new__(cls)
        obj.queries = queries
        obj.queries_encoded = queries_encoded
        obj.status = pd.Series(status.to_numpy(), index=ids, name="status", dtype=object)
        obj.messages = pd.Series(summary["message"].astype(str).to_numpy(), index=ids,
                                 name="message", dtype=object)
        obj.timings = pd.Series(timings, index=ids, name="time_s")
        obj.target_class = pd.Series(targets.astype(np.int64), index=ids, name="target_class")
        text = [c for c in meta.get("certificate_text_columns", []) if c in cert_cols]
        certs = (_read_csv(path / "summary.csv", dtype=dict.fromkeys(text, str))[cert_cols]
                 if cert_cols else pd.DataFrame())
        obj.certificates = certs.set_axis(ids) if cert_cols else pd.DataFrame(index=ids)
        counter = _restore(cf[feats], dtypes)
        counter["query_id"] = cf_ids.to_numpy()
        counter["cf_rank"] = ranks.astype(np.int64)
        obj.counterfactuals = counter
        obj.counterfactuals_encoded = _numeric(cf, enc_cols, path / "counterfactuals.csv").reshape(-1, n_enc)
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


def _require_columns(frame: pd.DataFrame, path: Path, columns: list[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        raise ValidationError(f"{path} lacks the column(s) {missing[:3]}{more}; the file is "
                              "truncated or not written by Explanations.save")


def _no_extra_encoded(frame: pd.DataFrame, path: Path, n_enc: int) -> None:
    extra = [c for c in frame.columns if c.startswith("enc_") and c not in
             {f"enc_{i}" for i in range(n_enc)}]
    if extra:
        raise ValidationError(f"{path} has encoded column {extra[0]!r} but meta.json says "
                              f"n_encoded = {n_enc}")


def _numeric(frame: pd.DataFrame, columns: list[str], path: Path, allow_nan: bool = False
             ) -> np.ndarray:
    try:
        values = frame[columns].to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        bad = next(c for c in columns if pd.to_numeric(frame[c], errors="coerce").isna().any()
                   or frame[c].dtype == object)
        raise ValidationError(f"{path}: column {bad!r} holds non-numeric values") from None
    finite = np.isfinite(values) | (np.isnan(values) if allow_nan else False)
    if not finite.all():
        bad = columns[int(np.argwhere(~finite)[0][1])]
        raise ValidationError(f"{path}: column {bad!r} holds missing or infinite values "
                              "(a truncated file?)")
    return values


def _column(frame: pd.DataFrame, column: str, dtype: str, path: Path) -> pd.Series:
    if frame[column].isna().any():
        raise ValidationError(f"{path}: column {column!r} has missing values (a truncated file?)")
    try:
        return frame[column].astype(dtype)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{path}: column {column!r} cannot be read as {dtype}: {exc}") from None


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
