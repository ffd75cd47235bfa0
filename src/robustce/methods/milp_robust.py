"""``MILPRobust`` (MILP-R, Jiang et al. 2023, the baseline of PROPLACE and APΔS): the nearest
counterfactual whose validity is *proven* under a model shift Δ.

Loop per query: find the nearest CE with validity margin ``tau`` (:class:`MILPNearest`); run
a certifier on it (default the exact Δ-test, :class:`robustce.robustness.ExactDeltaCertifier`;
any :class:`robustce.robustness.Certifier` plugs in); if it is not robust, raise the margin
(:class:`MarginSchedule`) and repeat. The new margin is ``max(growth · tau, drop · (1 + slack))``
where ``drop`` is how much the worst network in Δ lowered the last CE's margin — the least margin a
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
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.milp_nearest import MILPNearest, feature_distance
from robustce.models.network import class_margin
from robustce.robustness.certifier import Certifier, CertStatus
from robustce.robustness.exact import ExactDeltaCertifier
from robustce.robustness.shift import ParameterShift
from robustce.validation import check_bool, check_integer, check_number

__all__ = ["MILPRobust", "MarginSchedule"]


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
    delta_time_limit : seconds per Δ-test (default: ``time_limit``).
    certifier : the robustness test of each candidate (a
        :class:`~robustce.robustness.Certifier`); default None: the exact MILP Δ-test at
        ``shift`` with ``solver`` (:class:`~robustce.robustness.ExactDeltaCertifier`).
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
                 bisect_tol: float = 1e-3, delta_time_limit: float | None = None,
                 certifier: Certifier | None = None, **kwargs: Any):
        self.shift = shift
        self.growth = growth
        self.max_rounds = max_rounds
        self.slack = slack
        self.bisect_tol = bisect_tol
        self.delta_time_limit = delta_time_limit
        self.certifier = certifier
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
        if self.certifier is not None and not callable(getattr(self.certifier, "certify", None)):
            raise ValidationError(f"certifier must have a certify method, got "
                                  f"{type(self.certifier).__name__}")

    def _certifier(self) -> Any:
        """The Δ-test of the loop: the given certifier, or the exact MILP test at ``shift``
        (deciding first, then the exact worst case of a robust CE with the time left)."""
        if self.certifier is not None:
            return self.certifier
        return ExactDeltaCertifier(self.shift, solver=self.solver, exact_value=True,
                                   time_limit=self.delta_time_limit or self.time_limit)

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        t_start = time.perf_counter()
        certifier = self._certifier()
        shift = getattr(certifier, "shift", self.shift)
        schedule = MarginSchedule(self.tau, self.growth, self.slack, self.bisect_tol)
        cert: dict[str, Any] = {c: math.nan for c in self.certificate_columns}
        cert.update({"delta": shift.delta, "p": "inf", "solver": self.solver, "delta_status": None,
                     "optimal": False})
        last_msg = ""
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
            tau = schedule.tau
            near = self._nearest(x, target, tau, remaining)
            cert.update({"tau": tau, "rounds": rnd, "optimal": near.optimal})
            if near.status == "infeasible":
                if rnd == 1:
                    return QueryResult("infeasible", None, cert, message=near.message or
                                       "no actionable point is classified as the target")
                if not schedule.unreachable():
                    return give_up(
                        f"no Δ-robust CE: bisected the margin down to [{schedule.lo:.6g}, "
                        f"{schedule.hi:.6g}] (relative width < {self.bisect_tol:g}): the nearest CE "
                        f"at margin {schedule.lo:.6g} is not Δ-robust and no actionable point "
                        f"reaches margin {schedule.hi:.6g}; {last_msg}")
                continue
            if near.status != "found":
                return QueryResult(near.status, None, cert, message=near.message)
            cf = near.cf

            # the one test call
            remaining = self.time_limit - (time.perf_counter() - t_start)
            dtl = self.delta_time_limit or self.time_limit
            test = certifier.certify(self._network, cf[None], np.array([target]),
                                     time_limit=max(min(dtl, remaining), 1e-3))
            status = CertStatus(test.status[0])
            cert["delta_status"] = status.value
            if status is CertStatus.ROBUST:
                cert["worst_case_margin"] = float(test.lower[0])
                cert["distance"] = float(feature_distance(self.encoder, x, cf[None], self.norm,
                                                          self._weights())[0])
                msg = "" if not schedule.bisecting else (
                    f"margin {tau:.6g} found by bisection after margin {schedule.hi:.6g} was "
                    f"unreachable")
                return QueryResult("found", cf[None], cert, message=msg)
            if status is not CertStatus.NOT_ROBUST:
                undecided += 1
            margin = float(class_margin(self._network.forward(cf[None]), target)[0])
            worst = float(test.upper[0]) if math.isfinite(test.upper[0]) else -margin
            last_msg = f"round {rnd}: margin {margin:.4g}, worst case in Δ {worst:.4g} ({status.value})"
            if not schedule.not_robust(max(margin - worst, 0.0)):
                return give_up(
                    f"no Δ-robust CE: bisected the margin down to [{schedule.lo:.6g}, "
                    f"{schedule.hi:.6g}] (relative width < {self.bisect_tol:g}) without a Δ-robust "
                    f"CE; {last_msg}")
        tried = "" if not schedule.bisecting else (
            f" (bisecting the margin between {schedule.lo:.6g}, not Δ-robust, and "
            f"{schedule.hi:.6g}, unreachable)")
        return give_up(f"no Δ-robust CE within {self.max_rounds} rounds{tried}; {last_msg}")


@dataclass
class MarginSchedule:
    """The margins MILP-R tries, one per round (see :class:`MILPRobust`).

    ``tau`` is the margin to try next. After a CE at ``tau`` that is not robust, with the
    worst case in the set lowering its margin by ``drop``: :meth:`not_robust` — raise to
    ``max(growth · tau, drop · (1 + slack))`` until some margin was unreachable, then bisect.
    After an unreachable ``tau``: :meth:`unreachable` — bisect between ``lo`` (the largest
    margin whose CE was not robust) and ``hi`` (the smallest unreachable one). Both return
    False when the bracket is narrower than ``bisect_tol`` (relative to ``hi``): stop.
    """

    tau: float
    growth: float
    slack: float
    bisect_tol: float
    lo: float = math.nan
    hi: float = math.inf

    @property
    def bisecting(self) -> bool:
        return not math.isinf(self.hi)

    def _narrow(self) -> bool:
        return (self.hi - self.lo) / self.hi < self.bisect_tol

    def not_robust(self, drop: float) -> bool:
        self.lo = self.tau if math.isnan(self.lo) else max(self.lo, self.tau)
        if not self.bisecting:
            self.tau = max(self.growth * self.tau, drop * (1.0 + self.slack) + 1e-6)
            return True
        if self._narrow():
            return False
        self.tau = 0.5 * (self.lo + self.hi)
        return True

    def unreachable(self) -> bool:
        self.hi = self.tau
        if self._narrow():
            return False
        self.tau = 0.5 * (self.lo + self.hi)
        return True
