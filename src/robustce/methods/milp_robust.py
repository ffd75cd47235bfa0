"""``MILPRobust`` (MILP-R, Jiang et al. 2023, the baseline of PROPLACE and APΔS): the nearest
counterfactual whose validity is *proven* under a model shift Δ.

Loop per query: find the nearest CE with validity margin ``tau`` (:class:`MILPNearest`); run
a certifier on it (default the exact Δ-test, :class:`robustce.robustness.ExactDeltaCertifier`;
any :class:`robustce.robustness.Certifier` plugs in); if it is not robust, raise the margin
(:class:`MarginSchedule`) and repeat. The new margin is ``max(growth · tau, drop · (1 + slack))``
where ``drop`` is how much the worst network in Δ lowered the last CE's margin — the least margin a
point needs to survive a shift of that size. The default test solves the worst-case MILP to
optimality for every candidate, so ``drop`` is exact and the margins tried do not depend on which
flipping network a solver happens to find first. When a raised margin is unreachable (the MILP
becomes infeasible), the margin is bisected between the last reachable margin (whose CE was not
Δ-robust) and the unreachable one: a Δ-robust CE may need a margin in between. Capped at
``max_rounds`` rounds (raises and bisection steps together) and the time limit; a query that
runs out of rounds, or whose bisection interval shrinks below ``bisect_tol`` without a Δ-robust
CE, gets status ``no_robust_point``. A timed-out Δ-test never counts as robust.

The loop is :func:`robustce.methods.margin_loop.run_margin_loop`, shared with Wacht-R and Proto-R;
this module supplies its search (the nearest-CE MILP at a margin) and certificate.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from robustce.explanations import QueryResult
from robustce.methods.margin_loop import Candidate, DeltaRobustLoop, MarginSchedule
from robustce.methods.milp_nearest import MILPNearest

__all__ = ["MILPRobust", "MarginSchedule"]


class MILPRobust(DeltaRobustLoop, MILPNearest):
    """Nearest CE that passes the exact Δ-robustness test (MILP-R).

    Parameters
    ----------
    shift : :class:`~robustce.robustness.ParameterShift` or a number δ (p = ∞ box).
    growth : factor by which the margin grows at least per round (> 1).
    max_rounds : cap on nearest-CE / Δ-test rounds per query (raises and bisection steps).
    slack : relative safety added to the observed margin drop.
    bisect_tol : relative width ``(hi − lo) / hi`` at which the margin bisection stops
        (in (0, 1); see below).
    minimal : after the first Δ-robust CE, refine the margin (to the relative width
        ``refine_tol`` of ``(hi − lo) / hi``, default 0.01; at most 8 more rounds) and return
        the nearest Δ-robust CE tried (default True): raising the margin overshoots, and without
        this the CE keeps more worst-case margin than it needs (farther than the nearest
        Δ-robust CE). False: stop at the first Δ-robust CE (Jiang et al.'s loop; the paper
        configurations set it). Certificate ``margin_gap``: how far the returned margin is above
        one whose CE was not Δ-robust.
    refine_tol : see ``minimal``.
    tau_step : None (default), or the additive schedule of the APΔS authors' MILP-R: the
        margin grows by ``tau_step`` a round (``tau=0.01, tau_step=0.2``) and the first
        unreachable margin ends the search (no bisection).
    delta_time_limit : seconds per Δ-test (default: ``time_limit``).
    certifier : the robustness test of each candidate (a
        :class:`~robustce.robustness.Certifier`); default None: the exact MILP Δ-test at
        ``shift`` with ``solver``, solved for the exact worst case
        (:class:`~robustce.robustness.ExactDeltaCertifier` with ``worst_case=True``).
    model, data : see :class:`Explainer` (a ReLU network model; ``data`` gives the warm start).
    norm, tau, weights, tie_break, solver, mip_gap, threads, fixed_costs : as :class:`MILPNearest`
        (``tau`` is the first round's margin).
    warm_start, box_from_incumbent, bound_tightening, relax_first : as :class:`MILPNearest`,
        for each round's nearest-CE solve.
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer`; ``time_limit``
        is the total per query (all rounds).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : distance of the returned CE from the query (``norm``).
    delta, p : the shift set the CE is certified against.
    delta_status : the exact Δ-test's status for the returned CE (``robust``).
    worst_case_margin : the CE's exact worst-case target margin over Δ (a proven lower bound
        of it when the time left did not allow the exact value).
    tau : validity margin of the returned CE's round.
    margin_gap : ``hi − lo`` of the margin refinement (``refine_tol``): the returned margin is
        at most this above a margin whose CE was not Δ-robust (NaN: robust at the first margin
        tried, or the additive schedule; absent with ``minimal=False``).
    rounds : rounds used.
    optimal : whether the last nearest-CE MILP was solved to optimality (for its ``tau``).
    solver : the MILP backend.

    Margin schedule: round 1 uses ``tau``. After a CE that is not Δ-robust the margin is raised
    to ``max(growth · tau, drop · (1 + slack))``. If the raised margin is unreachable (the
    nearest-CE MILP is proven infeasible), the rounds that follow bisect the margin between
    ``lo`` — the largest margin whose CE was found but not Δ-robust — and ``hi`` — the smallest
    margin proven unreachable: the midpoint is tried; a non-robust CE there raises ``lo``, an
    infeasible MILP lowers ``hi``, a Δ-robust CE is returned. The bisection stops with
    ``no_robust_point`` once ``(hi − lo) / hi < bisect_tol`` (the message gives the interval and
    the last CE's worst case), or when ``max_rounds`` or the time limit run out.

    Statuses: ``found`` (proven Δ-robust); ``infeasible`` (not even a valid CE exists);
    ``no_robust_point`` (rounds exhausted, or the bisection found no margin between the last
    reachable and the first unreachable one that gives a Δ-robust CE); ``timeout``; ``error``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MILPRobust(model, train, shift=0.02).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> shift = rc.robustness.ParameterShift(0.02)
    >>> bool(rc.robustness.is_delta_robust(model, res, shift, target_class=1).all())
    True
    """

    _tree_models: ClassVar[bool] = False  # the Δ-test shifts a network's weights
    _constraints: ClassVar[str] = "exact"  # every round's MILP is MILPNearest's
    name: ClassVar[str] = "milp_robust"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "delta", "p", "delta_status", "worst_case_margin", "tau", "margin_gap",
        "rounds", "optimal", "solver")

    def __init__(self, model: Any, data: Any = None, *, minimal: bool = True, **kwargs: Any):
        super().__init__(model, data, minimal=minimal, **kwargs)

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        """One query through the shared margin loop (:mod:`robustce.methods.margin_loop`);
        the search of a round is the nearest-CE MILP at that round's margin."""
        seeds: list[np.ndarray] = []  # this query's CEs of earlier rounds: incumbent seeds

        def find(rows: np.ndarray, taus: np.ndarray, remaining: float) -> list[Candidate]:
            near = self._nearest(x, target, float(taus[0]), remaining,
                                 seeds=np.vstack(seeds) if seeds else None)
            if near.cf is not None:
                seeds.append(near.cf)
            return [Candidate(near.status, near.cf, near.message, {"optimal": near.optimal})]

        def cost(_row: int, cf: np.ndarray) -> float:
            return float(self.distance_.rowwise(x, cf[None], self.encoder)[0])

        (r,) = self._robust_search(x[None], np.array([target]), find, tau=self.tau,
                                   base_cert={"solver": self.solver, "optimal": False}, cost=cost)
        if r.status == "found":
            # the distance minimised (fixed costs included)
            r.certificate["distance"] = float(self.distance_.rowwise(x, r.cfs, self.encoder)[0])
        return r
