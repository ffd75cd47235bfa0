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
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.base import Model
from robustce.models.mlp import MLP, check_two_classes
from robustce.models.network import empirical_delta, resolve_targets
from robustce.utils import check_random_state

__all__ = [
    "FamilyValidity",
    "ModelFamily",
    "group_family",
    "incremental_family",
    "proplace_family",
    "seed_family",
    "fits_raw_frames",
    "split_halves",
]

_SEED_MAX = 2**31 - 1


class FamilyValidity(NamedTuple):
    """Validity of CEs under a family: ``per_ce[j]`` is the fraction of models giving CE j its
    target class (nan for rows that are not CEs, e.g. all-NaN rows), ``per_model[i]`` the
    fraction of CEs model i accepts, ``mean`` the mean over both (PROPLACE's *vr*).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("covariate_shift", random_state=0)
    >>> family = group_family(data, LogisticRegression(), random_state=0)    # one model per group
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
    >>> base, family = proplace_family(train, LogisticRegression(), n_retrain=2, n_drop=1,
    ...                                test=test, random_state=0)
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


# ----------------------------------------------------------------------------------------
# Training helpers (module level so joblib can ship them to workers)
# ----------------------------------------------------------------------------------------


def _seeded(spec: Any, seed: int) -> Any:
    """A fresh, unfitted model of ``spec`` with random_state=seed (every ``random_state`` of
    a pipeline's steps; XGBoost and LightGBM draw their row and column subsamples from it)."""
    if spec is None or isinstance(spec, dict):
        return MLP(**{**(spec or {}), "random_state": seed})
    if isinstance(spec, MLP):
        return MLP(**{**spec.get_params(), "random_state": seed})
    if hasattr(spec, "get_params") and hasattr(spec, "fit"):  # scikit-learn estimator
        from sklearn.base import clone

        est = clone(spec)
        keys = [k for k in est.get_params(deep=True) if k == "random_state" or k.endswith("__random_state")]
        if keys:
            est.set_params(**{k: seed for k in keys})
        return est
    raise ValidationError(
        f"model parameters must be a dict of MLP parameters, an MLP or a scikit-learn estimator, "
        f"got {type(spec).__name__}"
    )


def fits_raw_frames(spec: Any) -> bool:
    """Whether a scikit-learn ``spec`` is trained on *raw* frames (then imported with
    :func:`~robustce.models.from_sklearn`) rather than on model-space arrays (then wrapped):
    a ``Pipeline`` with a ``ColumnTransformer`` step, which selects raw columns by name."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    return isinstance(spec, Pipeline) and any(isinstance(s, ColumnTransformer)
                                              for _, s in spec.steps)


def _fit_one(spec: Any, data: Dataset, encoder: Encoder, seed: int) -> Model:
    model = _seeded(spec, seed)
    if isinstance(model, MLP):
        return model.fit(data, encoder=encoder)
    from robustce.models.sklearn import wrap

    if fits_raw_frames(model):  # the user's own pipeline on raw frames, imported exactly
        from robustce.models.sklearn_import import from_sklearn

        check_two_classes(data.y)
        model.fit(data.frame, data.y)
        imported = from_sklearn(model, data)
        if list(imported.encoder.columns_) != list(encoder.columns_):
            raise ValidationError(
                "a pipeline trained on raw frames is imported in the schema's default model "
                "space; the family's encoder differs from it (leave encoder= unset)")
        return imported

    check_two_classes(data.y)
    model.fit(encoder.transform(data.frame), data.y)
    return wrap(model, encoder, class_names=data.class_names).set_favourable(data.favourable)


def _fine_tune(base: Model, X: np.ndarray, y: np.ndarray, epochs: int, seed: int,
               lr: float | None, optimizer: str | None = None) -> Model:
    if isinstance(base, MLP):
        return copy.deepcopy(base).fit_more((X, y), epochs=epochs, random_state=seed, lr=lr,
                                            resume_optimizer=optimizer == "kept")
    from robustce.models.sklearn import SklearnModel, wrap

    if not isinstance(base, SklearnModel) or not hasattr(base.final_, "partial_fit"):
        raise UnsupportedModelError(
            f"incremental updates need an MLP or a scikit-learn estimator with partial_fit, "
            f"got {base!r}"
        )
    est = copy.deepcopy(base.estimator)
    wrapped = wrap(est, base.encoder, class_names=base.class_names).set_favourable(base.favourable)
    Z = wrapped._transform(X)
    if lr is not None and "learning_rate_init" in wrapped.final_.get_params():
        wrapped.final_.set_params(learning_rate_init=lr)
    if "random_state" in wrapped.final_.get_params():
        wrapped.final_.set_params(random_state=seed)
    if optimizer == "fresh" and hasattr(wrapped.final_, "_optimizer"):
        del wrapped.final_._optimizer  # partial_fit then builds a new one
    rng = np.random.default_rng(seed)
    labels = wrapped.classes_[np.asarray(y, dtype=np.int64)]  # y holds class positions 0..K-1
    for _ in range(int(epochs)):
        perm = rng.permutation(len(Z))
        wrapped.final_.partial_fit(Z[perm], labels[perm], classes=wrapped.classes_)
    wrapped._network = None
    return wrapped


def _encoder_for(spec: Any, data: Dataset, encoder: Encoder | None) -> Encoder:
    if encoder is not None:
        return encoder
    ordinal = "thermometer"
    if isinstance(spec, dict):
        ordinal = spec.get("ordinal_encoding", ordinal)
    elif isinstance(spec, MLP):
        ordinal = spec.ordinal_encoding
    return Encoder(data.schema, ordinal_encoding=ordinal).fit(data.frame)


def _run(tasks: list[tuple], n_jobs: int | None, fn: Any = _fit_one) -> list[Model]:
    if n_jobs in (None, 1) or len(tasks) <= 1:
        return [fn(*t) for t in tasks]
    return Parallel(n_jobs=n_jobs)(delayed(fn)(*t) for t in tasks)


def _seeds(rng: np.random.Generator, n: int) -> list[int]:
    return [int(s) for s in rng.integers(0, _SEED_MAX, size=n)]


def _positions(value: Sequence[int], n: int, name: str) -> list[int]:
    """1-based model positions, each in 1..n, without repeats."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise ValidationError(f"{name} must be a sequence of 1-based positions, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 1 <= v <= n:
            raise ValidationError(f"{name}: positions must be integers in 1..{n}, got {v!r}")
        out.append(int(v))
    if len(set(out)) != len(out):
        raise ValidationError(f"{name}: repeated positions in {list(out)}")
    return sorted(out)


def _accuracy(model: Model, test: Dataset) -> float:
    return float((model.predict(test.frame) == test.y).mean())


# ----------------------------------------------------------------------------------------
# Protocols
# ----------------------------------------------------------------------------------------


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
