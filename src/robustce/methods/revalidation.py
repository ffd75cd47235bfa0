"""The re-validation of every CE a method returns (step 5 of :mod:`robustce.methods.base`'s
contract), as the mixin :class:`Revalidation` of :class:`~robustce.methods.base.Explainer`:
each CE projected to a valid encoding, decoded to the raw row the user receives and re-encoded,
checked against actionability (immutable, increase-/decrease-only; causal children freed), the
constraints and the model's raw ``predict`` — and the user's own estimator or module for
imported models (:func:`original_predict`); a CE that only the raw round trip breaks is
repaired (moved off its split threshold) or dropped. Also what the results record of it: the
decoded rows reused (:class:`_Decoder`) and ``meta["constraints"]`` (:func:`constraints_meta`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from robustce.data.constraints import Constraints
from robustce.explanations import Explanations, QueryResult
from robustce.models.base import Model
from robustce.models.trees import SplitMargins

__all__ = ["ACTION_TOL", "Revalidation", "constraints_meta", "original_predict"]

ACTION_TOL = 1e-7


class Revalidation:
    """The CE checks of :class:`~robustce.methods.base.Explainer` (its base class): what an
    explainer does with the CEs its hook returned before they reach the user. Uses the
    explainer's ``model``, ``encoder``, ``constraint_support()`` and resolved constraints."""

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
