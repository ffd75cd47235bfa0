"""Black-box models: any object with ``predict_proba`` over raw rows (a CatBoost model, a
stacked ensemble, a client for a scoring service), given the Model protocol without being
opened.

:func:`black_box` takes the scorer and the :class:`~robustce.data.Dataset` (or a fitted
:class:`~robustce.data.Encoder`) whose raw columns it scores. robustce never reads its
weights, trees or layers: model-space rows are decoded to raw rows
(``encoder.inverse_transform``) and scored by the object's own ``predict_proba``. So:

* model-agnostic methods work unchanged — :class:`~robustce.methods.NearestNeighbour`,
  :class:`~robustce.methods.RetrainRobust`, the search-based ones that only call ``predict`` —
  and so does the (δ, α) certificate of :mod:`robustce.robustness.retrain`;
* exact methods and certificates (:class:`~robustce.methods.MILPNearest`,
  :class:`~robustce.methods.MILPRobust`, the exact Δ-test, APΔS, gradients) need an open model
  and raise :class:`~robustce.errors.UnsupportedModelError` saying so (``network()``).

``logits`` are the log-odds ``log p1 − log p0`` (binary) or log-probabilities (K classes) of
the scorer's probabilities (clipped at 1e-12), so the margin is > 0 exactly when the scorer's
argmax is the target class (a tie goes to the lower class, as ``numpy.argmax``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.errors import NotFittedError, UnsupportedModelError, ValidationError
from robustce.models.base import Model, favourable_in, logits_of_proba
from robustce.models.network import ReLUNetwork

__all__ = ["BlackBoxModel", "black_box"]

_INPUTS = ("frame", "array")


class BlackBoxModel(Model):
    """A scorer with ``predict_proba`` over raw rows, with the Model protocol (see the module
    docstring). Build it with :func:`black_box`.

    Parameters
    ----------
    scorer : any object whose ``predict_proba(rows)`` returns an (n, K) array of class
        probabilities, K ≥ 2, columns in ``class_names`` order.
    encoder : the fitted :class:`~robustce.data.Encoder` of the raw columns it scores.
    class_names : the K class names (default ``(0, 1)``).
    input : ``"frame"`` (default: a raw DataFrame with the schema's columns) or ``"array"``
        (those raw values as a NumPy array, for scorers fitted on arrays).

    Examples
    --------
    Model-space rows are decoded to raw rows and scored by the object itself:

    >>> class Scorer:                      # nothing but predict_proba
    ...     def predict_proba(self, frame):
    ...         p1 = (frame["x1"].to_numpy() > 0.5).astype(float)
    ...         return np.column_stack([1 - p1, p1])
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> model = BlackBoxModel(Scorer(), enc)
    >>> X = enc.transform(data.frame.head(3))
    >>> model.predict(X).tolist() == (data.frame.head(3)["x1"] > 0.5).astype(int).tolist()
    True
    >>> model.differentiable        # no network view: exact methods refuse it
    False
    """

    kind: ClassVar[str] = "black_box"

    def __init__(self, scorer: Any, encoder: Encoder, *, class_names: Any = None,
                 input: str = "frame"):
        if not callable(getattr(scorer, "predict_proba", None)):
            raise UnsupportedModelError(
                f"a black-box model needs an object with predict_proba(rows); "
                f"{type(scorer).__name__} has none")
        if not isinstance(encoder, Encoder):
            raise ValidationError(f"black_box needs a robustce Encoder or Dataset, got "
                                  f"{type(encoder).__name__}")
        if not hasattr(encoder, "blocks_"):
            raise NotFittedError("the encoder is not fitted; call encoder.fit(frame) first")
        if input not in _INPUTS:
            raise ValidationError(f"input must be one of {_INPUTS}, got {input!r}")
        self.scorer = scorer
        self.encoder = encoder
        self.input = input
        self.class_names = tuple((0, 1) if class_names is None else class_names)
        if len(self.class_names) < 2:
            raise ValidationError("a classifier needs at least two classes")

    def __repr__(self) -> str:
        return f"BlackBoxModel({type(self.scorer).__name__}, n_classes={self.n_classes})"

    def _raw(self, X: pd.DataFrame | np.ndarray) -> pd.DataFrame:
        names = list(self.encoder.schema.names)
        if isinstance(X, pd.DataFrame):
            missing = [c for c in names if c not in X.columns]
            if missing:
                raise ValidationError(f"rows are missing the columns {missing}")
            self.encoder.transform(X[names])  # the schema's checks (NaNs, unseen categories)
            return X[names]
        return self.encoder.inverse_transform(self.encode(X))

    def predict_proba(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """The scorer's own probabilities of the raw rows (model-space rows are decoded)."""
        raw = self._raw(X)
        if len(raw) == 0:
            return np.zeros((0, self.n_classes))
        p = self.scorer.predict_proba(raw if self.input == "frame" else raw.to_numpy())
        p = np.asarray(p, dtype=np.float64)
        if p.ndim != 2 or p.shape != (len(raw), self.n_classes):
            raise UnsupportedModelError(
                f"{type(self.scorer).__name__}.predict_proba returned shape {p.shape} for "
                f"{len(raw)} rows; expected ({len(raw)}, {self.n_classes})")
        if not np.isfinite(p).all():
            raise UnsupportedModelError(
                f"{type(self.scorer).__name__}.predict_proba returned non-finite values")
        return p

    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return logits_of_proba(self.predict_proba(X))

    def predict(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """The scorer's argmax class (ties: the lower class)."""
        return np.argmax(self.predict_proba(X), axis=1).astype(np.int64)

    def network(self) -> ReLUNetwork:
        raise UnsupportedModelError(
            f"{self!r} is a black box (predict_proba only): exact methods and certificates "
            "(MILPNearest, MILPRobust, the exact Δ-test, APΔS, gradient methods) need an open "
            "model — an MLP, a linear model, a tree ensemble, from_sklearn or from_torch. "
            "Use a model-agnostic method (NearestNeighbour, RetrainRobust) and the (δ, α) "
            "certificate of robustce.robustness.retrain")


def black_box(scorer: Any, data: Dataset | Encoder, *, class_names: Any = None,
              input: str = "frame") -> BlackBoxModel:
    """Give any object with ``predict_proba`` over raw rows the Model protocol.

    Parameters
    ----------
    scorer : an object with ``predict_proba(rows) -> (n, K)`` probabilities.
    data : the :class:`~robustce.data.Dataset` whose raw columns it scores (the model space is
        an :class:`~robustce.data.Encoder` fitted on it; its class names and favourable class
        are taken), or a fitted :class:`~robustce.data.Encoder`.
    class_names : the K class names (default: the dataset's, else ``(0, 1)``).
    input : ``"frame"`` (raw DataFrame) or ``"array"`` (its values as a NumPy array).

    Returns
    -------
    BlackBoxModel

    Raises
    ------
    UnsupportedModelError
        ``scorer`` has no ``predict_proba``, or it answers a probe with the wrong shape.

    Examples
    --------
    >>> from sklearn.ensemble import HistGradientBoostingClassifier
    >>> data = rc.datasets.load("moons", n_samples=200, random_state=0)
    >>> clf = HistGradientBoostingClassifier(max_iter=20).fit(data.frame, data.y)
    >>> model = rc.models.black_box(clf, data)
    >>> model, model.predict(data.frame.head(4)).tolist() == clf.predict(data.frame.head(4)).tolist()
    (BlackBoxModel(HistGradientBoostingClassifier, n_classes=2), True)
    """
    if isinstance(data, Dataset):
        enc = Encoder(data.schema).fit(data.frame)
        names = data.class_names if class_names is None else class_names
        model = BlackBoxModel(scorer, enc, class_names=names, input=input)
        model.set_favourable(favourable_in(data, model.class_names))
        model.predict_proba(data.frame.head(2))  # probe: a wrong shape fails here, not later
        return model
    model = BlackBoxModel(scorer, data, class_names=class_names, input=input)
    return model
