"""The incumbents of the nearest-CE search: feasible CEs known before the MILP, whose
objective becomes its cutoff (and, under ``l1`` / ``linf``, the radius of the box it is built
over). For a network: the nearest valid, actionable training points, the segments from the
query to them, greedy steps in the network's linear regions and the segment back from each
step; for a tree model: the training points moved into the query's box, every change of one
feature to a split bound and feature tweaking's candidates (:func:`tree_candidates`), checked
through the raw-row round trip."""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.models.network import class_margin
from robustce.nearest.core import Incumbent, NearestCore, _jacobian
from robustce.solvers.tree_encoding import TreeEnsemble, pull_towards_query, single_feature_moves

__all__ = ["IncumbentSearch", "tree_candidates"]

_N_SEGMENTS = 8  # nearest valid training points whose segments to the query are searched
_N_STEPS = 32  # points per segment
#: a tree model's nearest incumbent candidates checked through the raw-row round trip
_N_ROUND_TRIP = 16
#: a tree model's nearest valid candidates pulled back towards the query (before the round trip)
_N_PULLED = 4


def tree_candidates(ensemble: TreeEnsemble, encoder: Any, tweaker: Any,
                    query: np.ndarray, target: int, lower: np.ndarray, upper: np.ndarray, *,
                    valid: Any, cost: Any, extra: np.ndarray | None = None) -> np.ndarray:
    """Valid CE candidates of a tree model for ``query``, nearest first: every change of one
    feature to a split bound (:func:`single_feature_moves`), feature tweaking's candidates
    (``tweaker``: ``query`` moved into each target leaf of each tree) and ``extra`` points,
    those that ``valid`` accepts, with the nearest few pulled back towards the query while
    valid (:func:`pull_towards_query`). The incumbents of :class:`MILPNearest` and the seeds
    of MACE's tree MILP.

    Parameters
    ----------
    ensemble : the model's :class:`TreeEnsemble`.
    encoder : the fitted encoder.
    tweaker : a :class:`~robustce.methods.PlausibleFeatureTweaking` over the model.
    query : the query (d,), model space.
    target : the target class.
    lower, upper : the actionable box (d,).
    valid : bool per row of an (n, d) array.
    cost : distance of each row of an (n, d) array from ``query``.
    extra : further (n, d) candidates (checked by ``valid`` too).

    Returns
    -------
    (m, d) array of valid candidates by increasing cost.
    """
    parts = [single_feature_moves(ensemble, encoder, query, lower, upper),
             tweaker.candidates(query, int(target))]
    if extra is not None and len(extra):
        parts.append(extra)
    P = np.vstack(parts)
    P = P[valid(P)] if len(P) else P
    if not len(P):
        return P
    best = np.argsort(cost(P), kind="stable")[:_N_PULLED]
    P = np.vstack([P, pull_towards_query(ensemble, encoder, query, P[best], lower, upper,
                                         valid=valid, cost=cost)])
    return P[np.argsort(cost(P), kind="stable")]


class IncumbentSearch(NearestCore):
    """The incumbents of :class:`~robustce.nearest.search.NearestSearch` (module
    docstring)."""

    def _candidates(self, target: int) -> tuple[np.ndarray, np.ndarray]:
        """Training points the model puts in class ``target`` and their target margins, by
        decreasing margin (computed once per class, then cached)."""
        t = int(target)
        if t not in self._candidates_:
            X = self.encoder.transform(self.data.frame)
            margin = self._margins(X, t)
            keep = np.flatnonzero(margin > 0)
            order = keep[np.argsort(-margin[keep], kind="stable")]
            self._candidates_[t] = (np.ascontiguousarray(X[order]), margin[order])
        return self._candidates_[t]

    def _ranked_candidates(self, q: np.ndarray, target: int) -> np.ndarray:
        """Positions in :meth:`_candidates` of the rows actionable for ``q``, by increasing
        objective value (ties by position). Independent of the margin asked, so computed
        once for the last query (MILP-R's rounds ask again for the same query)."""
        key = (int(target), q.tobytes())
        cached = self._ranked_
        if cached is not None and cached[0] == key:
            return cached[1]
        X, _ = self._candidates(target)
        ok = np.flatnonzero(self.actionable(q, X, tol=0.0)) if len(X) else np.zeros(0, int)
        ranked = ok[np.argsort(self._objective_values(q, X[ok]), kind="stable")] \
            if ok.size else ok
        self._ranked_ = (key, ranked)
        return ranked

    def incumbent(self, q: np.ndarray, target: int, tau: float,
                  seeds: np.ndarray | None = None) -> Incumbent | None:
        """A point of least objective among: the nearest training points with target margin
        ≥ ``tau`` that are actionable for ``q``, the points on the segments from ``q`` to them
        (continuous columns interpolated, the others at the training point's values: still
        actionable and in the domain), and greedy linear-region steps from ``q``
        (:meth:`_linear_steps`; needs no data) for networks; for tree models the training
        points moved into ``q``'s box (:meth:`_boxed_candidates`) with the candidates of
        :func:`tree_candidates` (one-feature moves to split bounds, feature tweaking, pulled
        back towards ``q``; need no data), of which the nearest few are checked through the
        raw-row round trip. ``seeds``: further points
        actionable for ``q`` (e.g. MILP-R's CEs of earlier rounds), each a candidate itself
        and the start of linear-region steps. Each candidate kept has forward-pass margin
        ≥ ``tau``. None without ``warm_start`` or any such point."""
        if not self.warm_start:
            return None
        pts = []
        if self.data is not None:
            X, margin = self._candidates(target)
            n = int(np.searchsorted(-margin, -tau, side="right"))  # margin >= tau: a prefix
            ranked = self._ranked_candidates(q, target)
            ok = ranked[ranked < n][:_N_SEGMENTS]
            near = X[ok]
            if self._ensemble_ is not None and n:
                # tree models: also the valid training points moved into the query's
                # actionable box (immutables set to the query's, monotone columns clipped):
                # with immutable features, few training points are actionable as they are
                near = np.vstack([near, self._boxed_candidates(q, X[:n])])
            if len(near):
                cont = self._continuous_columns()
                lam = np.linspace(0.0, 1.0, _N_STEPS + 1)[1:]
                P = np.repeat(near[:, None, :], len(lam), axis=1)  # (k, steps, d)
                P[:, :, cont] = q[cont] + lam[None, :, None] * (near[:, None, cont] - q[cont])
                pts.append(P.reshape(-1, len(q)))
        cont = self._continuous_columns(with_grid=True)
        for start in ([q] if self._ensemble_ is None else []) + (
                [] if seeds is None else list(np.atleast_2d(seeds))):
            if start is not q:
                pts.append(start[None])
            step = self._linear_steps(q, int(target), tau, cont, start=start)
            if step is not None:
                pts.append(step[None])
                seg = self._segment(q, step, cont, int(target), tau)
                if seg is not None:
                    pts.append(seg[None])
        if not pts and self._ensemble_ is None:
            return None
        P = np.vstack(pts) if pts else np.zeros((0, len(q)))
        if self._ensemble_ is None:
            P = self._valid_incumbents(q, int(target), tau, P)
        else:
            P = tree_candidates(self._ensemble_, self.encoder, self._tweaker(), q, int(target),
                                *self._feasible_set().bounds(q),
                                valid=lambda C: self._valid_mask(q, int(target), tau, C),
                                cost=lambda C: self._objective_values(q, C), extra=P)
            # a tree model's incumbent is the raw row the user gets (decoded and encoded
            # again), so that its routing, not only the model-space point's, is checked: the
            # nearest few candidates go through that round trip (decoded rows are valid
            # encodings: no re-validation) and are checked again (an immutable continuous
            # column may come back an ulp off the query's value, as every CE's round trip
            # does: with the final validation's tolerance)
            enc = self.encoder
            if len(P):
                P = self._valid_incumbents(q, int(target), tau,
                                           enc._encode(enc.inverse_transform(P[:_N_ROUND_TRIP])),
                                           tol=self._action_tol)
        zp = self._objective_values(q, P)
        if len(P) == 0:
            return None
        i = int(np.argmin(zp))
        return Incumbent(P[i].copy(), float(zp[i]))

    def _valid_mask(self, q: np.ndarray, target: int, tau: float, P: np.ndarray,
                    tol: float = 0.0) -> np.ndarray:
        """Per row of ``P``, whether it may be an incumbent for ``q``: target margin ≥
        ``tau``, the constraints met, and (tree models, whose candidates include moved
        training points) actionable within ``tol``."""
        ok = self._margins(P, target) >= tau if len(P) else np.zeros(0, dtype=bool)
        if self._ensemble_ is not None and len(P):
            ok &= self.actionable(q, P, tol=tol)
        if self.constraints_ is not None and ok.any():
            ok[ok] = self.constraints_.satisfied(q, P[ok])  # an incumbent never breaks them
        return ok

    def _valid_incumbents(self, q: np.ndarray, target: int, tau: float, P: np.ndarray,
                          tol: float = 0.0) -> np.ndarray:
        """The rows of ``P`` that pass :meth:`_valid_mask`."""
        return P[self._valid_mask(q, target, tau, P, tol)]

    def _boxed_candidates(self, q: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The rows of ``X`` moved into ``q``'s actionable box (:meth:`FeasibleSet.bounds`;
        one-hot blocks projected), the ``_N_SEGMENTS`` nearest to ``q``. They need not keep
        their class: :meth:`incumbent` checks every candidate."""
        lo, hi = self._feasible_set().bounds(q)
        C = self.encoder.project(np.clip(X, lo, hi), lo, hi)
        order = np.argsort(self._objective_values(q, C), kind="stable")
        return C[order[:_N_SEGMENTS]]

    def _segment(self, q: np.ndarray, x: np.ndarray, cont: np.ndarray, target: int,
                 tau: float) -> np.ndarray | None:
        """The point ``q + λ (x − q)`` of least λ in (0, 1) whose forward-pass margin reaches
        ``tau`` (columns ``cont`` interpolated, the others at ``x``; grid columns rounded away
        from ``q`` to their lattice, so each column stays between ``q`` and ``x``: as
        actionable as ``x``): λ on a grid, then on a finer grid below the first that
        reaches it. A linear-region step (:meth:`_linear_steps`) can overshoot — a margin
        that rises faster once a ReLU switches on — and it aims 1 % past ``tau``. None when
        no point of the grid reaches ``tau`` (not even ``x``)."""
        kind, steps = self._column_kinds()
        g = cont[kind[cont] == "grid"]
        st = steps[g].astype(np.float64)
        d = x[cont] - q[cont]

        def points(lam: np.ndarray) -> np.ndarray:
            P = np.repeat(x[None], len(lam), axis=0)
            P[:, cont] = q[cont] + lam[:, None] * d
            if g.size:
                up = np.ceil(P[:, g] * st - 1e-9) / st
                down = np.floor(P[:, g] * st + 1e-9) / st
                P[:, g] = np.where(x[g] > q[g], np.minimum(up, x[g]), np.maximum(down, x[g]))
            return P

        lo, hi, best = 0.0, 1.0, None
        for _ in range(2):
            lam = np.linspace(lo, hi, _N_STEPS + 1)[1:]
            P = points(lam)
            ok = np.flatnonzero(class_margin(self._network.forward(P), int(target)) >= tau)
            if ok.size == 0:
                break
            k = int(ok[0])
            best = P[k]
            lo, hi = (lam[k - 1] if k else lo), lam[k]
        return best

    def _linear_steps(self, q: np.ndarray, target: int, tau: float, cont: np.ndarray,
                      n_steps: int = 8, start: np.ndarray | None = None) -> np.ndarray | None:
        """A few greedy steps on the continuous columns: in the linear region of the current
        point, the least weighted-L1 move that lifts the margin to ``tau`` (columns by
        |∂margin/∂x_j| / w_j, each moved to its actionable bound until the linear margin
        reaches ``tau``), from ``start`` (default ``q``; the actionable bounds stay those of
        ``q``). Returns a point whose forward-pass margin is ≥ ``tau``, or None."""
        enc = self.encoder
        free = ~enc.immutable_mask_[cont]
        cols = cont[free]
        kind, steps = self._column_kinds()
        grid = kind[cols] == "grid"
        steps = steps[cols].astype(np.float64)
        if cols.size == 0:
            return None
        lo = np.where(enc.increasing_mask_[cols], q[cols], 0.0)
        hi = np.where(enc.decreasing_mask_[cols], q[cols], 1.0)
        w = self._weights()[cols]
        x = (q if start is None else start).copy()
        net = self._network
        for _ in range(n_steps):
            J, y = _jacobian(net, x)
            margin = float(class_margin(y[None], target)[0])
            if margin >= tau:
                return x
            if J.shape[0] == 1:
                g = J[0, cols] * (1.0 if target == 1 else -1.0)
            else:
                others = np.delete(np.arange(J.shape[0]), target)
                g = J[target, cols] - J[others[np.argmax(y[others])], cols]
            need = (tau - margin) * 1.01 + 1e-6
            room = np.where(g > 0, hi - x[cols], x[cols] - lo)
            gain = np.abs(g) * room  # margin gained by moving a column to its bound
            order = np.argsort(-np.abs(g) / np.maximum(w, 1e-12), kind="stable")
            order = order[(np.abs(g[order]) > 0) & (room[order] > 0)]
            if order.size == 0:
                return None
            cum = np.cumsum(gain[order])
            k = int(np.searchsorted(cum, need))
            move = np.zeros(cols.size)
            full = order[:k]
            move[full] = room[full]
            if k < order.size:
                j = order[k]
                move[j] = (need - (cum[k - 1] if k else 0.0)) / abs(g[j])
            x[cols] = np.clip(x[cols] + np.sign(g) * move, lo, hi)
            if grid.any():  # grid columns: to their lattice, in the direction of the move
                gc, st = cols[grid], steps[grid]
                up = np.ceil(x[gc] * st - 1e-9) / st
                down = np.floor(x[gc] * st + 1e-9) / st
                x[gc] = np.clip(np.where(g[grid] > 0, up, down), lo[grid], hi[grid])
        margin = float(class_margin(net.forward(x[None]), target)[0])
        return x if margin >= tau else None

