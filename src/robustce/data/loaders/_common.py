"""What every loader shares: reading a file through the checksummed local copy, label
codes, feature kinds and levels, and the :class:`~robustce.data.dataset.Dataset` a loader
returns."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset, encode_labels
from robustce.data.download import ensure_file
from robustce.data.schema import Schema
from robustce.errors import DatasetUnavailableError

PathLike = str | os.PathLike | None


def _read(relpath: str, data_home: PathLike, **kw: Any) -> pd.DataFrame:
    path = ensure_file(relpath, data_home)
    try:
        return pd.read_csv(path, **kw)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DatasetUnavailableError(f"cannot parse {path}: {exc}") from None


def _codes(labels: pd.Series, order: Sequence[Any]) -> pd.Series:
    """Raw labels -> 0..K-1 following ``order`` (``order[k]`` becomes class k)."""
    codes, _ = encode_labels(labels, class_names=order)
    return codes


def _kinds(**groups: Iterable[str]) -> dict[str, str]:
    return {name: kind for kind, names in groups.items() for name in names}


def _levels(col: pd.Series, documented: Iterable[Any] = ()) -> tuple[Any, ...]:
    """Documented levels plus any others present in ``col``, sorted."""
    vals = {v.item() if isinstance(v, np.generic) else v for v in pd.unique(col)}
    return tuple(sorted(vals | set(documented)))


def _whole_to_int(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    for c in columns:
        frame[c] = frame[c].astype(np.int64)
    return frame


def _finish(
    name: str,
    frame: pd.DataFrame,
    y: pd.Series | np.ndarray,
    schema: Schema,
    class_names: tuple[Any, ...],
    description: str,
    *,
    groups: pd.Series | np.ndarray | None = None,
    group_name: str = "group",
    meta: dict[str, Any] | None = None,
    favourable: int | None = 1,
) -> Dataset:
    frame = frame[schema.names].reset_index(drop=True)
    target = pd.Series(np.asarray(y, dtype=np.int64), index=frame.index, name="target")
    grp = None
    if groups is not None:
        grp = pd.Series(np.asarray(groups), index=frame.index, name=group_name)
    schema = schema.with_dtypes(frame)
    schema.validate(frame)
    return Dataset(frame, target, schema, name=name, class_names=class_names,
                   description=description, groups=grp, meta=dict(meta or {}),
                   favourable=favourable)
