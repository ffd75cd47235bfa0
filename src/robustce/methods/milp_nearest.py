"""``MILPNearest``: the closest valid counterfactual by mixed-integer programming
(Mohammadi, Karimi, Barthe, Valera 2021 — "Scaling guarantees for nearest counterfactual
explanations").

For a query ``q`` and target class ``t`` it solves

    min_x  dist(x, q)
    s.t.   x in the encoded input domain (one-hot groups, integer grids, thermometer ordinals,
           binaries; immutable features fixed to q; increase/decrease-only bounded by q),
           margin_t(network(x)) >= tau,

with the ReLU network encoded exactly (big-M from interval bounds over the query's actionable
box; stable neurons without binaries). Decision trees, random forests / extra trees and
boosted trees (scikit-learn's GradientBoosting / HistGradientBoosting, XGBoost, LightGBM) are
encoded by the one tree MILP that MACE's MILP backend uses
(:func:`robustce.solvers.tree_encoding.encode_tree_ensemble`; see
:meth:`MILPNearest._nearest_trees`). The optimum is certified by the solver: ``optimal`` in
the certificate means the distance is minimal within the MIP gap.

Speed without giving up exactness (``docs/certification.md``, "Fast nearest-CE MILPs"): with
training ``data``, the nearest training point that is valid (target margin ≥ τ) and actionable
for the query is an *incumbent* of objective ``z₀``. The solve gets ``z₀`` as a cutoff (a proof
that nothing beats it returns the incumbent as the optimum) and, under ``l1`` and ``linf``, the
box ``|x_j − q_j| ≤ z₀ / w_j`` (columns of weight ``w_j > 0``), which holds every point at least
as good as the incumbent; the interval bounds — big-M constants and the set of stable ReLUs —
come from that box intersected with the actionable domain. Under ``l1`` the first layer's
bounds are exact over the weighted L1 ball ``Σ_j w_j |x_j − q_j| ≤ z₀`` itself
(:func:`robustce.solvers.tightening.l1_ball_layer_bounds`), and the MILP gets that row, so
they hold on its whole feasible set. ``l0`` bounds no column, so there only the cutoff is
used.

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
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from robustce.distance import L0_TOL, Distance, check_norm, feature_fixed_costs, raw_column_weights
from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import ACTION_TOL, Explainer
from robustce.methods.feasible import FeasibleSet
from robustce.methods.feature_tweaking import PlausibleFeatureTweaking
from robustce.models.network import IntervalNetwork, class_margin
from robustce.robustness.bounds import box_bounds
from robustce.solvers.encodings import (
    InputDomain,
    encode_constraints,
    encode_distance,
    encode_input_domain,
    encode_network,
    restrict_domain,
)
from robustce.solvers.milp import MILP, SolveStatus, check_solver
from robustce.solvers.tightening import TightenedBounds, l1_ball_layer_bounds, lp_tighten_bounds
from robustce.solvers.tree_encoding import (
    TreeEncoding,
    TreeEnsemble,
    distance_pruner,
    encode_tree_ensemble,
    ensemble_of,
    pull_towards_query,
    single_feature_moves,
    solve_tree_stage,
    tree_parts,
)
from robustce.validation import check_bool, check_choice, check_integer, check_number

__all__ = ["MILPNearest", "column_weights", "feature_distance", "milp_point", "tree_candidates"]

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


_N_SEGMENTS = 8  # nearest valid training points whose segments to the query are searched
_N_STEPS = 32  # points per segment
#: a tree model's nearest incumbent candidates checked through the raw-row round trip
_N_ROUND_TRIP = 16
#: a tree model's nearest valid candidates pulled back towards the query (before the round trip)
_N_PULLED = 4
#: HiGHS primal heuristics (effort 0) and symmetry detection switched off when the solve starts
#: with an incumbent (measured in benchmarks/bench_milp.py: on these small models they cost more
#: than they find once a near-optimal cutoff is known; none changes the optimum). Presolve is
#: switched off for these solves: with HiGHS 1.16, presolve + the incumbent box + the cutoff
#: reported CUTOFF ("nothing beats the incumbent") on an adult query where a better point exists
#: (capital-gain 1320 vs the incumbent's 1333; found with presolve off or without the box;
#: tests/methods/test_milp_cutoff_regression.py). A wrong optimality claim costs more than the
#: 2-3x presolve saved per solve. (Presolve with the box is wrong without the cutoff too: that
#: model, cutoff dropped, gives 0.013538 as "optimal" with HiGHS 1.16 and 0.013410 with scipy
#: 1.17's HiGHS, against 0.013200 without presolve; its grid columns span up to 1.5 M steps, e.g.
#: fnlwgt, so ``x − z / steps = 0`` has coefficients near 7e-7.)
_WARM_OPTIONS = {"mip_heuristic_effort": 0.0, "mip_heuristic_run_rins": False,
                 "mip_heuristic_run_rens": False, "mip_heuristic_run_root_reduced_cost": False,
                 "mip_heuristic_run_zi_round": False, "mip_heuristic_run_feasibility_jump": False,
                 "mip_detect_symmetry": False}
#: the same without seeds (MILPNearest, MILP-R's first round). RINS and RENS used to stay on
#: here: an incumbent 6× farther than the optimum (an adult MILP-R query) took 373 ms without
#: them, 29 ms with. The incumbent's segment search (:meth:`MILPNearest._segment`) now brings
#: such incumbents within ~1.3× (that query: 8.9× → 1.3×), and with the sub-MIPs off the first
#: solves got faster (HiGHS CPU time on the captured first-round models, 20–40 queries:
#: HELOC 490 → 351 ms, GMC 246 → 186, COMPAS 67 → 61, adult 165 → 158; the adult 20-10
#: MILPNearest row 110 → 99, worst 11 → 7 ms; same optima).
_UNSEEDED_OPTIONS = dict(_WARM_OPTIONS)


#: share of a solve's time limit that LP bound tightening may use (``bound_tightening="lp"``)
_TIGHTEN_SHARE = 0.25
#: integer-grid columns with more lattice points than this are relaxed in a first solve
_RELAX_GRID_STEPS = 64
#: ... and one lattice step costs at most this share of the MIP gap at the incumbent's objective
_RELAX_STEP_SHARE = 1.0
#: with ``bound_tightening="auto"``, LP tightening runs when the interval encoding needs at least
#: this many binaries (measured on the PROPLACE Table 1 nets: below it the LPs cost more than
#: they save)
_TIGHTEN_MIN_BINARIES = 12
BOUND_TIGHTENING = ("auto", "crown", "interval", "lp")


def milp_point(res: Any, dom: InputDomain, encoder: Any) -> np.ndarray:
    """The solver's own input point of a tree MILP (binaries rounded, projected onto the
    domain), instead of the query clipped to the leaves' ranges: with constraint relations
    the leaves' decoding may move columns towards the query where a relation forbids it, while
    the MILP's point satisfies the relation rows and lies in its leaves by the split rows'
    margins."""
    x = np.clip(res.values[dom.index], dom.lower, dom.upper)
    b = dom.column_kind == "binary"
    x[b] = np.round(x[b])
    return encoder.project(x[None], dom.lower, dom.upper)[0]


@dataclass(frozen=True)
class Incumbent:
    """A feasible CE known before the search: ``x`` (model space) with MILP objective value
    ``objective`` (the distance plus any tie-break term)."""

    x: np.ndarray
    objective: float


def incumbent_box(query: np.ndarray, lower: np.ndarray, upper: np.ndarray, weights: np.ndarray,
                  radius: float, kind: np.ndarray | None = None,
                  grid_steps: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The box ``[lower, upper] ∩ {x : w_j |x_j − q_j| ≤ radius for every column with
    w_j > 0}`` — under an ``l1`` or ``linf`` distance whose per-unit delta is a non-negative
    weighted sum of ``|x_j − q_j|`` (model or raw space), every point of distance ≤ ``radius``
    lies in it. Binary and grid columns (``kind`` "binary" / "grid" with ``grid_steps``) are
    rounded inward to their lattice."""
    q = np.asarray(query, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    r = np.full(q.shape, np.inf)
    pos = w > 0
    r[pos] = radius / w[pos]
    lo = np.maximum(lower, q - r)
    hi = np.minimum(upper, q + r)
    if kind is not None:
        eps = 1e-9
        b = kind == "binary"
        lo[b], hi[b] = np.ceil(lo[b] - eps), np.floor(hi[b] + eps)
        if grid_steps is not None:
            g = kind == "grid"
            st = grid_steps[g].astype(np.float64)
            lo[g], hi[g] = np.ceil(lo[g] * st - eps) / st, np.floor(hi[g] * st + eps) / st
        lo, hi = np.maximum(lo, lower), np.minimum(hi, upper)
    return lo, hi


def causal_input_domain(m: MILP, encoder: Any, q: np.ndarray, children: np.ndarray,
                        solver: str = "highs", integer_grid: bool = True) -> InputDomain:
    """The query's actionable input domain in ``m``, the causal ``children``'s columns
    spanning their whole box whatever their actionability (MINT: a child is not acted upon;
    it moves with its parents by the structural equations, which the constraint rows
    encode). Raises ValidationError when the box is empty."""
    if not len(children):
        return encode_input_domain(m, encoder, q, actionability=True, integer_grid=integer_grid)
    probe = encode_input_domain(MILP(solver), encoder, q, actionability=True, integer_grid=False)
    full_lo, full_hi = encoder.domain(q)
    lo, hi = probe.lower.copy(), probe.upper.copy()
    lo[children], hi[children] = full_lo[children], full_hi[children]
    return encode_input_domain(m, encoder, q, lower=lo, upper=hi, actionability=False,
                               integer_grid=integer_grid)


def priced_weights(distance_weights: np.ndarray, children: np.ndarray) -> np.ndarray:
    """MINT's pricing: a CE is an action set and costs its actions, so the causal
    ``children``'s columns weigh 0 (a copy of ``distance_weights``)."""
    w = np.array(distance_weights, dtype=np.float64, copy=True)
    w[np.asarray(children, dtype=np.int64)] = 0.0
    return w
def tree_candidates(ensemble: TreeEnsemble, encoder: Any, tweaker: PlausibleFeatureTweaking,
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


def _explain_chunk(explainer: Explainer, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
    return [explainer._timed_one(x, int(t)) for x, t in zip(X, targets, strict=True)]


def _jacobian(net: Any, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Jacobian (k, d) of the logits of a ReLU network at ``x`` (its linear region) and the
    logits (k,)."""
    J = np.eye(len(x))
    h = x
    last = len(net.weights) - 1
    for i, (W, b) in enumerate(net.weights):
        z = W @ h + b
        J = W @ J
        if i < last:
            on = z > 0
            J = J * on[:, None]
            h = np.where(on, z, 0.0)
        else:
            h = z
    return J, h


#: summed-vote margin by which a tree model's target must beat the rivals that win ties: HiGHS's
#: tolerances cannot express a strict inequality (the tree solves run at feasibility 1e-9)
_TREE_VOTE_MARGIN = 1e-6
#: the first tree MILP below an incumbent asks for a CE within this share of its objective,
#: then the radius doubles (MACE's MILP backend: for ℓ0 alone, one more changed feature per
#: stage)
_TREE_FIRST_RADIUS = 1.0 / 32


def _leaves(ens: TreeEnsemble, X: np.ndarray) -> np.ndarray:
    """(n, n_trees) global node ids of the leaves each row of ``X`` reaches in ``ens``
    (its float64 routing ``x[f] <= threshold``, all trees at once)."""
    node = np.repeat(ens.roots[None, :], len(X), axis=0)
    rows = np.arange(len(X))[:, None]
    while True:
        inner = ~ens.is_leaf[node]
        if not inner.any():
            return node
        f = np.where(inner, ens.feature[node], 0)
        go_left = X[rows, f] <= ens.threshold[node]
        node = np.where(inner, np.where(go_left, ens.left[node], ens.right[node]), node)


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
    model : a ReLU MLP (or any model with a ``network()`` view), a decision tree, a random
        forest / extra trees, or a boosted model (scikit-learn GradientBoosting /
        HistGradientBoosting, XGBoost, LightGBM; ``model.kind`` "tree", "forest",
        "boosted"); ``data`` is not needed. Tree models are encoded by
        :func:`robustce.solvers.tree_encoding.encode_tree_ensemble` (the ensemble built by
        :func:`~robustce.solvers.tree_encoding.ensemble_of`, as in MACE's MILP backend):
        one binary per distinct split, ordered along each column (Kantchelian et al. 2016),
        a flow per tree that sends one unit to exactly one leaf consistent with them
        (Mišić 2020; the leaf-consistency of Parmentier & Vidal 2021), and the summed leaf
        scores against every rival class. Every split is cleared by the encoder's
        :class:`~robustce.models.trees.SplitMargins`, so a CE's decoded raw row stays in
        its leaves.
    data : optional training :class:`~robustce.data.Dataset`: the source of the warm start's
        incumbent (``warm_start``).
    norm : "l1" (default), "l0" or "linf" — see the module docstring.
    tau : validity margin: the CE's target margin must be at least ``tau`` (> 0; guards
        against solver tolerances so that the forward pass agrees). Networks only: a tree
        model's encoding is exact, and its summed vote (leaf probabilities, or a booster's
        logits) must beat the rivals that win ties by 1e-6 and the others by 0 (a booster's
        by 1e-6 either way, as MACE's MILP backend).
    weights : optional per-column distance weights (default :func:`column_weights`).
    tie_break : weight of the L1 distance added to the ``l0`` / ``linf`` objectives.
    fixed_costs : optional ``{feature: cost}`` charged once when the feature changes at all,
        on top of its per-unit cost (``weights``; :func:`robustce.distance.unit_cost_weights`
        gives them in the user's units) — ``norm="l1"`` only; the distance minimised and
        reported is then ``Distance("l1", weights, space="raw", fixed=...)``.
    solver : "highs" (default) or "gurobi".
    mip_gap : relative optimality gap at which the solver stops (certificate ``gap``).
    threads : solver threads per query.
    warm_start : with training ``data``, use the nearest valid, actionable training point as an
        incumbent: its objective is the solve's cutoff (default True). Tree models also try
        every change of one feature to one of the ensemble's split bounds and feature
        tweaking's candidates (:func:`tree_candidates`; no data needed).
    box_from_incumbent : under ``l1`` / ``linf``, bound every column by the incumbent's
        objective (tighter big-M, more stable ReLUs; default True; needs ``warm_start``).
    bound_tightening : "lp" — before the solve, the pre-activation bounds of the neurons that
        would need a binary are tightened by LPs over the relaxation (with the margin row and
        ``objective ≤ cutoff``; :mod:`robustce.solvers.tightening`, at most a quarter of the
        time limit, starting from the "crown" bounds); "crown" (default) — back-substituted
        linear bounds over the box (:func:`robustce.robustness.bounds.crown_box_bounds`,
        within the L1 ball's bounds when there is an incumbent; no LPs); "interval" — interval
        bounds over the box only (the formulation before issue 33);
        "auto" — "lp" when the encoding needs at least 12 binaries. Same optimum
        either way. Before "crown": on the PROPLACE Table 1 networks (two hidden layers of
        10–20) LP bounds do not pay overall (HELOC, 8 queries: MILPNearest 0.13 vs 0.18 s
        median, MILP-R 0.35 vs 0.30 s). **On deeper networks use "lp" or "auto"**: on a
        34-50-50-50-1 network LP bounds solved 6 of 6 queries to optimality in 2.8 s median
        where interval bounds hit the 20 s limit on 5 (``benchmarks/bench_milp.py --deep``).
    relax_first : with an incumbent, first solve the MILP with the fine integer-grid columns
        (more than 64 lattice points, one step costing at most ``mip_gap`` times the
        incumbent's objective) made continuous (HiGHS spends most of its time on such wide
        integer domains, e.g. adult's fnlwgt and capital-gain); when that solution, rounded to
        the grid, is a CE whose objective meets the relaxation's dual bound within
        ``mip_gap``, it is the optimum (the solver's own test) and the full MILP is skipped;
        otherwise the full MILP runs, with that CE as a better incumbent. Default True; same
        optimum within the gap.
    target_class, time_limit, random_state, n_jobs : see :class:`Explainer`; ``time_limit``
        is the solver time per query.
    constraints : linear relations between raw features and ``max_changes``
        (:class:`~robustce.data.Constraints`), **enforced exactly** for networks and tree
        models: the relations as rows over the input variables (scaled columns are affine in
        the raw values: ``raw = lower + x · (upper − lower)``; integer columns stay on their
        grid), ``max_changes`` by one changed binary per raw feature (a one-hot group counts
        once) — :func:`robustce.solvers.encodings.encode_constraints`. Incumbents (training
        points, their segments, linear-region steps, rounded relaxations) that break them are
        discarded, so a cutoff never excludes a constrained optimum. A tree model's CE with
        relations is the MILP's own point (its grid columns integral), not the query clipped
        to its leaves. See ``docs/constraints.md``.

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : the returned CE's distance from the query (``norm``).
    bound : the solver's proven lower bound on the optimal objective.
    gap : relative MIP gap at the end of the solve.
    optimal : True when the solver proved optimality (within ``mip_gap``).
    margin : target margin of the CE under the model (forward pass; for tree models the
        summed vote of the target minus that of its strongest rival).
    solver, solver_status : backend and its final status.

    Statuses: ``found`` (optimal, or the best incumbent when the time limit hit — then
    ``optimal`` is False); ``infeasible`` (proven: no actionable point reaches margin ``tau``);
    ``timeout`` (no valid point found in time); ``error``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MILPNearest(model, train).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> model.predict(res.counterfactuals[res.feature_names])
    array([1, 1, 1])
    """

    name: ClassVar[str] = "milp_nearest"
    _constraints: ClassVar[str] = "exact"
    _ball_bounds: ClassVar[bool] = True
    #: tree models go through the tree MILP (False in subclasses whose search is for networks
    #: only: they keep raising UnsupportedModelError for trees)
    _tree_models: ClassVar[bool] = True
    #: tree models: solve below the incumbent in growing balls (:meth:`_tree_radii`) before
    #: the last stage. Off here: the single-feature moves make the incumbent mostly optimal,
    #: and the small balls cost more than they save (adult booster, 20 queries: median 90 →
    #: 57–68 ms without them)
    _tree_gallop: ClassVar[bool] = False
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "bound", "gap", "optimal", "margin", "solver", "solver_status")

    def __init__(self, model: Any, data: Any = None, *, norm: str = "l1", tau: float = 1e-3,
                 weights: Any = None, tie_break: float = 1e-3, solver: str = "highs",
                 mip_gap: float = 1e-4, threads: int = 1, warm_start: bool = True,
                 box_from_incumbent: bool = True, bound_tightening: str = "crown",
                 relax_first: bool = True, fixed_costs: Mapping[str, float] | None = None,
                 **kwargs: Any):
        self.fixed_costs = fixed_costs
        self.norm = norm
        self.tau = tau
        self.weights = weights
        self.tie_break = tie_break
        self.solver = solver
        self.mip_gap = mip_gap
        self.threads = threads
        self.warm_start = warm_start
        self.box_from_incumbent = box_from_incumbent
        self.bound_tightening = bound_tightening
        self.relax_first = relax_first
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        check_norm(self.norm, NORMS)
        check_number(self.tau, "tau", low=0, low_open=True)
        check_number(self.tie_break, "tie_break", low=0)
        check_number(self.mip_gap, "mip_gap", low=0, high=1, high_open=True)
        check_integer(self.threads, "threads", low=1)
        check_bool(self.warm_start, "warm_start")
        check_bool(self.box_from_incumbent, "box_from_incumbent")
        check_bool(self.relax_first, "relax_first")
        check_choice(self.bound_tightening, "bound_tightening", BOUND_TIGHTENING)
        self.solver_ = check_solver(self.solver)  # SolverError for unknown / missing backends
        d = self.encoder.n_features_out_
        if self.weights is not None:
            try:
                w = np.asarray(self.weights, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError):
                w = np.full(1, np.nan)
            if w.shape[0] != d or np.any(w < 0) or not np.isfinite(w).all():
                raise ValidationError(f"weights must be {d} non-negative finite numbers")
        weights = self.weights
        cc = self.constraints_
        if weights is None and cc is not None and cc.causal_columns is not None:
            # MINT: a CE is an action set, priced by its actions; children move for free
            weights = priced_weights(Distance(self.norm, space="raw").column_weights(
                self.encoder), cc.causal_columns)
        fixed = None
        if self.fixed_costs is not None:
            if self.norm != "l1":
                raise ValidationError(f"fixed_costs need norm='l1' (the cost of a CE: per-unit "
                                      f"plus fixed costs), got norm={self.norm!r}")
            fixed = feature_fixed_costs(self.encoder, self.fixed_costs)
        #: the distance minimised and reported (certificate ``distance``)
        self.distance_ = Distance(self.norm, weights=weights, space="raw", fixed=fixed)
        parts = tree_parts(self.model) if self._tree_models else None
        #: tree models: the tree ensemble (:func:`~robustce.solvers.tree_encoding.ensemble_of`)
        self._ensemble_: TreeEnsemble | None = None
        self._tree_kind_: str | None = None
        if parts is not None:
            self._tree_kind_ = parts[0]
            self._ensemble_ = self._tree_ensemble(parts[0], parts[1])
            self._network = None
        else:
            self._network = self.model.network()  # UnsupportedModelError for non-ReLU models
        self._l1_ = Distance("l1", weights=weights, space="raw")
        self._candidates_: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._ranked_: tuple[tuple[int, bytes], np.ndarray] | None = None
        self._w_: np.ndarray | None = None
        self._template_: tuple[bytes, MILP, InputDomain, Any] | None = None
        self._kinds_: tuple[np.ndarray, np.ndarray] | None = None
        self._feasible_: FeasibleSet | None = None
        self._tweaker_: PlausibleFeatureTweaking | None = None

    def _weights(self) -> np.ndarray:
        """The distance's column weights (computed once; read-only)."""
        if self._w_ is None:
            w = np.asarray(self.distance_.column_weights(self.encoder), dtype=np.float64).copy()
            w.flags.writeable = False
            self._w_ = w
        return self._w_

    def _margins(self, X: np.ndarray, target: int) -> np.ndarray:
        """Per row of ``X`` (model space), the target margin: a network's
        :func:`~robustce.models.network.class_margin` of its logits; a tree model's summed
        vote (:meth:`TreeEnsemble.votes` over the leaves reached) of the target minus its
        strongest rival's (a single tree: +1 if its leaf's argmax is the target, else −1)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if self._ensemble_ is None:
            return class_margin(self._network.forward(X), int(target))
        ens = self._ensemble_
        leaves = _leaves(ens, X)
        if not ens.forest:
            return np.where(ens.votes(int(target))[leaves[:, 0], 0] > 0.5, 1.0, -1.0)
        v = ens.votes(int(target))[leaves].sum(axis=1)  # (n, rivals): target − rival
        return v.min(axis=1)

    # --- the MILP -------------------------------------------------------------------------
    # --- the incumbent ----------------------------------------------------------------------
    def _objective_values(self, q: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The MILP objective of each row of ``X``: the distance plus ``tie_break`` · L1 for
        ``l0`` / ``linf``."""
        z = self.distance_.rowwise(q, X, self.encoder)
        if self.norm != "l1" and self.tie_break > 0:
            z = z + self.tie_break * self._l1_.rowwise(q, X, self.encoder)
        return z

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
                                           tol=ACTION_TOL)
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

    def _tweaker(self) -> PlausibleFeatureTweaking:
        """Feature tweaking over the model (:class:`~robustce.methods.PlausibleFeatureTweaking`,
        its leaf boxes cached per target; built once): the source of a tree model's
        multi-feature incumbents."""
        if self._tweaker_ is None:
            self._tweaker_ = PlausibleFeatureTweaking(self.model)
        return self._tweaker_

    def _feasible_set(self) -> FeasibleSet:
        """The encoder's actionability as a :class:`FeasibleSet` (built once)."""
        if self._feasible_ is None:
            self._feasible_ = FeasibleSet(self.encoder)
        return self._feasible_

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

    def _column_kinds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per column, its kind and grid steps in the encoded domain (computed once)."""
        if getattr(self, "_kinds_", None) is None:
            dom = encode_input_domain(MILP(self.solver_), self.encoder)
            self._kinds_ = (dom.column_kind, dom.grid_steps)
        return self._kinds_

    def _continuous_columns(self, with_grid: bool = False) -> np.ndarray:
        """Columns of continuous kind (with ``with_grid``, integer-grid columns too)."""
        kind = self._column_kinds()[0]
        ok = (kind == "continuous") | ((kind == "grid") if with_grid else False)
        return np.flatnonzero(ok)

    # --- the MILP -------------------------------------------------------------------------
    def _new_milp(self, time_limit: float, warm: bool, seeded: bool = False) -> MILP:
        highs_warm = warm and self.solver_ == "highs"
        options = (_WARM_OPTIONS if seeded else _UNSEEDED_OPTIONS) if highs_warm else None
        return MILP(self.solver_, time_limit=max(time_limit, 1e-3), mip_gap=self.mip_gap,
                    threads=self.threads, options=options, presolve=not highs_warm)

    def _input_domain(self, m: MILP, q: np.ndarray, integer_grid: bool = True) -> InputDomain:
        """The query's actionable input domain in ``m``. With a causal model, its children's
        columns span their whole box whatever their actionability (MINT: a child is not acted
        upon; it moves with its parents by the structural equations, which the constraint
        rows encode). Raises ValidationError when the box is empty."""
        return causal_input_domain(m, self.encoder, q, self.causal_children(), self.solver_,
                                   integer_grid=integer_grid)

    def _under_constraints(self) -> str:
        """The words that infeasibility messages add when constraints were encoded."""
        return "" if self.constraints_ is None else " that satisfies the constraints"

    def _with_fixed_costs(self, m: MILP, dom: InputDomain, q: np.ndarray, obj: Any) -> Any:
        """The objective plus the fixed costs of changed features (``fixed_costs``;
        :func:`robustce.solvers.fixed_cost_encoding.add_fixed_costs`), if any."""
        if self.distance_.fixed is None:
            return obj
        from robustce.solvers.fixed_cost_encoding import add_fixed_costs

        return add_fixed_costs(m, dom, q, self.distance_.fixed, self.encoder.feature_of_column_,
                               obj)

    def _domain_template(self, m: MILP, q: np.ndarray) -> tuple[InputDomain, Any]:
        """Encode the query's actionable input domain and the distance objective's variables
        and rows into the empty model ``m``: copied from a model built once for the last
        query (MILP-R's rounds encode the same query again). Returns the domain and the
        distance objective. Raises ValidationError when the actionable box is empty."""
        if m.n_vars:
            raise ValidationError("_domain_template needs an empty model")
        key = q.tobytes()
        cached = self._template_
        if cached is None or cached[0] != key:
            t = MILP(self.solver_)
            dom = self._input_domain(t, q)
            obj = encode_distance(t, dom, q, self.distance_, self.encoder,
                                  tie_break=self.tie_break)
            obj = self._with_fixed_costs(t, dom, q, obj)
            if self.constraints_ is not None:
                encode_constraints(t, dom, q, self.constraints_)
            cached = self._template_ = (key, t, dom, obj)
        _, t, dom, obj = cached
        m.add_model(t)
        return dom, obj

    def _encode_nearest(self, m: MILP, q: np.ndarray, target: int, tau: float,
                        inc: Incumbent | None, cutoff: float | None,
                        bounds: list[tuple[np.ndarray, np.ndarray]] | None = None,
                        distance_row: bool = False) -> tuple[InputDomain, Any]:
        """Encode the nearest-CE problem into ``m``: the actionable domain (intersected with
        the incumbent box under l1/linf), the network (``bounds``: per-layer pre-activation
        bounds; interval bounds over the box if None), the margin row(s) and the distance
        objective; ``distance_row`` adds ``objective ≤ cutoff`` (for the LP relaxation of
        bound tightening: every point that can beat the cutoff satisfies it). Raises
        ValidationError when the actionable box is empty."""
        dom, obj = self._domain_template(m, q)
        derived = bounds is None  # bounds computed here (not handed in by LP tightening)
        ball = None
        if cutoff is not None and self.box_from_incumbent and self.norm in ("l1", "linf"):
            lo, hi = incumbent_box(q, dom.lower, dom.upper, self._weights(), cutoff,
                                   dom.column_kind, dom.grid_steps)
            dom = restrict_domain(m, dom, lo, hi)
            if bounds is None and self.norm == "l1" and self._ball_bounds:
                # every point that can beat the cutoff lies in the weighted L1 ball of radius
                # cutoff: exact first-layer bounds over ball ∩ box; the distance row below
                # keeps every other point out of the MILP, so they are sound for all it admits
                # the objective counts movable columns only (encode_distance)
                w = np.where(hi > lo, self._weights(), 0.0)
                bounds = l1_ball_layer_bounds(self._network, q, lo, hi, w, cutoff)
                distance_row = True
                ball = (q, w, cutoff)
        if derived and self.bound_tightening != "interval" and self._network.plain:
            # back-substituted bounds over box ∩ ball (every point the MILP admits lies in
            # both): tighter big-M, fewer binaries (robustness/bounds.py)
            bounds = box_bounds(self._network, dom.lower, dom.upper, bounds, ball)
        ne = encode_network(m, self._network, dom.vars, bounds=bounds)
        y = ne.outputs
        k = self._network.n_outputs
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
        if distance_row and cutoff is not None:
            m.add_constrs_coo(np.zeros(len(obj.cols), dtype=np.int64), obj.cols, obj.coefs, 1,
                              -np.inf, cutoff - obj.constant)
        obj.set_as_objective(m)
        return dom, ne

    def _tightened_bounds(self, q: np.ndarray, target: int, tau: float, inc: Incumbent | None,
                          cutoff: float | None, dom: InputDomain, time_limit: float
                          ) -> TightenedBounds:
        """LP-tightened pre-activation bounds of this query's problem
        (:func:`robustce.solvers.tightening.lp_tighten_bounds`) over the relaxation with the
        margin row and, with an incumbent, ``objective ≤ cutoff``."""
        inn = IntervalNetwork.point(self._network)
        start = (box_bounds(self._network, dom.lower, dom.upper) if self._network.plain
                 else [(lo[0], hi[0]) for lo, hi in inn.layer_bounds(dom.lower, dom.upper)])

        def build(bounds, _upper_min):
            # LPs re-solved from the previous basis: no presolve
            m = MILP(self.solver_, time_limit=max(time_limit, 1e-3), threads=self.threads,
                     presolve=False)
            _, ne = self._encode_nearest(m, q, target, tau, inc, cutoff, bounds=bounds,
                                         distance_row=True)
            return m, ne

        return lp_tighten_bounds(build, inn, start, plain=True, time_limit=time_limit)

    def _from_relaxation(self, m: MILP, dom: InputDomain, q: np.ndarray, target: int,
                         tau: float, inc: Incumbent | None, cutoff: float | None,
                         time_limit: float) -> tuple[_Nearest | None, Incumbent | None]:
        """The optimum from a relaxation, where it proves one. Integer-grid columns with more
        than ``_RELAX_GRID_STEPS`` lattice points in the box, one step of which costs at most
        the MIP gap at the incumbent's objective, are made continuous (HiGHS spends most of a
        solve on such wide integer domains, e.g. adult's fnlwgt and capital-gain; coarser
        grids, e.g. HELOC's, cannot be rounded within the gap); the relaxed MILP's dual
        bound ``L`` bounds every point the full MILP admits. Its solution,
        with the grid columns rounded to their lattice (to the nearest point, and the way
        the margin rises in the solution's linear region), is a CE when it is actionable and
        its forward-pass margin reaches ``tau``; when the best of those and the incumbent has
        objective ``z`` with ``z − L ≤ max(mip_gap·z, 1e-9)`` it is optimal within the MIP
        gap — the test the solver applies to its own bounds. Returns (the result, or None
        when the relaxation proves nothing; a rounded CE that beats the incumbent, or None)."""
        if inc is None:
            return None, None
        g = np.flatnonzero(dom.grid_vars >= 0)
        zv = dom.grid_vars[g]
        data = m._materialise()
        # fine grids only: one lattice step must cost less than the gap allows at the
        # incumbent's objective, else rounding a moved column cannot meet the bound
        step_cost = self._weights()[g] / dom.grid_steps[g]
        fine = step_cost <= _RELAX_STEP_SHARE * self.mip_gap * abs(inc.objective)
        wide = zv[((data.ub[zv] - data.lb[zv]) > _RELAX_GRID_STEPS) & fine]
        if wide.size == 0:
            return None, None
        res = m.solve_relaxation(time_limit=max(time_limit, 1e-3), cols=wide, cutoff=cutoff)
        if res.status is SolveStatus.CUTOFF and inc is not None:
            return _Nearest("found", inc.x.copy(), objective=inc.objective, bound=inc.objective,
                            gap=0.0, optimal=True, solver_status=res.status.value,
                            time=res.time, message="the nearest valid training point is "
                            "optimal (relaxation)"), None
        if res.status is not SolveStatus.OPTIMAL or not res.has_solution:
            return None, None
        lower = float(res.bound)
        xs = np.clip(res.values[dom.index], dom.lower, dom.upper)
        near = self.encoder.project(xs[None], dom.lower, dom.upper)[0]
        J, y = _jacobian(self._network, near)
        if J.shape[0] == 1:
            grad = J[0] * (1.0 if target == 1 else -1.0)
        else:
            others = np.delete(np.arange(J.shape[0]), target)
            grad = J[target] - J[others[np.argmax(y[others])]]
        gc = np.flatnonzero(dom.column_kind == "grid")
        st = dom.grid_steps[gc].astype(np.float64)
        up = np.ceil(xs[gc] * st - 1e-9) / st
        down = np.floor(xs[gc] * st + 1e-9) / st
        rise = near.copy()
        rise[gc] = np.clip(np.where(grad[gc] > 0, up, down), dom.lower[gc], dom.upper[gc])
        P = np.vstack([near, rise] + ([inc.x] if inc is not None else []))
        ok = self.actionable(q, P, tol=0.0) & (
            class_margin(self._network.forward(P), int(target)) >= tau)
        if self.constraints_ is not None:
            ok &= self.constraints_.satisfied(q, P)
        if not ok.any():
            return None, None
        z = np.where(ok, self._objective_values(q, P), np.inf)
        i = int(np.argmin(z))
        best = float(z[i])
        if best - lower > max(self.mip_gap * abs(best), 1e-9):
            better = inc is None or best < inc.objective
            return None, Incumbent(P[i].copy(), best) if better else None
        gap = max(best - lower, 0.0) / max(abs(best), 1e-12)
        return _Nearest("found", P[i].copy(), objective=best, bound=min(lower, best), gap=gap,
                        optimal=True, solver_status=res.status.value, time=res.time,
                        message="wide integer grids relaxed: the relaxation's bound is met by "
                        "its rounded solution"), None

    def _nearest(self, q: np.ndarray, target: int, tau: float, time_limit: float,
                 seeds: np.ndarray | None = None) -> _Nearest:
        """Solve the nearest-CE MILP for one query with validity margin ``tau`` (``seeds``:
        see :meth:`incumbent`)."""
        if self._ensemble_ is not None:
            return self._nearest_trees(q, target, time_limit)
        inc = self.incumbent(q, target, tau, seeds)
        seeded = seeds is not None
        m = self._new_milp(time_limit, warm=inc is not None, seeded=seeded)
        cutoff = None
        if inc is not None:
            # strictly above z₀ (solver tolerances): "nothing beats the cutoff" proves z₀ optimal
            cutoff = inc.objective + 1e-7 * (1.0 + abs(inc.objective))
        try:
            dom, ne = self._encode_nearest(m, q, target, tau, inc, cutoff)
        except ValidationError as exc:
            return _Nearest("infeasible", None, message=f"no actionable point: {exc}")
        if inc is not None and not (np.all(inc.x >= dom.lower - ACTION_TOL)
                                    and np.all(inc.x <= dom.upper + ACTION_TOL)):
            # outside the encoded domain (cannot happen for encoded training rows): drop it
            inc, cutoff = None, None
            m = self._new_milp(time_limit, warm=False)
            dom, ne = self._encode_nearest(m, q, target, tau, None, None)
        need = {"lp": 1, "auto": _TIGHTEN_MIN_BINARIES}.get(self.bound_tightening)
        if need is not None and ne.n_binaries >= need:
            t0 = time.perf_counter()
            tb = self._tightened_bounds(q, target, tau, inc, cutoff, dom,
                                        _TIGHTEN_SHARE * time_limit)
            time_limit = max(time_limit - (time.perf_counter() - t0), 1e-3)
            m = self._new_milp(time_limit, warm=inc is not None, seeded=seeded)
            dom, ne = self._encode_nearest(m, q, target, tau, inc, cutoff, bounds=tb.bounds)
        x = dom.index
        if self.relax_first:
            t0 = time.perf_counter()
            fast, better = self._from_relaxation(m, dom, q, target, tau, inc, cutoff, time_limit)
            if fast is not None:
                return fast
            if better is not None and inc is not None:
                # a better incumbent: a lower cutoff (the encoding's ball and box hold every
                # point beating the old one, so also every point beating this one)
                inc = better
                cutoff = inc.objective + 1e-7 * (1.0 + abs(inc.objective))
            time_limit = max(time_limit - (time.perf_counter() - t0), 1e-3)
        res = m.solve(time_limit=max(time_limit, 1e-3), cutoff=cutoff)
        st = res.status
        base = {"objective": res.objective, "bound": res.bound, "gap": res.gap,
                "solver_status": st.value, "time": res.time, "message": res.message}
        if inc is not None and (st is SolveStatus.CUTOFF or (
                not res.has_solution and st in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT))):
            # CUTOFF: proven that no point beats the incumbent, so it is optimal; a time limit
            # without a better point leaves the incumbent as the best known CE
            proven = st is SolveStatus.CUTOFF
            bound = inc.objective if proven else res.bound
            return _Nearest("found", inc.x.copy(), objective=inc.objective, bound=bound,
                            gap=0.0 if proven else res.gap, optimal=proven,
                            solver_status=st.value, time=res.time,
                            message="the nearest valid training point is optimal" if proven
                            else res.message)
        if st is SolveStatus.INFEASIBLE:
            return _Nearest("infeasible", None, **{**base, "message": (
                f"proven infeasible: no actionable point{self._under_constraints()} has "
                f"target-class margin >= {tau:g}")})
        if res.has_solution and st in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
            xs = np.clip(res.values[x], dom.lower, dom.upper)
            xs = self.encoder.project(xs[None], dom.lower, dom.upper)[0]
            return _Nearest("found", xs, optimal=st is SolveStatus.OPTIMAL, **base)
        if st in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
            return _Nearest("timeout", None, **base)
        return _Nearest("error", None, **{**base, "message": f"solver: {st.value} {res.message}"})

    def _tree_margins(self, target: int) -> tuple[float, float]:
        """The summed-vote margins a tree model's CE must reach against the rivals listed
        before / after ``target`` (those before win ties): 1e-6 / 0 for trees and forests,
        1e-6 / 1e-6 for boosters (logits summed in float32 by the booster itself; MACE's
        MILP backend asks the same)."""
        strict = _TREE_VOTE_MARGIN
        return strict, (strict if self._tree_kind_ == "boosted" else 0.0)

    def _tree_ensemble(self, kind: str, parts: Any) -> TreeEnsemble:
        """The tree model's :class:`TreeEnsemble`, built once in ``_check_params``
        (:func:`ensemble_of`; the robust ensemble CE builds it with its ε)."""
        return ensemble_of(kind, parts, self.encoder)

    def _encode_trees(self, m: MILP, dom: InputDomain, target: int,
                      prune: Any) -> TreeEncoding:
        """The tree model's prediction of ``target`` over ``dom`` (:func:`encode_tree_ensemble`
        with :meth:`_tree_margins`; the robust ensemble CE encodes its worst case instead)."""
        strict, weak = self._tree_margins(target)
        return encode_tree_ensemble(m, self._ensemble_, dom, target, margin_strict=strict,
                                    margin_weak=weak, prune=prune)

    def _tree_stage(self, q: np.ndarray, target: int, cutoff: float | None, floor: float,
                    time_limit: float) -> tuple[str, Any, np.ndarray | None]:
        """One tree MILP for ``q``: the actionable input domain (grid columns continuous:
        splits compare them with grid points only, and the decoded point is the query clipped
        to the range its splits leave, a grid point), the distance objective tightened by the
        split literals (:meth:`TreeEncoding.tighten`), the ensemble
        (:func:`encode_tree_ensemble`). With a ``cutoff`` the solve is cut off there, under
        ``l1`` / ``linf`` every column is bounded by its box (:func:`incumbent_box`), and
        tree nodes all of whose points are farther than it are dropped
        (:func:`distance_pruner`) — every point whose objective beats it is kept; ``floor``
        (> 0): the row ``objective >= floor``, a bound proven before. Returns ``("cut", res,
        None)`` — proven: no point's objective is below ``cutoff`` —, ``("empty", None,
        None)`` — no actionable point at all —, or ``("solved", res, cf)`` with the decoded
        point (None when the solver has none)."""
        t0 = time.perf_counter()
        # below an incumbent HiGHS's primal heuristics look for points the cutoff already
        # bounds (as _WARM_OPTIONS says for networks; adult booster, 20 queries: median 59 →
        # 45 ms with the last stage's cutoff below)
        m = MILP(self.solver_, time_limit=max(time_limit, 1e-3), mip_gap=self.mip_gap,
                 threads=self.threads, feasibility_tol=1e-9, presolve=False,
                 options=None if cutoff is None or self.solver_ != "highs" else _WARM_OPTIONS)
        cc = self.constraints_
        relations = cc is not None and cc.has_rows
        try:
            # with relations the CE is the MILP's own point: grid columns integral
            dom = self._input_domain(m, q, integer_grid=relations)
        except ValidationError:
            return "empty", None, None
        if cc is not None:
            encode_constraints(m, dom, q, cc)
        prune = None
        if cutoff is not None:
            if self.norm in ("l1", "linf"):
                lo, hi = incumbent_box(q, dom.lower, dom.upper, self._weights(), cutoff,
                                       dom.column_kind, dom.grid_steps)
                dom = restrict_domain(m, dom, lo, hi)
            enc = self.encoder
            prune = distance_pruner(q, self._weights(), enc.feature_of_column_,
                                    len(enc.blocks_), {self.norm: 1.0}, cutoff)
        trees = self._encode_trees(m, dom, int(target), prune)
        if trees.infeasible:  # no leaf of interest within the box (or nearer than the cutoff)
            return ("cut", None, None) if cutoff is not None else ("empty", None, None)
        obj = encode_distance(m, dom, q, self.distance_, self.encoder, tie_break=self.tie_break)
        trees.tighten(m, obj, q)
        obj = self._with_fixed_costs(m, dom, q, obj)
        cut, res, cf = solve_tree_stage(m, trees, obj, dom, q, self.encoder, floor=floor,
                                        cutoff=cutoff,
                                        time_left=time_limit - (time.perf_counter() - t0))
        if relations and cf is not None:
            cf = milp_point(res, dom, self.encoder)
        return ("cut", res, None) if cut else ("solved", res, cf)

    def _tree_radii(self, z0: float) -> list[float]:
        """Under ``l1`` with :attr:`_tree_gallop`, the radii of the solves below an incumbent
        of objective ``z0``: ``z0/32, z0/16, …`` while below ``z0`` (as MACE's MILP backend
        gallops: in a small ball most trees shrink to a few leaves). ``l0`` / ``linf``
        (whose objective adds a tie-break term, so a cut-off below ``z0`` proves nothing
        about the distance): none."""
        if not self._tree_gallop or self.norm != "l1" or not z0 > 0:
            return []
        out, r = [], z0 * _TREE_FIRST_RADIUS
        while r < z0 * (1.0 - 1e-9):
            out.append(r)
            r *= 2.0
        return out

    def _nearest_trees(self, q: np.ndarray, target: int, time_limit: float) -> _Nearest:
        """The nearest CE of a tree model. With an incumbent (:meth:`incumbent`: the best
        valid, actionable point among the nearest training points, their segments to the
        query, training points moved into the query's box and the single-feature moves at
        the ensemble's split bounds, its raw row checked; objective ``z₀``) the last MILP of
        :meth:`_tree_stage` is built over the ball of radius ``z₀`` and cut off at
        ``z₀ (1 − mip_gap)``: its cut-off proves the incumbent optimal within the MIP gap
        (the certificate's bound is that cutoff), and a solution there is the optimum.
        With :attr:`_tree_gallop`, MILPs over balls of growing radii come first
        (:meth:`_tree_radii`), each cut off at its radius: a cut-off proves that nothing lies
        within it (the next stage gets that bound as a row); the first stage with a solution
        holds the optimum, since every nearer point lies in its ball. Without an incumbent,
        one MILP over the whole actionable box."""
        strict, weak = self._tree_margins(target)
        inc = self.incumbent(q, target, max(strict, weak))
        t0 = time.perf_counter()
        spent, low = 0.0, 0.0
        stages: list[float | None] = [None]
        if inc is not None:
            # the last stage asks for a point better than the incumbent by the relative MIP
            # gap: its cut-off proves the incumbent optimal within the gap (HiGHS's own
            # "optimal"), and the solver need not find the incumbent again to prove it
            stages = [*self._tree_radii(inc.objective), inc.objective * (1.0 - self.mip_gap)]
        for k, cutoff in enumerate(stages):
            left = time_limit - (time.perf_counter() - t0)
            if left <= 0:
                break
            kind, res, cf = self._tree_stage(q, target, cutoff, low, left)
            spent += 0.0 if res is None else res.time
            last = k == len(stages) - 1
            if kind == "empty":
                return _Nearest("infeasible", None, bound=math.inf, time=spent,
                                solver_status=SolveStatus.INFEASIBLE.value,
                                message="no actionable point: the actionable box is empty")
            if kind == "cut":
                if last:  # nothing beats the incumbent by the gap
                    assert inc is not None and cutoff is not None
                    return _Nearest("found", inc.x.copy(), objective=inc.objective,
                                    bound=cutoff, gap=self.mip_gap, optimal=True,
                                    solver_status=SolveStatus.CUTOFF.value, time=spent,
                                    message="the incumbent is optimal within the MIP gap")
                low = float(cutoff)
                continue
            st = res.status
            bound = max(low, res.bound) if math.isfinite(res.bound) else low
            base = {"objective": res.objective, "bound": bound, "gap": res.gap,
                    "solver_status": st.value, "time": spent, "message": res.message}
            if st is SolveStatus.INFEASIBLE:  # no cutoff: the whole box
                return _Nearest("infeasible", None, **{**base, "message": (
                    f"proven infeasible: no actionable point{self._under_constraints()} is "
                    "in the target class")})
            if cf is not None and st in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT,
                                         SolveStatus.LIMIT):
                return _Nearest("found", cf, optimal=st is SolveStatus.OPTIMAL, **base)
            if st in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
                low = bound
                break
            return _Nearest("error", None, **{**base, "message": f"solver: {st.value} "
                                                                  f"{res.message}"})
        if inc is None:
            return _Nearest("timeout", None, bound=low, time=spent,
                            solver_status=SolveStatus.TIME_LIMIT.value,
                            message="time limit before a CE was found")
        gap = max(inc.objective - low, 0.0) / max(abs(inc.objective), 1e-12)
        return _Nearest("found", inc.x.copy(), objective=inc.objective, bound=low, gap=gap,
                        optimal=False, solver_status=SolveStatus.TIME_LIMIT.value, time=spent,
                        message="time limit: the best incumbent")

    def _certificate(self, q: np.ndarray, target: int, r: _Nearest) -> dict[str, Any]:
        cert: dict[str, Any] = {
            "distance": math.nan, "bound": r.bound, "gap": r.gap, "optimal": r.optimal,
            "margin": math.nan, "solver": self.solver_, "solver_status": r.solver_status,
        }
        if r.cf is not None:
            cert["distance"] = float(self.distance_.rowwise(q, r.cf[None], self.encoder)[0])
            cert["margin"] = float(self._margins(r.cf[None], target)[0])
        return cert

    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        """Per query; with ``n_jobs != 1`` the queries go to the workers in a few chunks (the
        explainer, with its incumbent candidates computed here once, is sent once per chunk,
        not once per query)."""
        if self.n_jobs == 1 or len(X) == 1:
            return super()._explain_batch(X, targets)
        if self.warm_start and self.data is not None:
            for t in np.unique(targets):
                self._candidates(int(t))
        n = min(effective_n_jobs(self.n_jobs), len(X))
        chunks = np.array_split(np.arange(len(X)), min(2 * n, len(X)))
        parts = Parallel(n_jobs=n)(delayed(_explain_chunk)(self, X[c], targets[c]) for c in chunks)
        return [r for part in parts for r in part]

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        r = self._nearest(x, int(target), self.tau, self.time_limit)
        cert = self._certificate(x, int(target), r)
        if r.status == "found":
            msg = "" if r.optimal else f"time limit: best incumbent, gap {r.gap:.3g}"
            return QueryResult("found", r.cf[None], cert, message=msg)
        return QueryResult(r.status, None, cert, message=r.message)
