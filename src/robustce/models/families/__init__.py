"""Retraining families: the model shifts that robust CEs are evaluated against.

A :class:`ModelFamily` is a list of models over one model space (one encoder) with the
protocol that produced them, their seeds and accuracies. Protocols:

* :func:`proplace_family` — PROPLACE §5 (after Dutta et al. 2022, Upadhyay et al. 2021): split
  the data into random halves D1/D2; the base model is trained on D1; ``n_retrain`` models are
  retrained on D1 ∪ D2 with new seeds ("new data arrived") and ``n_drop`` on D1 minus a
  different random 1 % each ("leave-some-out"); options follow the authors' code instead
  (one shared drop set, other layer sizes for the retrained models, members that start from
  the base model's initial weights).
* :func:`incremental_family` — the base model fine-tuned for a few epochs on a random fraction
  of D2 (``MLP.fit_more``; ``partial_fit`` for scikit-learn estimators that have it).
* :func:`group_family` — one model per group of ``data.groups`` (temporal or population shift:
  loan by year, German credit original vs corrected, student by school).
* :func:`seed_family` — new seeds, optionally on a random part of the rows.

What is retrained (``base_params`` / ``params``): a dict of :class:`MLP` parameters or an
``MLP``; a scikit-learn classifier trained on model-space arrays and wrapped
(:func:`~robustce.models.wrap`: linear models, ``MLPClassifier``, trees, forests,
``XGBClassifier``, ``LGBMClassifier``); or a pipeline on raw frames — a ``Pipeline`` with a
``ColumnTransformer``, e.g. ``Pipeline([("pre", ColumnTransformer(...)), ("clf",
XGBClassifier())])`` — trained on ``data.frame`` and imported exactly by
:func:`~robustce.models.from_sklearn` (:func:`fits_raw_frames`). A fitted pipeline may be
given: it is cloned, so only its parameters are used. Boosters with ``subsample`` and
``colsample_*`` at 1 are deterministic: a new seed alone gives the same trees, and only the
rows a protocol changes (halves, dropped rows, added data) move them.

Models are trained with joblib (``n_jobs``, default 1). Every model's seed and rows are drawn in
the calling process before any training starts, and an MLP trains bit-reproducibly per seed
(see :mod:`robustce.models.mlp`), so the family is the same for any ``n_jobs``.

Modules: ``family`` (:class:`ModelFamily` and its validity), ``members`` (how one member is
trained: seeded specifications, fits on model-space arrays or raw frames, fine-tuning, joblib
runs), ``retraining`` (members trained afresh: :func:`proplace_family`, :func:`seed_family`,
:func:`group_family`, :func:`split_halves`) and ``updates`` (members trained on from the base
model: :func:`incremental_family`, :func:`continued_family`) and ``procedure``
(:class:`RetrainProcedure`: the user's own retrain procedure, model ``i`` on demand, cached —
what the (δ, α) certificate of :mod:`robustce.robustness.retrain` samples).
"""

from robustce.models.families.family import FamilyValidity, ModelFamily
from robustce.models.families.members import fits_raw_frames
from robustce.models.families.procedure import CHANGES, RetrainProcedure
from robustce.models.families.retraining import (
    group_family,
    proplace_family,
    seed_family,
    split_halves,
)
from robustce.models.families.updates import (  # noqa: F401  (continued_family: not in __all__, as before)
    continued_family,
    incremental_family,
)

__all__ = [
    "CHANGES",
    "FamilyValidity",
    "RetrainProcedure",
    "ModelFamily",
    "group_family",
    "incremental_family",
    "proplace_family",
    "seed_family",
    "fits_raw_frames",
    "split_halves",
]
