"""``from_sklearn``: a fitted scikit-learn pipeline on *raw* DataFrames as a robustce model.

A lender's model typically is ``Pipeline([("pre", ColumnTransformer([...])), ("clf", ...)])``
fitted on the raw frame. :func:`from_sklearn` reads the raw schema (kinds, categories, bounds)
from the fitted transformers (and from ``data`` when given), builds robustce's
:class:`~robustce.data.Encoder` for it, and folds the whole preprocessing into the model:

* every supported transformer is an affine map of the raw features — numbers enter as their
  value ``lower + (upper − lower)·x``, categories as their level indicators (one-hot columns,
  or thermometer differences for ordinals) — so the preprocessing is ``Z = A x + c`` over
  robustce's model space ``x``;
* linear models and ReLU MLPs: the first layer becomes ``(W A, W c + b)`` (a
  :class:`~robustce.models.network.ReLUNetwork` every MILP method and certifier consumes);
* trees and forests (:class:`~robustce.models.trees.TreeView`) and gradient boosting
  (:class:`~robustce.models.boosting.AdditiveTrees`): every split ``z_j <= θ`` is mapped back to
  one model-space column (``x_k <= (θ − c_j)/A_jk``; children swapped when ``A_jk < 0``; on a
  categorical or ordinal feature the set of levels going left becomes one indicator or
  thermometer column).

The fold is checked against the pipeline's own ``transform`` on the training rows (when
given) and on random rows of the schema; a mismatch is an :class:`UnsupportedModelError`.
Anything that is not exactly affine (a custom transformer, ``PolynomialFeatures``, a
non-ReLU activation, ``MinMaxScaler(clip=True)`` beyond its fitted range, native categorical
splits) raises :class:`UnsupportedModelError` naming the step.

Supported transformers: ``ColumnTransformer`` (with ``remainder``), nested ``Pipeline``,
``OneHotEncoder`` (``drop``, ``handle_unknown``, infrequent categories), ``OrdinalEncoder``,
``StandardScaler``, ``MinMaxScaler``, ``RobustScaler``, ``MaxAbsScaler``, ``SimpleImputer``
(the identity on complete rows), feature selectors (``VarianceThreshold``, ``SelectKBest``…),
``"passthrough"`` and ``"drop"``. Final estimators: ``LogisticRegression`` and other linear
classifiers, ``MLPClassifier(activation="relu")``, ``DecisionTreeClassifier``,
``ExtraTreeClassifier``, ``RandomForestClassifier``, ``ExtraTreesClassifier``,
``GradientBoostingClassifier`` and ``HistGradientBoostingClassifier`` (numeric splits);
``XGBClassifier`` and ``LGBMClassifier`` through :mod:`robustce.models.boosters`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.data.schema import Feature, FeatureKind, Schema, infer_schema
from robustce.errors import NotFittedError, UnsupportedModelError, ValidationError
from robustce.models.base import Model, favourable_in, warn_if_constant
from robustce.models.boosting import AdditiveTrees
from robustce.models.network import ReLUNetwork
from robustce.models.network_model import NetworkModel
from robustce.models.trees import TreeView, float32_threshold, forest_predict_proba

__all__ = [
    "ImportedBoostedModel",
    "ImportedNetworkModel",
    "ImportedTreeModel",
    "fold_preprocessing",
    "from_sklearn",
]

_EPS = 1e-12
_N_PROBE = 256  # random schema rows the fold is checked on
_FOLD_RTOL = 1e-8

SUPPORTED_TRANSFORMERS = (
    "ColumnTransformer, Pipeline, OneHotEncoder, OrdinalEncoder, StandardScaler, MinMaxScaler, "
    "RobustScaler, MaxAbsScaler, SimpleImputer, feature selectors, 'passthrough', 'drop'"
)
SUPPORTED_ESTIMATORS = (
    "LogisticRegression (and other linear classifiers), MLPClassifier(activation='relu'), "
    "DecisionTreeClassifier, RandomForestClassifier, ExtraTreesClassifier, "
    "GradientBoostingClassifier, HistGradientBoostingClassifier, XGBClassifier, LGBMClassifier"
)


# ----------------------------------------------------------------------------------------
# Category keys: numeric labels match by value (1 == 1.0), others exactly
# ----------------------------------------------------------------------------------------


def _key(c: Any) -> Any:
    if isinstance(c, np.generic):
        c = c.item()
    if isinstance(c, bool | int | float):
        return ("num", float(c))
    return ("obj", c)


def _plain(c: Any) -> Any:
    return c.item() if isinstance(c, np.generic) else c


def _is_passthrough(step: Any) -> bool:
    """``None``, ``"passthrough"`` or ``FunctionTransformer()`` (what a ColumnTransformer
    stores for ``"passthrough"``)."""
    from sklearn.preprocessing import FunctionTransformer

    if step is None or (isinstance(step, str) and step == "passthrough"):
        return True
    return isinstance(step, FunctionTransformer) and step.func is None


def _is_identity(step: Any) -> bool:
    from sklearn.impute import SimpleImputer

    return _is_passthrough(step) or isinstance(step, SimpleImputer)


# ----------------------------------------------------------------------------------------
# Pass 1: what each raw column is to the pipeline (its roles)
# ----------------------------------------------------------------------------------------


@dataclass
class _Roles:
    """Per raw column: categorical uses (kind, categories, unknown allowed, step label),
    numeric uses (step labels) and bounds readable from a fitted MinMaxScaler."""

    categorical: dict[str, list[tuple[str, tuple[Any, ...], bool, str]]] = field(default_factory=dict)
    numeric: dict[str, list[str]] = field(default_factory=dict)
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)


def _collect_roles(step: Any, label: str, cols: list[str] | None, roles: _Roles) -> None:
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import (
        MaxAbsScaler,
        MinMaxScaler,
        OneHotEncoder,
        OrdinalEncoder,
        RobustScaler,
        StandardScaler,
    )

    if not cols or (isinstance(step, str) and step == "drop"):
        return
    if _is_passthrough(step):
        for c in cols:
            roles.numeric.setdefault(c, []).append(label)
    elif isinstance(step, Pipeline):
        for name, sub in step.steps:
            _collect_roles(sub, f"{label} → step {name!r}", cols, roles)
            if not _is_identity(sub):
                break
    elif isinstance(step, ColumnTransformer):
        index = getattr(step, "_transformer_to_input_indices", None)
        if index is None:
            return
        for name, sub, _ in step.transformers_:
            idx = index.get(name, [])
            _collect_roles(sub, f"{label} → transformer {name!r}", [cols[i] for i in idx], roles)
    elif isinstance(step, OneHotEncoder | OrdinalEncoder):
        onehot = isinstance(step, OneHotEncoder)
        unknown_ok = step.handle_unknown != "error"
        for i, c in enumerate(cols):
            cats = tuple(_plain(v) for v in step.categories_[i])
            roles.categorical.setdefault(c, []).append(
                ("categorical" if onehot else "ordinal", cats, unknown_ok, label))
    elif isinstance(step, StandardScaler | MinMaxScaler | RobustScaler | MaxAbsScaler):
        for i, c in enumerate(cols):
            roles.numeric.setdefault(c, []).append(label)
            if isinstance(step, MinMaxScaler):
                roles.bounds[c] = (float(step.data_min_[i]), float(step.data_max_[i]))


# ----------------------------------------------------------------------------------------
# The schema: from a given schema, the data, or the transformers alone
# ----------------------------------------------------------------------------------------


def _check_schema(schema: Schema, columns: list[str], roles: _Roles) -> None:
    missing = [c for c in columns if c not in schema]
    if missing:
        raise ValidationError(f"the pipeline takes columns the schema lacks: {missing}")
    extra = [n for n in schema.names if n not in columns]
    if extra:
        raise ValidationError(f"the schema has columns the pipeline does not take: {extra}")
    for name, uses in roles.categorical.items():
        f = schema[name]
        for _, cats, unknown_ok, label in uses:
            if not f.kind.has_levels:
                raise ValidationError(
                    f"column {name!r} is {f.kind.value} in the schema but {label} encodes it as "
                    "categories; give it kind 'categorical' or 'ordinal'")
            known = {_key(c) for c in cats}
            unseen = [c for c in f.categories if _key(c) not in known]
            if unseen and not unknown_ok:
                raise ValidationError(
                    f"column {name!r} has categories {unseen[:10]} that {label} does not know "
                    "(handle_unknown='error'); the pipeline would reject them")
    for name, labels in roles.numeric.items():
        f = schema[name]
        if f.kind.has_levels and not all(isinstance(_key(c)[1], float) for c in f.categories):
            raise ValidationError(
                f"column {name!r} is {f.kind.value} with non-numeric categories but {labels[0]} "
                "uses it as a number")


def _schema_from(columns: list[str], roles: _Roles, frame: pd.DataFrame | None) -> Schema:
    if frame is not None:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValidationError(f"data lacks columns the pipeline takes: {missing}")
        extra = [c for c in frame.columns if c not in columns]
        if extra:
            raise ValidationError(f"data has columns the pipeline does not take: {extra}")
    feats = []
    for name in columns:
        col = frame[name] if frame is not None else None
        dtype = str(col.dtype) if col is not None else None
        if name in roles.categorical:
            kind, cats, unknown_ok, label = roles.categorical[name][0]
            cats = list(cats)
            for _, more, _, _ in roles.categorical[name][1:]:
                cats += [c for c in more if _key(c) not in {_key(k) for k in cats}]
            if col is not None:
                if col.isna().any():
                    raise ValidationError(f"column {name!r} has missing values (NaN)")
                known = {_key(c) for c in cats}
                seen = [_plain(v) for v in pd.unique(col)]
                unseen = [v for v in seen if _key(v) not in known]
                if unseen and not unknown_ok:
                    raise ValidationError(
                        f"column {name!r} has categories {unseen[:10]} that {label} does not "
                        "know (handle_unknown='error')")
                if unseen:
                    cats += sorted(unseen, key=str)
                    kind = "categorical"
            feats.append(Feature(name, kind, categories=tuple(cats), dtype=dtype))
        elif name in roles.numeric:
            if col is not None:
                if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
                    raise ValidationError(
                        f"column {name!r} has dtype {col.dtype} but {roles.numeric[name][0]} "
                        "uses it as a number")
                v = col.to_numpy(dtype=float)
                if not np.isfinite(v).all():
                    raise ValidationError(f"column {name!r} has missing or infinite values")
                whole = pd.api.types.is_integer_dtype(col) or bool(np.all(v == np.round(v)))
                kind = FeatureKind.INTEGER if whole else FeatureKind.CONTINUOUS
                feats.append(Feature(name, kind, lower=float(v.min()), upper=float(v.max()),
                                     dtype=dtype, observed=True))  # the data's range: soft
            elif name in roles.bounds:
                lo, hi = roles.bounds[name]
                feats.append(Feature(name, FeatureKind.CONTINUOUS, lower=lo, upper=hi))
            else:
                raise ValidationError(
                    f"the bounds of column {name!r} cannot be read from "
                    f"{roles.numeric[name][0]}; pass the training frame "
                    "(from_sklearn(estimator, X_train)) or a Schema")
        elif col is not None:
            feats.append(infer_schema(frame[[name]]).features[0])
        else:
            raise ValidationError(
                f"column {name!r} is not used by any supported transformer, so its kind cannot be "
                "read from the pipeline; pass the training frame or a Schema")
    return Schema(feats)


# ----------------------------------------------------------------------------------------
# Pass 2: the preprocessing as an affine map of model space
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
# Trees: splits on Z mapped back to model space
# ----------------------------------------------------------------------------------------


class _SplitMap:
    """Maps a split ``z_j <= θ`` of the fitted tree to model space as ``(columns, t, hit_left)``:
    the row goes to the *hit* child (left iff ``hit_left``) iff ``x_k > t`` for some ``k`` in
    ``columns``, else to the other child. One column is an axis-aligned split (``hit_left``
    when the column's coefficient is negative); several one-hot columns are a set of
    categories, tested as a chain of nodes (the tree becomes a DAG with the same leaves)."""

    def __init__(self, A: np.ndarray, c: np.ndarray, encoder: Encoder, basis: _Basis, label: str,
                 transform: Any = None, base: pd.DataFrame | None = None):
        self.A, self.c, self.encoder, self.basis, self.label = A, c, encoder, basis, label
        self.owner = encoder.feature_of_column_
        self.transform, self.base = transform, base
        self.cache: dict[tuple[int, float, bool], tuple[list[int], float, bool]] = {}

    def get(self, j: int, theta: float, float32: bool) -> tuple[list[int], float, bool]:
        key = (j, theta, float32)
        if key not in self.cache:
            eff = float(float32_threshold(np.array([theta]))[0]) if float32 else theta
            # the smallest value the split sends right: the next float32 when it compares float32
            above = (0.0, float(np.nextafter(np.float32(eff), np.float32(np.inf)))) if float32 else (0.0,)
            self.cache[key] = self(j, eff, above)
        return self.cache[key]

    def prepare(self, js: np.ndarray, thetas: np.ndarray, float32: bool) -> None:
        """Splits on an integer feature: the fitted threshold can equal a grid value's
        transformed image up to rounding, so ask the pipeline's own transform (one batched
        call) which of the two grid values around it go left — with scikit-learn's own test
        (:func:`_goes_left`) — and put the model-space threshold halfway between them."""
        if self.transform is None:
            return
        todo = []
        for j, th in {(int(a), float(b)) for a, b in zip(js, thetas, strict=True)}:
            if (j, th, float32) in self.cache:
                continue
            nz = np.flatnonzero(self.A[j])
            if len(nz) != 1 or self.A[j, nz[0]] <= 0:
                continue
            block = self.encoder.blocks_[int(self.owner[nz[0]])]
            f = block.feature
            if f.kind is not FeatureKind.INTEGER or f.upper == f.lower:
                continue
            k, alpha = int(nz[0]), float(self.A[j, nz[0]])
            v = f.lower + (th - float(self.c[j])) / alpha * (f.upper - f.lower)
            n0 = float(np.floor(v))
            todo.append((j, th, k, f, n0))
        if not todo:
            return
        rows = []
        for _, _, _, f, n0 in todo:
            for n in (n0, n0 + 1.0):
                row = self.base.copy()
                row[f.name] = np.clip(n, f.lower, f.upper)
                rows.append(row)
        frame = pd.concat(rows, ignore_index=True)
        for _, _, _, f, _ in todo:
            frame[f.name] = frame[f.name].astype(self.base[f.name].dtype)
        Z = self.transform(frame)
        for i, (j, th, k, f, n0) in enumerate(todo):
            go = _goes_left(Z[2 * i:2 * i + 2, j], th, float32)
            n0c = np.clip(n0, f.lower, f.upper)
            cut = n0c + 1.5 if go.all() else (n0c + 0.5 if go[0] else n0c - 0.5)
            t = (cut - f.lower) / (f.upper - f.lower)
            self.cache[(j, th, float32)] = ([k], t, False)

    def __call__(self, j: int, theta: float, above: tuple[float, ...] = (0.0,)
                 ) -> tuple[list[int], float, bool]:
        a, c0 = self.A[j], float(self.c[j])
        nz = np.flatnonzero(a)
        if len(nz) == 0:  # a constant input: the split always goes one way
            return [0], (np.inf if c0 <= theta else -np.inf), False
        if len(nz) == 1:
            k, alpha = int(nz[0]), float(a[nz[0]])
            b = (theta - c0) / alpha
            if alpha > 0:
                return [k], _apart_from_above(theta, b, c0, alpha, above), False
            return [k], float(np.nextafter(b, -np.inf)), True  # z <= θ ⟺ x >= b
        feats = np.unique(self.owner[nz])
        block = self.encoder.blocks_[int(feats[0])]
        if len(feats) == 1 and block.feature.kind.has_levels:
            K = block.feature.n_levels
            z = np.array([a @ self._level_point(block, k) + c0 for k in range(K)])
            left = z <= theta
            if left.all() or not left.any():
                return [int(nz[0])], (np.inf if left.all() else -np.inf), False
            if block.encoding == "thermometer":
                m = int(np.argmin(left)) if left[0] else int(np.argmax(left))
                if left[0] and not left[m:].any():  # levels < m go left: t_m <= 0.5
                    return [block.start + m - 1], 0.5, False
                if not left[0] and left[m:].all():  # levels >= m go left: t_m > 0.5
                    return [block.start + m - 1], 0.5, True
            elif block.encoding == "onehot":
                right = np.flatnonzero(~left)
                lefts = np.flatnonzero(left)
                if len(right) <= len(lefts):
                    return [block.start + int(k) for k in right], 0.5, False
                return [block.start + int(k) for k in lefts], 0.5, True
        raise UnsupportedModelError(
            f"{self.label}: a split on input {j} mixes several model-space columns "
            f"({[self.encoder.columns_[i] for i in nz[:6]]}); not one axis-aligned split")

    def _level_point(self, block: Any, k: int) -> np.ndarray:
        x = np.zeros(self.basis.d)
        if block.encoding == "onehot":
            x[block.start + k] = 1.0
        elif block.encoding == "thermometer":
            x[block.start:block.start + k] = 1.0
        elif block.encoding == "binary":
            x[block.start] = float(k)
        return x


def _apart_from_above(theta: float, b: float, c0: float, alpha: float,
                      above: tuple[float, ...]) -> float:
    """The model-space threshold ``b = (θ − c0) / α`` (``α > 0``), lowered below the image of a
    value ``r > θ`` in ``above`` that the split sends right when the scaling rounds the two
    together: 0 above LightGBM's ``−1e-35`` (its threshold that puts zeros right of the
    negatives), the next float32 above a float32 comparison's threshold (XGBoost's ``s`` above
    ``s⁻``). Monotone rounding keeps every other value on its side; only values in ``(θ, r)``
    with the same image as ``r`` move right (model space cannot tell them from ``r``)."""
    for r in above:
        x_r = (r - c0) / alpha
        if r > theta and x_r <= b:
            b = float(np.nextafter(x_r, -np.inf))
    return b


def _goes_left(z: np.ndarray, theta: float, float32: bool) -> np.ndarray:
    """scikit-learn's split test on transformed values ``z`` (float64), bit for bit: its trees
    store ``X`` as float32 and compare that value, widened back to float64, with the float64
    threshold (``float32`` True); HistGradientBoosting compares float64 values. (Comparing the
    float32 array with the threshold directly would, under NumPy 2, round the threshold to
    float32 instead and misroute the values between the two.)"""
    z = np.asarray(z, dtype=np.float64)
    if float32:
        z = z.astype(np.float32).astype(np.float64)
    return z <= np.float64(theta)


def _mapped_tree(feature_in: np.ndarray, thr_raw: np.ndarray, left: np.ndarray,
                 right: np.ndarray, leaf: np.ndarray, value: np.ndarray, split: _SplitMap,
                 float32: bool) -> TreeView:
    """Rebuild a fitted tree over model space, node by node through ``split``."""
    feature = np.full(len(left), -1, dtype=np.int64).tolist()
    thr = np.full(len(left), np.nan).tolist()
    L = np.where(leaf, -1, left).tolist()
    R = np.where(leaf, -1, right).tolist()
    vals = list(value)
    internal = np.flatnonzero(~leaf)
    split.prepare(feature_in[internal], thr_raw[internal], float32)
    for i in internal:
        cols, t, hit_left = split.get(int(feature_in[i]), float(thr_raw[i]), float32)
        hit, miss = (L[i], R[i]) if hit_left else (R[i], L[i])
        node = int(i)
        for n, k in enumerate(cols):  # x_k <= t ? (next test | miss) : hit
            last = n == len(cols) - 1
            nxt = miss if last else len(feature)
            feature[node], thr[node], L[node], R[node] = k, t, nxt, hit
            if not last:
                feature.append(-1)
                thr.append(np.nan)
                L.append(-1)
                R.append(-1)
                vals.append(value[i])
                node = nxt
    return TreeView(np.array(feature, dtype=np.int64), np.array(thr), np.array(L, dtype=np.int64),
                    np.array(R, dtype=np.int64), np.array(vals), split.basis.d)


def _tree_view(tree: Any, split: _SplitMap, *, float32: bool, regression_scale: float | None
               ) -> TreeView:
    """A scikit-learn ``tree_`` (fitted on Z) as a TreeView over model space."""
    left = np.asarray(tree.children_left, dtype=np.int64)
    right = np.asarray(tree.children_right, dtype=np.int64)
    thr_raw = np.asarray(tree.threshold, dtype=np.float64)
    value = np.asarray(tree.value, dtype=np.float64)[:, 0, :]
    if regression_scale is not None:
        value = value[:, :1] * regression_scale
    else:
        sums = value.sum(axis=1, keepdims=True)
        value = np.divide(value, sums, out=np.zeros_like(value), where=sums > 0)
    return _mapped_tree(np.asarray(tree.feature, dtype=np.int64), thr_raw, left, right,
                        left < 0, value, split, float32)


def _hgb_tree_view(nodes: np.ndarray, split: _SplitMap, label: str) -> TreeView:
    """A HistGradientBoosting predictor's nodes (float64 splits ``x <= num_threshold``)."""
    if np.any(nodes["is_categorical"]):
        raise UnsupportedModelError(
            f"{label}: native categorical splits (categorical_features) are not supported; "
            "one-hot encode the categories in the pipeline instead")
    leaf = nodes["is_leaf"].astype(bool)
    return _mapped_tree(nodes["feature_idx"].astype(np.int64),
                        nodes["num_threshold"].astype(np.float64),
                        nodes["left"].astype(np.int64), nodes["right"].astype(np.int64), leaf,
                        np.asarray(nodes["value"], dtype=np.float64)[:, None], split, False)


# ----------------------------------------------------------------------------------------
# The models
# ----------------------------------------------------------------------------------------


class _Imported:
    """What every imported model keeps: the original estimator and the folded map."""

    estimator: Any
    preprocessing: tuple[np.ndarray, np.ndarray]
    encoder: Encoder

    def transformed(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """The pipeline's transformed inputs ``Z = A x + c`` of raw or model-space rows."""
        A, c = self.preprocessing
        return self.encode(X) @ A.T + c  # type: ignore[attr-defined]

    def estimator_predict(self, frame: pd.DataFrame) -> np.ndarray:
        """Class indices (0..K-1) the *original* estimator predicts on raw rows."""
        pred = self.estimator.predict(frame[list(self.encoder.schema.names)]
                                      if isinstance(frame, pd.DataFrame) else frame)
        classes = list(np.asarray(self.estimator.classes_))
        return np.array([classes.index(p) for p in pred], dtype=np.int64)

    def raw_rows(self, X: np.ndarray) -> pd.DataFrame:
        """Model-space rows decoded to raw rows in the pipeline's column order."""
        frame = self.encoder.inverse_transform(X)
        return frame[list(self._columns)]  # type: ignore[attr-defined]


class ImportedNetworkModel(_Imported, NetworkModel):
    """A linear model or ReLU MLP pipeline. ``network()`` keeps the estimator's own layers
    with the preprocessing as a fixed input map (a shift set Δ moves the estimator's
    ``coefs_``/``intercepts_`` or ``coef_``/``intercept_``, never the preprocessing);
    ``network().weights`` is the same function with the map folded into layer 1.

    Parameters
    ----------
    network : the estimator's layers, with the preprocessing as input map.
    encoder : the fitted :class:`~robustce.data.Encoder` of its model space.
    class_names : names of the classes.
    estimator : the original fitted estimator or Pipeline.
    preprocessing : ``(A, c)``: the pipeline's preprocessing as ``Z = A x + c`` on model-space
        rows ``x``.
    columns : the pipeline's raw column order.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(data.frame, data.y)
    >>> model = rc.models.from_sklearn(pipe, data)
    >>> model, model.network().input_map is not None   # the scaler: a fixed map before layer 1
    (ImportedNetworkModel(LogisticRegression, ReLUNetwork(2→2-1)), True)
    """

    kind = "network"

    def __init__(self, network: ReLUNetwork, encoder: Encoder, class_names: Any,
                 estimator: Any, preprocessing: tuple[np.ndarray, np.ndarray], columns: list[str]):
        super().__init__(network, encoder, class_names)
        self.estimator, self.preprocessing, self._columns = estimator, preprocessing, columns

    def __repr__(self) -> str:
        return f"ImportedNetworkModel({type(_final(self.estimator)).__name__}, {self._network!r})"


class ImportedTreeModel(_Imported, Model):
    """A decision tree or forest pipeline; ``trees()`` are over model space (MACE encodes them).

    Parameters
    ----------
    trees : the trees over model space.
    kind : ``"tree"`` (one tree) or ``"forest"``.
    encoder : the fitted :class:`~robustce.data.Encoder` of its model space.
    class_names : names of the classes.
    estimator : the original fitted estimator or Pipeline.
    preprocessing : ``(A, c)``: the pipeline's preprocessing as ``Z = A x + c`` on model-space
        rows ``x``.
    columns : the pipeline's raw column order.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> tree = DecisionTreeClassifier(max_depth=2, random_state=0)
    >>> pipe = make_pipeline(StandardScaler(), tree).fit(data.frame, data.y)
    >>> model = rc.models.from_sklearn(pipe, data)
    >>> model, model.trees()[0].n_nodes       # splits mapped back to model space
    (ImportedTreeModel(DecisionTreeClassifier, 1 trees), 7)
    >>> bool((model.predict(data.frame) == pipe.predict(data.frame)).all())
    True
    """

    def __init__(self, trees: list[TreeView], kind: str, encoder: Encoder, class_names: Any,
                 estimator: Any, preprocessing: tuple[np.ndarray, np.ndarray], columns: list[str]):
        self._trees, self.kind, self.encoder = trees, kind, encoder
        self.class_names = tuple(class_names)
        self.estimator, self.preprocessing, self._columns = estimator, preprocessing, columns

    def trees(self) -> list[TreeView]:
        return list(self._trees)

    def predict_proba(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return forest_predict_proba(self._trees, self.encode(X))

    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        p = np.clip(self.predict_proba(X), _EPS, 1.0)
        if p.shape[1] == 2:
            return (np.log(p[:, 1]) - np.log(p[:, 0]))[:, None]
        return np.log(p)

    def predict(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return np.argmax(self.predict_proba(X), axis=1)

    def __repr__(self) -> str:
        return f"ImportedTreeModel({type(_final(self.estimator)).__name__}, {len(self._trees)} trees)"


class ImportedBoostedModel(_Imported, Model):
    """A gradient-boosting pipeline; ``additive_trees()`` is its view over model space.

    Parameters
    ----------
    ensemble : the boosted trees over model space.
    encoder : the fitted :class:`~robustce.data.Encoder` of its model space.
    class_names : names of the classes.
    estimator : the original fitted estimator or Pipeline.
    preprocessing : ``(A, c)``: the pipeline's preprocessing as ``Z = A x + c`` on model-space
        rows ``x``.
    columns : the pipeline's raw column order.

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> gb = GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0)
    >>> model = rc.models.from_sklearn(gb.fit(data.frame, data.y), data)
    >>> model
    ImportedBoostedModel(GradientBoostingClassifier, 3 trees)
    >>> bool((model.predict(data.frame) == gb.predict(data.frame)).all())
    True
    """

    kind = "boosted"

    def __init__(self, ensemble: AdditiveTrees, encoder: Encoder, class_names: Any,
                 estimator: Any, preprocessing: tuple[np.ndarray, np.ndarray], columns: list[str]):
        self._ensemble, self.encoder = ensemble, encoder
        self.class_names = tuple(class_names)
        self.estimator, self.preprocessing, self._columns = estimator, preprocessing, columns

    def additive_trees(self) -> AdditiveTrees:
        return self._ensemble

    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return self._ensemble.logits(self.encode(X))

    def __repr__(self) -> str:
        return (f"ImportedBoostedModel({type(_final(self.estimator)).__name__}, "
                f"{len(self._ensemble.trees)} trees)")


# ----------------------------------------------------------------------------------------
# from_sklearn
# ----------------------------------------------------------------------------------------


def _final(estimator: Any) -> Any:
    from sklearn.pipeline import Pipeline

    return estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator


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


#: Final estimators that another module imports (``(accepts(final), build(estimator, pre,
#: final, label, data_or_schema, class_names))``): :mod:`robustce.models.boosters` registers
#: XGBoost and LightGBM here, so that it can build on this module without a circle.
_FINAL_IMPORTERS: list[tuple[Callable[[Any], bool], Callable[..., Model]]] = []


def register_final_importer(accepts: Callable[[Any], bool], build: Callable[..., Model]) -> None:
    """Let :func:`from_sklearn` hand final estimators that ``accepts`` to ``build``."""
    _FINAL_IMPORTERS.append((accepts, build))


def from_sklearn(estimator: Any, data_or_schema: pd.DataFrame | Dataset | Schema | None = None,
                 *, class_names: Any = None, favourable: Any = None) -> Model:
    """A robustce model of a fitted scikit-learn classifier or ``Pipeline`` on raw DataFrames.

    ``data_or_schema``: the raw training frame (kinds and bounds are inferred from it, checked
    against the fitted transformers), a :class:`~robustce.data.Dataset` (its schema, with
    actionability, and its class names) or a :class:`~robustce.data.Schema`; None reads the
    schema from the transformers alone (needs bounds from a ``MinMaxScaler`` on every number).
    Returns an :class:`ImportedNetworkModel` (linear / MLP: ``network()``), an
    :class:`ImportedTreeModel` (``trees()``) or an :class:`ImportedBoostedModel`
    (``additive_trees()``), all over the encoder's model space and deciding as
    ``estimator.predict`` does on raw rows. ``model.estimator`` keeps the original.

    Parameters
    ----------
    estimator : the fitted classifier or ``Pipeline`` (preprocessing on raw columns, then a
        supported final estimator: see ``docs/own_model.md``).
    data_or_schema : the raw training frame, a :class:`~robustce.data.Dataset` or a
        :class:`~robustce.data.Schema` (see above), or None.
    class_names : names of the classes (default: the dataset's, else ``estimator.classes_``).
    favourable : the favourable class, by label or index (default: the dataset's, where its
        label is one of the model's classes; else none). Kept as ``model.favourable`` and
        saved with the model's network view (see :class:`~robustce.models.NetworkModel`).

    Returns
    -------
    ImportedNetworkModel, ImportedTreeModel or ImportedBoostedModel

    Raises
    ------
    UnsupportedModelError
        A step or final estimator robustce cannot read exactly.

    Examples
    --------
    A lender's pipeline on the raw loan frame: scaled numbers, one-hot categories.

    >>> from sklearn.compose import ColumnTransformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> pre = ColumnTransformer([
    ...     ("num", StandardScaler(), ["age", "years_employed", "income", "debt"]),
    ...     ("cat", OneHotEncoder(), ["education", "housing", "has_guarantor", "prior_default"])])
    >>> pipe = make_pipeline(pre, LogisticRegression()).fit(data.frame, data.y)
    >>> model = from_sklearn(pipe, data)
    >>> model                          # model space d = 13 → the pipeline's 16 columns → 1 logit
    ImportedNetworkModel(LogisticRegression, ReLUNetwork(13→16-1))
    >>> bool((model.predict(data.frame) == pipe.predict(data.frame)).all())
    True
    """
    from sklearn.base import is_classifier
    from sklearn.pipeline import Pipeline

    if isinstance(estimator, Pipeline):
        pre = [(f"step {n!r}", s) for n, s in estimator.steps[:-1]]
        final_name, final = estimator.steps[-1]
        final_label = f"step {final_name!r}"
    else:
        pre, final, final_label = [], estimator, "the estimator"
    for accepts, build in _FINAL_IMPORTERS:  # XGBoost / LightGBM (models/boosters.py)
        if accepts(final):
            model = build(estimator, pre, final, final_label, data_or_schema, class_names)
            return model.set_favourable(_favourable(favourable, data_or_schema, model))
    if not is_classifier(final):
        raise UnsupportedModelError(
            f"{final_label} ({type(final).__name__}) is not a classifier; supported: "
            f"{SUPPORTED_ESTIMATORS}")
    if not hasattr(final, "classes_"):
        raise NotFittedError(f"{final_label} ({type(final).__name__}) is not fitted")
    encoder, basis, A, c, columns, frame, dataset = _fold_preprocessing(
        estimator, pre, data_or_schema)
    n_in = getattr(final, "n_features_in_", A.shape[0])
    if A.shape[0] != n_in:
        raise UnsupportedModelError(
            f"the folded preprocessing gives {A.shape[0]} columns but {final_label} takes {n_in}")
    names = _class_names(final.classes_, class_names, dataset)
    model = _build(final, final_label, A, c, encoder, basis, names, estimator, columns,
                   _oracle(pre, frame, columns, encoder, basis))
    model.set_favourable(_favourable(favourable, data_or_schema, model))
    return _warn_if_constant(model, final, frame, columns)


def _favourable(given: Any, data_or_schema: Any, model: Model) -> Any:
    """The favourable class an importer declares: ``given``, else the dataset's (by label)."""
    return favourable_in(data_or_schema, model.class_names) if given is None else given


def _class_names(classes: Any, class_names: Any, dataset: Dataset | None) -> tuple[Any, ...]:
    """The imported model's class names: ``class_names`` if given, else the dataset's when
    the estimator's classes are its indices, else the estimator's classes."""
    classes = np.asarray(classes)
    if class_names is None:
        if dataset is not None and list(classes) == list(range(len(dataset.class_names))):
            class_names = dataset.class_names
        else:
            class_names = tuple(_plain(v) for v in classes)
    if len(class_names) != len(classes):
        raise ValidationError(f"{len(class_names)} class names for {len(classes)} classes")
    return tuple(class_names)


def _oracle(pre: list[tuple[str, Any]], frame: pd.DataFrame | None, columns: list[str],
            encoder: Encoder, basis: _Basis) -> tuple[Any, pd.DataFrame | None]:
    """``(transform, base)`` of :class:`_SplitMap` for a pipeline's preprocessing ``pre``:
    its transform of raw frames and a raw row to vary (the training frame's first, else the
    encoder's zero row); ``(None, None)`` for a bare estimator."""
    if not pre:
        return None, None
    base = (frame[columns].iloc[:1].reset_index(drop=True) if frame is not None
            else encoder.inverse_transform(np.zeros((1, basis.d)))[columns])
    return (lambda fr: _transform(pre, fr)), base


def _warn_if_constant(model: Model, final: Any, frame: pd.DataFrame | None,
                      columns: list[str]) -> Model:
    """``model``, after a warning if the training data is given and the estimator predicts
    one class on all of it."""
    if frame is not None:
        warn_if_constant(model.estimator.predict(frame[columns]),
                         f"the imported {type(final).__name__}")
    return model


def _build(final: Any, label: str, A: np.ndarray, c: np.ndarray, encoder: Encoder,
           basis: _Basis, class_names: tuple[Any, ...], estimator: Any, columns: list[str],
           oracle: tuple[Any, pd.DataFrame | None]) -> Model:
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        GradientBoostingClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.linear_model._base import LinearClassifierMixin
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    what = f"{label} ({type(final).__name__})"
    n_classes = len(final.classes_)
    args = (encoder, class_names, estimator, (A, c), columns)
    if isinstance(final, MLPClassifier | LinearClassifierMixin):
        if isinstance(final, MLPClassifier):
            if final.activation != "relu":
                raise UnsupportedModelError(
                    f"{what}: activation={final.activation!r} is not supported; only ReLU "
                    "networks have an exact ReLUNetwork view")
            if final.out_activation_ not in ("logistic", "softmax") or (
                    final.out_activation_ == "logistic" and n_classes != 2):
                raise UnsupportedModelError(f"{what}: multi-label MLPs are not supported")
            layers = [(np.asarray(W, dtype=np.float64).T, np.asarray(b, dtype=np.float64))
                      for W, b in zip(final.coefs_, final.intercepts_, strict=True)]
        else:
            W = np.atleast_2d(np.asarray(final.coef_, dtype=np.float64))
            b = np.atleast_1d(np.asarray(final.intercept_, dtype=np.float64)).reshape(-1)
            if b.shape[0] != W.shape[0]:
                b = np.broadcast_to(b, (W.shape[0],)).copy()
            if W.shape[0] != (1 if n_classes == 2 else n_classes):
                raise UnsupportedModelError(f"{what}: unexpected coefficient shape {W.shape}")
            layers = [(W, b)]
        # the preprocessing is a fixed input map; Δ ranges over the estimator's own
        # coefs_/intercepts_ (coef_/intercept_) as they are
        return ImportedNetworkModel(ReLUNetwork(layers, input_map=(A, c)), *args)
    split = _SplitMap(A, c, encoder, basis, what, *oracle)
    if isinstance(final, DecisionTreeClassifier | RandomForestClassifier | ExtraTreesClassifier):
        if getattr(final, "n_outputs_", 1) != 1:
            raise UnsupportedModelError(f"{what}: multi-output trees are not supported")
        single = isinstance(final, DecisionTreeClassifier)
        estimators = [final] if single else list(final.estimators_)
        trees = [_tree_view(e.tree_, split, float32=True, regression_scale=None) for e in estimators]
        return ImportedTreeModel(trees, "tree" if single else "forest", *args)
    if isinstance(final, GradientBoostingClassifier):
        from sklearn.dummy import DummyClassifier

        if not (final.init_ == "zero" or isinstance(final.init_, DummyClassifier)):
            raise UnsupportedModelError(f"{what}: a custom init estimator is not supported")
        stages = final.estimators_
        trees, output = [], []
        for stage in stages:
            for k, reg in enumerate(stage):
                trees.append(_tree_view(reg.tree_, split, float32=True,
                                        regression_scale=float(final.learning_rate)))
                output.append(k)
        n_logits = stages.shape[1]
        probe = np.zeros((1, A.shape[0])) + c[None, :]
        if getattr(final, "feature_names_in_", None) is not None:  # fitted on a frame
            probe = pd.DataFrame(probe, columns=final.feature_names_in_)
        raw = np.asarray(final.decision_function(probe), dtype=np.float64).reshape(1, -1)
        partial = AdditiveTrees(trees, np.array(output), np.zeros(n_logits))
        baseline = raw[0] - partial.logits(np.zeros((1, basis.d)))[0]
        return ImportedBoostedModel(AdditiveTrees(trees, np.array(output), baseline), *args)
    if isinstance(final, HistGradientBoostingClassifier):
        trees, output = [], []
        for it in final._predictors:
            for k, pred in enumerate(it):
                trees.append(_hgb_tree_view(pred.nodes, split, what))
                output.append(k)
        baseline = np.asarray(final._baseline_prediction, dtype=np.float64).reshape(-1)
        return ImportedBoostedModel(AdditiveTrees(trees, np.array(output), baseline), *args)
    raise UnsupportedModelError(f"{what} is not supported; supported: {SUPPORTED_ESTIMATORS}")
