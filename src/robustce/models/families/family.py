"""A retraining family: :class:`ModelFamily`, the models of one protocol over one model space,
and :class:`FamilyValidity`, the validity of CEs under it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.errors import ValidationError
from robustce.models.base import Model
from robustce.models.network import empirical_delta, resolve_targets

__all__ = ["FamilyValidity", "ModelFamily"]


class FamilyValidity(NamedTuple):
    """Validity of CEs under a family: ``per_ce[j]`` is the fraction of models giving CE j its
    target class (nan for rows that are not CEs, e.g. all-NaN rows), ``per_model[i]`` the
    fraction of CEs model i accepts, ``mean`` the mean over both (PROPLACE's *vr*).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("covariate_shift", random_state=0)
    >>> family = rc.models.group_family(data, LogisticRegression(), random_state=0)  # one per group
    >>> v = family.validity(data.frame.head(4), target_class=1)    # any rows: here, four points
    >>> v.per_ce.tolist(), v.per_model.tolist(), round(v.mean, 3)
    ([0.0, 0.5, 0.5, 0.5], [0.75, 0.0], 0.375)
    """

    per_ce: np.ndarray
    per_model: np.ndarray
    mean: float


@dataclass
class ModelFamily:
    """Models of one protocol: ``models[i]`` was trained with ``seeds[i]``; ``accuracies[i]``
    is its accuracy on the test set given to the protocol (None without one).

    Parameters
    ----------
    models : the retrained models (at least one), in one model space.
    protocol : the protocol's name (e.g. ``"proplace"``).
    seeds : one seed per model.
    accuracies : one test accuracy per model, or None.
    meta : what the protocol records (rows, halves, seeds).

    Raises
    ------
    ValidationError
        No model, or not one seed per model.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> base, family = rc.models.proplace_family(train, LogisticRegression(), n_retrain=2,
    ...                                          n_drop=1, test=test, random_state=0)
    >>> family, len(family.seeds)
    (ModelFamily('proplace', n_models=3, accuracy=0.582±0.031), 3)
    >>> family.predict(test.frame).shape        # (models, rows)
    (3, 75)
    """

    models: list[Model]
    protocol: str
    seeds: list[int]
    accuracies: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.models) == 0:
            raise ValidationError("a ModelFamily needs at least one model")
        if len(self.seeds) != len(self.models):
            raise ValidationError(f"{len(self.seeds)} seeds for {len(self.models)} models")
        if self.accuracies is not None:
            self.accuracies = np.asarray(self.accuracies, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.models)

    def __iter__(self) -> Iterator[Model]:
        return iter(self.models)

    def __getitem__(self, i: int) -> Model:
        return self.models[i]

    def __repr__(self) -> str:
        acc = "" if self.accuracies is None else (
            f", accuracy={self.accuracies.mean():.3f}±{self.accuracies.std():.3f}")
        return f"ModelFamily({self.protocol!r}, n_models={len(self)}{acc})"

    # --- evaluation ---------------------------------------------------------------------
    def _encoded(self, X: pd.DataFrame | np.ndarray) -> list[np.ndarray]:
        """Model-space inputs for every model (encoding once per distinct encoder)."""
        cache: dict[int, np.ndarray] = {}
        out = []
        for m in self.models:
            key = id(m.encoder)
            if key not in cache:
                cache[key] = m.encode(X)
            out.append(cache[key])
        return out

    def predict(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Labels of every model on every row, shape (n_models, n)."""
        return np.stack([m.predict(Z) for m, Z in zip(self.models, self._encoded(X), strict=True)])

    def score(self, data: Dataset) -> np.ndarray:
        """Accuracy of every model on ``data``."""
        if not isinstance(data, Dataset):
            raise ValidationError(f"score expects a robustce Dataset, got {type(data).__name__}")
        return (self.predict(data.frame) == data.y[None, :]).mean(axis=1)

    def validity(self, cfs: pd.DataFrame | np.ndarray, target_class: int | Sequence[int] | np.ndarray
                 ) -> FamilyValidity:
        """Fraction of models that give each CE its ``target_class`` (one int, or one per row).

        ``cfs`` is a raw frame or a model-space array; rows with missing values (queries
        without a CE) get ``nan`` and are left out of the means.
        """
        if isinstance(cfs, pd.DataFrame):
            present = ~cfs.isna().any(axis=1).to_numpy()
            rows = cfs[present]
            n = len(cfs)
        else:
            arr = np.asarray(cfs, dtype=np.float64)
            if arr.ndim == 1:
                arr = arr[None, :]
            present = ~np.isnan(arr).any(axis=1)
            rows = arr[present]
            n = len(arr)
        target = resolve_targets(target_class, n)
        per_ce = np.full(n, np.nan)
        if not present.any():
            return FamilyValidity(per_ce, np.full(len(self), np.nan), float("nan"))
        ok = self.predict(rows) == target[present][None, :]
        per_ce[present] = ok.mean(axis=0)
        return FamilyValidity(per_ce, ok.mean(axis=1), float(ok.mean()))

    def empirical_deltas(self, base: Any) -> np.ndarray:
        """max ‖θ_base − θ_i‖_∞ for every model (see :func:`robustness.empirical_delta`)."""
        return np.array([empirical_delta(base, m) for m in self.models])

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"protocol": self.protocol, "n_models": len(self)}
        if self.accuracies is not None:
            out["accuracy_mean"] = float(self.accuracies.mean())
            out["accuracy_std"] = float(self.accuracies.std())
        return out
