"""``from_sklearn`` and the registry of final-estimator importers.

:func:`from_sklearn` splits a fitted ``Pipeline`` into its preprocessing and its final
estimator, hands the final estimator to an importer another module registered
(:func:`register_final_importer`: :mod:`robustce.models.boosters` for XGBoost and LightGBM) or
else to the built-in families (:mod:`robustce.models.sklearn_import.estimators`); and the
helpers every importer shares (class names, the favourable class, the split oracle, the
constant-prediction warning).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.data.schema import Schema
from robustce.errors import NotFittedError, UnsupportedModelError, ValidationError
from robustce.models.base import Model, favourable_in, warn_if_constant
from robustce.models.sklearn_import.estimators import SUPPORTED_ESTIMATORS, _build
from robustce.models.sklearn_import.preprocessing import _Basis, _fold_preprocessing, _transform
from robustce.models.sklearn_import.raw_schema import _plain

__all__ = ["from_sklearn", "register_final_importer"]


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
