"""Pass 1 of :func:`~robustce.models.from_sklearn`: the raw schema a fitted pipeline takes.

What each raw column is to the pipeline's transformers (its *roles*: categories of a one-hot or
ordinal encoder, a number a scaler reads, bounds a ``MinMaxScaler`` learnt), checked against a
given :class:`~robustce.data.Schema` or turned into one (with the training frame's kinds and
ranges when given); and how category labels are matched (``1 == 1.0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.schema import Feature, FeatureKind, Schema, infer_schema
from robustce.errors import ValidationError

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


