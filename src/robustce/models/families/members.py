"""Training one member of a retraining family (module level so joblib can ship it to
workers): a seeded copy of the specification (MLP parameters, an ``MLP``, a scikit-learn
estimator or a pipeline on raw frames), fitted and wrapped or imported; fine-tuned copies of a
base model; the seeds, positions and accuracies the protocols share."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.base import Model
from robustce.models.mlp import MLP, check_two_classes

__all__ = ["fits_raw_frames"]

_SEED_MAX = 2**31 - 1


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
