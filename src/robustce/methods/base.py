"""The explainer interface shared by every method.

An explainer is built as ``Method(model, data, **params)`` (trainable ones also ``fit(data)``)
and has one public verb, ``explain(queries) -> Explanations``. The base class does everything
that is the same for all methods:

1. validates and encodes the queries (raw DataFrame, :class:`Dataset` or model-space array);
2. decides each query's target class (``target_class`` if given; binary: the other class);
3. marks queries already in the target class (status ``already_target``, no exception);
4. calls the method's hook on the remaining queries, batch-first;
5. **re-validates every returned CE**: projected to a valid encoding, checked against
   immutable / monotone features, and checked by a plain forward pass of the model — CEs that
   fail are dropped and the message says so;
6. packs results, certificates, timings and metadata into :class:`Explanations`.

Subclasses implement either ``_explain_batch(X, targets)`` (vectorised methods) or
``_explain_one(x, target)`` (per-query methods; the base maps it over queries with joblib when
``n_jobs != 1``). Both return :class:`QueryResult` objects with encoded CEs. A subclass lists
its certificate fields in ``certificate_columns`` and documents them in its docstring.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from robustce.data.dataset import Dataset
from robustce.errors import RobustCEError, ValidationError
from robustce.explanations import Explanations, QueryResult
from robustce.models.base import Model
from robustce.utils import check_random_state, package_version

__all__ = ["Explainer", "QueryResult"]

ACTION_TOL = 1e-7


class Explainer:
    """Base class of all counterfactual explainers.

    Parameters
    ----------
    model : Model — the classifier to explain (``model.encoder`` defines model space).
    data : Dataset or None — training data (neighbour search, plausibility, fitting).
    target_class : int or None — desired class; ``None`` = the other class (binary only).
    time_limit : float — per-query time budget in seconds (solver limits, search caps).
    random_state : int, Generator or None — the only source of randomness.
    n_jobs : int — joblib workers for per-query methods (1 = sequential).
    """

    name: ClassVar[str] = "explainer"
    certificate_columns: ClassVar[tuple[str, ...]] = ()
    trainable: ClassVar[bool] = False

    def __init__(
        self,
        model: Model,
        data: Dataset | None = None,
        *,
        target_class: int | None = None,
        time_limit: float = 60.0,
        random_state: int | np.random.Generator | None = None,
        n_jobs: int = 1,
    ):
        if not isinstance(model, Model):
            raise ValidationError(f"model must be a robustce Model, got {type(model).__name__}")
        model._check_fitted()
        if data is not None and not isinstance(data, Dataset):
            raise ValidationError(f"data must be a robustce Dataset, got {type(data).__name__}")
        if target_class is not None and not 0 <= int(target_class) < model.n_classes:
            raise ValidationError(
                f"target_class must be in [0, {model.n_classes}), got {target_class}"
            )
        if model.n_classes > 2 and target_class is None:
            raise ValidationError("multi-class models need an explicit target_class")
        if not time_limit or time_limit <= 0:
            raise ValidationError(f"time_limit must be positive seconds, got {time_limit}")
        if int(n_jobs) == 0:
            raise ValidationError("n_jobs must be non-zero (-1 = all cores)")
        self.model = model
        self.data = data
        self.target_class = None if target_class is None else int(target_class)
        self.time_limit = float(time_limit)
        self.random_state = random_state
        self.n_jobs = int(n_jobs)

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
        out = {}
        for p in self.param_names():
            v = getattr(self, p, None)
            out[p] = v.to_dict() if hasattr(v, "to_dict") else v
        if isinstance(out.get("random_state"), np.random.Generator):
            out["random_state"] = "Generator"
        return out

    @property
    def encoder(self):  # noqa: ANN201
        return self.model.encoder

    def _rng(self) -> np.random.Generator:
        return check_random_state(self.random_state)

    def fit(self, data: Dataset | None = None) -> Explainer:
        """Trainable explainers learn here; the others need no fitting."""
        return self

    # --- the one public verb --------------------------------------------------------------
    def explain(self, queries: pd.DataFrame | Dataset | np.ndarray) -> Explanations:
        """Counterfactual explanations for each query (batch-first)."""
        frame, X = self._prepare_queries(queries)
        pred = self.model.predict(X)
        targets = self.targets_for(pred)
        results: list[QueryResult | None] = [None] * len(X)
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
            for i, r in zip(active, self._revalidate(X[active], targets[active], batch), strict=True):
                results[i] = r
        meta = {
            "method": self.name,
            "class": type(self).__name__,
            "params": self.get_params(),
            "certificate_columns": list(self.certificate_columns),
            # the distance the method minimises and its certificates report (None: no notion)
            "distance": (self.distance_.to_dict() if getattr(self, "distance_", None) is not None
                         else None),
            "class_names": list(self.model.class_names),
            "robustce_version": package_version(),
            "numpy_version": np.__version__,
        }
        return Explanations(
            queries=frame,
            queries_encoded=X,
            target_class=targets,
            results=results,
            feature_names=self.encoder.schema.names,
            decode=self.encoder.inverse_transform,
            meta=meta,
        )

    def targets_for(self, pred: np.ndarray) -> np.ndarray:
        """Target class per query: the fixed ``target_class`` or, binary, the other class."""
        if self.target_class is not None:
            return np.full(len(pred), self.target_class, dtype=np.int64)
        return (1 - pred).astype(np.int64)

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
            queries = queries.to_frame().T
        if isinstance(queries, pd.DataFrame):
            if len(queries) == 0:
                raise ValidationError("no queries given")
            if not queries.index.is_unique:
                raise ValidationError("query index labels must be unique (they become query_id)")
            X = self.encoder.transform(queries)
            frame = queries[self.encoder.schema.names]
        else:
            X = self.encoder.check_array(queries, name="queries")
            if len(X) == 0:
                raise ValidationError("no queries given")
            frame = self.encoder.inverse_transform(X)
        return frame, X

    def actionable(self, x: np.ndarray, cfs: np.ndarray, tol: float = ACTION_TOL) -> np.ndarray:
        """Per CE row: immutable columns unchanged, increase/decrease-only respected.
        ``x`` is one query (d,) or one query per CE row (m, d)."""
        enc = self.encoder
        d = cfs - (x[None, :] if x.ndim == 1 else x)
        ok = np.all(np.abs(d[:, enc.immutable_mask_]) <= tol, axis=1)
        ok &= np.all(d[:, enc.increasing_mask_] >= -tol, axis=1)
        ok &= np.all(d[:, enc.decreasing_mask_] <= tol, axis=1)
        return ok

    def _revalidate(self, X: np.ndarray, targets: np.ndarray, batch: list[QueryResult]
                    ) -> list[QueryResult]:
        """Project every CE, check actionability and the forward pass — one vectorised pass
        over all CEs of all queries — and drop the CEs that fail."""
        sizes = np.array([0 if r.cfs is None else len(r.cfs) for r in batch])
        owner = np.repeat(np.arange(len(batch)), sizes)
        if sizes.sum():
            cfs = self.encoder.project(np.vstack([r.cfs for r in batch if r.cfs is not None
                                                  and len(r.cfs)]))
            valid = self.model.predict(cfs) == targets[owner]
            act = self.actionable(X[owner], cfs)
        else:
            cfs, valid, act = np.zeros((0, X.shape[1])), np.zeros(0, bool), np.zeros(0, bool)
        starts = np.concatenate([[0], np.cumsum(sizes)])
        def per_query(flags: np.ndarray) -> np.ndarray:
            c = np.concatenate([[0], np.cumsum(flags)])
            return c[starts[1:]] - c[starts[:-1]]

        n_invalid, n_unact = per_query(~valid), per_query(valid & ~act)
        keep = valid & act
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
            if n_invalid[j] == 0 and n_unact[j] == 0:  # the common case: all CEs pass
                r.cfs = cfs[sl]
                out.append(r)
                continue
            notes = [r.message] if r.message else []
            if n_invalid[j]:
                notes.append(f"{int(n_invalid[j])} CE(s) failed the forward-pass check and were dropped")
            if n_unact[j]:
                notes.append(f"{int(n_unact[j])} CE(s) broke actionability and were dropped")
            kept = cfs[sl][keep[sl]]
            if len(kept) == 0:
                status = "error" if r.status == "found" else r.status
                out.append(QueryResult(status, None, r.certificate, r.time, "; ".join(notes)))
            else:
                out.append(QueryResult(r.status, kept, r.certificate, r.time, "; ".join(notes)))
        return out

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"
