"""The HiGHS backend (``highspy``, the default) of :class:`~robustce.solvers.milp.MILP`.

``time_limit`` is CPU seconds (:mod:`robustce.solvers.clock`): HiGHS's interrupt callbacks
(simplex, IPM, MIP; a few thousand calls a second, in the calling thread) stop the run once the
budget's CPU clock passes it; HiGHS's own ``time_limit`` option, wall-clock, is the safety net
``WALL_SLACK × time_limit``."""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from robustce.errors import SolverError
from robustce.solvers.clock import STOP_TEXT, WALL_SLACK, Budget
from robustce.solvers.milp.common import INF, SolveResult, SolveStatus, _ModelData, _Options

#: HiGHS options that :func:`highs_work_limits` gives the HiGHS models of its context
_HIGHS_CONTEXT: ContextVar[tuple[tuple[str, Any], ...]] = ContextVar("robustce_highs_context", default=())


@contextmanager
def highs_work_limits(**options: Any) -> Iterator[None]:
    """Give every HiGHS model whose solver instance is made in this context (at its first
    solve) these HiGHS options, beneath the model's own ``options``: work limits such as
    ``mip_max_nodes`` or ``simplex_iteration_limit``, which, unlike ``time_limit``, do not
    depend on the host's speed or load. A solve stopped by one has status ``limit``, which
    the library treats as it treats a time limit (never a proof)."""
    token = _HIGHS_CONTEXT.set(tuple({**dict(_HIGHS_CONTEXT.get()), **options}.items()))
    try:
        yield
    finally:
        _HIGHS_CONTEXT.reset(token)


_banner_lock = threading.Lock()
_banner_done = False


def _new_highs(highspy: Any) -> Any:
    """A ``highspy.Highs()``. HiGHS ≥ 1.16 prints its version banner on stdout (from C, so
    Python's redirection misses it) when the first instance of a process is built, before any
    option can be set; that line would land in the CLI's output and in users' logs. The first
    construction runs with file descriptor 1 pointed at /dev/null; later ones print nothing."""
    global _banner_done
    with _banner_lock:
        if _banner_done:
            return highspy.Highs()
        try:
            sys.stdout.flush()
            saved = os.dup(1)
        except (OSError, ValueError):  # no usable fd 1 (e.g. a closed or replaced stdout)
            _banner_done = True
            return highspy.Highs()
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, 1)
                h = highspy.Highs()
            finally:
                os.dup2(saved, 1)
                os.close(devnull)
        finally:
            os.close(saved)
        _banner_done = True
        return h


class _HighsBackend:
    name = "highs"

    def __init__(self, options: _Options):
        import highspy  # noqa: PLC0415

        self._hs = highspy
        # a fresh instance per model: HiGHS's run clock, which ``time_limit`` is checked
        # against, adds up over every run of an instance and no reset call clears it
        self.h = _new_highs(highspy)
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("log_to_console", False)
        self.h.setOptionValue("threads", int(options.threads))
        self.h.setOptionValue("random_seed", int(options.seed))
        self.h.setOptionValue("mip_rel_gap", float(options.mip_gap))
        self.h.setOptionValue("mip_abs_gap", float(options.abs_gap))
        self.h.setOptionValue("presolve", "on" if options.presolve else "off")
        # No MIP restarts: HiGHS 1.16 can loop forever inside the restart's presolve
        # (HPresolve::strengthenInequalities), ignoring the time limit — measured on a HELOC
        # MILP-R query (tests/solvers/test_highs_hang.py). On our small MILPs restarts bought
        # nothing measurable (HELOC MILP-R, 50 queries: 0.70 vs 0.76 s median without/with).
        self.h.setOptionValue("mip_allow_restart", False)
        if options.feasibility_tol is not None:
            self.h.setOptionValue("mip_feasibility_tolerance", float(options.feasibility_tol))
            self.h.setOptionValue("primal_feasibility_tolerance", float(options.feasibility_tol))
        for key, val in {**dict(_HIGHS_CONTEXT.get()), **options.extra}.items():
            if self.h.setOptionValue(key, val) == highspy.HighsStatus.kError:
                raise SolverError(f"HiGHS rejected option {key}={val!r}")
        self.has_integers = False
        self._threads = int(options.threads)
        self._budget: Budget | None = None
        self._stopped: str = ""
        for event in (self.h.cbSimplexInterrupt, self.h.cbIpmInterrupt, self.h.cbMipInterrupt):
            event.subscribe(self._check_budget)

    def _check_budget(self, event: Any) -> None:
        """Interrupt callback: stop the run once the budget expires. It sets the flag either
        way: HiGHS 1.16 keeps an interrupt flag set across runs of an instance, so a later run
        would otherwise stop at its first callback."""
        budget = self._budget
        stop = budget is not None and budget.expired()
        if stop and not self._stopped:
            self._stopped = budget.stopped_by()
        event.interrupt(stop)

    def load(self, m: _ModelData) -> None:
        A = m.A
        n, k = len(m.lb), A.shape[0]
        self.has_integers = bool(m.vtype.any())
        integrality = m.vtype.astype(np.int32)
        status = self.h.passModel(
            n, k, int(A.nnz), 2, int(m.sense), float(m.offset),
            m.cost, m.lb, m.ub, m.row_lb, m.row_ub,
            A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data.astype(np.float64),
            integrality,
        )
        if status == self._hs.HighsStatus.kError:
            raise SolverError("HiGHS rejected the model (passModel returned an error)")

    def set_bounds(self, cols: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> None:
        self.h.changeColsBounds(len(cols), cols.astype(np.int32), lb, ub)

    def set_costs(self, cost: np.ndarray, sense: int, offset: float) -> None:
        idx = np.arange(len(cost), dtype=np.int32)
        self.h.changeColsCost(len(cost), idx, cost)
        self.h.changeObjectiveSense(self._hs.ObjSense.kMinimize if sense > 0 else self._hs.ObjSense.kMaximize)
        self.h.changeObjectiveOffset(float(offset))

    def set_row_bounds(self, rows: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> None:
        self.h.changeRowsBounds(len(rows), rows.astype(np.int32), lb, ub)

    def set_start(self, start: dict[int, float]) -> None:
        if not start or not self.has_integers:
            return
        idx = np.fromiter(start.keys(), dtype=np.int32, count=len(start))
        val = np.fromiter(start.values(), dtype=np.float64, count=len(start))
        self.h.setSolution(len(idx), idx, val)

    def solve(self, time_limit: float, sense: int, cutoff: float | None = None,
              target: float | None = None) -> SolveResult:
        hs, h = self._hs, self.h
        # the CPU budget is enforced by the interrupt callbacks; HiGHS's wall-clock limit is
        # the safety net (a phase without callbacks, such as presolve, stuck)
        h.setOptionValue("time_limit", WALL_SLACK * float(time_limit))
        # HiGHS reads both options in its internal minimisation form (negated when maximising)
        h.setOptionValue("objective_bound", sense * float(cutoff) if cutoff is not None else INF)
        h.setOptionValue("objective_target", sense * float(target) if target is not None else -INF)
        t0 = time.perf_counter()
        self._budget, self._stopped = Budget(time_limit, self._threads), ""
        try:
            run_status = h.run()
        except Exception as exc:  # pragma: no cover - defensive
            return SolveResult(SolveStatus.ERROR, time=time.perf_counter() - t0, solver=self.name,
                               message=f"HiGHS raised {type(exc).__name__}: {exc}")
        finally:
            self._budget = None
        elapsed = time.perf_counter() - t0
        ms = h.getModelStatus()
        M = hs.HighsModelStatus
        mapping = {
            M.kOptimal: SolveStatus.OPTIMAL,
            M.kInfeasible: SolveStatus.INFEASIBLE,
            M.kUnbounded: SolveStatus.UNBOUNDED,
            M.kUnboundedOrInfeasible: SolveStatus.INFEASIBLE_OR_UNBOUNDED,
            M.kTimeLimit: SolveStatus.TIME_LIMIT,
            M.kIterationLimit: SolveStatus.LIMIT,
            M.kSolutionLimit: SolveStatus.LIMIT,
            M.kInterrupt: SolveStatus.LIMIT,
            M.kObjectiveBound: SolveStatus.LIMIT,
            M.kObjectiveTarget: SolveStatus.LIMIT,
        }
        status = mapping.get(ms, SolveStatus.ERROR)
        message = h.modelStatusToString(ms)
        stopped_by = ""
        if ms == M.kInterrupt and self._stopped:
            status, stopped_by = SolveStatus.TIME_LIMIT, self._stopped
        elif ms == M.kTimeLimit:
            stopped_by = "wall"
        if stopped_by:
            limit = float(time_limit) * (WALL_SLACK if stopped_by == "wall" else 1.0)
            message = f"{STOP_TEXT[stopped_by]} ({limit:.3g} s) reached"
        if run_status == hs.HighsStatus.kError and status is not SolveStatus.ERROR:
            message += " (run returned an error)"
        if ms == M.kObjectiveTarget:
            status = SolveStatus.TARGET
        info = h.getInfo()
        if cutoff is not None and (status in (SolveStatus.INFEASIBLE, SolveStatus.OPTIMAL)
                                   or ms == M.kObjectiveBound):
            # with an objective bound HiGHS reports "infeasible" (or a stale optimum) when
            # nothing beats it. Not "infeasible or unbounded": an unbounded model has solutions
            # beyond any cutoff, so that status proves nothing and is passed on as it is.
            beats = int(info.primal_solution_status) == 2 and \
                sense * float(info.objective_function_value) < sense * float(cutoff)
            if not beats:
                return SolveResult(SolveStatus.CUTOFF, bound=float(cutoff), time=elapsed,
                                   solver=self.name, message=message + " (nothing better than the cutoff)",
                                   stopped_by=stopped_by)
        has_sol = int(info.primal_solution_status) == 2 and status not in (
            SolveStatus.INFEASIBLE, SolveStatus.ERROR)
        values = np.asarray(h.getSolution().col_value, dtype=np.float64) if has_sol else None
        objective = float(info.objective_function_value) if has_sol else math.nan
        if self.has_integers:
            bound = float(info.mip_dual_bound)
            gap = float(info.mip_gap)
            nodes = int(info.mip_node_count)
        else:
            bound = objective if status is SolveStatus.OPTIMAL else math.nan
            gap = 0.0 if status is SolveStatus.OPTIMAL else math.nan
            nodes = 0
        if not math.isfinite(bound):
            bound = math.nan
        return SolveResult(status, objective, bound, values, elapsed, gap, self.name, nodes, message,
                           stopped_by)
