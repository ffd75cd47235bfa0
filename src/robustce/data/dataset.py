"""The :class:`Dataset` container: raw features, integer labels, schema."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.schema import Feature, Schema, infer_schema
from robustce.errors import ValidationError
from robustce.utils import check_random_state

__all__ = ["Dataset", "class_index", "class_mapping", "from_frame", "guess_favourable"]


@dataclass
class Dataset:
    """Raw features (``frame``), labels 0..K-1 (``target``) and the feature ``schema``.

    ``class_names[k]`` is the original label of class ``k``; ``favourable`` is the index of
    the outcome a person asks recourse for (``"approved"``, ``"not_diabetic"``), or ``None``
    where the data does not say (multi-class tables, unclear labels); ``groups`` optionally tags each
    row with a period or population (loan year, school, original/corrected data) for shift
    protocols. Index labels are kept through splits and become ``query_id`` in explanations.

    Build one with :func:`from_frame` (your DataFrame) or :func:`~robustce.datasets.load`.

    Parameters
    ----------
    frame : the raw feature columns, one row per person.
    target : the labels as class indices 0..K-1, same index as ``frame``.
    schema : the :class:`~robustce.data.Schema` of the features (kinds, bounds, actionability).
    name : the dataset's name.
    class_names : the original label of each class index.
    description : free text.
    groups : optional period / population per row (see above).
    meta : provenance (source, preprocessing).
    favourable : the index of the wanted outcome, or None (see above).

    Raises
    ------
    ValidationError
        Rows of ``frame`` and ``target`` differ, or ``favourable`` is not a class index.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan")
    >>> train, test = data.split(test_size=0.2, random_state=0)
    >>> len(train), len(test)
    (1600, 400)
    """

    frame: pd.DataFrame
    target: pd.Series
    schema: Schema
    name: str = "custom"
    class_names: tuple[Any, ...] = (0, 1)
    description: str = ""
    groups: pd.Series | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    favourable: int | None = None

    def __post_init__(self) -> None:
        if self.favourable is not None and not (
                isinstance(self.favourable, int | np.integer)
                and 0 <= int(self.favourable) < len(self.class_names)):
            raise ValidationError(f"favourable must be a class index in [0, "
                                  f"{len(self.class_names) - 1}] or None, got {self.favourable!r}")
        if len(self.frame) != len(self.target):
            raise ValidationError(
                f"frame has {len(self.frame)} rows but target has {len(self.target)}"
            )
        if not self.frame.index.equals(self.target.index):
            raise ValidationError("frame and target must share the same index")
        if self.groups is not None and not self.frame.index.equals(self.groups.index):
            raise ValidationError("groups must share the frame's index")

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, rows={len(self)}, features={len(self.schema)}, "
            f"classes={list(self.class_names)})"
        )

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def favourable_label(self) -> Any:
        """The label of the favourable class, or ``None`` where none is declared."""
        return None if self.favourable is None else self.class_names[self.favourable]

    def class_index(self, value: Any) -> int:
        """The index of a class given by index (an integer) or by label (``"approved"``);
        :class:`~robustce.errors.ValidationError` naming the classes otherwise."""
        return class_index(self.class_names, value, self.favourable)

    def class_mapping(self) -> str:
        """``"0 = rejected, 1 = approved (favourable)"``: how labels are numbered."""
        return class_mapping(self.class_names, self.favourable)

    def with_favourable(self, value: Any) -> Dataset:
        """This dataset with the favourable class set, by index or label."""
        return replace(self, favourable=self.class_index(value))

    @property
    def y(self) -> np.ndarray:
        return self.target.to_numpy(dtype=np.int64)

    def subset(self, rows: Any) -> Dataset:
        """Rows selected by a boolean mask, positions (ndarray of ints) or index labels."""
        rows_arr = np.asarray(rows)
        if rows_arr.dtype == bool:
            if len(rows_arr) != len(self):
                raise ValidationError("boolean mask length does not match the dataset")
            pos = np.flatnonzero(rows_arr)
        elif isinstance(rows, pd.Index):
            pos = self.frame.index.get_indexer(rows)
            if (pos < 0).any():
                raise ValidationError("some index labels are not in the dataset")
        elif np.issubdtype(rows_arr.dtype, np.integer) or rows_arr.size == 0:
            pos = rows_arr.astype(np.int64)
        else:
            raise ValidationError(
                "subset takes a boolean mask, integer positions or a pandas Index of labels; "
                f"got an array of {rows_arr.dtype}"
            )
        return replace(
            self,
            frame=self.frame.iloc[pos],
            target=self.target.iloc[pos],
            groups=None if self.groups is None else self.groups.iloc[pos],
            meta=dict(self.meta),
        )

    def split(
        self,
        test_size: float = 0.2,
        random_state: int | np.random.Generator | None = None,
        stratify: bool = True,
    ) -> tuple[Dataset, Dataset]:
        """Random train/test split (stratified by class by default); index labels kept."""
        if not 0 < test_size < 1:
            raise ValidationError(f"test_size must be in (0, 1), got {test_size}")
        rng = check_random_state(random_state)
        n = len(self)
        y = self.y
        if stratify:
            test_pos = []
            for k in np.unique(y):
                members = np.flatnonzero(y == k)
                n_test = int(round(test_size * len(members)))
                test_pos.append(rng.permutation(members)[:n_test])
            test = np.sort(np.concatenate(test_pos))
        else:
            test = np.sort(rng.permutation(n)[: int(round(test_size * n))])
        is_test = np.zeros(n, dtype=bool)
        is_test[test] = True
        if is_test.all() or not is_test.any():
            raise ValidationError(f"test_size={test_size} leaves an empty split of {n} rows")
        return self.subset(~is_test), self.subset(is_test)

    def by_group(self) -> dict[Any, Dataset]:
        """One dataset per value of ``groups`` (sorted)."""
        if self.groups is None:
            raise ValidationError(f"dataset {self.name!r} has no groups")
        return {g: self.subset((self.groups == g).to_numpy()) for g in sorted(self.groups.unique())}

    def all_free(self) -> Dataset:
        """This dataset with every feature free to change (no immutable or monotone ones)."""
        free = dict.fromkeys(self.schema.names, "free")
        return replace(self, schema=self.schema.with_actionability(**free))

    def with_kinds(self, kinds: Mapping[str, str]) -> Dataset:
        """This dataset with some features re-typed (actionability kept), e.g. to follow a
        paper's encoding: ``"categorical"`` one-hot codes a feature (an ordinal or binary
        keeps its levels, a numeric one gets its observed values as categories);
        ``"integer"`` / ``"continuous"`` makes a feature numeric (an ordinal or categorical one
        with numeric levels spans its levels' range). Other kinds, unknown names or
        non-numeric levels raise a :class:`~robustce.errors.ValidationError`."""
        unknown = sorted(set(kinds) - set(self.schema.names))
        if unknown:
            raise ValidationError(f"with_kinds: no feature named {unknown}; features: "
                                  f"{self.schema.names}")
        features = []
        for f in self.schema:
            kind = kinds.get(f.name)
            if kind is None or kind == f.kind:
                features.append(f)
                continue
            if kind == "categorical":
                cats = (f.categories if f.categories is not None
                        else tuple(sorted(self.frame[f.name].unique().tolist())))
                features.append(Feature(f.name, "categorical", categories=cats,
                                        actionability=f.actionability, dtype=f.dtype))
            elif kind in ("integer", "continuous"):
                if f.kind.has_levels:
                    try:
                        levels = [float(c) for c in f.categories]
                    except (TypeError, ValueError):
                        raise ValidationError(
                            f"with_kinds: {f.name!r} has non-numeric levels {f.categories}, so "
                            f"it cannot become {kind}") from None
                    lo, hi = min(levels), max(levels)
                else:
                    lo, hi = f.lower, f.upper
                features.append(Feature(f.name, kind, lower=lo, upper=hi,
                                        actionability=f.actionability, dtype=f.dtype))
            else:
                raise ValidationError(f"with_kinds: {f.name!r} -> {kind!r}; expected "
                                      "'categorical', 'integer' or 'continuous'")
        schema = Schema(features)
        schema.validate(self.frame)
        return replace(self, schema=schema)

    def describe(self) -> dict[str, Any]:
        """Rows, columns, kinds, class balance and the constraints the dataset ships (every
        explainer applies them by default; used by ``robustce datasets describe``)."""
        from robustce.data.constraint_source import dataset_constraints

        shipped = dataset_constraints(self)
        counts = np.bincount(self.y, minlength=self.n_classes)
        return {
            "name": self.name,
            "rows": len(self),
            "columns": len(self.schema),
            "kinds": self.schema.describe(),
            "class_balance": {
                str(self.class_names[k]): int(c) for k, c in enumerate(counts)
            },
            "description": self.description,
            "favourable": self.favourable_label,
            "constraints": None if shipped is None else shipped.to_dict(),
        }


def encode_labels(
    labels: pd.Series, positive: Any = None, class_names: Sequence[Any] | None = None
) -> tuple[pd.Series, tuple[Any, ...]]:
    """Map raw labels to 0..K-1. ``class_names`` fixes the order; ``positive`` (binary)
    names the label that becomes class 1."""
    if labels.isna().any():
        raise ValidationError(f"target column {labels.name!r} has missing values")
    uniq = [v.item() if isinstance(v, np.generic) else v for v in pd.unique(labels)]
    if class_names is None:
        try:
            class_names = sorted(uniq)
        except TypeError:
            class_names = sorted(uniq, key=str)
        if positive is not None:
            if positive not in class_names:
                raise ValidationError(
                    f"positive label {positive!r} not among target values {class_names}"
                )
            if len(class_names) != 2:
                raise ValidationError("positive= is only meaningful for binary targets")
            class_names = [c for c in class_names if c != positive] + [positive]
    class_names = tuple(class_names)
    unknown = set(uniq) - set(class_names)
    if unknown:
        raise ValidationError(f"target has labels {sorted(unknown, key=str)} not in {class_names}")
    if len(class_names) < 2:
        raise ValidationError(f"target {labels.name!r} needs at least two classes")
    mapping = {c: i for i, c in enumerate(class_names)}
    codes = labels.map(mapping).astype(np.int64)
    return codes, class_names


def from_frame(
    df: pd.DataFrame,
    target: str,
    schema: Schema | None = None,
    *,
    name: str = "custom",
    positive: Any = None,
    favourable: Any = None,
    description: str = "",
    **infer: Any,
) -> Dataset:
    """A :class:`Dataset` from a user's DataFrame with a ``target`` column.

    The schema is inferred (see :func:`robustce.data.infer_schema`; keyword arguments such as
    ``immutable=["age"]`` pass through) unless given; then the frame is validated against it.
    ``favourable`` names the label people want (``"approved"``); left out, a binary target
    whose labels say it (:func:`guess_favourable`: approved/rejected, yes/no, good/bad, ...)
    gets it, and any other target has none (``Dataset.favourable is None``).

    Parameters
    ----------
    df : the raw data, one row per person, with the ``target`` column.
    target : name of the label column.
    schema : a :class:`~robustce.data.Schema` to validate against, or None to infer one.
    name : the dataset's name (reports, metadata).
    positive : the label encoded as class 1 (default: the sorted labels' second).
    favourable : the label people want (see above).
    description : free text kept with the dataset.
    **infer : options of :func:`~robustce.data.infer_schema` (``immutable``, ``increasing``,
        ``bounds``, ``kinds``, ...).

    Returns
    -------
    Dataset

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"income": [20, 35, 50, 80], "age": [25, 40, 33, 51],
    ...                    "decision": ["rejected", "rejected", "approved", "approved"]})
    >>> ds = from_frame(df, "decision", immutable=["age"])
    >>> ds.class_names[ds.favourable]
    'approved'
    """
    if not isinstance(df, pd.DataFrame):
        raise ValidationError(f"expected a pandas DataFrame, got {type(df).__name__}")
    if target not in df.columns:
        raise ValidationError(f"target column {target!r} not in the frame; columns: {list(df.columns)}")
    features = df.drop(columns=[target])
    y, class_names = encode_labels(df[target], positive=positive)
    if schema is None:
        schema = infer_schema(features, **infer)
    elif infer:
        raise ValidationError(f"schema given; inference options {sorted(infer)} would be ignored")
    schema.validate(features)
    features = features[schema.names]
    data = Dataset(features, y.rename(target), schema, name=name, class_names=class_names,
                   description=description, favourable=guess_favourable(class_names))
    return data if favourable is None else data.with_favourable(favourable)


def class_index(class_names: Sequence[Any], value: Any, favourable: int | None = None) -> int:
    """The index in ``class_names`` of a class given by label (``"approved"``, compared as
    text) or by index (an integer, or its digits); :class:`~robustce.errors.ValidationError`
    naming the classes otherwise (``favourable`` marks that class in the message)."""
    labels = [str(c) for c in class_names]
    if isinstance(value, str) and value in labels:
        return labels.index(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, int | np.integer) and 0 <= int(value) < len(labels):
        return int(value)
    raise ValidationError(f"unknown class {value!r}; the classes are "
                          f"{class_mapping(class_names, favourable)}")


def class_mapping(class_names: Sequence[Any], favourable: int | None = None) -> str:
    """``"0 = rejected, 1 = approved (favourable)"``: how labels are numbered."""
    return ", ".join(f"{k} = {c}" + (" (favourable)" if k == favourable else "")
                     for k, c in enumerate(class_names))


#: label words that name a favourable / an unfavourable outcome (lower case, compared whole)
FAVOURABLE_WORDS = frozenset({
    "approved", "approve", "accepted", "accept", "granted", "yes", "good", "paid", "repaid",
    "hired", "admitted", "pass", "passed", "success", "positive", "no_default", "nodefault",
    "healthy", "not_diabetic", "benign", "low", "low risk", "low_risk", "eligible", "true",
})
UNFAVOURABLE_WORDS = frozenset({
    "rejected", "reject", "denied", "deny", "declined", "decline", "refused", "no", "bad",
    "default", "defaulted", "fired", "fail", "failed", "failure", "negative", "diabetic",
    "malignant", "high", "high risk", "high_risk", "ineligible", "false", "churn",
})


def guess_favourable(class_names: Sequence[Any]) -> int | None:
    """The favourable class of a binary target whose labels say it (``approved`` /
    ``rejected``, ``yes`` / ``no``, ``good`` / ``bad``, ...), else ``None``. Numbers
    (``0`` / ``1``) say nothing: a ``1`` may be a default as well as a repayment."""
    if len(class_names) != 2:
        return None
    words = [str(c).strip().lower() for c in class_names]
    fav = [w in FAVOURABLE_WORDS for w in words]
    unfav = [w in UNFAVOURABLE_WORDS for w in words]
    for k in (0, 1):
        if (fav[k] and not fav[1 - k]) or (unfav[1 - k] and not unfav[k] and not fav[1 - k]):
            return k
    return None
