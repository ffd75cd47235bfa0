"""``MILPRobust`` (MILP-R, Jiang et al. 2023, the baseline of PROPLACE and APΔS): the nearest
counterfactual whose validity is *proven* under a model shift Δ.

Loop per query: find the nearest CE with validity margin ``tau`` (:class:`MILPNearest`); run
the exact Δ-test on it (:func:`robustce.robustness.exact_worst_case`); if it is not Δ-robust,
raise the margin and repeat. The new margin is ``max(growth · tau, drop · (1 + slack))`` where
``drop`` is how much the worst network in Δ lowered the last CE's margin — the least margin a
point needs to survive a shift of that size. When a raised margin is unreachable (the MILP
becomes infeasible), the margin is bisected between the last reachable margin (whose CE was not
Δ-robust) and the unreachable one: a Δ-robust CE may need a margin in between. Capped at
``max_rounds`` rounds (raises and bisection steps together) and the time limit; a query that
runs out of rounds, or whose bisection interval shrinks below ``bisect_tol`` without a Δ-robust
CE, gets status ``no_robust_point``. A timed-out Δ-test never counts as robust.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.milp_nearest import MILPNearest, feature_distance
from robustce.models.network import class_margin
from robustce.robustness.exact import DeltaStatus, exact_worst_case
from robustce.robustness.shift import ParameterShift
from robustce.validation import check_bool, check_integer, check_number

__all__ = ["MILPRobust"]


class MILPRobust(MILPNearest):
    """Nearest CE that passes the exact Δ-robustness test (MILP-R).

    Parameters
    ----------
    shift : :class:`~robustce.robustness.ParameterShift` or a number δ (p = ∞ box).
    growth : factor by which the margin grows at least per round (> 1).
    max_rounds : cap on nearest-CE / Δ-test rounds per query (raises and bisection steps).
    slack : relative safety added to the observed margin drop.
    bisect_tol : relative width ``(hi − lo) / hi`` at which the margin bisection stops
        (in (0, 1); see below).
    delta_time_limit : seconds per exact Δ-test (default: ``time_limit``).
    norm, tau, weights, tie_break, solver, mip_gap, threads : as :class:`MILPNearest`
        (``tau`` is the first round's margin).
    target_class, time_limit, random_state, n_jobs : see :class:`Explainer`; ``time_limit``
        is the total per query (all rounds).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : distance of the returned CE from the query (``norm``).
    delta, p : the shift set the CE is certified against.
    delta_status : the exact Δ-test's status for the returned CE (``robust``).
    worst_case_margin : the CE's exact worst-case target margin over Δ (a proven lower bound
        of it when the time left did not allow the exact value).
    tau : validity margin of the final round.
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
    """

    name: ClassVar[str] = "milp_robust"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "delta", "p", "delta_status", "worst_case_margin", "tau", "rounds", "optimal",
        "solver")

    def __init__(self, model: Any, data: Any = None, *, shift: ParameterShift | float = 0.05,
                 growth: float = 2.0, max_rounds: int = 10, slack: float = 0.05,
                 bisect_tol: float = 1e-3, delta_time_limit: float | None = None, **kwargs: Any):
        self.shift = shift
        self.growth = growth
        self.max_rounds = max_rounds
        self.slack = slack
        self.bisect_tol = bisect_tol
        self.delta_time_limit = delta_time_limit
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        shift = self.shift
        if isinstance(shift, Mapping):  # ParameterShift.to_dict(), e.g. from saved metadata
            unknown = set(shift) - {"delta", "p", "biases"}
            if unknown or "delta" not in shift or str(shift.get("p", "inf")) != "inf":
                raise ValidationError(f"shift must be a ParameterShift, a number δ or "
                                      f"{{'delta': δ, 'biases': bool}}, got {shift!r}")
            shift = ParameterShift(shift["delta"], biases=check_bool(shift.get("biases", True),
                                                                     "shift.biases"))
        elif not isinstance(shift, ParameterShift):
            check_number(shift, "shift", low=0, low_open=True)
            shift = ParameterShift(shift)
        # the loop reads the resolved ParameterShift; get_params then returns it (round-trips)
        self.shift = shift
        check_number(self.growth, "growth", low=1, low_open=True)
        check_integer(self.max_rounds, "max_rounds", low=1)
        check_number(self.slack, "slack", low=0)
        check_number(self.bisect_tol, "bisect_tol", low=0, high=1, low_open=True, high_open=True)
        check_number(self.delta_time_limit, "delta_time_limit", low=0, low_open=True,
                     allow_none=True)

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        t_start = time.perf_counter()
        tau = self.tau
        cert: dict[str, Any] = {c: math.nan for c in self.certificate_columns}
        cert.update({"delta": self.shift.delta, "p": "inf", "solver": self.solver, "delta_status": None,
                     "optimal": False})
        last_msg = ""
        lo = math.nan  # largest margin whose CE was found but not Δ-robust
        hi = math.inf  # smallest margin proven unreachable (after a raise)
        undecided = 0  # Δ-tests that ended in timeout / inconclusive / error

        def give_up(message: str) -> QueryResult:
            # "no_robust_point" claims every CE tried was shown not Δ-robust; when some test did
            # not decide, that claim was never proven: report a timeout instead
            if undecided:
                return QueryResult("timeout", None, cert, message=(
                    f"{undecided} Δ-test(s) ended undecided (timeout/inconclusive/error), so it is "
                    f"unknown whether a Δ-robust CE exists; {message}"))
            return QueryResult("no_robust_point", None, cert, message=message)
        for rnd in range(1, self.max_rounds + 1):
            remaining = self.time_limit - (time.perf_counter() - t_start)
            if remaining <= 1e-3:
                cert["rounds"] = rnd - 1
                return QueryResult("timeout", None, cert, message="time limit reached between rounds")
            near = self._nearest(x, target, tau, remaining)
            cert.update({"tau": tau, "rounds": rnd, "optimal": near.optimal})
            if near.status == "infeasible":
                if rnd == 1:
                    return QueryResult("infeasible", None, cert, message=near.message or
                                       "no actionable point is classified as the target")
                hi = tau
                if (hi - lo) / hi < self.bisect_tol:
                    return give_up(
                        f"no Δ-robust CE: bisected the margin down to [{lo:.6g}, {hi:.6g}] (relative "
                        f"width < {self.bisect_tol:g}): the nearest CE at margin {lo:.6g} is not Δ-robust "
                        f"and no actionable point reaches margin {hi:.6g}; {last_msg}")
                tau = 0.5 * (lo + hi)
                continue
            if near.status != "found":
                return QueryResult(near.status, None, cert, message=near.message)
            cf = near.cf
            remaining = self.time_limit - (time.perf_counter() - t_start)
            dtl = self.delta_time_limit or self.time_limit
            test = exact_worst_case(self._network, cf[None], self.shift, target, solver=self.solver,
                                    time_limit=max(min(dtl, remaining), 1e-3), decide_only=True)
            status = test.status[0]
            cert["delta_status"] = status.value
            if status is DeltaStatus.ROBUST:
                cert["worst_case_margin"] = float(test.lower[0])
                remaining = self.time_limit - (time.perf_counter() - t_start)
                if remaining > 1e-2:  # the exact worst case, not just "above tol"
                    exact = exact_worst_case(self._network, cf[None], self.shift, target,
                                             solver=self.solver, precheck=False,
                                             time_limit=min(dtl, remaining))
                    if exact.status[0] is DeltaStatus.ROBUST and math.isfinite(exact.value[0]):
                        cert["worst_case_margin"] = float(exact.value[0])
                cert["distance"] = float(feature_distance(self.encoder, x, cf[None], self.norm,
                                                          self._weights())[0])
                msg = "" if math.isinf(hi) else (
                    f"margin {tau:.6g} found by bisection after margin {hi:.6g} was unreachable")
                return QueryResult("found", cf[None], cert, message=msg)
            if status is not DeltaStatus.NOT_ROBUST:
                undecided += 1
            margin = float(class_margin(self._network.forward(cf[None]), target)[0])
            worst = float(test.upper[0]) if math.isfinite(test.upper[0]) else -margin
            drop = max(margin - worst, 0.0)
            last_msg = f"round {rnd}: margin {margin:.4g}, worst case in Δ {worst:.4g} ({status.value})"
            lo = tau if math.isnan(lo) else max(lo, tau)
            if math.isinf(hi):
                tau = max(self.growth * tau, drop * (1.0 + self.slack) + 1e-6)
            else:
                if (hi - lo) / hi < self.bisect_tol:
                    return give_up(
                        f"no Δ-robust CE: bisected the margin down to [{lo:.6g}, {hi:.6g}] (relative "
                        f"width < {self.bisect_tol:g}) without a Δ-robust CE; {last_msg}")
                tau = 0.5 * (lo + hi)
        tried = "" if math.isinf(hi) else (
            f" (bisecting the margin between {lo:.6g}, not Δ-robust, and {hi:.6g}, unreachable)")
        return give_up(f"no Δ-robust CE within {self.max_rounds} rounds{tried}; {last_msg}")
