"""Plausibility of counterfactuals by the Local Outlier Factor (Breunig et al.; PROPLACE's *lof*).

scikit-learn's ``LocalOutlierFactor(n_neighbors=k, novelty=True)`` is fitted on the training
points whose label is the CE's target class; the LOF value is ``-score_samples`` (≈ 1 for
inliers, > 1.5 outliers) and the inlier flag is 1 when ``predict`` calls the CE an inlier.
:class:`LOFScorer` fits one estimator per target class on first use; :func:`lof_scorer` caches
scorers per (dataset, encoder, k), so evaluating several methods on one dataset fits each
class's LOF once.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.errors import ValidationError
from robustce.models.network import resolve_targets

__all__ = ["LOFScorer", "lof_scorer", "lof_scores"]


def lof_scores(reference: np.ndarray, C: np.ndarray, n_neighbors: int = 10
               ) -> tuple[np.ndarray, np.ndarray]:
    """(LOF value, inlier flag) of each row of C w.r.t. ``reference`` (novelty mode).

    The LOF value is ``-score_samples`` of scikit-learn's ``LocalOutlierFactor(novelty=True)``;
    ``n_neighbors`` is lowered to len(reference) − 1 for tiny references."""
    est = _fit_lof(np.asarray(reference, dtype=np.float64), n_neighbors)
    return _score_lof(est, C)


def _fit_lof(reference: np.ndarray, n_neighbors: int) -> Any:
    from sklearn.neighbors import LocalOutlierFactor

    if int(n_neighbors) < 1:
        raise ValidationError(f"lof_neighbors must be a positive integer, got {n_neighbors}")
    if len(reference) < 2:
        return None
    k = min(int(n_neighbors), len(reference) - 1)
    return LocalOutlierFactor(n_neighbors=k, novelty=True).fit(reference)


def _score_lof(est: Any, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    if est is None:
        return np.full(len(C), np.nan), np.full(len(C), np.nan)
    if len(C) == 0:
        return np.zeros(0), np.zeros(0)
    return -est.score_samples(C), (est.predict(C) == 1).astype(np.float64)


class LOFScorer:
    """LOF plausibility w.r.t. the training points of each target class, fitted once per
    class on first use.

    Parameters
    ----------
    data : the training :class:`~robustce.data.Dataset`.
    encoder : the fitted :class:`~robustce.data.Encoder`; LOF works in its model space.
    n_neighbors : LOF's k (default 10; lowered to the class size − 1 for tiny classes).
    labels : ``"label"`` (default) selects a class's points by their true label, ``"model"``
        by the model's prediction (then pass ``model``).
    model : the model whose predictions select the points when ``labels="model"``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> scorer = rc.evaluation.LOFScorer(data, enc, n_neighbors=10)
    >>> X = enc.transform(data.frame.head(3))
    >>> lof, inlier = scorer.score(X, target_class=data.y[:3])  # vs. each row's own class
    >>> lof.round(2), inlier
    (array([1.53, 1.  , 1.01]), array([0., 1., 1.]))
    """

    def __init__(self, data: Dataset, encoder: Encoder, n_neighbors: int = 10, *,
                 labels: str = "label", model: Any = None):
        if not isinstance(data, Dataset):
            raise ValidationError(f"data must be a robustce Dataset, got {type(data).__name__}")
        if labels not in ("label", "model"):
            raise ValidationError(f"labels must be 'label' or 'model', got {labels!r}")
        if labels == "model" and model is None:
            raise ValidationError("labels='model' needs model=")
        self.n_neighbors = int(n_neighbors)
        if self.n_neighbors < 1:
            raise ValidationError(f"lof_neighbors must be a positive integer, got {n_neighbors}")
        self._X = encoder.transform(data.frame)
        self._y = data.y if labels == "label" else np.asarray(model.predict(self._X))
        self._fitted: dict[int, Any] = {}

    @property
    def n_rows(self) -> int:
        """Rows of the training data the scorer selects its reference points from."""
        return int(self._X.shape[0])

    def estimator(self, target_class: int) -> Any:
        t = int(target_class)
        if t not in self._fitted:
            self._fitted[t] = _fit_lof(self._X[self._y == t], self.n_neighbors)
        return self._fitted[t]

    def score(self, C: np.ndarray, target_class: Any) -> tuple[np.ndarray, np.ndarray]:
        """(LOF value, inlier flag) per CE, each scored against its own target class."""
        C = np.atleast_2d(np.asarray(C, dtype=np.float64))
        t = resolve_targets(target_class, len(C))
        lof, inlier = np.full(len(C), np.nan), np.full(len(C), np.nan)
        for k in np.unique(t):
            rows = np.flatnonzero(t == k)
            lof[rows], inlier[rows] = _score_lof(self.estimator(int(k)), C[rows])
        return lof, inlier


_LOF_CACHE: dict[tuple[int, int, int], tuple[Any, Any, LOFScorer]] = {}
_LOF_CACHE_SIZE = 8


def lof_scorer(data: Dataset, encoder: Encoder, n_neighbors: int) -> LOFScorer:
    """A cached :class:`LOFScorer` for (data, encoder, n_neighbors): repeated evaluations of
    several methods on one dataset fit each class's LOF once. The cache is keyed on object
    identity (held by weak references, 8 entries); a Dataset changed in place after a first
    evaluation is not re-read — pass a new Dataset object instead."""
    key = (id(data), id(encoder), int(n_neighbors))
    hit = _LOF_CACHE.get(key)
    if hit is not None and hit[0]() is data and hit[1]() is encoder and len(data) == hit[2]._X.shape[0]:
        return hit[2]
    scorer = LOFScorer(data, encoder, n_neighbors)
    while len(_LOF_CACHE) >= _LOF_CACHE_SIZE:
        _LOF_CACHE.pop(next(iter(_LOF_CACHE)))
    _LOF_CACHE[key] = (weakref.ref(data), weakref.ref(encoder), scorer)
    return scorer
