"""``PROPLACE``: provably robust and plausible counterfactuals by robust optimisation
(Jiang, Lan, Leofante, Rago, Toni 2024, Algorithm 1).

For a query x with target class t, PROPLACE solves problem (2):

    min_{x'} ‖x' − x‖₁   s.t.   margin_t(θ'(x')) ≥ 0 for every θ' ∈ Δ,   x' ∈ X_plaus,

where Δ = {θ' : ‖θ' − θ‖_∞ ≤ δ} and X_plaus (Definition 10) is the convex hull of the query
and its k Δ-robust nearest neighbours S_{k,Δ} (Definition 9, from
:class:`~robustce.methods.RobustNearestNeighbour`), intersected here with the valid encodings
of model space (one-hot groups, integer grids, thermometer ordinals, binaries) and with the
query's actionability (immutable features fixed, increase/decrease-only bounded by x).

Algorithm 1 (a cutting-plane loop over a working set Δ′ ⊂ Δ, Δ′ = {θ} at first):

1. **outer problem** (eq. 3, MILP (5)): the closest x' in the region that *every* network in
   Δ′ puts in class t with margin ≥ σ. Each member of Δ′ is its own copy of the exact ReLU
   encoding (:func:`~robustce.solvers.encodings.encode_network`: own binaries, big-M from
   interval bounds over the region's bounding box); the region is λ ≥ 0, Σλ = 1,
   x' = Σ λ_l v_l (:func:`~robustce.solvers.encodings.encode_hull_region`);
2. **inner problem** (eq. 4, MILP (6)): the Δ-test at x' (the certifier protocol; default
   :class:`~robustce.robustness.ExactDeltaCertifier`, the exact MILP test). If it proves
   Δ-robustness, stop. Otherwise its evidence — the worst network in Δ at x', the argmax of
   MILP (6), whose margin there is below σ − t — joins Δ′. (Any violating network would serve
   the convergence argument below, e.g. a sign-attack vertex, but the argmax cuts deeper:
   on HELOC 2 iterations instead of 3–5, 2–3× faster per CE.)

Tolerances (Proposition 2): the outer problem demands margin ≥ σ (``sigma``) on Δ′, the loop
stops when the exact test proves the worst case over Δ is ≥ σ − t (``t``; a MILP dual bound
≥ σ − t, or an interval bound > 0), with σ > t > 0. Each witness added has margin < σ − t at
the current x' and every later x' must reach σ on it, so consecutive solutions are separated
by t / L (L a Lipschitz constant of the network in x), which bounds the number of iterations.
The k vertices are certified with worst-case margin ≥ σ, so they are feasible for every Δ′ and
the loop cannot become infeasible (Proposition 1: sound and complete whenever a Δ-robust
neighbour exists). A per-query iteration cap and time budget end the loop with ``timeout``.

Soundness: the CE returned is the projected solution itself — the very point the last
Δ-test proved robust (the default certifier solves the full worst-case MILP, so the certificate
reports its exact worst-case margin); a CE that is not proven is never reported ``found``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, delayed

from robustce.distance import Distance, feature_fixed_costs
from robustce.errors import UnsupportedConstraintsError, ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.methods.robust_nearest_neighbour import RobustNearestNeighbour
from robustce.models.network import ReLUNetwork
from robustce.nearest import causal_input_domain, priced_weights
from robustce.robustness.certifier import Certifier, CertStatus
from robustce.robustness.exact import ExactDeltaCertifier
from robustce.robustness.shift import ParameterShift
from robustce.solvers.clock import Budget
from robustce.solvers.encodings import (
    InputVars,
    encode_constraints,
    encode_distance,
    encode_hull_region,
    encode_network,
)
from robustce.solvers.fixed_cost_encoding import add_fixed_costs
from robustce.solvers.milp import MILP, SolveStatus, check_solver
from robustce.solvers.tightening import l1_ball_layer_bounds
from robustce.validation import check_bool, check_choice, check_integer, check_number

__all__ = ["PROPLACE"]

#: HiGHS options of the outer MILP: its RINS / RENS / root-reduced-cost sub-MIPs took most of
#: the time on HELOC's outer problems without changing the optimum (same objective, ~2× faster
#: on the dumped models)
_HIGHS_OUTER = {"mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False,
                "mip_heuristic_run_root_reduced_cost": False}


#: with constraints, the neighbours asked for per query: k times this (the k nearest that
#: satisfy the constraints become the vertices)
_CONSTRAINED_POOL_FACTOR = 20


@dataclass
class _Outer:
    """The outer MILP of one query, grown by one network copy per iteration."""

    milp: MILP
    x_cols: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    inputs: InputVars
    weights: np.ndarray  # λ
    vertices: np.ndarray
    radius: float  # the nearest vertex's distance (+ tolerance): no optimum lies farther
    grid_vars: np.ndarray  # integer variable of each grid column, -1 elsewhere
    grid_steps: np.ndarray
    networks: list[tuple[ReLUNetwork, Any]] = field(default_factory=list)  # (net, encoding)


class PROPLACE(Explainer):
    """Provably Δ-robust and plausible CE in the hull of the query and its k Δ-robust
    nearest neighbours (PROPLACE, Algorithm 1).

    Parameters
    ----------
    model, data : a ReLU classifier (others raise
        :class:`~robustce.errors.UnsupportedModelError`) and its training
        :class:`~robustce.data.Dataset` (the neighbours come from it).
    shift : :class:`~robustce.robustness.ParameterShift` or a number δ (p = ∞ box).
    k : number of Δ-robust nearest neighbours spanning the region (≥ 1; when fewer reachable
        ones exist, those are used and ``k_used`` says so).
    norm : "l1" — the objective ‖x' − x‖₁ in model space (MILP (5a)). With a causal model in
        ``constraints`` (MINT) a CE is an action set: the children's columns weigh 0 (their
        change is the structural equations' doing) and span their whole box whatever their
        actionability, in the region and in the neighbour pool, as in MILPNearest.
    fixed_costs : optional ``{feature: cost}`` charged once when the feature changes at all,
        on top of the ℓ1 distance (model-space units: moving one column across its range
        costs 1): the objective, the vertex radius and the certificate's ``distance`` are
        ``Distance("l1", space="raw", weights=..., fixed=...)`` (one binary per such feature,
        :func:`robustce.solvers.fixed_cost_encoding.add_fixed_costs`).
    max_iterations : cap on outer/inner iterations per query.
    sigma, t : the tolerances σ > t > 0 of Proposition 2 (logits; see the module docstring).
    certify_time_limit : seconds per exact Δ-test (pool certification and inner problem).
    certifier : the Δ-test (a :class:`~robustce.robustness.Certifier` whose evidence for a
        non-robust point is a :class:`~robustce.models.ReLUNetwork`, added to Δ′); default
        None: :class:`~robustce.robustness.ExactDeltaCertifier` at ``shift``, tol σ − t,
        ``worst_case=True``; the vertices by the same test in its fast (decide) mode. Vertices
        need a proven margin ≥ σ.
    solver : "highs" (default) or "gurobi".
    mip_gap : relative optimality gap of the outer MILP.
    threads : solver threads per MILP.
    warm_start : start every outer MILP at the nearest vertex (feasible for every Δ′); the same
        optimum, found 2–4× faster on COMPAS.
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer`; ``time_limit`` is
        the total budget per query (all iterations); ``n_jobs`` runs queries in parallel.

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : ‖x' − x‖₁ in model space (children weigh 0; plus the fixed costs of the changed
        features).
    delta : δ of the shift set.
    worst_case_margin : exact worst-case target margin of the CE over Δ (≥ σ − t for MILP
        proofs; a proven lower bound if the exact value could not be computed in time).
    iterations : outer/inner iterations used.
    n_networks : |Δ′| at the end (1 = the nominal network sufficed).
    k_used : hull vertices besides the query (≤ k).
    optimal : whether the last outer MILP was solved to optimality.
    solver_status : status of the last outer MILP.

    Statuses: ``found`` (proven Δ-robust, valid, actionable, in the region); ``no_robust_point``
    (no reachable training point is proven Δ-robust: Proposition 1's condition fails);
    ``timeout`` (time budget or ``max_iterations`` ran out, or an exact test was undecided);
    ``error``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.PROPLACE(model, train, shift=0.02).explain(rejected)
    >>> res.status.tolist()
    ['no_robust_point', 'no_robust_point', 'found']
    """

    name: ClassVar[str] = "proplace"
    _constraints: ClassVar[str] = "exact"
    _ball_bounds: ClassVar[bool] = True
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "delta", "worst_case_margin", "iterations", "n_networks", "k_used", "optimal",
        "solver_status")

    def __init__(self, model: Any, data: Any = None, *, shift: ParameterShift | float = 0.05, k: int = 20,
                 norm: str = "l1", max_iterations: int = 50, sigma: float = 1e-4, t: float = 5e-5,
                 certify_time_limit: float = 10.0, solver: str = "highs", mip_gap: float = 1e-4,
                 threads: int = 1, warm_start: bool = True, certifier: Certifier | None = None,
                 fixed_costs: Mapping[str, float] | None = None, **kwargs: Any):
        self.shift = shift
        self.fixed_costs = fixed_costs
        self.k = k
        self.norm = norm
        self.max_iterations = max_iterations
        self.sigma = sigma
        self.t = t
        self.certify_time_limit = certify_time_limit
        self.solver = solver
        self.mip_gap = mip_gap
        self.threads = threads
        self.warm_start = warm_start
        self.certifier = certifier
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        if self.data is None:
            raise ValidationError("PROPLACE needs the training data (data=): the region's vertices")
        self.shift = ParameterShift.of(self.shift)
        check_integer(self.k, "k", low=1)
        check_choice(self.norm, "norm", ("l1",))  # MILP (5a)
        check_integer(self.max_iterations, "max_iterations", low=1)
        check_number(self.t, "t", low=0, low_open=True)
        check_number(self.sigma, "sigma", low=self.t, low_open=True)  # σ > t > 0 (Proposition 2)
        check_number(self.certify_time_limit, "certify_time_limit", low=0, low_open=True)
        self.solver_ = check_solver(self.solver)
        check_number(self.mip_gap, "mip_gap", low=0, high=1, high_open=True)
        check_integer(self.threads, "threads", low=1)
        check_bool(self.warm_start, "warm_start")
        if self.certifier is not None and not callable(getattr(self.certifier, "certify", None)):
            raise ValidationError(f"certifier must have a certify method, got "
                                  f"{type(self.certifier).__name__}")
        if self.constraints_ is not None and self.constraints_.max_changes is not None:
            raise UnsupportedConstraintsError(
                "PROPLACE cannot honour max_changes: its region is the hull of the query and "
                "training points, which differ from the query in (almost) every feature; give "
                "relations only, or use MILPRobust for a Δ-robust CE with max_changes")
        #: the distance minimised and reported: ‖x' − x‖₁ over model-space columns (MILP (5a));
        #: a causal model's children weigh 0 (MINT), fixed costs are added per changed feature
        children = self.causal_children()
        fixed = (None if self.fixed_costs is None
                 else feature_fixed_costs(self.encoder, self.fixed_costs))
        if fixed is None and not len(children):
            self.distance_ = Distance("l1", space="model")
        else:  # raw space with one weight per column: the same ℓ1, plus the fixed costs
            w = priced_weights(np.ones(self.encoder.n_features_out_), children)
            self.distance_ = Distance("l1", weights=w, space="raw", fixed=fixed)
        self._network = self.model.network()  # UnsupportedModelError for non-ReLU models
        # vertices: certified with margin >= sigma, so they are feasible for every working set
        self.neighbours = RobustNearestNeighbour(
            self.model, self.data, shift=self.shift, target_class=self.target_class, norm="l1",
            tol=self.sigma, certify_time_limit=self.certify_time_limit, solver=self.solver_,
            certifier=self.certifier)
        # its pool holds the points reachable by actions: children move with their parents
        self.neighbours._causal_children = children

    def _certifier(self) -> Any:
        """The inner problem's test: the given certifier, or the exact Δ-test with tol σ − t
        solving MILP (6) for every x' (its evidence is the worst network in Δ)."""
        if self.certifier is not None:
            return self.certifier
        return ExactDeltaCertifier(self.shift, solver=self.solver_, time_limit=self.certify_time_limit,
                                   tol=self.sigma - self.t, worst_case=True)

    # --- batch: neighbours for all queries at once, then one loop per query ---------------------
    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        verts: list[np.ndarray] = [np.zeros((0, X.shape[1]))] * len(X)
        # with constraints, vertices must satisfy them (see _solve): ask for more neighbours,
        # then keep the k nearest that do
        k = self.k if self.constraints_ is None else self.k * _CONSTRAINED_POOL_FACTOR
        for tc in np.unique(targets):
            rows = np.flatnonzero(targets == tc)
            for r, S in zip(rows, self.neighbours.k_robust_neighbours(X[rows], k, int(tc)),
                            strict=True):
                verts[r] = S
        jobs = list(zip(X, targets, verts, strict=True))
        if self.n_jobs == 1 or len(jobs) == 1:
            return [self._timed(x, int(tc), S) for x, tc, S in jobs]
        return Parallel(n_jobs=self.n_jobs)(delayed(self._timed)(x, int(tc), S) for x, tc, S in jobs)

    def _timed(self, x: np.ndarray, target: int, S: np.ndarray) -> QueryResult:
        t0 = time.perf_counter()  # the report (r.time) is wall-clock; the budget CPU
        r = self._solve(x, target, S, Budget(self.time_limit, self.threads))
        r.time = time.perf_counter() - t0
        return r

    # --- Algorithm 1 for one query ---------------------------------------------------------------
    def _solve(self, x: np.ndarray, target: int, S: np.ndarray, budget: Budget) -> QueryResult:
        cert: dict[str, Any] = {"distance": math.nan, "delta": self.shift.delta,
                                "worst_case_margin": math.nan, "iterations": 0, "n_networks": 0,
                                "k_used": len(S), "optimal": False, "solver_status": None}
        n_removed = 0
        if self.constraints_ is not None and len(S):
            # a vertex must satisfy the constraints: the nearest one is then a feasible start
            # and its distance a valid radius of the ball (the region's rows keep the rest)
            keep = self.constraints_.satisfied(x, S)
            n_removed = int((~keep[:self.k]).sum())  # of the k nearest, as without constraints
            S = S[keep][:self.k]
            cert["k_used"] = len(S)
            if len(S) == 0:
                return QueryResult("no_robust_point", None, cert, message=(
                    f"none of the {len(keep)} nearest Δ-robust neighbours satisfies the "
                    "constraints: no region to search"))
        if len(S) == 0:
            info = self.neighbours.certify_pool(target)
            r = RobustNearestNeighbour._none_robust({}, info)
            return QueryResult(r.status, None, cert, message=r.message)
        note = "" if len(S) >= self.k else (
            f"only {len(S)} Δ-robust neighbour(s) reachable; the region uses them (k = {self.k})")
        if n_removed:
            note = _join(note, f"{n_removed} Δ-robust neighbour(s) violate the constraints and "
                               "are not vertices")
        outer = self._outer(x, S)
        self._add_network(outer, self._network, target)
        n_networks = 1

        def left() -> float:
            return budget.remaining()

        for it in range(1, self.max_iterations + 1):
            cert.update(iterations=it, n_networks=n_networks)
            if left() <= 1e-3:
                return QueryResult("timeout", None, cert, message=_join(
                    note, f"{budget.stop_text()} reached"))
            if self.warm_start:
                self._start_at_vertex(outer, S, 0)
            res = outer.milp.solve(time_limit=max(left(), 1e-3))
            cert.update(optimal=res.status is SolveStatus.OPTIMAL, solver_status=res.status.value)
            if not res.has_solution:
                if res.status in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
                    return QueryResult("timeout", None, cert, message=_join(
                        note, f"outer MILP: {res.message or 'time limit'}"))
                return QueryResult("error", None, cert, message=_join(
                    note, f"outer MILP: {res.status.value} (the certified vertices should be "
                          f"feasible) {res.message}"))
            xs = np.clip(res.values[outer.x_cols], outer.lower, outer.upper)
            cf = self.encoder.project(xs[None], outer.lower, outer.upper)[0]
            test = self._certifier().certify(self._network, cf[None], np.array([target]),
                                             time_limit=max(min(self.certify_time_limit, left()), 1e-3))
            status = CertStatus(test.status[0])
            if status is CertStatus.ROBUST:
                cert.update(distance=float(self.distance_.rowwise(cf[None], x[None], self.encoder)[0]),
                            worst_case_margin=float(test.lower[0]))
                return QueryResult("found", cf[None], cert, message=note)
            witness = test.evidence[0]
            if status in (CertStatus.TIMEOUT, CertStatus.ERROR):
                return QueryResult("timeout", None, cert, message=_join(
                    note, f"inner problem undecided at iteration {it} ({status.value})"))
            if not isinstance(witness, ReLUNetwork):
                return QueryResult("error", None, cert, message=_join(
                    note, f"the certifier gave no network to add to Δ′ ({status.value})"))
            self._add_network(outer, witness, target)
            n_networks += 1
        return QueryResult("timeout", None, cert, message=_join(
            note, f"max_iterations = {self.max_iterations} reached without a Δ-robust CE"))

    def _outer(self, x: np.ndarray, S: np.ndarray) -> _Outer:
        """MILP (5) without networks: the input domain ∩ the hull of {x} ∪ S, and ‖x' − x‖₁."""
        m = MILP(self.solver_, time_limit=max(self.time_limit, 1e-3), mip_gap=self.mip_gap,
                 threads=self.threads, options=_HIGHS_OUTER if self.solver_ == "highs" else None)
        dom = causal_input_domain(m, self.encoder, x, self.causal_children(), self.solver_)
        V = np.vstack([x[None, :], S])
        fixed = dom.upper <= dom.lower
        lo = np.where(fixed, dom.lower, np.maximum(dom.lower, V.min(axis=0)))
        hi = np.where(fixed, dom.upper, np.minimum(dom.upper, V.max(axis=0)))
        hi = np.maximum(hi, lo)
        m.set_var_bounds(dom.index, lo, hi)
        # fixed columns (immutables, constants) are equal on every vertex up to rounding: not tied
        hull = encode_hull_region(m, V, dom.index, columns=np.flatnonzero(~fixed))
        if self.constraints_ is not None:  # exact rows over the region (docs/constraints.md)
            encode_constraints(m, dom, x, self.constraints_)
        obj = encode_distance(m, dom, x, self.distance_, self.encoder)
        if self.distance_.fixed is not None:
            obj = add_fixed_costs(m, dom, x, self.distance_.fixed,
                                  self.encoder.feature_of_column_, obj)
        obj.set_as_objective(m)
        # every vertex is feasible for every Δ′ (certified margin ≥ σ), so the optimum is no
        # farther than the nearest one: the row ‖x' − x‖₁ ≤ r keeps the MILP to that ball,
        # whose first-layer bounds (:func:`l1_ball_layer_bounds`) are far tighter than the hull's
        d0 = float(np.min(self.distance_.rowwise(np.clip(S, lo, hi), x[None], self.encoder)))
        r = d0 * (1.0 + 1e-7) + 1e-7
        if self._ball_bounds:
            m.add_constrs_coo(np.zeros(len(obj.cols), dtype=np.int64), obj.cols, obj.coefs, 1,
                              -np.inf, r - obj.constant)
        return _Outer(m, dom.index, lo, hi, InputVars(dom.index, lo, hi), hull.weights, V, r,
                      dom.grid_vars, dom.grid_steps)

    def _start_at_vertex(self, outer: _Outer, S: np.ndarray, i: int) -> None:
        """Warm start at neighbour ``S[i]`` (feasible for every Δ′: certified margin ≥ σ):
        inputs, λ and every copy's ReLU phases; the solver completes the rest."""
        v = S[i]
        cols = [outer.x_cols, outer.weights]
        vals = [np.clip(v, outer.lower, outer.upper), np.eye(len(outer.weights))[i + 1]]
        g = np.flatnonzero(outer.grid_vars >= 0)
        if g.size:  # every integer variable gets its value: HiGHS completes the rest by an LP
            cols.append(outer.grid_vars[g])
            vals.append(np.round(np.clip(v[g], outer.lower[g], outer.upper[g]) * outer.grid_steps[g]))
        for net, enc in outer.networks:
            _, hidden = net.forward(v[None], return_hidden=True)
            for layer, h in zip(enc.hidden, hidden, strict=True):
                b = layer.binary >= 0
                cols += [layer.post, layer.binary[b]]
                vals += [h[0], (h[0][b] > 0).astype(np.float64)]
        outer.milp.set_start(np.concatenate(vals), np.concatenate(cols))

    def _add_network(self, outer: _Outer, net: ReLUNetwork, target: int) -> None:
        """One more member of Δ′: its own encoding over the region's box, margin ≥ σ (5b–5f)."""
        m = outer.milp
        V = outer.vertices
        if not self._ball_bounds:
            enc = encode_network(m, net, outer.inputs, bounds=_hull_bounds(net, V))
            outer.networks.append((net, enc))
            self._margin_rows(m, enc, target)
            return
        first = _hull_bounds(net, V)[0]
        # the distance row counts movable columns only (encode_distance): weight 0 elsewhere,
        # and the causal children (weight 0 in the distance) are not bounded by the ball;
        # the ℓ1 part never exceeds the objective, fixed costs included
        w = (outer.upper > outer.lower) * self.distance_.column_weights(self.encoder)
        bounds = l1_ball_layer_bounds(net, V[0], outer.lower, outer.upper, w, outer.radius,
                                      first=first)
        enc = encode_network(m, net, outer.inputs, bounds=bounds)
        outer.networks.append((net, enc))
        self._margin_rows(m, enc, target)

    def _margin_rows(self, m: MILP, enc: Any, target: int) -> None:
        """Margin ≥ σ for the target class on one member's outputs (5b)."""
        y = enc.outputs
        if len(y) == 1:
            lb, ub = (self.sigma, np.inf) if target == 1 else (-np.inf, -self.sigma)
            m.add_constrs_coo([0], [y[0]], [1.0], 1, lb, ub)
            return
        others = np.array([j for j in range(len(y)) if j != target])
        r = np.arange(len(others))
        m.add_constrs_coo(np.concatenate([r, r]),
                          np.concatenate([np.full(len(r), y[target]), y[others]]),
                          np.concatenate([np.ones(len(r)), -np.ones(len(r))]), len(r), self.sigma, np.inf)


def _hull_bounds(net: ReLUNetwork, V: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pre-activation bounds of every layer over the convex hull of ``V`` (big-M of MILP (5)):
    exact for the first layer (a linear function is extreme at a vertex), interval arithmetic
    after it — tighter than bounds over the hull's bounding box."""
    W, b = net.weights[0]
    Z = V @ W.T + b
    lo, hi = Z.min(axis=0), Z.max(axis=0)
    out = [(lo, hi)]
    for W, b in net.weights[1:]:
        vlo, vhi = np.maximum(lo, 0.0), np.maximum(hi, 0.0)
        Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
        lo, hi = Wp @ vlo + Wn @ vhi + b, Wp @ vhi + Wn @ vlo + b
        out.append((lo, hi))
    return out


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
