"""The user's own retrain procedure as an object: :class:`RetrainProcedure`.

A retrain procedure is a random recipe for the next model: ``model i = retrain(seed_i)``.
Each model is an independent draw of that recipe — what the (δ, α) certificate of
:mod:`robustce.robustness.retrain` needs — and is named by its position ``i``:

* ``seed_i`` (and, for the built-in changes, the rows of model ``i``) come from
  ``numpy.random.SeedSequence([random_state, i])``, so model ``i`` is the same model whichever
  order, batch or ``n_jobs`` it is asked in, and in another process;
* fitted models are cached: asking for model ``i`` twice trains it once;
* missing models are fitted together, in parallel with joblib (``n_jobs``; its Dask and Ray
  backends take them onto a cluster), and counted (``n_fitted``, ``fit_time``).

Two ways to build one:

* ``RetrainProcedure(retrain)`` — the user's callable ``retrain(seed) -> model``: a robustce
  model, or any object with ``predict_proba`` over raw rows (made a
  :class:`~robustce.models.BlackBoxModel` over ``encoder=``);
* :meth:`RetrainProcedure.from_model` — refit a model robustce knows (its ``MLP``, a
  ``wrap``-ped scikit-learn estimator or pipeline, a ``from_sklearn`` pipeline on raw frames,
  XGBoost / LightGBM, or an unfitted specification) with the admissible change named:
  ``"bootstrap"`` (the training rows resampled with replacement), ``"seed"`` (all rows, a new
  ``random_state``), ``"subsample"`` (a random ``fraction`` of rows dropped), ``"window"``
  (one of the user's later windows of data, picked at random). Fitting goes through the
  retraining families' member fit (:mod:`robustce.models.families.members`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.base import Model
from robustce.models.families.family import ModelFamily
from robustce.models.families.members import _encoder_for, _fit_one, _run, fits_raw_frames
from robustce.models.mlp import MLP
from robustce.validation import check_bool, check_integer, check_number

__all__ = ["CHANGES", "RetrainProcedure"]

#: the admissible changes :meth:`RetrainProcedure.from_model` builds
CHANGES = ("bootstrap", "seed", "subsample", "window")
_SEED_MASK = 2**31 - 1


def draw_seed(random_state: int, i: int) -> int:
    """The seed of model ``i`` of a procedure seeded with ``random_state``."""
    return int(np.random.SeedSequence([int(random_state), int(i)]).generate_state(1)[0]
               & _SEED_MASK)


def _rows(change: str, n: int, fraction: float, rng: np.random.Generator) -> np.ndarray | None:
    """Row positions of one retrain (None: all rows)."""
    if change == "bootstrap":
        return np.sort(rng.integers(0, n, size=n))
    if change == "subsample":
        keep = max(1, n - int(round(fraction * n)))
        return np.sort(rng.choice(n, size=keep, replace=False))
    return None


def _fit_member(spec: Any, data: Dataset, windows: Sequence[Dataset] | None, encoder: Encoder,
                change: str, fraction: float, random_state: int, base_seed: int,
                vary_seed: bool, i: int) -> Model:
    """Model ``i`` of a built-in procedure (module level: joblib ships it to workers)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(random_state), int(i), 1]))
    seed = draw_seed(random_state, i) if (vary_seed or change == "seed") else int(base_seed)
    if change == "window":
        data = windows[int(rng.integers(len(windows)))]
    rows = _rows(change, len(data), fraction, rng)
    return _fit_one(spec, data if rows is None else data.subset(rows), encoder, seed)


def _call_member(retrain: Callable[[int], Any], encoder: Encoder | None, random_state: int,
                 i: int) -> Model:
    """Model ``i`` of a callable procedure."""
    out = retrain(draw_seed(random_state, i))
    if isinstance(out, Model):
        return out
    if callable(getattr(out, "predict_proba", None)):
        if encoder is None:
            raise ValidationError(
                f"retrain returned a {type(out).__name__}, not a robustce model: give the "
                "procedure encoder= (or a Dataset) to score its raw rows as a black box")
        from robustce.models.opaque import BlackBoxModel

        return BlackBoxModel(out, encoder)
    raise ValidationError(f"retrain(seed) must return a robustce model or an object with "
                          f"predict_proba, got {type(out).__name__}")


def _spec_of(model: Any) -> tuple[Any, Encoder | None]:
    """What to refit for ``model`` and the model space to keep (None: fit one on the data)."""
    from robustce.models.opaque import BlackBoxModel
    from robustce.models.sklearn import SklearnModel

    if isinstance(model, BlackBoxModel):
        raise UnsupportedModelError(
            "robustce cannot refit a black-box model; give your own procedure: "
            "RetrainProcedure(retrain) with retrain(seed) -> a fitted model")
    if isinstance(model, MLP):
        if getattr(model, "encoder", None) is None:
            return MLP(**model.get_params()), None
        return MLP(**model.get_params()), model.encoder
    if isinstance(model, SklearnModel):
        return model.estimator, model.encoder
    if isinstance(model, Model):
        est = getattr(model, "estimator", None)
        if est is not None and fits_raw_frames(est):
            return est, model.encoder
        raise UnsupportedModelError(
            f"robustce cannot refit {type(model).__name__} by itself; give your own procedure: "
            "RetrainProcedure(retrain) with retrain(seed) -> a fitted model")
    if model is None or isinstance(model, dict) or (hasattr(model, "fit")
                                                    and hasattr(model, "get_params")):
        return model, None
    raise ValidationError(f"from_model needs a robustce model, an estimator or MLP "
                          f"parameters, got {type(model).__name__}")


class RetrainProcedure:
    """The user's retrain procedure: ``model(i)`` is the i-th independent retrain (see the
    module docstring).

    Parameters
    ----------
    retrain : callable ``retrain(seed) -> model`` (a robustce model, or an object with
        ``predict_proba`` over raw rows when ``encoder`` is given).
    change : a name for the admissible change (recorded in certificates; ``"custom"``).
    random_state : int ≥ 0 — the procedure's seed; model ``i`` is seeded from
        ``(random_state, i)``.
    n_jobs : joblib workers used to fit missing models.
    encoder : the model space black-box retrains are scored in (a fitted Encoder or a
        Dataset to fit one on), or None.

    Attributes
    ----------
    n_fitted : models fitted so far (cache misses).
    fit_time : seconds spent fitting them.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> proc = rc.models.RetrainProcedure.from_model(LogisticRegression(), data, "bootstrap")
    >>> models = proc.models(range(3))
    >>> proc.model(1) is models[1], proc.n_fitted
    (True, 3)
    """

    def __init__(self, retrain: Callable[[int], Any], *, change: str = "custom",
                 random_state: int = 0, n_jobs: int | None = 1,
                 encoder: Encoder | Dataset | None = None):
        if not callable(retrain):
            raise ValidationError(f"retrain must be a callable retrain(seed) -> model, got "
                                  f"{type(retrain).__name__}")
        check_integer(random_state, "random_state", low=0)
        if n_jobs is not None:
            check_integer(n_jobs, "n_jobs", low=-64, high=64)
        if isinstance(encoder, Dataset):
            encoder = Encoder(encoder.schema).fit(encoder.frame)
        if encoder is not None and not isinstance(encoder, Encoder):
            raise ValidationError(f"encoder must be a robustce Encoder or Dataset, got "
                                  f"{type(encoder).__name__}")
        self.retrain = retrain
        self.change = str(change)
        self.random_state = int(random_state)
        self.n_jobs = n_jobs
        self.encoder = encoder
        self.n_fitted = 0
        self.fit_time = 0.0
        self._cache: dict[int, Model] = {}
        #: from_model's arguments of _fit_member before the index (None: a callable)
        self._refit: tuple | None = None
        self._meta: dict[str, Any] = {}

    @classmethod
    def from_model(cls, model: Any, data: Dataset, change: str = "bootstrap", *,
                   fraction: float = 0.1, windows: Sequence[Dataset] | None = None,
                   vary_seed: bool = True, random_state: int = 0,
                   n_jobs: int | None = 1) -> RetrainProcedure:
        """A procedure that refits ``model`` on ``data`` with one admissible change.

        Parameters
        ----------
        model : a fitted robustce model (its ``MLP`` parameters, a ``wrap``-ped estimator —
            XGBoost and LightGBM included — or a ``from_sklearn`` pipeline on raw frames is
            cloned, unfitted, and refitted in the same model space), or an unfitted
            specification (a scikit-learn estimator or pipeline, an ``MLP``, a dict of MLP
            parameters).
        data : the training :class:`~robustce.data.Dataset`.
        change : ``"bootstrap"`` (len(data) rows drawn with replacement), ``"seed"`` (all
            rows), ``"subsample"`` (a random ``fraction`` of the rows dropped) or ``"window"``
            (one of ``windows``, drawn uniformly per retrain).
        fraction : the share of rows ``"subsample"`` drops, in (0, 1).
        windows : the later windows of data ``"window"`` retrains on (Datasets with
            ``data``'s schema).
        vary_seed : whether each retrain also gets a new seed (default True; False fits every
            retrain with the seed ``random_state``, so only the rows change).
        random_state, n_jobs : see the class.

        Raises
        ------
        UnsupportedModelError
            A model robustce cannot refit (a black box, a torch module): give a callable.
        """
        if not isinstance(data, Dataset):
            raise ValidationError(f"from_model needs a robustce Dataset, got {type(data).__name__}")
        if change not in CHANGES:
            raise ValidationError(f"change must be one of {CHANGES}, got {change!r}")
        check_number(fraction, "fraction", low=0, high=1, low_open=True, high_open=True)
        check_bool(vary_seed, "vary_seed")
        check_integer(random_state, "random_state", low=0)
        if change == "window":
            windows = list(windows or [])
            if not windows or not all(isinstance(w, Dataset) for w in windows):
                raise ValidationError('change="window" needs windows=[Dataset, ...]: the later '
                                      "windows of data to retrain on")
            for w in windows:
                if list(w.schema.names) != list(data.schema.names):
                    raise ValidationError("every window needs the training data's columns")
        elif windows is not None:
            raise ValidationError(f'windows= is only used by change="window", not {change!r}')
        spec, encoder = _spec_of(model)
        encoder = encoder if encoder is not None else _encoder_for(spec, data, None)
        proc = cls(_fit_one, change=change, random_state=random_state, n_jobs=n_jobs,
                   encoder=encoder)
        wins = tuple(windows) if change == "window" else None
        rs = int(random_state)
        proc.retrain = spec
        proc._refit = (spec, data, wins, encoder, change, float(fraction), rs, rs,
                       bool(vary_seed))
        proc._meta = {"model": type(model).__name__, "fraction": float(fraction)
                      if change == "subsample" else None, "vary_seed": bool(vary_seed),
                      "rows": len(data), "windows": None if wins is None else len(wins)}
        return proc

    # --- models -------------------------------------------------------------------------
    def seed(self, i: int) -> int:
        """The seed model ``i`` is retrained with."""
        return draw_seed(self.random_state, i)

    def model(self, i: int) -> Model:
        """Model ``i`` (fitted on the first request, then cached)."""
        return self.models([i])[0]

    def models(self, indices: Iterable[int]) -> list[Model]:
        """Models at ``indices`` (ints ≥ 0), fitting the missing ones together with joblib."""
        idx = [int(i) for i in indices]
        if any(i < 0 for i in idx):
            raise ValidationError("model indices must be >= 0")
        missing = sorted(set(idx) - set(self._cache))
        if missing:
            t0 = time.perf_counter()
            if self._refit is None:
                tasks = [(self.retrain, self.encoder, self.random_state, i) for i in missing]
                fitted = _run(tasks, self.n_jobs, fn=_call_member)
            else:
                fitted = _run([(*self._refit, i) for i in missing], self.n_jobs, fn=_fit_member)
            self.fit_time += time.perf_counter() - t0
            self.n_fitted += len(missing)
            self._cache.update(zip(missing, fitted, strict=True))
        return [self._cache[i] for i in idx]

    def family(self, n: int, start: int = 0) -> ModelFamily:
        """Models ``start .. start + n − 1`` as a :class:`ModelFamily` (for its validity)."""
        check_integer(n, "n", low=1)
        check_integer(start, "start", low=0)
        idx = range(int(start), int(start) + int(n))
        return ModelFamily(self.models(idx), f"retrain:{self.change}",
                           [self.seed(i) for i in idx], meta=self.summary())

    @property
    def cached(self) -> list[int]:
        """Indices of the models fitted so far."""
        return sorted(self._cache)

    def summary(self) -> dict[str, Any]:
        """What the procedure is (JSON-able): copied into certificates."""
        out = {"change": self.change, "random_state": self.random_state,
               **{k: v for k, v in self._meta.items() if v is not None}}
        return out

    def __repr__(self) -> str:
        return (f"RetrainProcedure(change={self.change!r}, random_state={self.random_state}, "
                f"n_fitted={self.n_fitted})")
