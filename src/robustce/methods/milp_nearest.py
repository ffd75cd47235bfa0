"""``MILPNearest``: the closest valid counterfactual by mixed-integer programming
(Mohammadi, Karimi, Barthe, Valera 2021 — "Scaling guarantees for nearest counterfactual
explanations").

For a query ``q`` and target class ``t`` it solves

    min_x  dist(x, q)
    s.t.   x in the encoded input domain (one-hot groups, integer grids, thermometer ordinals,
           binaries; immutable features fixed to q; increase/decrease-only bounded by q),
           margin_t(network(x)) >= tau,

with the ReLU network encoded exactly (big-M from interval bounds over the query's actionable
box; stable neurons without binaries). The optimum is certified by the solver: ``optimal`` in
the certificate means the distance is minimal within the MIP gap.

Distances are per raw feature, in model space (every column is already range-normalised):
a feature's distance is the sum of ``w_j |x_j - q_j|`` over its columns, with ``w_j = 1`` for
scaled, binary and integer-coded columns, ``1/2`` for one-hot columns (a category change costs
1) and ``1/(k-1)`` for the ``k-1`` thermometer columns of a k-level ordinal (the full range
costs 1). ``l1`` sums the feature distances, ``linf`` takes their maximum, ``l0`` counts the
changed features. ``l0`` and ``linf`` add ``tie_break`` times the L1 distance so that the
chosen point does not move more than it must.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.models.network import class_margin
from robustce.solvers.encodings import encode_input_domain, encode_network
from robustce.solvers.milp import MILP, SolveStatus, check_solver

__all__ = ["MILPNearest", "column_weights", "feature_distance"]

NORMS = ("l1", "l0", "linf")


def column_weights(encoder: Any) -> np.ndarray:
    """Per model-space column, the weight of ``|x_j - q_j|`` in its feature's distance."""
    w = np.ones(encoder.n_features_out_)
    for b in encoder.blocks_:
        if b.encoding == "onehot":
            w[b.slice] = 0.5
        elif b.encoding == "thermometer":
            w[b.slice] = 1.0 / max(b.width, 1)
    return w


def feature_distance(encoder: Any, q: np.ndarray, X: np.ndarray, norm: str = "l1",
                     weights: np.ndarray | None = None, tol: float = 1e-9) -> np.ndarray:
    """Distance of each row of ``X`` from the query ``q`` as :class:`MILPNearest` measures it."""
    w = column_weights(encoder) if weights is None else np.asarray(weights, dtype=np.float64)
    X = np.atleast_2d(X)
    cols = w * np.abs(X - q[None, :])
    owner = encoder.feature_of_column_
    per_feature = np.zeros((len(X), len(encoder.blocks_)))
    np.add.at(per_feature.T, owner, cols.T)
    if norm == "l1":
        return per_feature.sum(axis=1)
    if norm == "linf":
        return per_feature.max(axis=1)
    if norm == "l0":
        return (per_feature > tol).sum(axis=1).astype(np.float64)
    raise ValidationError(f"norm must be one of {NORMS}, got {norm!r}")


@dataclass
class _Nearest:
    status: str  # found / infeasible / timeout / error
    cf: np.ndarray | None
    objective: float = math.nan
    bound: float = math.nan
    gap: float = math.nan
    optimal: bool = False
    solver_status: str = ""
    time: float = 0.0
    message: str = ""


class MILPNearest(Explainer):
    """The nearest counterfactual under the model's exact MILP encoding (Mohammadi et al.).

    Parameters
    ----------
    model : a ReLU MLP (or any model with a ``network()`` view); ``data`` is not needed.
    norm : "l1" (default), "l0" or "linf" — see the module docstring.
    tau : validity margin: the CE's target margin must be at least ``tau`` (> 0; guards
        against solver tolerances so that the forward pass agrees).
    weights : optional per-column distance weights (default :func:`column_weights`).
    tie_break : weight of the L1 distance added to the ``l0`` / ``linf`` objectives.
    solver : "highs" (default) or "gurobi".
    mip_gap : relative optimality gap at which the solver stops (certificate ``gap``).
    threads : solver threads per query.
    target_class, time_limit, random_state, n_jobs : see :class:`Explainer`; ``time_limit``
        is the solver time per query.

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : the returned CE's distance from the query (``norm``).
    bound : the solver's proven lower bound on the optimal objective.
    gap : relative MIP gap at the end of the solve.
    optimal : True when the solver proved optimality (within ``mip_gap``).
    margin : target margin of the CE under the model (forward pass).
    solver, solver_status : backend and its final status.

    Statuses: ``found`` (optimal, or the best incumbent when the time limit hit — then
    ``optimal`` is False); ``infeasible`` (proven: no actionable point reaches margin ``tau``);
    ``timeout`` (no valid point found in time); ``error``.
    """

    name: ClassVar[str] = "milp_nearest"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "bound", "gap", "optimal", "margin", "solver", "solver_status")

    def __init__(self, model: Any, data: Any = None, *, norm: str = "l1", tau: float = 1e-3,
                 weights: Any = None, tie_break: float = 1e-3, solver: str = "highs",
                 mip_gap: float = 1e-4, threads: int = 1, **kwargs: Any):
        super().__init__(model, data, **kwargs)
        if norm not in NORMS:
            raise ValidationError(f"norm must be one of {NORMS}, got {norm!r}")
        if not (float(tau) > 0 and math.isfinite(float(tau))):
            raise ValidationError(f"tau must be a positive number, got {tau}")
        if tie_break < 0:
            raise ValidationError(f"tie_break must be >= 0, got {tie_break}")
        if not 0 <= mip_gap < 1:
            raise ValidationError(f"mip_gap must be in [0, 1), got {mip_gap}")
        self.solver = check_solver(solver)  # SolverError for unknown / missing backends
        d = self.encoder.n_features_out_
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64).reshape(-1)
            if w.shape[0] != d or np.any(w < 0) or not np.isfinite(w).all():
                raise ValidationError(f"weights must be {d} non-negative finite numbers")
        self.norm = norm
        self.tau = float(tau)
        self.weights = None if weights is None else [float(v) for v in np.asarray(weights).ravel()]
        self.tie_break = float(tie_break)
        self.mip_gap = float(mip_gap)
        self.threads = int(threads)
        self._network = model.network()  # raises UnsupportedModelError for non-ReLU models

    def _weights(self) -> np.ndarray:
        return column_weights(self.encoder) if self.weights is None else np.asarray(self.weights)

    # --- the MILP -------------------------------------------------------------------------
    def _nearest(self, q: np.ndarray, target: int, tau: float, time_limit: float) -> _Nearest:
        """Solve the nearest-CE MILP for one query with validity margin ``tau``."""
        net = self._network
        enc = self.encoder
        m = MILP(self.solver, time_limit=max(time_limit, 1e-3), mip_gap=self.mip_gap,
                 threads=self.threads)
        try:
            dom = encode_input_domain(m, enc, q, actionability=True)
        except ValidationError as exc:
            return _Nearest("infeasible", None, message=f"no actionable point: {exc}")
        x = dom.index
        ne = encode_network(m, net, dom.vars)
        y = ne.outputs
        k = net.n_outputs
        if k == 1:
            if target == 1:
                m.add_constrs_coo([0], [y[0]], [1.0], 1, tau, np.inf)
            else:
                m.add_constrs_coo([0], [y[0]], [1.0], 1, -np.inf, -tau)
        else:
            others = np.array([j for j in range(k) if j != target])
            r = np.arange(len(others))
            m.add_constrs_coo(np.concatenate([r, r]), np.concatenate([np.full(len(r), y[target]), y[others]]),
                              np.concatenate([np.ones(len(r)), -np.ones(len(r))]), len(r), tau, np.inf)
        # per-column |x_j - q_j| as a_j * var_j + c_j
        w = self._weights()
        lo, hi = dom.lower, dom.upper
        movable = hi > lo
        is_bin = (dom.column_kind == "binary") & np.isin(q, (0.0, 1.0))
        lin = movable & is_bin
        gen = movable & ~is_bin
        dvar = np.full(len(q), -1, dtype=np.int64)
        acoef = np.zeros(len(q))
        const = np.zeros(len(q))
        dvar[lin], acoef[lin], const[lin] = x[lin], np.where(q[lin] == 0.0, 1.0, -1.0), q[lin]
        g = np.flatnonzero(gen)
        if g.size:
            dv = m.add_vars(g.size, 0.0, np.maximum(hi[g] - q[g], q[g] - lo[g]))
            rr = np.arange(g.size)
            # d - x >= -q ; d + x >= q
            m.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([dv, x[g]]),
                              np.concatenate([np.ones(g.size), -np.ones(g.size)]), g.size, -q[g], np.inf)
            m.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([dv, x[g]]),
                              np.concatenate([np.ones(g.size), np.ones(g.size)]), g.size, q[g], np.inf)
            dvar[g], acoef[g] = dv, 1.0
        cols = np.flatnonzero(movable)
        l1_cols, l1_coef, l1_const = dvar[cols], w[cols] * acoef[cols], float((w[cols] * const[cols]).sum())
        owner = enc.feature_of_column_
        if self.norm == "l1":
            m.set_objective(l1_cols, l1_coef, constant=l1_const)
        elif self.norm == "linf":
            tvar = m.add_vars(1, 0.0, np.inf)
            feats = np.unique(owner[cols])
            fidx = {f: i for i, f in enumerate(feats)}
            rows = np.array([fidx[f] for f in owner[cols]], dtype=np.int64)
            rhs = np.zeros(len(feats))
            np.add.at(rhs, rows, w[cols] * const[cols])
            # t - sum_j w_j a_j var_j >= sum_j w_j c_j
            m.add_constrs_coo(np.concatenate([np.arange(len(feats)), rows]),
                              np.concatenate([np.full(len(feats), tvar[0]), dvar[cols]]),
                              np.concatenate([np.ones(len(feats)), -w[cols] * acoef[cols]]),
                              len(feats), rhs, np.inf)
            m.set_objective(np.concatenate([tvar, l1_cols]),
                            np.concatenate([[1.0], self.tie_break * l1_coef]),
                            constant=self.tie_break * l1_const)
        else:  # l0
            feats = np.unique(owner[cols])
            cvar = m.add_vars(len(feats), 0.0, 1.0, "B")
            fmap = dict(zip(feats.tolist(), cvar.tolist(), strict=True))
            cf = np.array([fmap[f] for f in owner[cols]], dtype=np.int64)
            n = cols.size
            rr = np.arange(n)
            # x_j - (hi_j - q_j) c_f <= q_j ;  -x_j - (q_j - lo_j) c_f <= -q_j
            m.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cf]),
                              np.concatenate([np.ones(n), -(hi[cols] - q[cols])]), n, -np.inf, q[cols])
            m.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cf]),
                              np.concatenate([-np.ones(n), -(q[cols] - lo[cols])]), n, -np.inf, -q[cols])
            m.set_objective(np.concatenate([cvar, l1_cols]),
                            np.concatenate([np.ones(len(cvar)), self.tie_break * l1_coef]),
                            constant=self.tie_break * l1_const)
        res = m.solve()
        st = res.status
        base = {"objective": res.objective, "bound": res.bound, "gap": res.gap,
                "solver_status": st.value, "time": res.time, "message": res.message}
        if st is SolveStatus.INFEASIBLE:
            return _Nearest("infeasible", None, **base)
        if res.has_solution and st in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
            xs = np.clip(res.values[x], lo, hi)
            xs = self.encoder.project(xs[None])[0]
            return _Nearest("found", xs, optimal=st is SolveStatus.OPTIMAL, **base)
        if st in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
            return _Nearest("timeout", None, **base)
        return _Nearest("error", None, **{**base, "message": f"solver: {st.value} {res.message}"})

    def _certificate(self, q: np.ndarray, target: int, r: _Nearest) -> dict[str, Any]:
        cert: dict[str, Any] = {
            "distance": math.nan, "bound": r.bound, "gap": r.gap, "optimal": r.optimal,
            "margin": math.nan, "solver": self.solver, "solver_status": r.solver_status,
        }
        if r.cf is not None:
            cert["distance"] = float(feature_distance(self.encoder, q, r.cf[None], self.norm,
                                                      self._weights())[0])
            cert["margin"] = float(class_margin(self._network.forward(r.cf[None]), target)[0])
        return cert

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        r = self._nearest(x, int(target), self.tau, self.time_limit)
        cert = self._certificate(x, int(target), r)
        if r.status == "found":
            msg = "" if r.optimal else f"time limit: best incumbent, gap {r.gap:.3g}"
            return QueryResult("found", r.cf[None], cert, message=msg)
        return QueryResult(r.status, None, cert, message=r.message)
