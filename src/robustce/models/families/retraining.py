"""Protocols whose members are trained afresh: :func:`proplace_family` (PROPLACE's halves,
retrained and leave-some-out models), :func:`seed_family` (new seeds, optionally fewer rows),
:func:`group_family` (one model per group) and :func:`split_halves`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.errors import ValidationError
from robustce.models.base import Model
from robustce.models.families.family import ModelFamily
from robustce.models.families.members import (
    _SEED_MAX,
    _accuracy,
    _encoder_for,
    _fit_one,
    _positions,
    _run,
    _seeds,
)
from robustce.models.mlp import MLP
from robustce.utils import check_random_state

__all__ = ["group_family", "proplace_family", "seed_family", "split_halves"]


def _halves(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    perm = rng.permutation(n)
    half = n // 2
    return np.sort(perm[:half]), np.sort(perm[half:])


def split_halves(data: Dataset, random_state: int | np.random.Generator | None = 0
                 ) -> tuple[Dataset, Dataset]:
    """The random halves (D1, D2) that :func:`proplace_family` uses for the same int seed.

    Parameters
    ----------
    data : the :class:`~robustce.data.Dataset` to halve.
    random_state : int, Generator or None.

    Returns
    -------
    (Dataset, Dataset)
        D1 and D2.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> d1, d2 = split_halves(data, random_state=0)
    >>> len(d1), len(d2), len(d1.frame.index.intersection(d2.frame.index))
    (100, 100, 0)
    """
    if len(data) < 4:
        raise ValidationError(f"need at least 4 rows to split into halves, got {len(data)}")
    d1, d2 = _halves(len(data), check_random_state(random_state))
    return data.subset(d1), data.subset(d2)


def proplace_family(
    data: Dataset,
    base_params: dict[str, Any] | Any = None,
    *,
    n_retrain: int = 10,
    n_drop: int = 10,
    drop_fraction: float = 0.01,
    test: Dataset | None = None,
    encoder: Encoder | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_jobs: int | None = 1,
    member_params: dict[str, Any] | Any = None,
    shared_drop: bool = False,
    same_init_retrain: Sequence[int] = (),
    same_init_drop: Sequence[int] = (),
) -> tuple[Model, ModelFamily]:
    """PROPLACE's retraining protocol. Returns ``(base_model, family)``.

    ``data`` is split into random halves D1/D2 (the first draw of ``random_state``: the same
    halves as :func:`split_halves`). The base model is trained on D1; ``n_retrain`` models on
    D1 ∪ D2 with new seeds; ``n_drop`` on D1 minus a different random ``drop_fraction`` of its
    rows each. ``base_params`` is a dict of :class:`MLP` parameters, an (unfitted) ``MLP`` or a
    scikit-learn estimator (cloned, ``random_state`` set per model). With ``test`` the
    accuracies of the family (and ``meta["base_accuracy"]``) are measured on it.
    ``meta`` records the D1/D2 index labels, each model's training kind and dropped rows.

    Options that follow the authors' code (``junqi-jiang/proplace``, ``clfutils.py``):

    * ``member_params``: the retrained models' parameters when they differ from the base
      model's (COMPAS: a 20-20 base network, 50-50 retrained ones; default: ``base_params``).
    * ``shared_drop``: the ``n_drop`` leave-out models all leave out the same rows, drawn once
      (default: a different random subset each).
    * ``same_init_retrain`` / ``same_init_drop``: 1-based positions of retrained (D1 ∪ D2) /
      leave-out models trained with the base model's seed, so that (same layer sizes) they
      start from its initial weights and draw its mini-batch order; the authors seed torch
      with fixed numbers, and on HELOC the base model and the first retrained one share 101,
      on ADULT the base model and the third leave-out one share 5.

    The seeds and rows of the other models do not depend on these options.

    Parameters
    ----------
    data : the training :class:`~robustce.data.Dataset` (halved into D1, D2).
    base_params : the base model's specification (see above).
    n_retrain : models retrained on D1 ∪ D2.
    n_drop : models trained on D1 minus a random ``drop_fraction``.
    drop_fraction : the share of D1's rows each leave-out model drops.
    test : held-out data for the accuracies, or None.
    encoder : the model space (default: fitted on ``data``).
    random_state : int, Generator or None.
    n_jobs : joblib workers over the members.
    member_params, shared_drop, same_init_retrain, same_init_drop : see above.

    Returns
    -------
    (Model, ModelFamily)

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> base, family = proplace_family(data, LogisticRegression(), n_retrain=2, n_drop=2,
    ...                                random_state=0)
    >>> family, family.meta["kinds"]
    (ModelFamily('proplace', n_models=4), ['retrain_full', 'retrain_full', 'drop_subset', 'drop_subset'])
    >>> family.empirical_deltas(base).round(3).tolist()   # δ of each member from the base
    [0.624, 0.624, 0.073, 0.042]
    """
    if not isinstance(data, Dataset):
        raise ValidationError(f"proplace_family expects a robustce Dataset, got {type(data).__name__}")
    if int(n_retrain) < 0 or int(n_drop) < 0 or int(n_retrain) + int(n_drop) == 0:
        raise ValidationError(f"need n_retrain + n_drop >= 1, got {n_retrain} and {n_drop}")
    if not 0 < drop_fraction < 1:
        raise ValidationError(f"drop_fraction must be in (0, 1), got {drop_fraction}")
    if len(data) < 4:
        raise ValidationError(f"need at least 4 rows to split into halves, got {len(data)}")
    same_retrain = _positions(same_init_retrain, int(n_retrain), "same_init_retrain")
    same_drop = _positions(same_init_drop, int(n_drop), "same_init_drop")
    member_spec = base_params if member_params is None else member_params
    rng = check_random_state(random_state)
    d1_pos, d2_pos = _halves(len(data), rng)
    enc = _encoder_for(base_params, data, encoder)
    base_seed = _seeds(rng, 1)[0]
    retrain_seeds = _seeds(rng, int(n_retrain))
    drop_seeds = _seeds(rng, int(n_drop))
    for i in same_retrain:
        retrain_seeds[i - 1] = base_seed
    for i in same_drop:
        drop_seeds[i - 1] = base_seed
    n_dropped = max(1, int(round(drop_fraction * len(d1_pos))))
    n_sets = min(1, int(n_drop)) if shared_drop else int(n_drop)
    drops = [np.sort(rng.choice(len(d1_pos), size=n_dropped, replace=False)) for _ in range(n_sets)]
    if shared_drop:
        drops = drops * int(n_drop)
    d1 = data.subset(d1_pos)
    tasks = [(base_params, d1, enc, base_seed)]
    tasks += [(member_spec, data, enc, s) for s in retrain_seeds]
    for s, drop in zip(drop_seeds, drops, strict=True):
        keep = np.ones(len(d1_pos), dtype=bool)
        keep[drop] = False
        tasks.append((member_spec, d1.subset(keep), enc, s))
    models = _run(tasks, n_jobs)
    base, members = models[0], models[1:]
    meta: dict[str, Any] = {
        "d1_index": data.frame.index[d1_pos],
        "d2_index": data.frame.index[d2_pos],
        "kinds": ["retrain_full"] * int(n_retrain) + ["drop_subset"] * int(n_drop),
        "dropped_index": [d1.frame.index[d] for d in drops],
        "drop_fraction": drop_fraction,
        "base_seed": base_seed,
        "shared_drop": bool(shared_drop),
        "same_init": [f"retrain_full:{i}" for i in same_retrain] + [f"drop_subset:{i}" for i in same_drop],
    }
    family = ModelFamily(members, "proplace", retrain_seeds + drop_seeds, meta=meta)
    if test is not None:
        family.accuracies = family.score(test)
        meta["base_accuracy"] = _accuracy(base, test)
    return base, family



def group_family(
    data: Dataset,
    params: dict[str, Any] | Any = None,
    *,
    test_size: float | None = 0.2,
    encoder: Encoder | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_jobs: int | None = 1,
) -> ModelFamily:
    """One model per group of ``data.groups`` (sorted group order), all in one model space.

    Each group is split (stratified) into train/test with ``test_size``; the model is trained
    on the group's train part and ``accuracies[i]`` is measured on its own test part
    (``test_size=None`` trains on the whole group and records no accuracy).
    ``meta["groups"]`` names the groups, ``meta["test_index"]`` holds each test part's labels.

    Parameters
    ----------
    data : a :class:`~robustce.data.Dataset` with ``groups``.
    params : the models' specification, as ``base_params`` of :func:`proplace_family`.
    test_size : see above.
    encoder : the shared model space (default: fitted on ``data``).
    random_state : int, Generator or None.
    n_jobs : joblib workers over the groups.

    Returns
    -------
    ModelFamily

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("covariate_shift", random_state=0)    # groups D1 and D2
    >>> family = group_family(data, LogisticRegression(), random_state=0)
    >>> family, family.meta["groups"]
    (ModelFamily('group', n_models=2, accuracy=0.875±0.030), ['D1', 'D2'])
    """
    if not isinstance(data, Dataset):
        raise ValidationError(f"group_family expects a robustce Dataset, got {type(data).__name__}")
    if data.groups is None:
        raise ValidationError(
            f"dataset {data.name!r} has no groups; group_family needs data.groups "
            "(e.g. loan year, school, original/corrected)"
        )
    rng = check_random_state(random_state)
    enc = _encoder_for(params, data, encoder)
    parts = data.by_group()
    if len(parts) < 1:
        raise ValidationError("data.groups is empty")
    seeds = _seeds(rng, len(parts))
    split_seeds = _seeds(rng, len(parts))
    tasks, tests = [], []
    for (name, part), seed, split_seed in zip(parts.items(), seeds, split_seeds, strict=True):
        if test_size is None:
            train, test = part, None
        else:
            try:
                train, test = part.split(test_size=test_size, random_state=split_seed)
            except ValidationError as exc:
                raise ValidationError(f"group {name!r} ({len(part)} rows) cannot be split: {exc}") from None
        if len(np.unique(train.y)) < 2:
            raise ValidationError(f"group {name!r} has a single class in its training part")
        tasks.append((params, train, enc, seed))
        tests.append(test)
    models = _run(tasks, n_jobs)
    meta: dict[str, Any] = {
        "groups": list(parts),
        "sizes": [len(p) for p in parts.values()],
        "test_index": [None if t is None else t.frame.index for t in tests],
    }
    acc = None if test_size is None else np.array(
        [_accuracy(m, t) for m, t in zip(models, tests, strict=True)])
    return ModelFamily(models, "group", seeds, accuracies=acc, meta=meta)



def seed_family(
    data: Dataset,
    base_params: dict[str, Any] | Any = None,
    *,
    n_models: int = 5,
    drop_fraction: float = 0.0,
    random_state: int = 0,
) -> tuple[Model, ModelFamily]:
    """Retraining with other seeds (and, with ``drop_fraction``, other rows). Returns
    ``(base_model, family)``.

    The base model is trained on all of ``data`` with ``random_state``; ``n_models`` more are
    trained on ``data`` minus a random ``drop_fraction`` of its rows (default 0: all of it),
    each with its own seed, in the base model's encoding. Seeds and row draws come from
    ``np.random.default_rng([random_state, 7919])``. ``base_params``: a dict of :class:`MLP`
    parameters (None: the defaults), an unfitted ``MLP``, or a scikit-learn estimator — a
    classifier on model-space arrays (``XGBClassifier``, ``LGBMClassifier`` included) or a
    pipeline on raw frames (see :func:`fits_raw_frames`), cloned with ``random_state`` set.

    A booster with ``subsample`` and ``colsample_*`` at 1 (XGBoost's and LightGBM's
    defaults) is deterministic: a new seed alone retrains the same trees. Give the family
    something to vary — ``drop_fraction`` > 0, subsampling in the spec, or
    :func:`proplace_family`'s added data.

    Parameters
    ----------
    data : the training :class:`~robustce.data.Dataset`.
    base_params : see above.
    n_models : members besides the base model.
    drop_fraction : the share of rows each member drops.
    random_state : the base model's seed and the family's.

    Returns
    -------
    (Model, ModelFamily)

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> base, family = seed_family(data, LogisticRegression(), n_models=3,
    ...                            drop_fraction=0.2, random_state=0)
    >>> family, family.score(data).round(3).tolist()     # each member's accuracy on data
    (ModelFamily('seeds', n_models=3), [0.73, 0.75, 0.72])
    """
    if not isinstance(data, Dataset):
        raise ValidationError(f"seed_family expects a robustce Dataset, got {type(data).__name__}")
    if int(n_models) < 1:
        raise ValidationError(f"n_models must be a positive integer, got {n_models}")
    if not 0 <= drop_fraction < 1:
        raise ValidationError(f"drop_fraction must be in [0, 1), got {drop_fraction}")
    rng = np.random.default_rng([int(random_state), 7919])
    meta = {"drop_fraction": drop_fraction}
    if base_params is None or isinstance(base_params, dict):
        params = {k: v for k, v in dict(base_params or {}).items() if k != "random_state"}
        base: Model = MLP(**params, random_state=int(random_state)).fit(data)
        models: list[Model] = []
        seeds: list[int] = []
        for _ in range(int(n_models)):
            sub = data.subset(rng.uniform(size=len(data)) >= drop_fraction) if drop_fraction > 0 else data
            seeds.append(int(rng.integers(_SEED_MAX)))
            models.append(MLP(**params, random_state=seeds[-1]).fit(sub, encoder=base.encoder))
        return base, ModelFamily(models, "seeds", seeds, meta=meta)
    enc = _encoder_for(base_params, data, None)
    base = _fit_one(base_params, data, enc, int(random_state))
    tasks, seeds = [], []
    for _ in range(int(n_models)):
        sub = data.subset(rng.uniform(size=len(data)) >= drop_fraction) if drop_fraction > 0 else data
        seeds.append(int(rng.integers(_SEED_MAX)))
        tasks.append((base_params, sub, base.encoder, seeds[-1]))
    return base, ModelFamily(_run(tasks, 1), "seeds", seeds, meta=meta)
