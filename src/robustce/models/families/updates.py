"""Protocols whose members are trained on from the base model: :func:`incremental_family`
(fine-tuned on random parts of new data) and :func:`continued_family` (a base model trained on
one half, then trained on with the other)."""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.data.dataset import Dataset
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.base import Model
from robustce.models.families.family import ModelFamily
from robustce.models.families.members import (
    _accuracy,
    _encoder_for,
    _fine_tune,
    _fit_one,
    _run,
    _seeds,
)
from robustce.models.families.retraining import _halves
from robustce.utils import check_random_state

__all__ = ["continued_family", "incremental_family"]


def incremental_family(
    base_model: Model,
    data_d2: Dataset,
    *,
    fraction: float = 0.1,
    epochs: int = 5,
    n_models: int = 10,
    lr: float | None = None,
    optimizer: str | None = None,
    test: Dataset | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_jobs: int | None = 1,
) -> ModelFamily:
    """Incremental updates: ``n_models`` copies of ``base_model``, each fine-tuned for
    ``epochs`` epochs on a different random ``fraction`` of ``data_d2`` with its own seed.

    MLPs use :meth:`MLP.fit_more` (learning rate ``lr`` or the model's); wrapped scikit-learn
    estimators with ``partial_fit`` (e.g. ``MLPClassifier``) get ``epochs`` shuffled passes.
    ``optimizer``: ``"kept"`` resumes the optimiser state the base model's training left
    (Adam's moments and step count), ``"fresh"`` starts a new one; None: each model's own way
    (a fresh Adam for an MLP, the kept state for scikit-learn's ``partial_fit``).
    ``meta["empirical_deltas"]`` holds each model's parameter shift from the base (when the
    model has a network view) and ``meta["rows"]`` the index labels each model saw.

    Parameters
    ----------
    base_model : the fitted model to update.
    data_d2 : the new data (a :class:`~robustce.data.Dataset`).
    fraction : the share of ``data_d2`` each member sees.
    epochs : passes over that share.
    n_models : members.
    lr : learning rate of the updates (None: the model's).
    optimizer : ``"kept"``, ``"fresh"`` or None (see above).
    test : held-out data for the accuracies, or None.
    random_state : int, Generator or None.
    n_jobs : joblib workers over the members.

    Returns
    -------
    ModelFamily

    Examples
    --------
    >>> from sklearn.linear_model import SGDClassifier
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> d1, d2 = rc.models.split_halves(data, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> sgd = SGDClassifier(loss="log_loss", random_state=0).fit(enc.transform(d1.frame), d1.y)
    >>> family = incremental_family(rc.models.wrap(sgd, enc), d2, n_models=2, epochs=2)
    >>> family, len(family.meta["rows"][0])       # each member saw 10 % of D2
    (ModelFamily('incremental', n_models=2), 10)
    """
    if not isinstance(base_model, Model):
        raise ValidationError(f"base_model must be a robustce Model, got {type(base_model).__name__}")
    if not isinstance(data_d2, Dataset):
        raise ValidationError(f"data_d2 must be a robustce Dataset, got {type(data_d2).__name__}")
    if not 0 < fraction <= 1:
        raise ValidationError(f"fraction must be in (0, 1], got {fraction}")
    if int(epochs) < 1 or int(n_models) < 1:
        raise ValidationError(f"epochs and n_models must be positive, got {epochs} and {n_models}")
    if lr is not None and not lr > 0:
        raise ValidationError(f"lr must be positive, got {lr}")
    if optimizer not in (None, "fresh", "kept"):
        raise ValidationError(f"optimizer must be None, 'fresh' or 'kept', got {optimizer!r}")
    rng = check_random_state(random_state)
    X = base_model.encode(data_d2.frame)
    y = data_d2.y
    size = max(1, int(round(fraction * len(data_d2))))
    seeds = _seeds(rng, int(n_models))
    subsets = [np.sort(rng.choice(len(data_d2), size=size, replace=False)) for _ in range(int(n_models))]
    tasks = [(base_model, X[rows], y[rows], int(epochs), s, lr, optimizer)
             for rows, s in zip(subsets, seeds, strict=True)]
    models = _run(tasks, n_jobs, fn=_fine_tune)
    meta: dict[str, Any] = {
        "fraction": fraction,
        "epochs": int(epochs),
        "lr": lr,
        "optimizer": optimizer,
        "rows": [data_d2.frame.index[r] for r in subsets],
    }
    family = ModelFamily(models, "incremental", seeds, meta=meta)
    try:
        meta["empirical_deltas"] = family.empirical_deltas(base_model)
    except UnsupportedModelError:
        meta["empirical_deltas"] = None
    if test is not None:
        family.accuracies = family.score(test)
        meta["base_accuracy"] = _accuracy(base_model, test)
    return family



def continued_family(
    data: Dataset,
    base_params: dict[str, Any] | Any = None,
    *,
    n_models: int = 1,
    fraction: float = 1.0,
    epochs: int = 5,
    lr: float | None = None,
    optimizer: str | None = None,
    d2: Dataset | None = None,
    test: Dataset | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_jobs: int | None = 1,
) -> tuple[Model, ModelFamily]:
    """Training continued on new data (Jiang et al. 2023's shifted model, used by APΔS).
    Returns ``(base_model, family)``.

    ``data`` is split into the random halves D1/D2 of :func:`split_halves`; the base model is
    trained on D1 (as in :func:`proplace_family`, same halves and base seed for the same int
    ``random_state``), then each of ``n_models`` copies is trained on for ``epochs`` epochs on a
    random ``fraction`` of D2 (:func:`incremental_family`, with its ``lr`` and ``optimizer``).
    The weights move by the parameter shift δ_e that the papers report (≈ 0.3 on diabetes)
    rather than the 10× larger shift of a retrain from a new seed.

    Parameters
    ----------
    data : the training :class:`~robustce.data.Dataset` (halved into D1, D2; all of it D1
        when ``d2`` is given).
    base_params : the base model's specification, as in :func:`proplace_family`.
    n_models, fraction, epochs, lr, optimizer : as :func:`incremental_family`.
    d2 : a dataset of its own (same features) as D2, e.g. a corrected version of the data (the
        APΔS authors' German credit: the model on Statlog, the shift on South German credit);
        the base model is then trained on all of ``data``.
    test : held-out data for the accuracies, or None.
    random_state : int, Generator or None.
    n_jobs : joblib workers over the members.

    Returns
    -------
    (Model, ModelFamily)

    Examples
    --------
    >>> from sklearn.linear_model import SGDClassifier
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> sgd = SGDClassifier(loss="log_loss", random_state=0)
    >>> base, family = continued_family(data, sgd, n_models=2, epochs=2, random_state=0)
    >>> agree = family.predict(data.frame) == base.predict(data.frame)   # (models, rows)
    >>> family, agree.mean(axis=1).round(3).tolist()
    (ModelFamily('continued', n_models=2), [0.73, 0.565])
    """
    if not isinstance(data, Dataset):
        raise ValidationError(f"continued_family expects a robustce Dataset, got {type(data).__name__}")
    rng = check_random_state(random_state)
    if d2 is not None:
        if not isinstance(d2, Dataset):
            raise ValidationError(f"d2 must be a robustce Dataset, got {type(d2).__name__}")
        if list(d2.frame.columns) != list(data.frame.columns):
            raise ValidationError(f"d2 has features {list(d2.frame.columns)}, the model's data "
                                  f"{list(data.frame.columns)}; they must be the same")
        d1_pos, d2_data = np.arange(len(data)), d2
    else:
        if len(data) < 4:
            raise ValidationError(f"need at least 4 rows to split into halves, got {len(data)}")
        d1_pos, d2_pos = _halves(len(data), rng)
        d2_data = data.subset(d2_pos)
    base_seed = _seeds(rng, 1)[0]
    enc = _encoder_for(base_params, data, None)
    base = _fit_one(base_params, data.subset(d1_pos), enc, base_seed)
    family = incremental_family(base, d2_data, fraction=fraction, epochs=epochs,
                                n_models=n_models, lr=lr, optimizer=optimizer, test=test,
                                random_state=rng, n_jobs=n_jobs)
    family.meta.update({"d1_index": data.frame.index[d1_pos], "d2_index": d2_data.frame.index,
                        "base_seed": base_seed})
    family.protocol = "continued"
    return base, family

