"""The model protocol every explainer and certifier relies on.

A model owns its :class:`~robustce.data.Encoder` (``model.encoder``) and accepts either raw
DataFrames or arrays already in model space ``[0, 1]^d``. Labels are integers 0..K-1 (the
dataset's ``class_names`` give their meaning). Binary models have one logit (class 1 iff
logit > 0); K-class models have K logits. ``favourable`` is the index of the outcome recourse
aims at (``None`` where none is declared): a model trained or imported on a
:class:`~robustce.data.Dataset` takes the dataset's, and it is saved with the model.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import class_index
from robustce.data.encoder import Encoder
from robustce.errors import ConstantModelWarning, NotFittedError, UnsupportedModelError
from robustce.models.network import ReLUNetwork, class_margin

__all__ = ["Model", "favourable_in", "logits_of_proba", "model_name", "warn_if_constant"]


def warn_if_constant(predictions: Any, what: str, hint: str = "") -> bool:
    """Warn (:class:`~robustce.errors.ConstantModelWarning`) when ``predictions`` — a model's
    labels for its own training rows — are one class throughout; returns whether it warned."""
    pred = np.asarray(predictions).reshape(-1)
    if len(pred) < 2 or np.unique(pred).size > 1:
        return False
    label = pred[0].item() if hasattr(pred[0], "item") else pred[0]
    warnings.warn(ConstantModelWarning(
        f"{what} predicts class {label!r} for every one of its {len(pred)} training rows: it "
        "has not learned to tell the classes apart, so explainers will find no counterfactuals"
        + (f". {hint[0].upper()}{hint[1:]}" if hint else "")), stacklevel=3)
    return True


class Model(ABC):
    """Base class: ``predict``, ``predict_proba``, ``logits`` on raw or encoded inputs.

    Examples
    --------
    Every model (here a wrapped logistic regression) answers on raw rows and on their
    model-space encoding alike:

    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> lr = LogisticRegression().fit(enc.transform(data.frame), data.y)
    >>> model = rc.models.wrap(lr, enc, class_names=data.class_names)
    >>> isinstance(model, Model), model.class_names
    (True, ('rejected', 'approved'))
    >>> rows = data.frame.head(4)
    >>> model.predict(rows).tolist(), model.predict(enc.transform(rows)).tolist()
    ([0, 0, 1, 1], [0, 0, 1, 1])
    >>> model.predict_proba(rows).shape
    (4, 2)
    """

    encoder: Encoder
    class_names: tuple[Any, ...] = (0, 1)
    favourable: int | None = None

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def favourable_label(self) -> Any:
        """The label of the favourable class, or ``None`` where none is declared."""
        return None if self.favourable is None else self.class_names[self.favourable]

    def set_favourable(self, value: Any) -> Model:
        """Declare the favourable class — the outcome recourse aims at, and the default
        target of the service — by label (``"approved"``) or index; ``None`` clears it.
        Returns the model; :class:`~robustce.errors.ValidationError` for an unknown class."""
        self.favourable = None if value is None else class_index(self.class_names, value)
        return self

    def _check_fitted(self) -> None:
        if getattr(self, "encoder", None) is None or not hasattr(self.encoder, "blocks_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted; call fit() first")

    def encode(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Raw DataFrame -> model space; arrays are taken as already encoded (validated)."""
        self._check_fitted()
        if isinstance(X, pd.DataFrame):
            return self.encoder.transform(X)
        return self.encoder.check_array(X)

    @abstractmethod
    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Scores of shape (n, 1) for binary models, (n, K) otherwise."""

    def predict_proba(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Class probabilities, shape (n, K)."""
        z = self.logits(X)
        if z.shape[1] == 1:
            p1 = 1.0 / (1.0 + np.exp(-np.clip(z[:, 0], -500, 500)))
            return np.column_stack([1.0 - p1, p1])
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Labels 0..K-1."""
        z = self.logits(X)
        return (z[:, 0] > 0).astype(np.int64) if z.shape[1] == 1 else np.argmax(z, axis=1)

    def margin(self, X: pd.DataFrame | np.ndarray, target_class: int) -> np.ndarray:
        """> 0 iff ``target_class`` is predicted (see :func:`class_margin`)."""
        return class_margin(self.logits(X), target_class)

    def with_actionability(self, **by_name: str) -> Model:
        """A copy of this model whose schema gives the named features another actionability
        (what a CE may change: ``"immutable"``, ``"increase"``, ``"decrease"``, ``"free"``,
        ``"protected"``); it computes the same function and shares its weights.

        Parameters
        ----------
        **by_name : feature name → actionability.

        Examples
        --------
        >>> from sklearn.linear_model import LogisticRegression
        >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
        >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
        >>> model = rc.models.wrap(LogisticRegression().fit(enc.transform(data.frame), data.y), enc)
        >>> fixed = model.with_actionability(income="immutable")
        >>> fixed.encoder.schema.immutable, model.encoder.schema.immutable
        (['age', 'income', 'prior_default'], ['age', 'prior_default'])
        >>> bool((fixed.predict(data.frame) == model.predict(data.frame)).all())
        True
        """
        import copy

        self._check_fitted()
        enc = self.encoder
        out = copy.copy(self)
        out.encoder = Encoder(enc.schema.with_actionability(**by_name),
                              ordinal_encoding=enc.ordinal_encoding).fit()
        return out

    def network(self) -> ReLUNetwork:
        """The ReLU-network view of this model (only for ReLU MLPs and linear models)."""
        raise UnsupportedModelError(
            f"{type(self).__name__} has no ReLU-network view; exact Δ-robustness needs an MLP "
            "or a logistic regression"
        )

    def save(self, path, *, overwrite: bool = True):  # noqa: ANN001, ANN201
        """Save to a directory (see :func:`robustce.models.load`); only models that own their
        weights (``MLP``) support it."""
        raise UnsupportedModelError(
            f"{type(self).__name__} cannot be saved by robustce; save the underlying estimator "
            "with its own tools (e.g. skops.io) and wrap it again after loading"
        )

    @property
    def differentiable(self) -> bool:
        """Whether :meth:`torch_logits` is available (gradient-based explainers need it)."""
        try:
            self.network()
        except UnsupportedModelError:
            return False
        return True

    def torch_logits(self, X):  # noqa: ANN001, ANN201 - torch types kept lazy
        """Differentiable logits of a float64 torch tensor in model space."""
        import torch

        h = X
        layers = self.network().weights
        for i, (W, b) in enumerate(layers):
            h = h @ torch.as_tensor(W, dtype=h.dtype).T + torch.as_tensor(b, dtype=h.dtype)
            if i < len(layers) - 1:
                h = torch.relu(h)
        return h


def logits_of_proba(p: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Logits of class probabilities ``p`` (n, k), clipped at ``eps``: the log-odds of class 1
    as one column for two classes, else the log-probabilities — for models that only give
    probabilities (imported forests, black boxes)."""
    p = np.clip(p, eps, 1.0)
    if p.shape[1] == 2:
        return (np.log(p[:, 1]) - np.log(p[:, 0]))[:, None]
    return np.log(p)


def favourable_in(data: Any, class_names: Any) -> int | None:
    """The index in ``class_names`` of ``data``'s favourable class (a
    :class:`~robustce.data.Dataset`'s, matched by label), or ``None`` where ``data`` declares
    none or is no dataset, or its favourable label is not among ``class_names``."""
    label = getattr(data, "favourable_label", None)
    labels = [str(c) for c in class_names]
    return None if label is None or str(label) not in labels else labels.index(str(label))


def model_name(model: Any) -> str:
    """What to call ``model`` in a message: the fitted estimator's class for a wrapped
    scikit-learn model (its ``final_``), else the model's own class."""
    inner = getattr(model, "final_", None)
    return type(inner).__name__ if inner is not None else type(model).__name__
