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
from robustce.models.base import Model
from robustce.models.trees import SplitMargins
from robustce.utils import check_random_state, package_version
from robustce.validation import check_integer, check_number

__all__ = ["Explainer", "QueryResult", "Trainable", "original_predict", "resolve_class"]

ACTION_TOL = 1e-7
MAX_JOBS = 4096  # |n_jobs| cap: joblib passes it to C ints and spawns up to that many workers


class Explainer:
    """Base class of all counterfactual explainers.

    Parameters
    ----------
    model : Model — the classifier to explain (``model.encoder`` defines model space).
    data : Dataset or None — training data (neighbour search, plausibility, fitting).
    target_class : int, label or None — desired class: an index 0..K-1 or one of the model's
        ``class_names`` (``"approved"``); ``None`` = the other class (binary only).
    time_limit : float — per-query time budget in seconds (solver limits, search caps).
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

    def causal_children(self) -> np.ndarray:
        """The model-space columns of the causal model's children (empty without one): they
        are not acted upon but move with their parents (MINT), whatever their actionability.
        ``_causal_children`` set on an explainer built without constraints (PROPLACE's
        neighbour pool) names them too."""
        cols = getattr(getattr(self, "constraints_", None), "causal_columns", None)
        if cols is None:
            cols = getattr(self, "_causal_children", None)
        return np.zeros(0, dtype=np.int64) if cols is None else np.asarray(cols, dtype=np.int64)

    def action_masks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Model-space masks (immutable, increase-only, decrease-only) of the schema's
        actionability, the causal children (:meth:`causal_children`) freed."""
        enc = self.encoder
        imm, inc, dec = enc.immutable_mask_, enc.increasing_mask_, enc.decreasing_mask_
        children = self.causal_children()
        if len(children):
            free = np.zeros(len(imm), dtype=bool)
            free[children] = True
            imm, inc, dec = imm & ~free, inc & ~free, dec & ~free
        return imm, inc, dec

    def actionable(self, x: np.ndarray, cfs: np.ndarray, tol: float = ACTION_TOL) -> np.ndarray:
        """Per CE row: immutable columns unchanged, increase/decrease-only respected.
        ``x`` is one query (d,) or one query per CE row (m, d)."""
        d = cfs - (x[None, :] if x.ndim == 1 else x)
        imm, inc, dec = self.action_masks()
        ok = np.all(np.abs(d[:, imm]) <= tol, axis=1)
        ok &= np.all(d[:, inc] >= -tol, axis=1)
        ok &= np.all(d[:, dec] <= tol, axis=1)
        return ok

    def _round_trip(self, cfs: np.ndarray, targets: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The raw rows a user receives for the model-space CEs ``cfs`` and whether they
        keep their target class — one vectorised pass over all rows.

        Each row is decoded (``inverse_transform``: integers rounded, labels restored) and
        re-encoded; that encoding ``E`` is what :class:`Explanations` stores, and the user
        receives ``R = inverse_transform(E)``. ``E`` and ``R`` are scored by the model
        (``E`` and ``transform(R)``: the two agree but for the last bit of a decoded float)
        and, for a model imported from scikit-learn or torch, ``R`` also by the user's own
        estimator or module. ``cfs`` themselves are scored in the same forward pass as ``E``
        and ``transform(R)`` (one ``predict`` of the three stacked). Returns ``(E, ok,
        forward, raw)``: ``forward``, whether each row of ``cfs`` has its target class in model
        space; ``raw``, the decoded rows ``R`` (what the user receives for ``E``)."""
        enc = self.encoder
        E = enc.encode_decoded(cfs)  # = _encode(inverse_transform(cfs)), on arrays
        raw = enc.inverse_transform(E)
        pred = self.model.predict(np.vstack([cfs, E, enc._encode(raw)])).reshape(3, len(E))
        forward, pred = pred[0] == targets, pred[1:]
        ok = np.all(pred == targets[None, :], axis=0)
        if ok.any():
            own = original_predict(self.model, raw.iloc[np.flatnonzero(ok)])
            if own is not None:
                ok[ok] = own == targets[ok]
        return E, ok, forward, raw

    def _revalidate(self, X: np.ndarray, targets: np.ndarray, batch: list[QueryResult]
                    ) -> list[QueryResult]:
        """:meth:`_revalidated`'s results."""
        return self._revalidated(X, targets, batch)[0]

    def _revalidated(self, X: np.ndarray, targets: np.ndarray, batch: list[QueryResult]
                     ) -> tuple[list[QueryResult], tuple[np.ndarray, pd.DataFrame] | None]:
        """Project every CE, take it through the raw round trip (:meth:`_round_trip`),
        check actionability and the forward pass — one vectorised pass over all CEs of all
        queries — and repair or drop the CEs that fail.

        The invariant: a kept CE is stored as the encoding of the raw row the user receives,
        and that raw row gets its target class from the model's raw ``predict`` (and from
        the user's own estimator or module when the model was imported). A CE that the
        forward pass accepts in model space but that decoding breaks (a value on a split
        threshold, rounding of an integer) is repaired when moving its changed continuous
        columns by the split margin (:class:`~robustce.models.trees.SplitMargins`) away from
        the query makes it pass; otherwise it is dropped, and the message says which.

        Returns the results and, where no CE was repaired, ``(E, R)``: the kept CEs stacked
        in query order and their decoded raw rows (so that :class:`Explanations` need not
        decode them again); None otherwise."""
        sizes = np.array([0 if r.cfs is None else len(r.cfs) for r in batch])
        owner = np.repeat(np.arange(len(batch)), sizes)
        repaired = np.zeros(int(sizes.sum()), bool)
        if sizes.sum():
            box = self.encoder.domain(X[owner])  # each CE's search box: its query's
            cfs = self.encoder.project(np.vstack([r.cfs for r in batch if r.cfs is not None
                                                  and len(r.cfs)]), *box)
            tgt = targets[owner]
            cfs, valid, forward, raw = self._round_trip(cfs, tgt)  # and the forward pass
            fix = np.flatnonzero(forward & ~valid)
            if len(fix):
                cand = self.encoder.project(self._nudge(X[owner[fix]], cfs[fix]),
                                            box[0][fix], box[1][fix])
                cand, ok, _, _ = self._round_trip(cand, tgt[fix])
                cfs[fix[ok]] = cand[ok]
                valid[fix[ok]] = True
                repaired[fix[ok]] = True
            act = self.actionable(X[owner], cfs)
            sat = self._satisfies_constraints(X[owner], cfs)
        else:
            cfs, valid, act = np.zeros((0, X.shape[1])), np.zeros(0, bool), np.zeros(0, bool)
            forward, sat, raw = np.zeros(0, bool), np.zeros(0, bool), None
        starts = np.concatenate([[0], np.cumsum(sizes)])
        def per_query(flags: np.ndarray) -> np.ndarray:
            c = np.concatenate([[0], np.cumsum(flags)])
            return c[starts[1:]] - c[starts[:-1]]

        valid &= forward  # a CE the method got wrong is dropped, however it decodes
        n_invalid = per_query(~forward)
        n_trip = per_query(forward & ~valid)
        n_unact = per_query(valid & ~act)
        n_fixed = per_query(repaired & act)
        n_constr = per_query(valid & act & ~sat)
        keep = valid & act & sat
        # the kept CEs, in query order, are cfs[keep] (a query passing whole keeps cfs[sl])
        decoded = (None if raw is None or repaired.any()
                   else (cfs[keep], raw.iloc[np.flatnonzero(keep)]))
        out = []
        for j, r in enumerate(batch):
            if sizes[j] == 0:
                if r.status == "found":
                    r = QueryResult("error", certificate=r.certificate, time=r.time,
                                    message="method reported 'found' without a counterfactual")
                r.cfs = None
                out.append(r)
                continue
            sl = slice(starts[j], starts[j + 1])
            if (n_invalid[j] == 0 and n_trip[j] == 0 and n_unact[j] == 0 and n_fixed[j] == 0
                    and n_constr[j] == 0):
                r.cfs = cfs[sl]  # the common case: all CEs pass as they are
                out.append(r)
                continue
            notes = [r.message] if r.message else []
            if n_invalid[j]:
                notes.append(f"{int(n_invalid[j])} CE(s) failed the forward-pass check and were dropped")
            if n_trip[j]:
                notes.append(f"{int(n_trip[j])} CE(s) lost the target class once decoded to raw "
                             "values (the raw round trip) and were dropped")
            if n_fixed[j]:
                notes.append(f"{int(n_fixed[j])} CE(s) lost the target class once decoded to raw "
                             "values and were repaired (moved off a split threshold by its "
                             "margin)")
            if n_unact[j]:
                notes.append(f"{int(n_unact[j])} CE(s) broke actionability and were dropped")
            if n_constr[j]:
                notes.append(f"{int(n_constr[j])} CE(s) violated the constraints and were "
                             "removed")
            kept = cfs[sl][keep[sl]]
            if len(kept) == 0:
                status = "error" if r.status == "found" else r.status
                if (status == "error" and n_constr[j] > 0
                        and self.constraint_support() == "filter"):
                    # a filtering method: every CE it found that held (valid, actionable)
                    # breaks the constraints, the others were dropped as any method's are —
                    # no proof that none exists (that is "infeasible"), only that none was found
                    status = "not_found"
                out.append(QueryResult(status, None, r.certificate, r.time, "; ".join(notes)))
            else:
                out.append(QueryResult(r.status, kept, r.certificate, r.time, "; ".join(notes)))
        if getattr(self, "_constraints_obj", None) is not None:
            # per query, how many of the method's CEs the constraints removed (a filtering
            # method's count of candidates; 0 for an exact method, whose CEs satisfy them)
            for r, n in zip(out, n_constr, strict=True):
                r.certificate = {**r.certificate, "constraints_removed": int(n)}
        return out, decoded

    def _satisfies_constraints(self, X: np.ndarray, cfs: np.ndarray) -> np.ndarray:
        """Per CE row (model space; ``X``: its query), whether its raw row satisfies the
        constraints by the independent evaluator (:meth:`Constraints.satisfied` on the
        decoded rows); all True without constraints."""
        c = getattr(self, "_constraints_obj", None)
        if c is None or not len(cfs):
            return np.ones(len(cfs), dtype=bool)
        enc = self.encoder
        return c.satisfied(enc.inverse_transform(cfs), enc.inverse_transform(X))

    def _nudge(self, X: np.ndarray, cfs: np.ndarray) -> np.ndarray:
        """``cfs`` with every changed continuous column moved one split margin further from
        its query row in ``X`` (a CE on a threshold moves into its leaf's box)."""
        margins = SplitMargins.of(self.encoder)
        step = margins(np.arange(cfs.shape[1])[None, :], cfs)
        d = cfs - X
        move = margins.continuous[None, :] & (np.abs(d) > ACTION_TOL)
        return np.where(move, cfs + np.sign(d) * step, cfs)  # the caller projects to the domain

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


def constraints_meta(constraints: Constraints, support: str, expl: Explanations
                     ) -> dict[str, Any]:
    """What ``Explanations.meta["constraints"]`` records (beside their ``source``): the
    constraints (``relations``, ``max_changes``), how the method honoured them (``support``:
    "exact" or "filter"), and
    per CE row (in ``expl.counterfactuals`` order) the relations that are active — tight
    within the evaluator's tolerance (:meth:`Constraints.active`)."""
    cfs = expl.counterfactuals
    active: list[list[str]] = [[] for _ in range(len(cfs))]
    if len(cfs) and constraints.relations:
        tight = constraints.active(cfs[list(expl.feature_names)])
        texts = np.array(tight.columns, dtype=object)
        active = [texts[row].tolist() for row in tight.to_numpy()]
    return {**constraints.to_dict(), "support": support, "active": active}


def _unknown_params_message(cls: type, unknown: list[str]) -> str:
    import difflib

    valid = cls.param_names()
    hints = []
    for name in unknown:
        if name == "delta" and "shift" in valid:
            hints.append("δ goes in shift= (a number, or rc.robustness.ParameterShift(delta))")
        else:
            close = difflib.get_close_matches(name, valid, n=1)
            if close:
                hints.append(f"did you mean {close[0]!r}?")
    return (f"{cls.__name__} does not take {', '.join(map(repr, unknown))}"
            + (f" ({'; '.join(hints)})" if hints else "")
            + f"; its parameters are {', '.join(valid)}")


def is_label(value: Any) -> bool:
    """Whether ``value`` names a class by its label (a string) rather than by its index."""
    return isinstance(value, str | np.str_)


def resolve_class(value: Any, class_names: tuple[Any, ...]) -> int:
    """The index of a class given as an index (an integer) or as a label among
    ``class_names``; :class:`~robustce.errors.ValidationError` naming the labels otherwise."""
    if not is_label(value):
        check_integer(value, "target_class", low=0, high=len(class_names) - 1)
        return int(value)
    labels = [str(c) for c in class_names]
    if str(value) not in labels:
        mapping = ", ".join(f"{k} = {c}" for k, c in enumerate(labels))
        raise ValidationError(f"target_class {value!r} is not a class of the model; its "
                              f"classes are {mapping}")
    return labels.index(str(value))


class _Decoder:
    """``encoder.inverse_transform``, answering from ``known = (E, R)`` (CEs already decoded
    by the round trip) when asked for exactly ``E``."""

    def __init__(self, encoder: Any, known: tuple[np.ndarray, pd.DataFrame] | None):
        self.encoder, self.known = encoder, known

    def __call__(self, X: np.ndarray) -> pd.DataFrame:
        if self.known is not None:
            E, raw = self.known
            if E.shape == np.shape(X) and np.array_equal(E, X):
                return raw
        return self.encoder.inverse_transform(X)


def original_predict(model: Model, raw: pd.DataFrame) -> np.ndarray | None:
    """Class indices (0..K-1) that the *user's own* model behind ``model`` predicts on the raw
    rows ``raw``: the scikit-learn estimator or pipeline of a ``from_sklearn`` model, the torch
    module of a ``from_torch`` model (through its scikit-learn preprocessor when it has one);
    None for models robustce evaluates itself (its own MLP, ``wrap``-ped estimators, which
    ``predict`` already runs)."""
    if not len(raw):
        return np.zeros(0, dtype=np.int64)
    if callable(getattr(model, "estimator_predict", None)):
        return np.asarray(model.estimator_predict(raw), dtype=np.int64)
    if callable(getattr(model, "module_predict", None)):
        pre = getattr(model, "preprocessor", None)
        if pre is None and getattr(model, "preprocessing", None) is not None:
            return None  # a folded preprocessor that was not kept: predict already runs it
        return np.asarray(model.module_predict(raw if pre is not None else
                                               model.encoder._encode(raw), pre), dtype=np.int64)
    return None


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
