"""Feature schema: what each raw column is, its bounds and how a person may change it.

A :class:`Schema` is an ordered tuple of :class:`Feature` records. Kinds:

* ``continuous`` — real values in ``[lower, upper]``;
* ``integer`` — whole numbers in ``[lower, upper]``;
* ``ordinal`` — ordered levels (``categories`` lists them from lowest to highest);
* ``categorical`` — unordered labels (``categories``);
* ``binary`` — exactly two values (``categories`` = (value encoded 0, value encoded 1)).

Bounds of numeric features are *declared* (a hard domain: a value outside is an error) or
*observed* (``observed=True``: the range of the training data, as :func:`infer_schema` reads
it — information, not a rule: values outside are accepted, with an
:class:`~robustce.errors.OutOfRangeWarning` from the encoder, and encode outside [0, 1]).

Actionability (how a counterfactual may move a feature): ``free``, ``immutable``,
``increase`` (only up) and ``decrease`` (only down). Monotone actionability needs an order, so
it is refused for categoricals.

Role ``protected`` (``Feature(..., protected=True)``, or ``actionability="protected"`` as a
shorthand): a legally protected attribute (sex, race, age band). It is immutable for every
method — the actionability *is* ``immutable``, so each explainer keeps it fixed — and an
adverse-action notice never names it as a reason (:mod:`robustce.notices`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import SchemaError, ValidationError

__all__ = ["Actionability", "Feature", "FeatureKind", "Schema", "infer_schema"]


class FeatureKind(StrEnum):
    """The kind of a raw feature, which fixes its encoding in model space ``[0, 1]^d``.

    ``continuous`` and ``integer`` are min-max scaled to one column (an integer CE is rounded
    to a whole number); ``ordinal`` with k levels a thermometer block of k − 1 columns (or,
    with ``ordinal_encoding="integer"``, one column ``index / (k − 1)``); ``categorical`` a
    one-hot block (exactly one 1);
    ``binary`` one 0/1 column.

    Examples
    --------
    >>> FeatureKind("ordinal").has_levels
    True
    """

    CONTINUOUS = "continuous"
    INTEGER = "integer"
    ORDINAL = "ordinal"
    CATEGORICAL = "categorical"
    BINARY = "binary"

    @property
    def is_numeric(self) -> bool:
        return self in (FeatureKind.CONTINUOUS, FeatureKind.INTEGER)

    @property
    def has_levels(self) -> bool:
        return self in (FeatureKind.ORDINAL, FeatureKind.CATEGORICAL, FeatureKind.BINARY)


PROTECTED = "protected"  # the role's spelling where an actionability is expected


class Actionability(StrEnum):
    """How a CE may change a feature: ``free``; ``immutable`` (fixed at the query's value);
    ``increase`` (only up, e.g. age, education); ``decrease`` (only down).

    Examples
    --------
    >>> Actionability("increase") is Actionability.INCREASE
    True
    """

    FREE = "free"
    IMMUTABLE = "immutable"
    INCREASE = "increase"
    DECREASE = "decrease"


def _member(enum: type[StrEnum], value: Any, name: str, what: str) -> Any:
    """``enum(value)``, or a :class:`SchemaError` naming the feature and the allowed values."""
    try:
        return enum(value)
    except ValueError:
        raise SchemaError(
            f"feature {name!r}: unknown {what} {value!r}; expected one of {[m.value for m in enum]}"
        ) from None


def _plain(value: Any) -> Any:
    """numpy scalar -> Python scalar (for hashing, JSON and comparisons)."""
    return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True)
class Feature:
    """One raw feature. ``dtype`` is the raw pandas dtype, kept for exact round trips.
    ``observed``: the numeric bounds are the training data's range (soft), not a declared
    domain (hard); see the module docstring.

    Parameters
    ----------
    name : the column name.
    kind : a :class:`FeatureKind` (or its value, ``"continuous"``, ...).
    lower, upper : the bounds of a numeric (continuous / integer) feature; finite,
        ``lower <= upper``; None for the others.
    categories : the levels of an ordinal (in order), categorical or binary feature (a binary
        one without them: 0 and 1); None for numeric ones.
    actionability : an :class:`Actionability` (or its value).
    dtype : the raw pandas dtype.
    observed : whether the bounds were read from data (soft) rather than declared (hard).
    protected : a legally protected attribute (immutable; never a notice's reason).

    Raises
    ------
    SchemaError
        A kind or actionability that does not exist, missing or invalid bounds or categories.

    Examples
    --------
    >>> Feature("age", "integer", lower=18, upper=90, actionability="increase").actionability
    <Actionability.INCREASE: 'increase'>
    """

    name: str
    kind: FeatureKind
    lower: float | None = None
    upper: float | None = None
    categories: tuple[Any, ...] | None = None
    actionability: Actionability = Actionability.FREE
    dtype: str | None = None
    observed: bool = False
    protected: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _member(FeatureKind, self.kind, self.name, "kind"))
        if str(getattr(self.actionability, "value", self.actionability)) == PROTECTED:
            object.__setattr__(self, "protected", True)
            object.__setattr__(self, "actionability", Actionability.IMMUTABLE)
        object.__setattr__(self, "protected", bool(self.protected))
        if self.protected and self.actionability not in (Actionability.IMMUTABLE, "immutable"):
            raise SchemaError(f"feature {self.name!r} is protected, so it is immutable; "
                              f"it cannot also be {self.actionability!s}")
        object.__setattr__(self, "actionability",
                           _member(Actionability, self.actionability, self.name, "actionability"))
        if self.kind.is_numeric:
            if self.lower is None or self.upper is None:
                raise SchemaError(f"feature {self.name!r} ({self.kind}) needs lower and upper bounds")
            lo, hi = float(self.lower), float(self.upper)
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
                raise SchemaError(
                    f"feature {self.name!r}: bounds must be finite with lower <= upper, "
                    f"got [{self.lower}, {self.upper}]"
                )
            if self.kind is FeatureKind.INTEGER:
                lo, hi = math.ceil(lo), math.floor(hi)
                if lo > hi:
                    raise SchemaError(f"feature {self.name!r}: no integer in its bounds")
            object.__setattr__(self, "lower", lo)
            object.__setattr__(self, "upper", hi)
            if self.categories is not None:
                raise SchemaError(f"feature {self.name!r} ({self.kind}) takes no categories")
            object.__setattr__(self, "observed", bool(self.observed))
        else:
            cats = self.categories
            if cats is None and self.kind is FeatureKind.BINARY:
                cats = (0, 1)
            if cats is None or len(cats) == 0:
                raise SchemaError(f"feature {self.name!r} ({self.kind}) needs its categories")
            cats = tuple(_plain(c) for c in cats)
            if len(set(cats)) != len(cats):
                raise SchemaError(f"feature {self.name!r}: categories are not unique: {cats}")
            if self.kind is FeatureKind.BINARY and len(cats) != 2:
                raise SchemaError(
                    f"feature {self.name!r} is binary but has {len(cats)} categories {cats}"
                )
            object.__setattr__(self, "categories", cats)
            if self.lower is not None or self.upper is not None:
                raise SchemaError(f"feature {self.name!r} ({self.kind}) takes no numeric bounds")
            if self.observed:
                raise SchemaError(f"feature {self.name!r} ({self.kind}) has no numeric range")
        if self.kind is FeatureKind.CATEGORICAL and self.actionability in (
            Actionability.INCREASE,
            Actionability.DECREASE,
        ):
            raise SchemaError(
                f"feature {self.name!r} is categorical (unordered); "
                f"{self.actionability.value}-only needs an ordered kind"
            )

    @property
    def n_levels(self) -> int:
        return len(self.categories) if self.categories is not None else 0

    @property
    def immutable(self) -> bool:
        return self.actionability is Actionability.IMMUTABLE

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind.value}
        if self.kind.is_numeric:
            out["lower"], out["upper"] = self.lower, self.upper
            if self.observed:
                out["observed"] = True
        else:
            out["categories"] = list(self.categories or ())
        out["actionability"] = PROTECTED if self.protected else self.actionability.value
        if self.dtype is not None:
            out["dtype"] = self.dtype
        return out

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Feature:
        unknown = set(spec) - {"name", "kind", "lower", "upper", "categories", "actionability", "dtype",
                               "observed"}
        if unknown:
            raise SchemaError(f"feature spec has unknown keys {sorted(unknown)}")
        if "name" not in spec or "kind" not in spec:
            raise SchemaError(f"feature spec needs 'name' and 'kind', got {dict(spec)}")
        cats = spec.get("categories")
        return cls(
            name=str(spec["name"]),
            kind=spec["kind"],
            lower=spec.get("lower"),
            upper=spec.get("upper"),
            categories=tuple(cats) if cats is not None else None,
            actionability=spec.get("actionability", "free"),
            dtype=spec.get("dtype"),
            observed=bool(spec.get("observed", False)),
        )


@dataclass(frozen=True)
class Schema:
    """Ordered feature records; validates frames against them.

    Parameters
    ----------
    features : the :class:`Feature` records, in column order (names must be unique).

    Examples
    --------
    >>> schema = Schema([Feature("income", "continuous", lower=0, upper=200_000),
    ...                  Feature("housing", "categorical", categories=("own", "rent"))])
    >>> schema.names, schema["housing"].kind.value
    (['income', 'housing'], 'categorical')
    >>> schema.with_actionability(housing="immutable").immutable
    ['housing']
    """

    features: tuple[Feature, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __init__(self, features: Iterable[Feature]) -> None:
        feats = tuple(features)
        if not feats:
            raise SchemaError("a schema needs at least one feature")
        for f in feats:
            if not isinstance(f, Feature):
                raise SchemaError(f"schema entries must be Feature objects, got {type(f).__name__}")
        names = [f.name for f in feats]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SchemaError(f"duplicate feature names in schema: {dupes}")
        object.__setattr__(self, "features", feats)
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(names)})

    # --- container protocol -------------------------------------------------------------
    def __iter__(self) -> Iterator[Feature]:
        return iter(self.features)

    def __len__(self) -> int:
        return len(self.features)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __getitem__(self, name: str) -> Feature:
        try:
            return self.features[self._index[name]]
        except KeyError:
            raise SchemaError(f"no feature named {name!r}; features are {self.names}") from None

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.features]

    @property
    def immutable(self) -> list[str]:
        return [f.name for f in self.features if f.immutable]

    @property
    def protected(self) -> list[str]:
        """Features with the ``protected`` role (immutable; never a notice's reason)."""
        return [f.name for f in self.features if f.protected]

    @property
    def observed(self) -> list[str]:
        """Numeric features whose bounds are an observed range (soft), not declared."""
        return [f.name for f in self.features if f.observed]

    # --- derivation ---------------------------------------------------------------------
    def replace(self, name: str, **changes: Any) -> Schema:
        """A copy with feature ``name`` changed (e.g. ``actionability="immutable"``)."""
        old = self[name]
        return Schema(replace(old, **changes) if f is old else f for f in self.features)

    def with_actionability(self, **by_name: str | Actionability) -> Schema:
        schema = self
        for name, act in by_name.items():
            schema = schema.replace(name, actionability=act)
        return schema

    def with_dtypes(self, frame: pd.DataFrame) -> Schema:
        """A copy recording ``frame``'s column dtypes (restored by ``inverse_transform``)."""
        return Schema(replace(f, dtype=str(frame[f.name].dtype)) if f.name in frame.columns
                      else f for f in self.features)

    def select(self, names: Sequence[str]) -> Schema:
        return Schema(self[n] for n in names)

    # --- validation ---------------------------------------------------------------------
    def validate(self, frame: pd.DataFrame, *, check_bounds: bool = True) -> None:
        """Raise :class:`ValidationError` naming the first problem of ``frame``. Only declared
        bounds are checked (``check_bounds``); observed ranges are not a domain."""
        if not isinstance(frame, pd.DataFrame):
            raise ValidationError(f"expected a pandas DataFrame, got {type(frame).__name__}")
        missing = [n for n in self.names if n not in frame.columns]
        if missing:
            raise ValidationError(f"missing columns: {missing}")
        extra = [c for c in frame.columns if c not in self._index]
        if extra:
            raise ValidationError(f"unexpected columns not in the schema: {extra}")
        # one pass over the frame (its columns are exactly the schema's, checked above)
        na = dict(zip(frame.columns, frame.isna().to_numpy().any(axis=0), strict=True))
        nan_cols = [n for n in self.names if na[n]]
        if nan_cols:
            raise ValidationError(f"missing values (NaN) in columns: {nan_cols}")
        numeric_ok = self._numeric_columns_ok(frame, check_bounds)
        for f in self.features:
            if f.kind.is_numeric and numeric_ok:
                continue  # all numeric columns passed the vectorised checks
            col = frame[f.name]
            if f.kind.is_numeric:
                if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
                    raise ValidationError(
                        f"column {f.name!r} is {f.kind} but has dtype {col.dtype}"
                    )
                values = col.to_numpy(dtype=float)
                if not np.isfinite(values).all():
                    raise ValidationError(f"column {f.name!r} has infinite values")
                if f.kind is FeatureKind.INTEGER and not np.all(values == np.round(values)):
                    raise ValidationError(f"column {f.name!r} is integer but has fractional values")
                if check_bounds and len(values) and not f.observed:
                    lo, hi = values.min(), values.max()
                    if lo < f.lower or hi > f.upper:
                        raise ValidationError(
                            f"column {f.name!r} has values outside its bounds "
                            f"[{f.lower:g}, {f.upper:g}]: min {lo:g}, max {hi:g}"
                        )
            else:
                codes = level_codes(col, f)
                if (codes < 0).any():
                    unseen = sorted({_plain(v) for v in col[codes < 0]}, key=str)
                    raise ValidationError(
                        f"column {f.name!r} has unseen categories {unseen[:10]}; "
                        f"known: {list(f.categories)[:20]}"
                    )

    def _numeric_columns_ok(self, frame: pd.DataFrame, check_bounds: bool) -> bool:
        """True when every numeric column passes :meth:`validate`'s checks, tested on one
        array for all of them; False if any fails (the per-column loop then names the first
        problem, in feature order)."""
        num = [f for f in self.features if f.kind.is_numeric]
        if not num:
            return True
        dtypes = frame.dtypes
        for f in num:
            dt = dtypes[f.name]
            if not pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt):
                return False
        values = numeric_values(frame, [f.name for f in num], all_numeric=len(num) == frame.shape[1])
        if not np.isfinite(values).all():
            return False
        integer = np.array([f.kind is FeatureKind.INTEGER for f in num])
        if integer.any() and not np.all(values[:, integer] == np.round(values[:, integer])):
            return False
        if check_bounds and len(values):
            lower = np.array([-np.inf if f.observed else f.lower for f in num], dtype=float)
            upper = np.array([np.inf if f.observed else f.upper for f in num], dtype=float)
            if np.any(values.min(axis=0) < lower) or np.any(values.max(axis=0) > upper):
                return False
        return True

    # --- (de)serialisation --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"features": [f.to_dict() for f in self.features]}

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Schema:
        if "features" not in spec:
            raise SchemaError("schema spec needs a 'features' list")
        return cls(Feature.from_dict(f) for f in spec["features"])

    @classmethod
    def infer(cls, frame: pd.DataFrame, **overrides: Any) -> Schema:
        return infer_schema(frame, **overrides)

    def describe(self) -> pd.DataFrame:
        rows = []
        for f in self.features:
            if f.kind.is_numeric:
                domain = f"[{f.lower:g}, {f.upper:g}]" + (" observed" if f.observed else "")
            else:
                cats = [str(c) for c in f.categories or ()]
                domain = "{" + ", ".join(cats[:6]) + (", …" if len(cats) > 6 else "") + "}"
            rows.append((f.name, f.kind.value, domain,
                         PROTECTED if f.protected else f.actionability.value))
        return pd.DataFrame(rows, columns=["feature", "kind", "domain", "actionability"])


def numeric_values(frame: pd.DataFrame, names: Sequence[str], *, all_numeric: bool = False
                   ) -> np.ndarray:
    """The columns ``names`` of ``frame`` as one float array, in that order. ``all_numeric``
    (every column of ``frame`` has a numeric dtype) converts the whole frame at once, which
    is much cheaper than selecting a column list from a frame of many single-column blocks."""
    if all_numeric:
        pos = frame.columns.get_indexer(list(names))
        return frame.to_numpy(dtype=float)[:, pos]
    # column by column: selecting a column list builds a new frame first (~6× slower on the
    # few rows of a request or a CE round trip, and no faster on many rows)
    out = np.empty((len(frame), len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        out[:, j] = frame[name].to_numpy(dtype=np.float64)
    return out


def level_codes(col: pd.Series, feature: Feature) -> np.ndarray:
    """Index of each value in ``feature.categories`` (-1 for unseen), vectorised.

    Numeric labels match by value (1 == 1.0 == True); strings match exactly.
    """
    cats = list(feature.categories or ())
    values = col.to_numpy()
    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        numeric_cats = [c for c in cats if isinstance(c, int | float | bool)]
        if len(numeric_cats) == len(cats):
            cat_arr = np.asarray(cats, dtype=float)
            vals = values.astype(float)
            order = np.argsort(cat_arr, kind="stable")
            pos = np.searchsorted(cat_arr[order], vals)
            pos = np.clip(pos, 0, len(cats) - 1)
            hit = cat_arr[order][pos] == vals
            return np.where(hit, order[pos], -1)
    if len(values) <= _FEW_ROWS:
        # a few rows (a query, a request, a CE's round trip): a dict lookup beats building a
        # pandas index, whose fixed cost dominates small columns; unhashable values take
        # pandas' path
        lookup = {c: i for i, c in enumerate(cats)}
        try:
            return np.fromiter((lookup.get(v, -1) for v in values), dtype=np.int64,
                               count=len(values))
        except TypeError:
            pass
    return pd.Index(cats, dtype=object).get_indexer(values).astype(np.int64)


#: frames up to this many rows are level-coded by a dict lookup (:func:`level_codes`)
_FEW_ROWS = 64


# ----------------------------------------------------------------------------------------
# Inference
# ----------------------------------------------------------------------------------------


def _sorted_levels(values: Iterable[Any]) -> tuple[Any, ...]:
    vals = [_plain(v) for v in values]
    try:
        return tuple(sorted(vals))
    except TypeError:
        return tuple(sorted(vals, key=str))


def infer_schema(
    frame: pd.DataFrame,
    *,
    kinds: Mapping[str, str | FeatureKind] | None = None,
    ordinal: Mapping[str, Sequence[Any]] | None = None,
    categories: Mapping[str, Sequence[Any]] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    immutable: Iterable[str] = (),
    increasing: Iterable[str] = (),
    decreasing: Iterable[str] = (),
) -> Schema:
    """Infer a :class:`Schema` from a DataFrame of raw features.

    Rules: bool columns and columns with exactly the two values {0, 1} are binary; pandas
    ordered categoricals are ordinal; strings/objects/categoricals are categorical; integer
    dtypes, and float columns whose values are all whole numbers, are integer; other numbers
    are continuous. Bounds are the observed min/max, marked ``observed`` (values outside them
    are accepted later, with a warning). Every rule can be overridden by the keywords below.

    Parameters
    ----------
    frame : the raw features, one column per feature, no missing values.
    kinds : column → :class:`FeatureKind` (or its name), forcing that kind.
    ordinal : column → its ordered levels, lowest first.
    categories : column → its label set.
    bounds : column → ``(low, high)``, a *declared* numeric domain (values outside it are
        errors).
    immutable, increasing, decreasing : columns whose actionability is set to immutable /
        may only increase / may only decrease (a column in at most one).

    Examples
    --------
    >>> frame = pd.DataFrame({"age": [25, 40, 63], "job": ["clerk", "chef", "clerk"],
    ...                       "owns_car": [0, 1, 1], "income": [1.5, 2.25, 3.0]})
    >>> schema = infer_schema(frame, increasing=["age"])
    >>> [(f.name, f.kind.value) for f in schema]
    [('age', 'integer'), ('job', 'categorical'), ('owns_car', 'binary'), ('income', 'continuous')]
    >>> schema["age"].lower, schema["age"].upper, schema["age"].actionability.value
    (25, 63, 'increase')
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValidationError(f"expected a pandas DataFrame, got {type(frame).__name__}")
    if frame.shape[1] == 0:
        raise ValidationError("the frame has no feature columns")
    kinds = dict(kinds or {})
    ordinal = dict(ordinal or {})
    categories = dict(categories or {})
    bounds = dict(bounds or {})
    action: dict[str, Actionability] = {}
    for names, act in (
        (immutable, Actionability.IMMUTABLE),
        (increasing, Actionability.INCREASE),
        (decreasing, Actionability.DECREASE),
    ):
        for n in names:
            if n in action:
                raise SchemaError(f"feature {n!r} given two actionabilities")
            action[n] = act
    for label, mapping in (
        ("kinds", kinds),
        ("ordinal", ordinal),
        ("categories", categories),
        ("bounds", bounds),
        ("actionability", action),
    ):
        unknown = [n for n in mapping if n not in frame.columns]
        if unknown:
            raise SchemaError(f"{label} names columns not in the frame: {unknown}")
    nan_cols = [c for c in frame.columns if frame[c].isna().any()]
    if nan_cols:
        raise ValidationError(f"cannot infer a schema: missing values (NaN) in columns {nan_cols}")

    feats = []
    for name in frame.columns:
        col = frame[name]
        kind = _member(FeatureKind, kinds[name], name, "kind") if name in kinds else None
        if kind is None:
            if name in ordinal:
                kind = FeatureKind.ORDINAL
            elif isinstance(col.dtype, pd.CategoricalDtype) and col.dtype.ordered:
                kind = FeatureKind.ORDINAL
            elif pd.api.types.is_bool_dtype(col):
                kind = FeatureKind.BINARY
            elif pd.api.types.is_numeric_dtype(col):
                uniq = pd.unique(col)
                if len(uniq) == 2 and set(np.asarray(uniq, dtype=float)) == {0.0, 1.0}:
                    kind = FeatureKind.BINARY
                elif pd.api.types.is_integer_dtype(col) or np.all(
                    np.asarray(col, float) == np.round(np.asarray(col, float))
                ):
                    kind = FeatureKind.INTEGER
                else:
                    kind = FeatureKind.CONTINUOUS
            else:
                kind = FeatureKind.CATEGORICAL
        dtype = str(col.dtype)
        if kind.is_numeric:
            if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
                raise SchemaError(f"column {name!r} has dtype {col.dtype}; cannot be {kind}")
            if name in bounds:
                lo, hi = bounds[name]
            elif len(col):
                lo, hi = float(col.min()), float(col.max())
            else:
                raise SchemaError(f"column {name!r} is empty; give its bounds")
            feats.append(
                Feature(name, kind, lower=lo, upper=hi, actionability=action.get(name, "free"),
                        dtype=dtype, observed=name not in bounds)
            )
            continue
        if name in ordinal:
            cats = tuple(ordinal[name])
        elif name in categories:
            cats = tuple(categories[name])
        elif isinstance(col.dtype, pd.CategoricalDtype):
            cats = tuple(col.dtype.categories)
        elif kind is FeatureKind.BINARY and pd.api.types.is_bool_dtype(col):
            cats = (False, True)
        else:
            cats = _sorted_levels(pd.unique(col))
            if kind is FeatureKind.BINARY and len(cats) == 1:
                cats = (False, True) if isinstance(cats[0], bool) else (0, 1)
        feats.append(
            Feature(name, kind, categories=cats, actionability=action.get(name, "free"),
                    dtype=dtype)
        )
    return Schema(feats)
