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

The search itself — incumbents, the network and tree MILPs, domains and costs — is the
nearest-CE engine :mod:`robustce.nearest`, which MILP-R, EnsembleRobust and MACE's MILP
backend share; this class is its parameters, checks and per-query results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from robustce.distance import Distance, check_norm, feature_fixed_costs
from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import ACTION_TOL, Explainer
from robustce.methods.feasible import FeasibleSet
from robustce.methods.feature_tweaking import PlausibleFeatureTweaking
from robustce.nearest import (
    NearestSearch,
    column_weights,
    feature_distance,
    milp_point,
    priced_weights,
    tree_candidates,
)
from robustce.nearest.core import _Nearest
from robustce.nearest.network import BOUND_TIGHTENING
from robustce.solvers.encodings import InputDomain
from robustce.solvers.milp import MILP, check_solver
from robustce.solvers.tree_encoding import TreeEnsemble, tree_parts
from robustce.validation import check_bool, check_choice, check_integer, check_number

__all__ = ["MILPNearest", "column_weights", "feature_distance", "milp_point", "tree_candidates"]

NORMS = ("l1", "l0", "linf")


def _explain_chunk(explainer: Explainer, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
    return [explainer._timed_one(x, int(t)) for x, t in zip(X, targets, strict=True)]


class MILPNearest(NearestSearch, Explainer):
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
    #: tree models go through the tree MILP (False in subclasses whose search is for networks
    #: only: they keep raising UnsupportedModelError for trees)
    _tree_models: ClassVar[bool] = True
    #: the engine's actionability tolerance (incumbents' round trip, the encoded domain)
    _action_tol: ClassVar[float] = ACTION_TOL
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

    # --- the engine's hooks (robustce.nearest.core) ------------------------------------------
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

    # --- per query --------------------------------------------------------------------------
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
