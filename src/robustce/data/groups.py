"""Groups of raw features that change together or not at all.

``Constraints(groups=[["income", "debt"]])``: a CE either keeps every feature of the group at
the query's value, or changes every one of them (a numeric feature by more than the evaluator's
tolerance — exact methods ask for :data:`MIN_CHANGE` of its range, or one integer step —, any
other feature to another category). A categorical's one-hot columns are one feature already;
groups tie *different* features (a job change that moves occupation and hours together).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.conditionals import aligned
from robustce.data.schema import Schema
from robustce.errors import ValidationError

__all__ = ["MIN_CHANGE", "CompiledGroup", "FeatureGroup"]

#: the least move of a numeric column (a share of its range) that exact methods count as a
#: change of a grouped feature (the evaluator's threshold is 1e-6 of the range: far below)
MIN_CHANGE = 1e-4


@dataclass(frozen=True)
class CompiledGroup:
    """A group in model space: per member, its columns, whether it is numeric (one scaled
    column) and the least move that counts as a change there (model units)."""

    name: str
    columns: tuple[np.ndarray, ...]
    numeric: tuple[bool, ...]
    min_move: tuple[float, ...]

    def moved(self, query: np.ndarray, X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """(rows, members): whether each member moved from ``query`` (beyond ``tol``)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        return np.column_stack([np.any(np.abs(X[:, c] - q[c]) > tol, axis=1)
                                for c in self.columns])

    def holds(self, query: np.ndarray, X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        m = self.moved(query, X, tol)
        return ~m.any(axis=1) | m.all(axis=1)


class FeatureGroup:
    """One group of raw features (module docstring)."""

    def __init__(self, features: Iterable[str]):
        if isinstance(features, str):
            raise ValidationError(f"a group is a list of at least two feature names, got "
                                  f"{features!r}")
        try:
            names = [str(f) for f in features]
        except TypeError:
            raise ValidationError(f"a group is a list of feature names, got {features!r}") \
                from None
        if len(names) < 2 or len(set(names)) != len(names):
            raise ValidationError(f"a group needs at least two distinct features, got {names}")
        self.features = names

    @property
    def name(self) -> str:
        return "group(" + ", ".join(self.features) + ")"

    def validate(self, schema: Schema) -> None:
        for f in self.features:
            if f not in schema:
                raise ValidationError(f"{self.name}: unknown feature {f!r}; features are "
                                      f"{schema.names}")

    def holds(self, frame: pd.DataFrame, query_frame: pd.DataFrame, schema: Schema,
              tol: float) -> np.ndarray:
        """Per raw row: none or all of the group's features differ from the query (numbers
        beyond ``tol`` times max(1, |query value|, the range))."""
        fr, q = aligned(frame, query_frame)
        moved = []
        for f in self.features:
            feat = schema[f]
            if feat.kind.is_numeric:
                a, b = fr[f].to_numpy(np.float64), q[f].to_numpy(np.float64)
                span = float(feat.upper) - float(feat.lower)
                moved.append(np.abs(a - b) > tol * np.maximum(np.maximum(1.0, np.abs(b)), span))
            else:
                moved.append(fr[f].to_numpy() != q[f].to_numpy())
        m = np.column_stack(moved)
        return ~m.any(axis=1) | m.all(axis=1)

    def compile(self, encoder: Any) -> CompiledGroup:
        self.validate(encoder.schema)
        blocks = {b.name: b for b in encoder.blocks_}
        cols, numeric, step = [], [], []
        for f in self.features:
            b = blocks[f]
            cols.append(np.arange(b.start, b.stop))
            num = b.encoding == "scaled"
            numeric.append(num)
            st = b.n_steps if num else None
            eps = 1.0
            if num:  # clear the evaluator's threshold 1e-6 · max(1, |q|, range) tenfold
                lo, hi = float(b.feature.lower), float(b.feature.upper)
                span = hi - lo
                eps = max(MIN_CHANGE, 1e-5 * max(1.0, abs(lo), abs(hi), span) / span) \
                    if span > 0 else 1.0
                eps = max(eps, 1.0 / st) if st else eps
            step.append(eps)
        return CompiledGroup(self.name, tuple(cols), tuple(numeric), tuple(step))
