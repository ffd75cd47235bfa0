"""Pass 2 of :func:`~robustce.models.from_sklearn`: every preprocessing step folded into one
affine map ``Z = A x + c`` of robustce's model space ``x``, checked against the pipeline's own
``transform``; and :func:`fold_preprocessing`, the fold of a preprocessor on its own.

Each supported step (``ColumnTransformer``, nested ``Pipeline``, ``OneHotEncoder``,
``OrdinalEncoder``, the scalers, ``SimpleImputer``, feature selectors, ``"passthrough"``,
``"drop"``) maps the affine rows of its inputs to those of its outputs; anything else raises
:class:`~robustce.errors.UnsupportedModelError` naming the step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.data.schema import Schema
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.sklearn_import.raw_schema import (
    _check_schema,
    _collect_roles,
    _is_identity,
    _is_passthrough,
    _key,
    _Roles,
    _schema_from,
)

__all__ = ["fold_preprocessing"]

_N_PROBE = 256  # random schema rows the fold is checked on
_FOLD_RTOL = 1e-8

SUPPORTED_TRANSFORMERS = (
    "ColumnTransformer, Pipeline, OneHotEncoder, OrdinalEncoder, StandardScaler, MinMaxScaler, "
    "RobustScaler, MaxAbsScaler, SimpleImputer, feature selectors, 'passthrough', 'drop'"
)


# ----------------------------------------------------------------------------------------
# The model-space basis: raw values and level indicators as affine rows
# ----------------------------------------------------------------------------------------


@dataclass
class _Sym:
    """Columns flowing through the pipeline: raw columns (``names``) or ``Z = A x + c``."""

    names: list[str] | None = None
    A: np.ndarray | None = None
    c: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.names) if self.names is not None else len(self.c)

    def select(self, idx: Any) -> _Sym:
        idx = list(np.asarray(idx, dtype=np.int64).reshape(-1))
        if self.names is not None:
            return _Sym(names=[self.names[i] for i in idx])
        return _Sym(A=self.A[idx], c=self.c[idx])


class _Basis:
    """Raw values and level indicators of each feature as affine rows over model space."""

    def __init__(self, encoder: Encoder):
        self.encoder = encoder
        self.d = encoder.n_features_out_

    def value(self, name: str) -> tuple[np.ndarray, float]:
        b = self.encoder.block(name)
        f = b.feature
        row = np.zeros(self.d)
        if b.encoding == "scaled":
            row[b.start] = f.upper - f.lower
            return row, float(f.lower)
        R, r = self.levels(name)
        vals = np.array([float(c) for c in f.categories])
        return vals @ R, float(vals @ r)

    def levels(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Indicator of level k of feature ``name`` = ``R[k] @ x + r[k]`` on valid encodings."""
        b = self.encoder.block(name)
        K = b.feature.n_levels
        R, r = np.zeros((K, self.d)), np.zeros(K)
        if b.encoding == "onehot":
            R[np.arange(K), b.start + np.arange(K)] = 1.0
        elif b.encoding == "binary":
            R[0, b.start], r[0] = -1.0, 1.0
            R[1, b.start] = 1.0
        elif b.encoding == "thermometer":  # ind_k = t_k − t_{k+1}, t_0 ≡ 1, t_K ≡ 0
            for k in range(K):
                if k == 0:
                    r[k] = 1.0
                else:
                    R[k, b.start + k - 1] = 1.0
                if k + 1 < K:
                    R[k, b.start + k] = -1.0
        else:
            raise UnsupportedModelError(
                f"feature {name!r}: the {b.encoding!r} encoding has no linear level indicators; "
                "use ordinal_encoding='thermometer'")
        return R, r


def _affine(sym: _Sym, basis: _Basis) -> tuple[np.ndarray, np.ndarray]:
    if sym.names is None:
        return sym.A, sym.c
    rows = [basis.value(n) for n in sym.names]
    A = np.array([r for r, _ in rows]).reshape(len(rows), basis.d)
    return A, np.array([c for _, c in rows], dtype=np.float64)


def _box_range(A: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sound range of ``A x + c`` over the unit box (contains every valid encoding)."""
    return c + np.minimum(A, 0).sum(axis=1), c + np.maximum(A, 0).sum(axis=1)


def _onehot_rows(enc: Any, i: int, name: str, basis: _Basis, label: str
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Output columns of OneHotEncoder ``enc`` for its input feature ``i`` (raw column ``name``)
    as affine rows: the documented layout — frequent categories in ``categories_`` order, then
    one infrequent column; ``drop_idx_`` removes one group; unknown categories give zeros
    (``handle_unknown='ignore'``) or the infrequent column (``'infrequent_if_exist'``/'warn')."""
    cats = [_key(c) for c in enc.categories_[i]]
    infrequent = None
    if getattr(enc, "_infrequent_enabled", False):
        infrequent = enc.infrequent_categories_[i]
    inf_keys = {_key(c) for c in infrequent} if infrequent is not None else set()
    groups: list[set[Any]] = [{k} for k in cats if k not in inf_keys]
    if inf_keys:
        groups.append(inf_keys)
    drop = getattr(enc, "drop_idx_", None)
    if drop is not None and drop[i] is not None:
        dropped = cats[int(drop[i])]
        groups = [g for g in groups if dropped not in g]
    feature = basis.encoder.block(name).feature
    R, r = basis.levels(name)
    unknown_to_infrequent = enc.handle_unknown in ("infrequent_if_exist", "warn") and inf_keys
    known = set(cats)
    A, c = np.zeros((len(groups), basis.d)), np.zeros(len(groups))
    for k, level in enumerate(feature.categories):
        kk = _key(level)
        for j, g in enumerate(groups):
            if kk in g or (kk not in known and unknown_to_infrequent and g is groups[-1]
                           and g == inf_keys):
                A[j] += R[k]
                c[j] += r[k]
        if kk not in known and enc.handle_unknown == "error":
            raise ValidationError(f"column {name!r}: category {level!r} is unknown to {label}")
    return A, c


def _ordinal_codes(enc: Any, cols: list[str], basis: _Basis, label: str) -> list[np.ndarray]:
    """Codes the fitted OrdinalEncoder gives every schema level of each of its columns, read
    from its own ``transform`` (exact: the encoder works column by column)."""
    feats = [basis.encoder.block(n).feature for n in cols]
    n = max(f.n_levels for f in feats)
    frame = pd.DataFrame({
        name: pd.Series([f.categories[k % f.n_levels] for k in range(n)], dtype=object)
        for name, f in zip(cols, feats, strict=True)
    })
    try:
        codes = np.asarray(enc.transform(frame), dtype=np.float64)
    except ValueError as exc:
        raise ValidationError(f"{label} rejects categories of the schema: {exc}") from None
    out = []
    for j, f in enumerate(feats):
        v = codes[:f.n_levels, j]
        if not np.isfinite(v).all():
            raise UnsupportedModelError(
                f"{label} codes some categories of {cols[j]!r} as NaN (unknown_value=np.nan); "
                "not representable")
        out.append(v)
    return out


def _scaler(step: Any, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, shift) of a fitted per-column scaler, ``z = scale * v + shift``."""
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler

    ones, zeros = np.ones(n), np.zeros(n)
    if isinstance(step, StandardScaler):
        s = np.asarray(step.scale_, dtype=np.float64) if step.scale_ is not None else ones
        m = np.asarray(step.mean_, dtype=np.float64) if step.with_mean else zeros
        return 1.0 / s, -m / s
    if isinstance(step, MinMaxScaler):
        return np.asarray(step.scale_, dtype=np.float64), np.asarray(step.min_, dtype=np.float64)
    if isinstance(step, RobustScaler):
        s = np.asarray(step.scale_, dtype=np.float64) if step.scale_ is not None else ones
        m = np.asarray(step.center_, dtype=np.float64) if step.center_ is not None else zeros
        return 1.0 / s, -m / s
    if isinstance(step, MaxAbsScaler):
        return 1.0 / np.asarray(step.scale_, dtype=np.float64), zeros
    return None


def _fold(step: Any, label: str, sym: _Sym, basis: _Basis) -> _Sym:
    """The output of ``step`` on ``sym`` (raw columns or an affine map)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_selection import SelectorMixin
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    if _is_passthrough(step):
        return sym
    if isinstance(step, str) and step == "drop":
        return _Sym(A=np.zeros((0, basis.d)), c=np.zeros(0))
    if isinstance(step, Pipeline):
        for name, sub in step.steps:
            sym = _fold(sub, f"{label} → step {name!r}", sym, basis)
        return sym
    if isinstance(step, ColumnTransformer):
        index = getattr(step, "_transformer_to_input_indices", None)
        if index is None:
            raise UnsupportedModelError(f"{label}: this ColumnTransformer is not fitted")
        blocks_A, blocks_c = [], []
        for name, sub, _ in step.transformers_:
            idx = index.get(name, [])
            if len(idx) == 0 or (isinstance(sub, str) and sub == "drop"):
                continue
            out = _fold(sub, f"{label} → transformer {name!r}", sym.select(idx), basis)
            A, c = _affine(out, basis)
            blocks_A.append(A)
            blocks_c.append(c)
        if not blocks_A:
            return _Sym(A=np.zeros((0, basis.d)), c=np.zeros(0))
        return _Sym(A=np.vstack(blocks_A), c=np.concatenate(blocks_c))
    what = f"{label} ({type(step).__name__})"
    if isinstance(step, SimpleImputer):
        if getattr(step, "add_indicator", False) and len(step.indicator_.features_):
            raise UnsupportedModelError(f"{what}: add_indicator=True is not supported")
        stats = np.asarray(step.statistics_)
        if stats.dtype.kind == "f" and np.isnan(stats).any():
            raise UnsupportedModelError(f"{what}: a column with no observed value is dropped")
        return sym  # the identity on complete rows (robustce's schema has no missing values)
    if isinstance(step, OneHotEncoder | OrdinalEncoder):
        if sym.names is None:
            raise UnsupportedModelError(
                f"{what}: categorical encoders must read raw columns, not transformed numbers")
        if isinstance(step, OneHotEncoder):
            parts = [_onehot_rows(step, i, n, basis, what) for i, n in enumerate(sym.names)]
            return _Sym(A=np.vstack([A for A, _ in parts]), c=np.concatenate([c for _, c in parts]))
        codes = _ordinal_codes(step, sym.names, basis, what)
        rows = [basis.levels(n) for n in sym.names]
        A = np.array([v @ R for v, (R, _) in zip(codes, rows, strict=True)])
        c = np.array([float(v @ r) for v, (_, r) in zip(codes, rows, strict=True)])
        return _Sym(A=A, c=c)
    if isinstance(step, SelectorMixin):
        return sym.select(np.flatnonzero(step.get_support()))
    aff = _scaler(step, len(sym))
    if aff is not None:
        A, c = _affine(sym, basis)
        s, t = aff
        if getattr(step, "clip", False):
            lo, hi = _box_range(A, c)
            dmin, dmax = np.asarray(step.data_min_), np.asarray(step.data_max_)
            if np.any(lo < dmin - 1e-12 * np.abs(dmin)) or np.any(hi > dmax + 1e-12 * np.abs(dmax)):
                raise UnsupportedModelError(
                    f"{what}: clip=True clips inputs outside the fitted range, which the schema "
                    "allows; not affine there")
        return _Sym(A=s[:, None] * A, c=s * c + t)
    raise UnsupportedModelError(
        f"{what} is not exactly representable as an affine map of the raw features; supported: "
        f"{SUPPORTED_TRANSFORMERS}")




# ----------------------------------------------------------------------------------------
# The whole preprocessing: folded and checked against its transform
# ----------------------------------------------------------------------------------------


def _probe_frame(encoder: Encoder, frame: pd.DataFrame | None, columns: list[str]) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    X = encoder.project(rng.uniform(size=(_N_PROBE, encoder.n_features_out_)))
    probe = encoder.inverse_transform(X)[columns]
    if frame is not None:
        probe = pd.concat([frame[columns], probe], ignore_index=True)
    return probe


def _transform(pre: list[tuple[str, Any]], frame: pd.DataFrame) -> np.ndarray:
    """The pipeline's own preprocessing of raw rows, dense float64."""
    Z: Any = frame
    for _, step in pre:
        if not _is_passthrough(step):
            Z = step.transform(Z)
    if hasattr(Z, "toarray"):
        Z = Z.toarray()
    return np.asarray(Z, dtype=np.float64)


def _check_fold(pre: list[tuple[str, Any]], A: np.ndarray, c: np.ndarray, encoder: Encoder,
                probe: pd.DataFrame) -> None:
    Z = _transform(pre, probe)
    mine = encoder.transform(probe) @ A.T + c
    if Z.shape != mine.shape:
        raise UnsupportedModelError(
            f"folding the preprocessing gives {mine.shape[1]} columns, its transform "
            f"{Z.shape[1]}; not supported")
    err = np.abs(Z - mine) / (1.0 + np.abs(Z))
    if err.max() > _FOLD_RTOL:
        j = int(np.argmax(err.max(axis=0)))
        raise UnsupportedModelError(
            f"the folded preprocessing differs from the pipeline's transform on its output "
            f"column {j} (relative error {err.max():.2e}); this pipeline is not supported")


def _data_parts(data_or_schema: Any
                ) -> tuple[Dataset | None, Schema | None, pd.DataFrame | None]:
    """``(dataset, schema, frame)`` of a ``data_or_schema`` argument (None where not given:
    a Dataset gives all three, a Schema its schema, a DataFrame its frame)."""
    dataset = data_or_schema if isinstance(data_or_schema, Dataset) else None
    schema = dataset.schema if dataset is not None else (
        data_or_schema if isinstance(data_or_schema, Schema) else None)
    frame = dataset.frame if dataset is not None else (
        data_or_schema if isinstance(data_or_schema, pd.DataFrame) else None)
    if data_or_schema is not None and schema is None and frame is None:
        raise ValidationError(
            "data_or_schema must be a DataFrame, a Dataset or a Schema, got "
            f"{type(data_or_schema).__name__}")
    return dataset, schema, frame


def _fold_preprocessing(estimator: Any, pre: list[tuple[str, Any]], data_or_schema: Any
                        ) -> tuple[Encoder, _Basis, np.ndarray, np.ndarray, list[str],
                                   pd.DataFrame | None, Dataset | None]:
    """Schema, encoder and the preprocessing ``Z = A x + c`` (checked against its transform)."""
    dataset, schema, frame = _data_parts(data_or_schema)
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        ref = schema.names if schema is not None else (list(frame.columns) if frame is not None else None)
        if ref is None or len(ref) != getattr(estimator, "n_features_in_", -1):
            raise ValidationError(
                "the estimator was not fitted on a DataFrame (no feature_names_in_); fit it on "
                "the raw frame, or pass a Schema/frame with its columns in order")
        names = ref
    columns = [str(n) for n in names]

    roles = _Roles()
    if pre:
        for label, step in pre:
            _collect_roles(step, label, columns, roles)
            if not _is_identity(step):
                break
    else:
        for n in columns:
            roles.numeric.setdefault(n, []).append("the estimator")
    if schema is not None:
        _check_schema(schema, columns, roles)
        if frame is not None:
            schema.validate(frame[schema.names] if set(frame.columns) == set(schema.names) else frame)
    else:
        schema = _schema_from(columns, roles, frame)
        if frame is not None:
            schema.validate(frame[schema.names])
    encoder = Encoder(schema).fit()
    basis = _Basis(encoder)

    sym = _Sym(names=list(columns))
    for label, step in pre:
        sym = _fold(step, label, sym, basis)
    A, c = _affine(sym, basis)
    if pre:
        _check_fold(pre, A, c, encoder, _probe_frame(encoder, frame, columns))

    return encoder, basis, A, c, columns, frame, dataset


def fold_preprocessing(preprocessor: Any,
                       data_or_schema: pd.DataFrame | Dataset | Schema | None = None
                       ) -> tuple[Encoder, np.ndarray, np.ndarray]:
    """A fitted scikit-learn preprocessor on raw frames as ``(encoder, A, c)``:
    ``preprocessor.transform(frame) == encoder.transform(frame) @ A.T + c`` (checked).

    Parameters
    ----------
    preprocessor : the fitted scikit-learn preprocessor (transformer or Pipeline of them).
    data_or_schema : the raw training frame, a :class:`~robustce.data.Dataset` or a
        :class:`~robustce.data.Schema`, or None, as in :func:`from_sklearn`.

    Examples
    --------
    Scaled numbers and a one-hot category become one affine map of model space:

    >>> from sklearn.compose import ColumnTransformer
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> data = rc.datasets.load("synthetic_loan", n_samples=50, random_state=0)
    >>> pre = ColumnTransformer([("num", StandardScaler(), ["income", "debt"]),
    ...                          ("cat", OneHotEncoder(), ["housing"])]).fit(data.frame)
    >>> encoder, A, c = fold_preprocessing(pre, data)
    >>> A.shape, bool(np.allclose(pre.transform(data.frame), encoder.transform(data.frame) @ A.T + c))
    ((5, 13), True)
    """
    encoder, _, A, c, *_ = _fold_preprocessing(preprocessor, [("the preprocessor", preprocessor)],
                                               data_or_schema)
    return encoder, A, c
