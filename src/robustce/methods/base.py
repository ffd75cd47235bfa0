"""The explainer interface shared by every method.

An explainer is built as ``Method(model, data, **params)`` (trainable ones, subclasses of
:class:`Trainable`, also ``fit(data)``) and has one public verb, ``explain(queries,
target_class=None) -> Explanations``. The base class does everything that is the same for all
methods:

1. validates and encodes the queries (raw DataFrame, :class:`Dataset` or model-space array);
2. decides each query's target class (the per-call ``target_class``, else the constructor's;
   binary: the other class);
3. marks queries already in the target class (status ``already_target``, no exception);
4. calls the method's hook on the remaining queries, batch-first;
5. **re-validates every returned CE**: projected to a valid encoding, decoded to the raw row
   the user receives and re-encoded (the stored encoding is that raw row's), checked against
   immutable / monotone features, and checked by the model's raw ``predict`` of that row —
   and by the user's own estimator or module for imported models. A CE that only the raw
   round trip breaks is repaired (moved off its split threshold) or dropped; CEs that fail
   are dropped and the message says which;
6. packs results, certificates, timings and metadata into :class:`Explanations`.

Subclasses implement either ``_explain_batch(X, targets)`` (vectorised methods) or
``_explain_one(x, target)`` (per-query methods; the base maps it over queries with joblib when
``n_jobs != 1``). Both return :class:`QueryResult` objects with encoded CEs. A subclass lists
its certificate fields in ``certificate_columns`` and documents them in its docstring.

Parameters, scikit-learn style: a constructor stores each parameter *as given* under its own
name (so ``Method(model, data, **m.get_params())`` rebuilds the same explainer) and then calls
``super().__init__(model, data, **kwargs)``; the base constructor ends by calling
:meth:`Explainer._check_params` once — the one place where parameters are validated (with
:mod:`robustce.validation`) and derived state (names ending in ``_``) is built. A subclass's
``_check_params`` calls ``super()._check_params()`` first, then checks its own parameters.

Modules: step 5 (the re-validation of returned CEs) is the mixin
:class:`~robustce.methods.revalidation.Revalidation`; the shared parameter checks (target
class by index or label, ``n_jobs`` cap, unknown keywords) are in :mod:`robustce.methods.params`.
"""

from __future__ import annotations

import inspect
import time
import warnings
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from robustce.data.constraint_source import FROM_DATASET, resolve_constraints
from robustce.data.constraints import CompiledConstraints, Constraints
from robustce.data.dataset import Dataset
from robustce.errors import (
    ConstraintsDataWarning,
    NotFittedError,
    ParameterError,
    RobustCEError,
    UnsupportedConstraintsError,
    ValidationError,
)
from robustce.explanations import Explanations, QueryResult
from robustce.methods.params import MAX_JOBS, _unknown_params_message, is_label, resolve_class
from robustce.methods.revalidation import ACTION_TOL as ACTION_TOL  # re-exported
from robustce.methods.revalidation import (
    Revalidation,
    _Decoder,
    constraints_meta,
    original_predict,
)
from robustce.models.base import Model
from robustce.utils import check_random_state, package_version
from robustce.validation import check_integer, check_number

__all__ = ["Explainer", "QueryResult", "Trainable", "original_predict", "resolve_class"]


class Explainer(Revalidation):
    """Base class of all counterfactual explainers.

    Parameters
    ----------
    model : Model — the classifier to explain (``model.encoder`` defines model space).
    data : Dataset or None — training data (neighbour search, plausibility, fitting).
    target_class : int, label or None — desired class: an index 0..K-1 or one of the model's
        ``class_names`` (``"approved"``); ``None`` = the other class (binary only).
    time_limit : float — per-query time budget in seconds (solver limits, search caps). For
        the solver-based methods (MILP, PROPLACE, MACE's MILP backend and hint, the exact
        Δ-test) these are **CPU seconds of the solving thread** (the process's where a solver
        runs several threads), with a wall-clock safety net of ``WALL_SLACK ×`` (10×;
        :mod:`robustce.solvers.clock`), so a query gets the same status on an idle and on a
        loaded host; a ``timeout`` message names the limit that stopped it. MACE's z3
        backend turns it into a deterministic work budget; the gradient and sampling searches
        (Wachter, ROAR, RBR, ...) cap their loops by wall-clock seconds. Reported times stay
        wall-clock.
    random_state : int, Generator or None — the only source of randomness.
    n_jobs : int — joblib workers for per-query methods (1 = sequential).
    constraints : ``"dataset"`` (the default: the constraints ``data`` ships in
        ``data.meta["constraints"]``, if any), ``None`` or ``"none"`` (none), or the user's —
        a :class:`~robustce.data.Constraints`, a mapping for
        :meth:`~robustce.data.Constraints.from_dict`, a list of relations — which replace the
        dataset's: linear relations between raw features, conditionals, groups, a causal
        model and ``max_changes`` (``docs/constraints.md``). The result's
        ``meta["constraints"]["source"]`` says which applied. Validated once against the
        schema. A method honours them as its class declares (``_constraints``, set on the
        class itself, not inherited): ``"exact"`` (encoded in its search), ``"filter"``
        (returned CEs that violate them are removed, and the message says how many); any
        other method raises :class:`~robustce.errors.UnsupportedConstraintsError`.

    Examples
    --------
    A method implements ``_explain_one`` (or the vectorised ``_explain_batch``) on
    model-space rows; the base class validates and encodes the queries, picks each target
    class and re-checks every CE returned on the model. Here, the lowest income on a grid
    that the model approves:

    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> model = rc.models.wrap(LogisticRegression().fit(enc.transform(data.frame), data.y), enc)
    >>> class IncomeGrid(Explainer):
    ...     name = "income_grid"
    ...     def _explain_one(self, x, target):
    ...         cf = np.repeat(x[None, :], 21, axis=0)
    ...         cf[:, self.encoder.block("income").slice] = np.linspace(0, 1, 21)[:, None]
    ...         ok = self.model.predict(cf) == target
    ...         return QueryResult("found", cf[ok][:1]) if ok.any() else QueryResult("not_found")
    >>> rejected = data.frame[model.predict(data.frame) == 0].head(3)
    >>> res = IncomeGrid(model, data).explain(rejected)
    >>> res.status.tolist(), res.counterfactuals["income"].round(2).tolist()
    (['not_found', 'found', 'not_found'], [177400.0])
    """

    name: ClassVar[str] = "explainer"
    #: how this class honours ``constraints``: "exact", "filter" or "none" (read from the
    #: class's own ``__dict__``: a subclass declares its own, see :meth:`constraint_support`)
    _constraints: ClassVar[str] = "none"
    certificate_columns: ClassVar[tuple[str, ...]] = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Explainer:
        # an unknown keyword is a typed error naming the valid ones, not a bare TypeError
        unknown = sorted(set(kwargs) - {"model", "data", *cls.param_names()})
        if unknown:
            raise ParameterError(_unknown_params_message(cls, unknown))
        return super().__new__(cls)

    def __init__(
        self,
        model: Model,
        data: Dataset | None = None,
        *,
        target_class: int | None = None,
        time_limit: float = 60.0,
        random_state: int | np.random.Generator | None = None,
        n_jobs: int = 1,
        constraints: Constraints | str | None = FROM_DATASET,
    ):
        self.model = model
        self.data = data
        self.target_class = target_class
        self.time_limit = time_limit
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.constraints = constraints
        self._check_params()

    @classmethod
    def constraint_support(cls) -> str:
        """How this class honours ``constraints``: "exact", "filter" or "none" (declared on
        the class itself: a subclass of an exact method is not exact until it says so)."""
        return str(vars(cls).get("_constraints", "none"))

    def _check_params(self) -> None:
        """Validate every parameter (subclasses: ``super()._check_params()``, then their own)
        and build derived state. Raises :class:`~robustce.errors.ValidationError`."""
        model = self.model
        if not isinstance(model, Model):
            raise ValidationError(f"model must be a robustce Model, got {type(model).__name__}")
        model._check_fitted()
        if self.data is not None and not isinstance(self.data, Dataset):
            raise ValidationError(f"data must be a robustce Dataset, got {type(self.data).__name__}")
        self._check_common_params(model.n_classes, model.class_names)
        #: the constraints in model space (None without constraints)
        self.constraints_: CompiledConstraints | None = None
        if self._constraints_obj is not None:
            # a copy, so that validation binds it to this schema, not the user's object
            c = Constraints.from_dict(self._constraints_obj.to_dict())
            self._constraints_obj = c
            try:
                self.constraints_ = c.compile(self.encoder)
            except ValidationError as exc:
                if self._constraints_origin["source"] != "dataset":
                    raise
                raise ValidationError(
                    f"the constraints dataset {self._constraints_origin.get('dataset')!r} "
                    f"ships do not fit this model: {exc}; give constraints=None to switch "
                    "them off") from None
            if self.data is not None and c.relations:
                self._check_constraints_on_data(c)

    def _check_constraints_on_data(self, c: Constraints) -> None:
        """The relations against the training rows (once): none satisfies them all — a
        ValidationError naming each relation and its count; some violate them — a
        :class:`~robustce.errors.ConstraintsDataWarning` with the counts."""
        counts = c.check_data(self.data.frame)
        bad = {t: n for t, n in counts.items() if n}
        if bad:
            parts = "; ".join(f"{t!r}: {n} of {len(self.data)} rows" for t, n in bad.items())
            warnings.warn(ConstraintsDataWarning(
                f"training rows violate the constraints ({parts}); CEs will satisfy them"),
                stacklevel=4)

    def _check_common_params(self, n_classes: int,
                             class_names: tuple[Any, ...] | None = None) -> None:
        """The parameters every explainer has and that need no model beyond its classes
        (``target_class``, ``time_limit``, ``random_state``, ``n_jobs``). A label
        ``target_class`` is checked against ``class_names`` where they are known."""
        if is_label(self.target_class):
            if class_names is None:  # CounterNet before fit: no labels to look it up in
                raise ValidationError(f"target_class {self.target_class!r}: a class label "
                                      "needs the model's class names; give a class index")
            resolve_class(self.target_class, class_names)
        else:
            check_integer(self.target_class, "target_class", low=0, high=n_classes - 1,
                          allow_none=True)
        check_number(self.time_limit, "time_limit", low=0, low_open=True)
        rs = self.random_state
        if not (rs is None or isinstance(rs, np.random.Generator)):
            check_integer(rs, "random_state", low=0)
        check_integer(self.n_jobs, "n_jobs", low=-MAX_JOBS, high=MAX_JOBS)
        if self.n_jobs == 0:
            raise ValidationError("n_jobs must be non-zero (-1 = all cores)")
        self._resolve_constraints(getattr(self, "data", None))

    def _resolve_constraints(self, data: Dataset | None) -> None:
        """``_constraints_obj`` (the constraints to apply, or None) and
        ``_constraints_origin`` (where they come from) from ``constraints`` and ``data``'s
        shipped ones. A class that cannot honour constraints skips the dataset's (the
        origin says so) and raises :class:`UnsupportedConstraintsError` for given ones."""
        self._constraints_obj, self._constraints_origin = resolve_constraints(
            getattr(self, "constraints", None), data)
        if self._constraints_obj is None or self.constraint_support() in ("exact", "filter"):
            return
        if self._constraints_origin["source"] == "dataset":
            self._constraints_origin = {
                **self._constraints_origin, "source": "off",
                "not_applied": self._constraints_obj.to_dict(),
                "reason": f"{type(self).__name__} cannot honour constraints"}
            self._constraints_obj = None
        else:
            raise UnsupportedConstraintsError(
                f"{type(self).__name__} cannot honour constraints (neither exactly nor by "
                "filtering its CEs); every built-in method declares how it does — see "
                "docs/constraints.md")

    # --- availability -------------------------------------------------------------------
    @classmethod
    def missing_dependency(cls) -> str | None:
        """Why this method cannot run in this installation (an optional extra that is not
        installed), or ``None``. The benchmark runner skips such a method's cells with this
        reason instead of failing them."""
        return None

    # --- parameters ---------------------------------------------------------------------
    @classmethod
    def param_names(cls) -> list[str]:
        """Constructor parameters beyond (model, data) — what configs may set."""
        names: list[str] = []
        for klass in cls.__mro__:
            if "__init__" not in vars(klass) or klass is object:
                continue
            params = inspect.signature(klass.__init__).parameters
            names += [p for p, v in params.items() if p not in ("self", "model", "data", *names)
                      and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)]
            if not any(v.kind is v.VAR_KEYWORD for v in params.values()):
                break  # the parents' parameters are not passed through
        return names

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (beyond model and data) as given:
        ``type(m)(m.model, m.data, **m.get_params())`` rebuilds the same explainer."""
        return {p: getattr(self, p, None) for p in self.param_names()}

    def _plain_params(self) -> dict[str, Any]:
        """:meth:`get_params` with objects as plain values (``to_dict``), for metadata."""
        out = {}
        for p, v in self.get_params().items():
            if isinstance(v, np.random.Generator):
                v = "Generator"
            elif isinstance(v, np.ndarray):
                v = v.tolist()
            out[p] = v.to_dict() if hasattr(v, "to_dict") else v
        return out

    @property
    def encoder(self):  # noqa: ANN201
        return self.model.encoder

    def _rng(self) -> np.random.Generator:
        return check_random_state(self.random_state)

    # --- the one public verb --------------------------------------------------------------
    def explain(self, queries: pd.DataFrame | Dataset | np.ndarray,
                target_class: Any = None) -> Explanations:
        """Counterfactual explanations for each query (batch-first).

        ``target_class``: the desired class for this call — one class for every query, or one
        per query — overriding the constructor's ``target_class``; ``None`` uses that (binary
        models: the other class by default)."""
        if isinstance(self, Trainable):
            self._check_fitted()
        frame, X = self._prepare_queries(queries)
        pred = self.model.predict(X)
        targets = self.targets_for(pred, target_class)
        results: list[QueryResult | None] = [None] * len(X)
        decoded = None
        for i in np.flatnonzero(pred == targets):
            results[i] = QueryResult("already_target", time=0.0,
                                     message="model already predicts the target class")
        active = np.flatnonzero(pred != targets)
        if len(active):
            t0 = time.perf_counter()
            batch = self._explain_batch(X[active], targets[active])
            elapsed = time.perf_counter() - t0
            if len(batch) != len(active):
                raise RobustCEError(f"{type(self).__name__} returned {len(batch)} results "
                                    f"for {len(active)} queries")
            for r in batch:
                if r.time is None:
                    r.time = elapsed / len(active)
            checked, decoded = self._revalidated(X[active], targets[active], batch)
            for i, r in zip(active, checked, strict=True):
                results[i] = r
        meta = {
            "method": self.name,
            "class": type(self).__name__,
            "params": self._plain_params(),
            "certificate_columns": list(self.certificate_columns),
            # the distance the method minimises and its certificates report (None: no notion)
            "distance": (self.distance_.to_dict() if getattr(self, "distance_", None) is not None
                         else None),
            "class_names": list(self.model.class_names),
            "robustce_version": package_version(),
            "numpy_version": np.__version__,
        }
        out = Explanations(
            queries=frame,
            queries_encoded=X,
            target_class=targets,
            results=results,
            feature_names=self.encoder.schema.names,
            decode=_Decoder(self.encoder, decoded),
            meta=meta,
        )
        c = getattr(self, "_constraints_obj", None)
        origin = getattr(self, "_constraints_origin", {})
        if c is not None:
            out.meta["constraints"] = {**constraints_meta(c, self.constraint_support(), out),
                                       **origin}
        elif "not_applied" in origin:  # switched off (or unsupported): say which were not
            out.meta["constraints"] = dict(origin)
        return out

    def targets_for(self, pred: np.ndarray, target_class: Any = None) -> np.ndarray:
        """Target class per query: ``target_class`` (a class, or one per query), else the
        constructor's ``target_class``, else (binary models) the other class."""
        n, k = len(pred), self.model.n_classes
        if target_class is None:
            target_class = self.target_class
        if target_class is None:
            if k > 2:
                raise ValidationError(f"the model has {k} classes: give a target_class (to the "
                                      "constructor or to explain)")
            return (1 - np.asarray(pred)).astype(np.int64)
        names = tuple(self.model.class_names)
        if np.ndim(target_class) == 0:
            if is_label(target_class):
                target_class = resolve_class(target_class, names)
            check_integer(target_class, "target_class", low=0, high=k - 1)
            return np.full(n, int(target_class), dtype=np.int64)
        t = np.asarray(target_class)
        if t.dtype.kind in "OUS":  # labels ("approved"), one per query
            t = np.array([resolve_class(v, names) for v in t.tolist()], dtype=np.int64)
        if t.shape != (n,):
            raise ValidationError(f"target_class must be one class or one per query ({n}), got "
                                  f"shape {t.shape}")
        if t.dtype.kind not in "iu" or (n and not (t.min() >= 0 and t.max() < k)):
            raise ValidationError(f"target_class must hold integer classes in [0, {k - 1}], got "
                                  f"{t.tolist() if n <= 10 else t.dtype}")
        return t.astype(np.int64)

    # --- hooks ------------------------------------------------------------------------------
    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        """Explain queries X (encoded, none in its target class). Default: per query."""
        if self.n_jobs == 1 or len(X) == 1:
            return [self._timed_one(x, int(t)) for x, t in zip(X, targets, strict=True)]
        return Parallel(n_jobs=self.n_jobs)(
            delayed(self._timed_one)(x, int(t)) for x, t in zip(X, targets, strict=True)
        )

    def _timed_one(self, x: np.ndarray, target: int) -> QueryResult:
        t0 = time.perf_counter()
        try:
            r = self._explain_one(x, target)
        except RobustCEError as exc:
            r = QueryResult("error", message=f"{type(exc).__name__}: {exc}")
        if r.time is None:
            r.time = time.perf_counter() - t0
        return r

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        raise NotImplementedError(f"{type(self).__name__} implements neither _explain_batch "
                                  "nor _explain_one")

    # --- shared checks --------------------------------------------------------------------
    def _prepare_queries(self, queries: Any) -> tuple[pd.DataFrame, np.ndarray]:
        if isinstance(queries, Dataset):
            queries = queries.frame
        if isinstance(queries, pd.Series):
            queries = self._series_row(queries)
        if isinstance(queries, pd.DataFrame):
            if len(queries) == 0:
                raise ValidationError("no queries given")
            if not queries.index.is_unique:
                raise ValidationError("query index labels must be unique (they become query_id)")
            X = self.encoder.transform(queries)
            names = self.encoder.schema.names
            frame = queries.copy() if list(queries.columns) == names else queries[names]
        else:
            X = self.encoder.check_array(queries, name="queries")
            if len(X) == 0:
                raise ValidationError("no queries given")
            frame = self.encoder.inverse_transform(X)
        return frame, X

    def _series_row(self, row: pd.Series) -> pd.DataFrame:
        """One query given as a Series (``frame.iloc[i]``, object dtype on mixed schemas) as a
        one-row frame with each column's own dtype: the schema's recorded dtype, else the
        value's natural one."""
        frame = row.to_frame().T
        index = frame.index if row.name is not None else pd.RangeIndex(1)
        cols = {}
        for name in frame.columns:
            col = pd.Series(frame[name].to_list(), index=index, name=name).infer_objects()
            feature = (self.encoder.schema[name] if name in self.encoder.schema.names else None)
            if feature is not None and feature.dtype:
                try:
                    col = col.astype(feature.dtype)
                except (TypeError, ValueError):
                    pass  # left as inferred: the schema check names the column
            cols[name] = col
        return pd.DataFrame(cols, index=index)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


class Trainable:
    """Mixin for explainers that learn from data before they explain (CounterNet, RoCourseNet):
    ``Method(model, data, **params).fit(train)``, then ``explain``. Subclasses implement
    ``_fit(data)``; ``explain`` before ``fit`` raises :class:`~robustce.errors.NotFittedError`.

    Put it first among the bases: ``class CounterNet(Trainable, Explainer)``."""

    def fit(self, data: Dataset) -> Trainable:
        """Learn from the training ``data``; returns the explainer."""
        if not isinstance(data, Dataset):
            raise ValidationError(f"fit needs a robustce Dataset, got {type(data).__name__}")
        self._fit(data)
        self.is_fitted_ = True
        return self

    def _fit(self, data: Dataset) -> None:
        raise NotImplementedError(f"{type(self).__name__} is Trainable but implements no _fit")

    def _check_fitted(self) -> None:
        if not getattr(self, "is_fitted_", False):
            raise NotFittedError(f"{type(self).__name__} learns from data: call fit(train) "
                                 "before explain")
