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

The distance is ``Distance(norm, weights, space="raw")`` (:mod:`robustce.distance`): per raw
feature, the sum of ``w_j |x_j - q_j|`` over its columns, with ``w_j = 1`` for scaled, binary
and integer-coded columns, ``1/2`` for one-hot columns (a category change costs 1) and
``1/(k-1)`` for the ``k-1`` thermometer columns of a k-level ordinal (the full range costs 1).
``l1`` sums the feature distances, ``linf`` takes their maximum, ``l0`` counts the changed
features; the objective is :func:`robustce.solvers.encodings.encode_distance`. ``l0`` and
``linf`` add ``tie_break`` times the L1 distance so that the chosen point does not move more
than it must.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from robustce.distance import L0_TOL, Distance, check_norm, raw_column_weights
from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.models.network import class_margin
from robustce.solvers.encodings import encode_distance, encode_input_domain, encode_network
from robustce.solvers.milp import MILP, SolveStatus, check_solver
from robustce.validation import check_integer, check_number

__all__ = ["MILPNearest", "column_weights", "feature_distance"]

NORMS = ("l1", "l0", "linf")


def column_weights(encoder: Any) -> np.ndarray:
    """Per model-space column, the weight of ``|x_j - q_j|`` in its feature's distance
    (:func:`robustce.distance.raw_column_weights`)."""
    return raw_column_weights(encoder)


def feature_distance(encoder: Any, q: np.ndarray, X: np.ndarray, norm: str = "l1",
                     weights: np.ndarray | None = None, tol: float = L0_TOL) -> np.ndarray:
    """Distance of each row of ``X`` from the query ``q`` as :class:`MILPNearest` measures it:
    ``Distance(norm, weights, space="raw", tol=tol)``."""
    return Distance(norm, weights=weights, space="raw", tol=tol).rowwise(q, X, encoder)


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
        self.norm = norm
        self.tau = tau
        self.weights = weights
        self.tie_break = tie_break
        self.solver = solver
        self.mip_gap = mip_gap
        self.threads = threads
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        check_norm(self.norm, NORMS)
        check_number(self.tau, "tau", low=0, low_open=True)
        check_number(self.tie_break, "tie_break", low=0)
        check_number(self.mip_gap, "mip_gap", low=0, high=1, high_open=True)
        check_integer(self.threads, "threads", low=1)
        self.solver_ = check_solver(self.solver)  # SolverError for unknown / missing backends
        d = self.encoder.n_features_out_
        if self.weights is not None:
            try:
                w = np.asarray(self.weights, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError):
                w = np.full(1, np.nan)
            if w.shape[0] != d or np.any(w < 0) or not np.isfinite(w).all():
                raise ValidationError(f"weights must be {d} non-negative finite numbers")
        #: the distance minimised and reported (certificate ``distance``)
        self.distance_ = Distance(self.norm, weights=self.weights, space="raw")
        self._network = self.model.network()  # UnsupportedModelError for non-ReLU models

    def _weights(self) -> np.ndarray:
        return self.distance_.column_weights(self.encoder)

    # --- the MILP -------------------------------------------------------------------------
    def _nearest(self, q: np.ndarray, target: int, tau: float, time_limit: float) -> _Nearest:
        """Solve the nearest-CE MILP for one query with validity margin ``tau``."""
        net = self._network
        enc = self.encoder
        m = MILP(self.solver_, time_limit=max(time_limit, 1e-3), mip_gap=self.mip_gap,
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
        encode_distance(m, dom, q, self.distance_, enc, tie_break=self.tie_break).set_as_objective(m)
        res = m.solve()
        st = res.status
        base = {"objective": res.objective, "bound": res.bound, "gap": res.gap,
                "solver_status": st.value, "time": res.time, "message": res.message}
        if st is SolveStatus.INFEASIBLE:
            return _Nearest("infeasible", None, **{**base, "message": (
                f"proven infeasible: no actionable point has target-class margin >= {tau:g}")})
        if res.has_solution and st in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
            xs = np.clip(res.values[x], dom.lower, dom.upper)
            xs = self.encoder.project(xs[None])[0]
            return _Nearest("found", xs, optimal=st is SolveStatus.OPTIMAL, **base)
        if st in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
            return _Nearest("timeout", None, **base)
        return _Nearest("error", None, **{**base, "message": f"solver: {st.value} {res.message}"})

    def _certificate(self, q: np.ndarray, target: int, r: _Nearest) -> dict[str, Any]:
        cert: dict[str, Any] = {
            "distance": math.nan, "bound": r.bound, "gap": r.gap, "optimal": r.optimal,
            "margin": math.nan, "solver": self.solver_, "solver_status": r.solver_status,
        }
        if r.cf is not None:
            cert["distance"] = float(self.distance_.rowwise(q, r.cf[None], self.encoder)[0])
            cert["margin"] = float(class_margin(self._network.forward(r.cf[None]), target)[0])
        return cert

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        r = self._nearest(x, int(target), self.tau, self.time_limit)
        cert = self._certificate(x, int(target), r)
        if r.status == "found":
            msg = "" if r.optimal else f"time limit: best incumbent, gap {r.gap:.3g}"
            return QueryResult("found", r.cf[None], cert, message=msg)
        return QueryResult(r.status, None, cert, message=r.message)
