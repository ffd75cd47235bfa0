"""The Δ-robust margin loop shared by MILP-R, Wacht-R and Proto-R (Jiang et al., AAAI 2023).

Jiang et al. turn a counterfactual search into a Δ-robust one by one loop: find a CE whose target
margin is at least ``tau``; test it (the exact Δ-test, or any
:class:`~robustce.robustness.Certifier`); if it is not robust, raise ``tau`` and search again.
The search is the method's own — the nearest-CE MILP (:class:`~robustce.methods.MILPRobust`),
Wachter's gradient search (:class:`~robustce.methods.WachterRobust`), the prototype-guided search
(:class:`~robustce.methods.ProtoRobust`) — and plugs in as a function; everything else lives here:

* :class:`MarginSchedule` — the margins tried, one per round: raise to
  ``max(growth · tau, drop · (1 + slack))`` (``drop``: how much the worst network of the set
  lowered the last CE's margin; exact with the default test) until a margin is unreachable,
  then bisect between the last reachable one and the first unreachable one;
* :func:`run_margin_loop` — the loop itself, **batch first**: every round sends all queries
  still searching to the search in one call and all candidates to the certifier in one call;
* :class:`DeltaRobustLoop` — the loop's parameters (``shift``, ``growth``, ``max_rounds``,
  ``slack``, ``bisect_tol``, ``minimal``, ``refine_tol``, ``delta_time_limit``, ``certifier``) and their
  validation, as a mixin for explainers.

**Minimal margins** (``minimal``, ``refine_tol``). Raising the margin overshoots: the first Δ-robust CE may
keep a worst-case margin far above zero, so a nearer Δ-robust CE exists at a smaller margin.
With ``minimal`` the loop does not stop at the first Δ-robust CE: between ``lo`` (the largest
margin whose CE was shown not Δ-robust) and ``hi`` (the smallest whose CE is), it tries the
margin where the worst-case margin, interpolated between the two CEs (regula falsi with the
Illinois rule, kept inside the middle 80 % of the bracket), crosses zero, until
``(hi − lo) / hi < refine_tol``, or until the CE at ``lo`` is within ``refine_tol`` (relative)
of the nearest Δ-robust CE's cost (no margin in the bracket can gain more: the nearest CE at a
margin is never nearer than at a smaller one), or :data:`REFINE_ROUNDS` more rounds. The
nearest Δ-robust CE tried is returned (every one is certified); its ``margin_gap`` =
``hi − lo`` says how far its margin is from one whose CE was not Δ-robust. It also stops when
the CEs below the bracket stop approaching robustness: when the worst-case margins of the last
two not-robust CEs, extrapolated, reach zero only above ``hi`` (a CE that a categorical change
makes robust, which no continuous move below it matches). A refinement round that times out or
fails ends the refinement, never the answer: the Δ-robust CE in hand is returned. Jiang et
al.'s loop stops at the first Δ-robust CE (``minimal=False``), as do the additive schedule and a CE
robust at the first margin (nothing nearer at the margin asked).

Honesty rules the loop enforces: only a certifier's ``robust`` is a claim; a test that ends in
``timeout`` / ``inconclusive`` / ``error`` is never robust, and when any test of a query was
undecided, running out of rounds is reported as ``timeout`` (whether a Δ-robust CE exists is
then unknown), not ``no_robust_point``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.margin_refinement import REFINE_ROUNDS, Refinement
from robustce.models.network import class_margin
from robustce.robustness.certifier import Certifier, CertStatus
from robustce.robustness.exact import ExactDeltaCertifier
from robustce.robustness.shift import ParameterShift
from robustce.solvers.clock import Budget
from robustce.validation import check_integer, check_number

__all__ = ["Candidate", "DeltaRobustLoop", "MarginSchedule", "run_margin_loop"]

#: the search statuses that, after round 1, mean "this margin is out of reach" (bisect)
UNREACHABLE = ("infeasible", "not_found")


@dataclass
class MarginSchedule:
    """The margins the loop tries, one per round.

    ``tau`` is the margin to try next. After a CE at ``tau`` that is not robust, with the
    worst case in the set lowering its margin by ``drop``: :meth:`not_robust` — raise to
    ``max(growth · tau, drop · (1 + slack))`` until some margin was unreachable, then bisect.
    After an unreachable ``tau``: :meth:`unreachable` — bisect between ``lo`` (the largest
    margin whose CE was not robust) and ``hi`` (the smallest unreachable one). Both return
    False when the bracket is narrower than ``bisect_tol`` (relative to ``hi``): stop.

    With ``step`` (the APΔS authors' schedule: 0.01, then + 0.2 logit a round) the margin grows
    by ``step`` after each CE that is not robust, and the first unreachable margin stops the
    search: no bisection.
    """

    tau: float
    growth: float
    slack: float
    bisect_tol: float
    lo: float = math.nan
    hi: float = math.inf
    step: float | None = None

    @property
    def bisecting(self) -> bool:
        return not math.isinf(self.hi)

    def _narrow(self) -> bool:
        return (self.hi - self.lo) / self.hi < self.bisect_tol

    def not_robust(self, drop: float) -> bool:
        self.lo = self.tau if math.isnan(self.lo) else max(self.lo, self.tau)
        if self.step is not None:
            self.tau += self.step
            return True
        if not self.bisecting:
            self.tau = max(self.growth * self.tau, drop * (1.0 + self.slack) + 1e-6)
            return True
        if self._narrow():
            return False
        self.tau = 0.5 * (self.lo + self.hi)
        return True

    def unreachable(self) -> bool:
        self.hi = self.tau
        if self.step is not None or self._narrow():
            return False
        self.tau = 0.5 * (self.lo + self.hi)
        return True


@dataclass
class Candidate:
    """What the search returns for one query at one margin.

    ``status``: ``found`` (``cf`` is a model-space point with target margin ≥ the margin
    asked), ``infeasible`` (proven: no actionable point reaches the margin), ``not_found`` (a
    heuristic search ended without one), ``timeout`` or ``error``. ``info``: extra certificate
    fields of this round (e.g. the MILP's ``optimal``), copied into the query's certificate."""

    status: str
    cf: np.ndarray | None = None
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict)


#: ``find(rows, taus, remaining) -> candidates``: search for the queries ``rows`` (positions in
#: the batch) at margins ``taus`` within ``remaining`` seconds; one :class:`Candidate` per row
SearchFn = Callable[[np.ndarray, np.ndarray, float], list[Candidate]]


@dataclass
class _QueryState:
    schedule: MarginSchedule
    cert: dict[str, Any]
    rnd: int = 0
    undecided: int = 0  # Δ-tests that ended in timeout / inconclusive / error
    last_msg: str = ""
    g_lo: float = math.nan  # worst-case margin of the CE at schedule.lo
    c_lo: float = -math.inf  # its cost
    refine: Refinement | None = None
    result: QueryResult | None = None


def run_margin_loop(find: SearchFn, certifier: Any, network: Any, X: np.ndarray,
                    targets: np.ndarray, *, tau: float, growth: float, slack: float,
                    bisect_tol: float, max_rounds: int, time_limit: float,
                    tau_step: float | None = None,
                    delta_time_limit: float | None = None, base_cert: Mapping[str, Any] | None = None,
                    unreachable_text: str = "no actionable point reaches margin",
                    refine_tol: float | None = None,
                    cost: Callable[[int, np.ndarray], float] | None = None
                    ) -> list[QueryResult]:
    """Raise each query's target margin until its CE is robust by ``certifier`` (see the
    module docstring); one :class:`QueryResult` per row of ``X``.

    Each round sends every query still searching to ``find`` at once and every found
    candidate to ``certifier.certify`` at once. ``time_limit`` (a CPU :class:`Budget`) bounds
    the whole loop (all rounds and queries advance together); ``delta_time_limit`` each Δ-test
    row (default ``time_limit``). Certificate fields set here: ``tau`` (last margin tried),
    ``rounds``, ``delta_status``, ``worst_case_margin`` (the certifier's lower bound for a
    robust CE); ``base_cert`` gives every other column its starting value and ``find``'s
    :attr:`Candidate.info` updates them. ``unreachable_text`` words a margin the search did not
    reach in the messages (the MILP proves it; a heuristic only failed to find one).
    ``tau_step``: the additive schedule of :class:`MarginSchedule` instead of raise-and-bisect.
    ``refine_tol``: refine the margin after the first Δ-robust CE (module docstring; sets
    ``margin_gap``), keeping the Δ-robust CE of least ``cost(row, cf)`` (default: of least
    margin)."""
    budget = Budget(time_limit)
    targets = np.asarray(targets, dtype=np.int64)
    states = [_QueryState(MarginSchedule(tau, growth, slack, bisect_tol, step=tau_step),
                          dict(base_cert or {}, delta_status=None)) for _ in range(len(X))]
    dtl = delta_time_limit or time_limit

    def give_up(s: _QueryState, message: str) -> QueryResult:
        # "no_robust_point" claims every CE tried was shown not Δ-robust; when some test did
        # not decide, that claim was never proven: report a timeout instead
        if s.undecided:
            return QueryResult("timeout", None, s.cert, message=(
                f"{s.undecided} Δ-test(s) ended undecided (timeout/inconclusive/error), so it is "
                f"unknown whether a Δ-robust CE exists; {message}"))
        return QueryResult("no_robust_point", None, s.cert, message=message)

    def out_of_rounds(s: _QueryState) -> QueryResult:
        sch = s.schedule
        tried = "" if not sch.bisecting else (
            f" (bisecting the margin between {sch.lo:.6g}, not Δ-robust, and {sch.hi:.6g}, "
            "unreachable)")
        return give_up(s, f"no Δ-robust CE within {max_rounds} rounds{tried}; {s.last_msg}")

    def so_far(s: _QueryState) -> str:
        # where the search stood when it stopped: why a deep network's search gives up
        sch = s.schedule
        if not s.last_msg:
            return ""
        where = (f"; bisecting the margin between {sch.lo:.6g} (not Δ-robust) and "
                 f"{sch.hi:.6g} (unreachable)" if sch.bisecting else "")
        return f" (last tested: {s.last_msg}{where})"

    def bisected_out(s: _QueryState) -> str:
        sch = s.schedule
        if sch.step is not None:
            return (f"no Δ-robust CE: the CE at margin {sch.lo:.6g} is not Δ-robust and "
                    f"{unreachable_text} {sch.hi:.6g} (margin step {sch.step:g}); {s.last_msg}")
        return (f"no Δ-robust CE: bisected the margin down to [{sch.lo:.6g}, {sch.hi:.6g}] "
                f"(relative width < {bisect_tol:g}): the CE at margin {sch.lo:.6g} is not "
                f"Δ-robust and {unreachable_text} {sch.hi:.6g}; {s.last_msg}")

    def refined(s: _QueryState, note: str = "") -> QueryResult:
        """The nearest Δ-robust CE of a refinement, with the bracket it closed to."""
        ref = s.refine
        assert ref is not None
        _, cf, cert, msg = ref.best
        cert = dict(cert, rounds=s.rnd, margin_gap=ref.hi - ref.lo)
        # the bracket is in the certificate (margin_gap); the message only says what cut the
        # refinement short
        return QueryResult("found", cf[None], cert, message="; ".join(m for m in (msg, note) if m))

    def robust_found(s: _QueryState, i: int, cf: np.ndarray, worst: float) -> QueryResult | None:
        """A Δ-robust CE at the current margin: the answer, or (refining) None and the next
        margin set."""
        sch = s.schedule
        msg = "" if not sch.bisecting else (
            f"margin {sch.tau:.6g} found by bisection after margin {sch.hi:.6g} was unreachable")
        here = (cost(i, cf) if cost is not None else sch.tau, cf, dict(s.cert), msg)
        ref = s.refine
        if ref is None:
            if (refine_tol is None or sch.step is not None or math.isnan(sch.lo)
                    or (sch.tau - sch.lo) / sch.tau < refine_tol
                    or here[0] - s.c_lo <= refine_tol * abs(here[0])):
                gap = {} if refine_tol is None else {
                    "margin_gap": math.nan if math.isnan(sch.lo) else sch.tau - sch.lo}
                return QueryResult("found", cf[None], dict(s.cert, **gap), message=msg)
            ref = s.refine = Refinement(sch.lo, min(s.g_lo, 0.0), s.c_lo, sch.tau, worst, here,
                                         lo_seen=[(sch.lo, min(s.g_lo, 0.0))])
        else:
            ref.move("hi", sch.tau, worst)
            if here[0] <= ref.best[0]:
                ref.best = here
        if ref.narrow(refine_tol or 1.0):
            return refined(s)
        sch.tau = ref.next_tau()
        return None

    def lo_cost(i: int, cf: np.ndarray, tau: float) -> float:
        if refine_tol is None:
            return -math.inf
        return cost(i, cf) if cost is not None else tau

    def refine_not_robust(s: _QueryState, worst: float, c_lo: float) -> QueryResult | None:
        """A CE of a refinement round that is not (shown) Δ-robust: raise ``lo``."""
        ref = s.refine
        assert ref is not None
        ref.move("lo", s.schedule.tau, min(worst, 0.0))
        ref.c_lo = c_lo
        if ref.narrow(refine_tol or 1.0):
            return refined(s)
        s.schedule.tau = ref.next_tau()
        return None

    for rnd in range(1, max_rounds + REFINE_ROUNDS + 1):
        for s in states:
            if s.result is None and s.refine is None and rnd > max_rounds:
                s.result = out_of_rounds(s)
        active = np.array([i for i, s in enumerate(states) if s.result is None], dtype=np.int64)
        if len(active) == 0:
            break
        remaining = budget.remaining()
        if remaining <= 1e-3:
            for i in active:
                s = states[i]
                if s.refine is not None:
                    s.result = refined(s, f"the {budget.stop_text()} ended the refinement")
                    continue
                s.cert["rounds"] = rnd - 1
                s.result = QueryResult("timeout", None, s.cert, message=(
                    f"{budget.stop_text()} reached between rounds" + so_far(s)))
            break
        taus = np.array([states[i].schedule.tau for i in active])
        cands = find(active, taus, remaining)
        found: list[int] = []
        for i, c in zip(active, cands, strict=True):
            s = states[i]
            s.rnd = rnd
            s.cert.update({"tau": s.schedule.tau, "rounds": rnd, **c.info})
            if s.refine is not None and c.status != "found":
                s.result = refined(s, f"the refinement ended at margin {s.schedule.tau:.6g}: "
                                      f"{c.status}" + (f" ({c.message})" if c.message else ""))
                continue
            if c.status in UNREACHABLE:
                if rnd == 1:
                    s.result = QueryResult(c.status, None, s.cert, message=c.message or
                                           "no actionable point is classified as the target")
                elif not s.schedule.unreachable():
                    s.result = give_up(s, bisected_out(s))
                continue
            if c.status != "found":
                msg = c.message + (f"; round {rnd} at margin {s.schedule.tau:.6g}" + so_far(s)
                                   if rnd > 1 else "")
                s.result = QueryResult(c.status, None, s.cert, message=msg)
                continue
            found.append(i)
        if not found:
            continue
        rows = np.array(found)
        cfs = np.vstack([cands[int(np.flatnonzero(active == i)[0])].cf for i in rows])
        remaining = budget.remaining()
        test = certifier.certify(network, cfs, targets[rows],
                                 time_limit=max(min(dtl, remaining), 1e-3))
        margins = class_margin(network.forward(cfs), targets[rows])
        for j, i in enumerate(rows):
            s = states[i]
            status = CertStatus(test.status[j])
            s.cert["delta_status"] = status.value
            if status is CertStatus.ROBUST:
                s.cert["worst_case_margin"] = float(test.lower[j])
                s.result = robust_found(s, int(i), cfs[j], float(test.lower[j]))
                continue
            if status is not CertStatus.NOT_ROBUST:
                s.undecided += 1
            margin = float(margins[j])
            worst = float(test.upper[j]) if math.isfinite(test.upper[j]) else -margin
            s.last_msg = (f"round {rnd}: margin {margin:.4g}, worst case in Δ {worst:.4g} "
                          f"({status.value})")
            if s.refine is not None:
                s.result = refine_not_robust(s, worst, lo_cost(int(i), cfs[j], s.schedule.tau))
                continue
            if math.isnan(s.schedule.lo) or s.schedule.tau >= s.schedule.lo:
                s.g_lo, s.c_lo = worst, lo_cost(int(i), cfs[j], s.schedule.tau)
            if not s.schedule.not_robust(max(margin - worst, 0.0)):
                s.result = give_up(s, (
                    f"no Δ-robust CE: bisected the margin down to [{s.schedule.lo:.6g}, "
                    f"{s.schedule.hi:.6g}] (relative width < {bisect_tol:g}) without a Δ-robust "
                    f"CE; {s.last_msg}"))
    out = []
    for s in states:
        if s.result is None:
            s.result = refined(s) if s.refine is not None else out_of_rounds(s)
        out.append(s.result)
    return out


class DeltaRobustLoop:
    """Mixin: the margin loop's parameters for an explainer whose search takes a margin.

    Put it first among the bases (``class WachterRobust(DeltaRobustLoop, Wachter)``); the
    subclass calls :meth:`_robust_search` from its batch hook with its search function.

    Parameters
    ----------
    shift : :class:`~robustce.robustness.ParameterShift` or a number δ (p = ∞ box).
    growth : factor by which the margin grows at least per round (> 1).
    max_rounds : cap on search / Δ-test rounds per query (raises and bisection steps).
    slack : relative safety added to the observed margin drop.
    bisect_tol : relative width ``(hi − lo) / hi`` at which the margin bisection stops, in (0, 1).
    minimal : refine the margin after the first Δ-robust CE and return the nearest Δ-robust CE
        tried (the module docstring's "minimal margins"; certificate column ``margin_gap``);
        False (the default here): the first Δ-robust CE is the answer, as in Jiang et al.
    refine_tol : the relative width ``(hi − lo) / hi`` in (0, 1) at which the refinement stops.
    tau_step : None (default: raise by ``growth`` / the observed drop, then bisect), or a
        positive step: the margin grows by it each round and the first unreachable margin ends
        the search (the APΔS authors' schedule: ``tau=0.01, tau_step=0.2``).
    delta_time_limit : seconds per Δ-test (default: ``time_limit``).
    certifier : the robustness test of each candidate (a
        :class:`~robustce.robustness.Certifier`); default None: the exact MILP Δ-test at
        ``shift`` (:class:`~robustce.robustness.ExactDeltaCertifier` with ``worst_case=True``
        and the explainer's ``solver`` where it has one): the exact worst case of every
        candidate, robust or not, so the next margin reads the exact drop.
    """

    def __init__(self, model: Any, data: Any = None, *, shift: ParameterShift | float = 0.05,
                 growth: float = 2.0, max_rounds: int = 10, slack: float = 0.05,
                 bisect_tol: float = 1e-3, minimal: bool = False, refine_tol: float = 0.01,
                 tau_step: float | None = None, delta_time_limit: float | None = None,
                 certifier: Certifier | None = None, **kwargs: Any):
        self.shift = shift
        self.minimal = minimal
        self.refine_tol = refine_tol
        self.growth = growth
        self.max_rounds = max_rounds
        self.slack = slack
        self.bisect_tol = bisect_tol
        self.tau_step = tau_step
        self.delta_time_limit = delta_time_limit
        self.certifier = certifier
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        # the loop reads the resolved ParameterShift; get_params then returns it (round-trips)
        self.shift = ParameterShift.of(self.shift)
        check_number(self.growth, "growth", low=1, low_open=True)
        check_integer(self.max_rounds, "max_rounds", low=1)
        check_number(self.slack, "slack", low=0)
        check_number(self.bisect_tol, "bisect_tol", low=0, high=1, low_open=True, high_open=True)
        if not isinstance(self.minimal, bool | np.bool_):
            raise ValidationError(f"minimal must be True or False, got {self.minimal!r}")
        check_number(self.refine_tol, "refine_tol", low=0, high=1, low_open=True, high_open=True)
        check_number(self.tau_step, "tau_step", low=0, low_open=True, allow_none=True)
        check_number(self.delta_time_limit, "delta_time_limit", low=0, low_open=True,
                     allow_none=True)
        if self.certifier is not None and not callable(getattr(self.certifier, "certify", None)):
            raise ValidationError(f"certifier must have a certify method, got "
                                  f"{type(self.certifier).__name__}")

    def _certifier(self) -> Any:
        """The Δ-test of the loop: the given certifier, or the exact worst-case MILP at
        ``shift`` (``worst_case=True``). The exact worst case, not the first network found that
        flips a CE, sets the next margin: the schedule is then a function of the network and Δ,
        not of the solver's search path, and a tighter formulation or another solver finds the
        same CEs (up to ties among nearest points)."""
        if self.certifier is not None:
            return self.certifier
        return ExactDeltaCertifier(self.shift, solver=getattr(self, "solver", "highs"),
                                   worst_case=True,
                                   time_limit=self.delta_time_limit or self.time_limit)

    def _robust_search(self, X: np.ndarray, targets: np.ndarray, find: SearchFn, *, tau: float,
                       base_cert: Mapping[str, Any],
                       unreachable_text: str = "no actionable point reaches margin",
                       cost: Callable[[int, np.ndarray], float] | None = None
                       ) -> list[QueryResult]:
        """:func:`run_margin_loop` with this explainer's loop parameters and certifier
        (``cost(row, cf)``: what the margin refinement minimises)."""
        certifier = self._certifier()
        shift = getattr(certifier, "shift", self.shift)
        cert = {c: math.nan for c in self.certificate_columns}
        cert.update(base_cert)
        cert.update({"delta": shift.delta, "p": "inf"})
        network = getattr(self, "_network", None) or self.model.network()
        return run_margin_loop(find, certifier, network, X, targets, tau=tau,
                               growth=self.growth, slack=self.slack, bisect_tol=self.bisect_tol,
                               max_rounds=self.max_rounds, time_limit=self.time_limit,
                               tau_step=self.tau_step,
                               delta_time_limit=self.delta_time_limit, base_cert=cert,
                               unreachable_text=unreachable_text,
                               refine_tol=self.refine_tol if self.minimal else None,
                               cost=cost)
