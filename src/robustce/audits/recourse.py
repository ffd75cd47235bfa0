"""One partition of an audit: explain the declined applicants with the configured method and
measure each one's recourse — found (coverage), cost (ℓ1 in model space, ℓ1 of per-feature
normalised raw changes, number of changed features), validity (a forward pass), robust
validity *vr* over a retraining family and Δ-validity (the exact test of
:mod:`robustce.robustness`) — reusing :mod:`robustce.evaluation.metrics`.

The function runs in worker processes (joblib, Dask); everything it needs travels in one
picklable :class:`AuditTask`, and its output depends only on the task, the partition and its
index (seeded per partition), so every backend gives the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.evaluation.metrics import (
    delta_validity,
    proximity,
    raw_distance,
    retrained_validity,
    sparsity,
    validity,
)

__all__ = ["AuditTask", "band_labels", "group_frame", "run_partition"]

_EXPLAINERS: dict[str, Any] = {}  # per worker process: the explainer of a task token


@dataclass
class AuditTask:
    """What a worker needs to audit one partition (picklable)."""

    model: Any
    train: Any
    method: str
    params: dict[str, Any]
    target_class: int
    seed: int
    groups: list[str]
    bands: dict[str, list[float]] = field(default_factory=dict)
    family: Any = None
    shift: Any = None
    sample_fraction: float | None = None
    time_limit: float = 10.0
    token: str = ""


def band_labels(values: pd.Series, edges: Sequence[float]) -> pd.Series:
    """Numeric ``values`` as band labels ``<e1``, ``e1–e2``, …, ``≥ek``."""
    edges = sorted(float(e) for e in edges)
    names = [f"<{edges[0]:g}"] + [f"{a:g}–{b:g}" for a, b in zip(edges, edges[1:], strict=False)]
    names.append(f"≥{edges[-1]:g}")
    codes = np.searchsorted(np.asarray(edges), values.to_numpy(dtype=float), side="right")
    return pd.Series(np.asarray(names, dtype=object)[codes], index=values.index)


def group_frame(frame: pd.DataFrame, groups: Sequence[str],
                bands: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """The group label columns of ``frame`` (strings); a column with ``bands`` is banded and
    named ``<column>_band``.

    Raises
    ------
    ValidationError
        Naming an unknown group column and the known ones.
    """
    out = {}
    for g in groups:
        base = g[:-5] if g.endswith("_band") and g[:-5] in bands else g
        if base not in frame.columns:
            raise ValidationError(f"unknown group column {g!r}; the input has the columns "
                                  f"{list(frame.columns)}")
        col = frame[base]
        if base in bands:
            out[f"{base}_band"] = band_labels(col, bands[base])
        else:
            out[g] = col.astype(str)
    return pd.DataFrame(out, index=frame.index)


def _explainer(task: AuditTask) -> Any:
    from robustce.methods.registry import build_explainer

    ex = _EXPLAINERS.get(task.token)
    if ex is None:
        _EXPLAINERS.clear()
        ex = build_explainer(task.method, task.model, task.train, seed=task.seed, **task.params)
        _EXPLAINERS[task.token] = ex
    return ex


def run_partition(task: AuditTask, index: int, frame: pd.DataFrame) -> pd.DataFrame:
    """Per declined (and sampled) applicant of ``frame``: its recourse measurements.

    Parameters
    ----------
    task : the audit's configuration.
    index : the partition's number (seeds its sampling keys).
    frame : the partition's raw rows (schema features plus any group columns).

    Returns
    -------
    DataFrame with ``row`` (position in the input), ``key`` (a uniform number fixed by seed
    and position: sampling and the global-action sample use it), the group columns,
    ``status``, ``found``, ``cost_l1_model``, ``cost_l1_raw``, ``n_changed``, ``valid``,
    ``vr``, ``delta_valid`` (NaN where not measured), and the applicant's and its CE's raw
    features as ``x:<name>`` / ``cf:<name>``.
    """
    model = task.model
    schema = model.encoder.schema
    missing = [n for n in schema.names if n not in frame.columns]
    if missing:
        raise ValidationError(f"partition {index}: missing feature columns {missing}")
    rng = np.random.default_rng([task.seed, index])
    key = rng.random(len(frame))
    X = frame[schema.names]
    declined = model.predict(X) != task.target_class
    keep = declined & ((key < task.sample_fraction) if task.sample_fraction else True)
    rows = frame.index.to_numpy()[keep]
    X = X[keep]
    out = pd.DataFrame({"row": rows.astype(np.int64), "key": key[keep]})
    groups = group_frame(frame[keep], task.groups, task.bands)
    for c in groups.columns:
        out[c] = groups[c].to_numpy()
    n = len(X)
    cols = {c: np.full(n, np.nan) for c in ("cost_l1_model", "cost_l1_raw", "n_changed",
                                            "valid", "vr", "delta_valid")}
    status = np.full(n, "none", dtype=object)
    cf_raw = pd.DataFrame(index=range(n), columns=schema.names, dtype=object)
    if n:
        expl = _explainer(task).explain(X, target_class=task.target_class)
        status = expl.status.to_numpy().astype(object)
        pos, C = expl.first_counterfactuals()
        if len(pos):
            Q = expl.queries_encoded[pos]
            cols["cost_l1_model"][pos] = proximity(Q, C, "l1")
            cols["cost_l1_raw"][pos] = raw_distance(model.encoder, Q, C, "l1")
            cols["n_changed"][pos] = sparsity(model.encoder, Q, C)
            cols["valid"][pos] = validity(model, C, task.target_class)
            if task.family is not None:
                cols["vr"][pos] = retrained_validity(task.family, C, task.target_class)
            if task.shift is not None:
                cols["delta_valid"][pos] = delta_validity(model, C, task.shift,
                                                          task.target_class)
            first = expl.counterfactuals[expl.counterfactuals["cf_rank"] == 0]
            cf_raw.iloc[pos] = first[schema.names].to_numpy()
    out["status"] = status
    out["found"] = status == "found"
    for c, v in cols.items():
        out[c] = v
    for name in schema.names:
        out[f"x:{name}"] = X[name].to_numpy()
        out[f"cf:{name}"] = cf_raw[name].to_numpy()
    return _stable_types(out, schema)


def _stable_types(out: pd.DataFrame, schema: Any) -> pd.DataFrame:
    """Numeric features as float, the others as strings (one dtype per column in every
    partition, so Parquet files concatenate and CSV round trips compare equal)."""
    for f in schema.features:
        for c in (f"x:{f.name}", f"cf:{f.name}"):
            if f.kind.is_numeric:
                out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
            else:
                col = out[c]
                out[c] = np.where(col.isna(), None, col.astype(str)).astype(object)
    return out
