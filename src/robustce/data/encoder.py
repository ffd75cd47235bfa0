"""Encoder between raw DataFrames and model space ``[0, 1]^d``.

* continuous / integer: min-max scaled by the schema bounds, ``x = (v - lower) / (upper - lower)``
  (a constant feature, ``lower == upper``, encodes as 0);
* categorical: one-hot block, one column per category;
* ordinal with ``k`` levels: thermometer code, ``k - 1`` columns, column ``j`` is 1 iff the level
  index is ``>= j + 1`` (or, with ``ordinal_encoding="integer"``, one column ``index / (k - 1)``);
* binary: one column, 0 for ``categories[0]`` and 1 for ``categories[1]``.

Non-negative model inputs make the interval encoding of a ReLU network exact, which is why model
space is the unit box. Features whose bounds are an *observed* range (``Feature.observed``:
inferred from training data) are scaled on that range too, but a value beyond it is accepted
(with an :class:`~robustce.errors.OutOfRangeWarning`) and encodes outside [0, 1]; a search for
a counterfactual then ranges over :meth:`Encoder.domain` — the unit box widened, per query, to
hold the query's own value — and certificates stay sound (the first layer's interval is
sign-aware). The encoder also exposes what solvers need: one :class:`FeatureBlock` per
feature (its column slice, kind, actionability, integer grid) and per-column masks.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pandas as pd

from robustce.data.schema import (
    Actionability,
    Feature,
    FeatureKind,
    Schema,
    level_codes,
    numeric_values,
)
from robustce.errors import NotFittedError, OutOfRangeWarning, ValidationError

__all__ = ["Encoder", "FeatureBlock"]

OrdinalEncoding = Literal["thermometer", "integer"]


@dataclass(frozen=True)
class FeatureBlock:
    """Where one raw feature lives in model space.

    Parameters
    ----------
    feature : the raw :class:`~robustce.data.Feature`.
    start, stop : its model-space columns ``start:stop`` (half-open).
    encoding : how it is encoded: ``"scaled"``, ``"onehot"``, ``"thermometer"``,
        ``"integer_levels"`` or ``"binary"``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=20, random_state=0)
    >>> block = rc.data.Encoder(data.schema).fit(data.frame).block("housing")
    >>> block.encoding, block.slice, block.feature.categories
    ('onehot', slice(7, 10, None), ('mortgage', 'own', 'rent'))
    """

    feature: Feature
    start: int
    stop: int
    encoding: str  # "scaled", "onehot", "thermometer", "integer_levels", "binary"

    @property
    def name(self) -> str:
        return self.feature.name

    @property
    def kind(self) -> FeatureKind:
        return self.feature.kind

    @property
    def slice(self) -> slice:
        return slice(self.start, self.stop)

    @property
    def width(self) -> int:
        return self.stop - self.start

    @property
    def actionability(self) -> Actionability:
        return self.feature.actionability

    def level_codes(self) -> np.ndarray:
        """The valid encodings of a one-hot or thermometer block, one row per level in level
        order (one-hot: the identity; thermometer: column ``j`` is 1 from level ``j + 1`` on)."""
        k = self.feature.n_levels
        if self.encoding == "onehot":
            return np.eye(k)
        if self.encoding == "thermometer":
            return (np.arange(k)[:, None] >= np.arange(1, k)[None, :]).astype(np.float64)
        raise ValidationError(f"{self.name}: level codes exist for one-hot and thermometer "
                              f"blocks, not {self.encoding!r}")

    @property
    def n_steps(self) -> int | None:
        """For single-column grid encodings, the number of grid steps over [0, 1]
        (integer features: upper - lower; integer-coded ordinals: k - 1); else None."""
        if self.feature.kind is FeatureKind.INTEGER:
            return int(self.feature.upper - self.feature.lower)
        if self.encoding == "integer_levels":
            return self.feature.n_levels - 1
        return None


@dataclass(frozen=True)
class _ProjectionPlan:
    """Model-space columns grouped by how :meth:`Encoder.project` snaps them."""

    blocks: list[FeatureBlock]  # the fit they belong to
    grid: np.ndarray  # single-column grid encodings with n_steps > 0 ...
    steps: np.ndarray  # ... and their n_steps
    zero: np.ndarray  # always 0: a one-point grid or a constant scaled feature
    binary: np.ndarray
    onehot: tuple[tuple[int, int], ...]  # (start, stop) per block
    thermo: tuple[tuple[int, int], ...]
    observed: np.ndarray  # scaled columns of observed-range (soft) features


class Encoder:
    """Raw DataFrame <-> array in [0, 1]^d, following a :class:`Schema`.

    ``fit`` checks the frame against the schema and lays out the columns; the scaling comes
    from the schema bounds so that the same schema always gives the same encoding.

    Parameters
    ----------
    schema : the :class:`Schema` whose features it encodes.
    ordinal_encoding : "thermometer" (k − 1 columns per ordinal with k levels, default) or
        "integer" (one column ``index / (k − 1)``).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=20, random_state=0)
    >>> enc = Encoder(data.schema).fit(data.frame)
    >>> X = enc.transform(data.frame.head(2))
    >>> X.shape, bool(((X >= 0) & (X <= 1)).all())
    ((2, 13), True)
    >>> enc.inverse_transform(X)[["age", "housing"]].equals(data.frame.head(2)[["age", "housing"]])
    True
    """

    def __init__(self, schema: Schema, *, ordinal_encoding: OrdinalEncoding = "thermometer"):
        if not isinstance(schema, Schema):
            raise ValidationError(f"Encoder needs a Schema, got {type(schema).__name__}")
        if ordinal_encoding not in ("thermometer", "integer"):
            raise ValidationError(
                f"ordinal_encoding must be 'thermometer' or 'integer', got {ordinal_encoding!r}"
            )
        self.schema = schema
        self.ordinal_encoding = ordinal_encoding

    # --- fitting ------------------------------------------------------------------------
    def fit(self, frame: pd.DataFrame | None = None) -> Encoder:
        if frame is not None:
            self.schema.validate(frame)
        blocks, columns, start = [], [], 0
        for f in self.schema:
            if f.kind.is_numeric:
                enc, names = "scaled", [f.name]
            elif f.kind is FeatureKind.BINARY:
                enc, names = "binary", [f.name]
            elif f.kind is FeatureKind.CATEGORICAL:
                enc, names = "onehot", [f"{f.name}={c}" for c in f.categories]
            elif self.ordinal_encoding == "thermometer":
                enc, names = "thermometer", [f"{f.name}>={c}" for c in f.categories[1:]]
            else:
                enc, names = "integer_levels", [f.name]
            blocks.append(FeatureBlock(f, start, start + len(names), enc))
            columns.extend(names)
            start += len(names)
        self.blocks_: list[FeatureBlock] = blocks
        self.columns_: list[str] = columns
        self.n_features_out_: int = start
        masks = {a: np.zeros(start, dtype=bool) for a in Actionability}
        for b in blocks:
            masks[b.actionability][b.slice] = True
        self.immutable_mask_ = masks[Actionability.IMMUTABLE]
        self.increasing_mask_ = masks[Actionability.INCREASE]
        self.decreasing_mask_ = masks[Actionability.DECREASE]
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "blocks_"):
            raise NotFittedError("this Encoder is not fitted; call fit(frame) first")

    # --- structure for solvers ----------------------------------------------------------
    @property
    def feature_slices(self) -> dict[str, slice]:
        self._check_fitted()
        return {b.name: b.slice for b in self.blocks_}

    def block(self, name: str) -> FeatureBlock:
        self._check_fitted()
        for b in self.blocks_:
            if b.name == name:
                return b
        raise ValidationError(f"no feature named {name!r}; features are {self.schema.names}")

    @property
    def lower_(self) -> np.ndarray:
        self._check_fitted()
        return np.zeros(self.n_features_out_)

    @property
    def upper_(self) -> np.ndarray:
        self._check_fitted()
        return np.ones(self.n_features_out_)

    @property
    def observed_columns_(self) -> np.ndarray:
        """Indices of the scaled columns of features with an observed (soft) range."""
        self._check_fitted()
        return self._projection_plan().observed

    def domain(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """The search box in model space for each query of ``X`` ((n, d), or (d,) for one):
        ``[0, 1]`` per column, widened on columns of observed-range features to hold the
        query's own value (an applicant beyond the training range keeps that value
        reachable). Pass it to :meth:`project` (``project(C, *enc.domain(X))``) and to solvers
        as input bounds."""
        arr = self.check_array(X, name="queries")
        lo, hi = np.zeros_like(arr), np.ones_like(arr)
        cols = self.observed_columns_
        if cols.size:
            lo[:, cols] = np.minimum(0.0, arr[:, cols])
            hi[:, cols] = np.maximum(1.0, arr[:, cols])
        if np.ndim(X) == 1:
            return lo[0], hi[0]
        return lo, hi

    @property
    def feature_of_column_(self) -> np.ndarray:
        """For each encoded column, the index of its raw feature."""
        self._check_fitted()
        out = np.empty(self.n_features_out_, dtype=np.int64)
        for i, b in enumerate(self.blocks_):
            out[b.slice] = i
        return out

    @property
    def column_ranges_(self) -> np.ndarray:
        """Raw range (upper - lower) behind each scaled column; 1 for other columns."""
        self._check_fitted()
        out = np.ones(self.n_features_out_)
        for b in self.blocks_:
            if b.encoding == "scaled":
                out[b.start] = b.feature.upper - b.feature.lower
        return out

    # --- transforms ---------------------------------------------------------------------
    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        """Encode raw rows; raises :class:`ValidationError` naming bad columns/values."""
        self._check_fitted()
        self.schema.validate(frame)
        X = self._encode(frame)
        self._warn_outside_observed(X)
        return X

    def _warn_outside_observed(self, X: np.ndarray) -> None:
        """One :class:`OutOfRangeWarning` naming the observed-range features that ``X`` (an
        encoding) leaves [0, 1] on."""
        cols = self.observed_columns_
        if not cols.size or not len(X):
            return
        sub = X[:, cols]
        out = (sub < 0.0).any(axis=0) | (sub > 1.0).any(axis=0)
        if out.any():
            names = [self.columns_[c] for c in cols[out]]
            warnings.warn(OutOfRangeWarning(
                f"values outside the range seen in training for {names}: accepted (the range "
                "is observed, not declared), but the model extrapolates there"), stacklevel=3)

    def _encode(self, frame: pd.DataFrame) -> np.ndarray:
        """Encode a frame already validated against the schema."""
        X = np.zeros((len(frame), self.n_features_out_), dtype=np.float64)
        scaled = [b for b in self.blocks_ if b.encoding == "scaled"]
        if scaled:  # every scaled column at once
            lower = np.array([b.feature.lower for b in scaled], dtype=float)
            span = np.array([b.feature.upper - b.feature.lower for b in scaled], dtype=float)
            v = numeric_values(frame, [b.name for b in scaled],
                               all_numeric=len(scaled) == frame.shape[1])
            X[:, [b.start for b in scaled]] = _scaled(v, lower, span)
        for b in self.blocks_:
            if b.encoding != "scaled":
                _put_levels(X, b, level_codes(frame[b.name], b.feature))
        return X

    def fit_transform(self, frame: pd.DataFrame) -> np.ndarray:
        """``fit(frame).transform(frame)``, validating the frame once."""
        self.schema.validate(frame)
        return self.fit()._encode(frame)

    def check_array(self, X: Any, *, name: str = "X") -> np.ndarray:
        """Validate an encoded array: 2-D float, right width, finite."""
        self._check_fitted()
        try:
            arr = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:  # strings: raw rows given as an array
            raise ValidationError(
                f"{name} must be numbers in model space, shape (n, {self.n_features_out_}); got "
                f"an array that is not numeric ({exc}). Pass raw rows as a pandas DataFrame "
                f"with the columns {self.schema.names}") from None
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.n_features_out_:
            raise ValidationError(
                f"{name} must have shape (n, {self.n_features_out_}) in model space, "
                f"got {np.shape(X)}"
            )
        if not np.isfinite(arr).all():
            raise ValidationError(f"{name} contains NaN or infinite values")
        return arr

    def level_indices(self, X: np.ndarray) -> np.ndarray:
        """Decode each feature to a number: the raw value for numeric features, the level
        index for the others. Shape (n, n_features). Assumes a valid (projected) encoding."""
        X = self.check_array(X)
        out = np.empty((len(X), len(self.blocks_)))
        for i, b in enumerate(self.blocks_):
            f = b.feature
            if b.encoding == "scaled":
                x = X[:, b.start]
                v = f.lower + np.clip(x, 0, 1) * (f.upper - f.lower)
                # clip again: lower + 1.0 * (upper - lower) can exceed upper by one ulp
                v = np.clip(v, f.lower, f.upper)
                if f.observed:  # a soft range: values beyond it decode to themselves
                    v = np.where((x < 0) | (x > 1), f.lower + x * (f.upper - f.lower), v)
                out[:, i] = np.round(v) if f.kind is FeatureKind.INTEGER else v
            elif b.encoding == "binary":
                out[:, i] = X[:, b.start] >= 0.5
            elif b.encoding == "onehot":
                out[:, i] = np.argmax(X[:, b.slice], axis=1)
            elif b.encoding == "thermometer":
                out[:, i] = (X[:, b.slice] >= 0.5).sum(axis=1)
            else:
                out[:, i] = np.round(np.clip(X[:, b.start], 0, 1) * (f.n_levels - 1))
        return out

    def inverse_transform(self, X: Any, index: pd.Index | None = None) -> pd.DataFrame:
        """Decode model-space rows to raw rows: integers rounded, labels restored, dtypes kept.

        Rows that are not exact encodings are decoded to their nearest valid raw row
        (values clipped to bounds, one-hot by argmax, thermometer by counting ones).
        """
        values = self.level_indices(X)
        cols: dict[str, Any] = {}
        for i, b in enumerate(self.blocks_):
            f = b.feature
            if f.kind.is_numeric:
                v = values[:, i]
                if f.kind is FeatureKind.INTEGER and (f.dtype is None or "int" in f.dtype):
                    v = v.astype(np.int64)
                fast = _restore_numpy(v, f)  # a plain numpy column: no Series round trip
                if fast is not None:
                    cols[f.name] = fast
                    continue
                col = pd.Series(v)
            else:  # the labels, restored once per feature, taken by level index (a Series:
                # a bare object array would have its dtype inferred again by the DataFrame)
                taken = self._restored_levels(f).take(values[:, i].astype(np.int64))
                cols[f.name] = pd.Series(taken, dtype=taken.dtype, copy=False)
                continue
            cols[f.name] = _restore_dtype(col, f)
        out = pd.DataFrame(cols)
        if index is not None:
            out.index = index
        return out

    def encode_decoded(self, X: Any) -> np.ndarray:
        """``_encode(inverse_transform(X))``, the encoding of the raw rows ``X`` decodes to,
        computed on arrays: bit for bit the same (each number restored to its recorded dtype
        and scaled by the same expression, each level's code read once per feature from its
        restored label). Features whose recorded dtype is not a plain numpy one, or whose
        restored labels do not code back to their own index, take the frame path."""
        values = self.level_indices(X)
        out = np.zeros((len(values), self.n_features_out_), dtype=np.float64)
        for i, b in enumerate(self.blocks_):
            f, v = b.feature, values[:, i]
            if b.encoding == "scaled":
                if f.kind is FeatureKind.INTEGER and (f.dtype is None or "int" in f.dtype):
                    v = v.astype(np.int64)
                restored = _restore_numpy(v, f)
                if restored is None:
                    return self._encode(self.inverse_transform(X))
                out[:, b.start] = _scaled(restored.astype(np.float64), float(f.lower),
                                          float(f.upper - f.lower))
                continue
            codes = self._level_code_map(f)
            if codes is None:
                return self._encode(self.inverse_transform(X))
            _put_levels(out, b, codes[v.astype(np.int64)])
        return out

    def _level_code_map(self, f: Feature) -> np.ndarray | None:
        """For each level index of ``f``, the code :func:`level_codes` gives its restored
        label (the identity on any sane schema); None where a label does not code back."""
        cache = self.__dict__.setdefault("_codes", {})
        hit = cache.get(f.name)
        if hit is None or hit[0] is not f:
            codes = level_codes(pd.Series(self._restored_levels(f), copy=False), f)
            hit = (f, codes if (codes >= 0).all() else None)
            cache[f.name] = hit
        return hit[1]

    def _restored_levels(self, f: Feature) -> Any:
        """``f``'s categories as one column restored to ``f``'s dtype (an array pandas can
        take from), built once per feature: decoding takes the rows' labels from it instead
        of restoring every decoded column (the same values and dtype: the restoration is
        elementwise)."""
        cache = self.__dict__.setdefault("_levels", {})
        hit = cache.get(f.name)
        if hit is None or hit[0] is not f:
            cats = np.empty(f.n_levels, dtype=object)
            cats[:] = list(f.categories)
            hit = (f, _restore_dtype(pd.Series(cats, dtype=object), f).array)
            cache[f.name] = hit
        return hit[1]

    def _projection_plan(self) -> _ProjectionPlan:
        """The column groups :meth:`project` and :meth:`domain` treat alike (built once per
        fit)."""
        plan = getattr(self, "_plan", None)
        if plan is not None and plan.blocks is self.blocks_:
            return plan
        grid, steps, zero, binary, onehot, thermo = [], [], [], [], [], []
        for b in self.blocks_:
            n = b.n_steps
            if n is not None:  # integer features and integer-coded ordinals: snap to grid
                (grid if n else zero).append(b.start)
                if n:
                    steps.append(float(n))
            elif b.encoding == "scaled" and b.feature.lower == b.feature.upper:
                zero.append(b.start)
            elif b.encoding == "binary":
                binary.append(b.start)
            elif b.encoding == "onehot":
                onehot.append((b.start, b.stop))
            elif b.encoding == "thermometer":
                thermo.append((b.start, b.stop))
        observed = [b.start for b in self.blocks_ if b.encoding == "scaled" and b.feature.observed]
        self._plan = _ProjectionPlan(self.blocks_, np.array(grid, dtype=np.int64),
                                     np.array(steps, dtype=float), np.array(zero, dtype=np.int64),
                                     np.array(binary, dtype=np.int64), tuple(onehot), tuple(thermo),
                                     np.array(observed, dtype=np.int64))
        return self._plan

    def project(self, X: Any, lower: Any = None, upper: Any = None) -> np.ndarray:
        """Nearest valid encoding of each row (clip, snap integers to their grid, one-hot by
        argmax, thermometer made monotone). Pure numpy, one operation per kind of column
        (a loop only over one-hot and thermometer blocks); used after gradient search.

        ``lower`` / ``upper``: the box to clip to, per column ((d,)) or per row ((n, d)),
        default ``[0, 1]``; give :meth:`domain` of the queries so that a query's own value
        beyond an observed range stays valid."""
        self._check_fitted()
        plan = self._projection_plan()
        X = self.check_array(X)
        lo = np.broadcast_to(0.0 if lower is None else np.asarray(lower, dtype=np.float64), X.shape)
        hi = np.broadcast_to(1.0 if upper is None else np.asarray(upper, dtype=np.float64), X.shape)
        X = np.clip(X, lo, hi)
        out = X.copy()
        if len(plan.grid):
            out[:, plan.grid] = np.round(X[:, plan.grid] * plan.steps) / plan.steps
        if len(plan.zero):  # 0, unless the box excludes it (a query beyond a one-value range)
            out[:, plan.zero] = np.clip(0.0, lo[:, plan.zero], hi[:, plan.zero])
        if len(plan.binary):
            out[:, plan.binary] = X[:, plan.binary] >= 0.5
        rows = np.arange(len(X))
        for start, stop in plan.onehot:
            block = np.zeros((len(X), stop - start))
            block[rows, np.argmax(X[:, start:stop], axis=1)] = 1.0
            out[:, start:stop] = block
        for start, stop in plan.thermo:
            level = (X[:, start:stop] >= 0.5).sum(axis=1)
            out[:, start:stop] = level[:, None] >= np.arange(1, stop - start + 1)[None, :]
        return out

    # --- (de)serialisation --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"schema": self.schema.to_dict(), "ordinal_encoding": self.ordinal_encoding}

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Encoder:
        return cls(Schema.from_dict(spec["schema"]),
                   ordinal_encoding=spec.get("ordinal_encoding", "thermometer")).fit()

    def __repr__(self) -> str:
        d = getattr(self, "n_features_out_", "unfitted")
        return f"Encoder({len(self.schema)} features -> d={d}, ordinal={self.ordinal_encoding!r})"


def _scaled(v: np.ndarray, lower: Any, span: Any) -> np.ndarray:
    """Raw numbers to the scaled encoding, ``(v − lower) / span`` (0 where the range is a
    point): the one expression :meth:`Encoder._encode` and :meth:`Encoder.encode_decoded`
    share, so that they agree bit for bit."""
    return np.where(span > 0, (v - lower) / np.where(span > 0, span, 1.0), 0.0)


def _put_levels(X: np.ndarray, b: FeatureBlock, codes: np.ndarray) -> None:
    """Write the level ``codes`` (one per row) of block ``b`` into ``X`` in its encoding."""
    if b.encoding == "binary":
        X[:, b.start] = codes
    elif b.encoding == "onehot":
        X[np.arange(len(X)), b.start + codes] = 1.0
    elif b.encoding == "thermometer":
        X[:, b.slice] = codes[:, None] >= np.arange(1, b.feature.n_levels)[None, :]
    else:
        X[:, b.start] = codes / max(b.feature.n_levels - 1, 1)


@lru_cache(maxsize=256)
def _numpy_dtype(dtype: str) -> np.dtype | None:
    """``dtype`` as a plain numpy dtype (``"float64"``, ``"int64"``), or None for pandas'
    extension dtypes and names pandas does not know."""
    try:
        target = pd.api.types.pandas_dtype(dtype)
    except TypeError:
        return None
    return target if isinstance(target, np.dtype) and target.kind in "iuf" else None


def _restore_numpy(values: np.ndarray, f: Feature) -> np.ndarray | None:
    """:func:`_restore_dtype` for a numeric column whose recorded dtype is a plain numpy
    one (or none), on the array itself; None where the Series path is needed."""
    if f.dtype is None:
        return values
    target = _numpy_dtype(f.dtype)
    if target is None:
        return None
    if target.kind in "iu" and values.dtype.kind == "f":
        values = np.round(values)  # round, never truncate (2.9999999 -> 3)
    return values.astype(target)


def _restore_dtype(col: pd.Series, f: Feature) -> pd.Series:
    dtype = f.dtype
    if dtype is None:
        return col
    if dtype == "category":
        return pd.Series(
            pd.Categorical(col, categories=list(f.categories),
                           ordered=f.kind is FeatureKind.ORDINAL)
        )
    try:
        target = pd.api.types.pandas_dtype(dtype)
    except TypeError:
        return col
    if pd.api.types.is_integer_dtype(target) and pd.api.types.is_float_dtype(col):
        # a continuous feature stored as integers: round, never truncate (2.9999999 -> 3)
        col = col.round()
    try:
        return col.astype(target)
    except (TypeError, ValueError):
        return col
