"""One MILP interface for the whole library: HiGHS (``highspy``, default) or Gurobi (optional).

Every MILP in robustce is built through :class:`MILP` and solved by its :meth:`MILP.solve`;
no other module talks to a solver. The API is small and vectorised:

* :meth:`MILP.add_vars` adds many variables at once (continuous / integer / binary, array
  bounds) and returns their column indices;
* :meth:`MILP.add_constrs` adds ``lb <= A x[cols] <= ub`` for a dense or scipy-sparse ``A``
  (or :meth:`MILP.add_constrs_coo` from triplets);
* :meth:`MILP.set_objective` (min or max), :meth:`MILP.set_var_bounds`,
  :meth:`MILP.set_constr_bounds`, :meth:`MILP.set_start` (warm start, where the backend has it);
* :meth:`MILP.solve` returns a typed :class:`SolveResult` (status, objective, dual bound, gap,
  values, time). Every solve runs under a finite time limit; output is silent.
  :meth:`MILP.solve_relaxation` solves the model with all (or some) integer variables made
  continuous and leaves it unchanged; :meth:`MILP.add_model` appends a part built once.

The model lives in numpy arrays on the Python side and is handed to the backend in one batch
call (HiGHS ``passModel``, Gurobi ``addMVar``/``addMConstr``). After a solve, changes of bounds
and objective are forwarded incrementally, so one model can be re-solved cheaply (e.g. the same
network encoding for many counterfactuals, only the input fixings changing). Structural changes
(new variables or rows) trigger a full, still vectorised, reload.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
import scipy.sparse as sp

from robustce.errors import SolverError, UnknownSolverError, ValidationError

__all__ = [
    "MILP",
    "SolveResult",
    "SolveStatus",
    "VarType",
    "available_solvers",
    "check_solver",
    "highs_work_limits",
]

INF = math.inf
_VTYPE_CODES = ("C", "I", "B")

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


class VarType(StrEnum):
    """The domain of a MILP variable: ``C`` continuous, ``I`` integer, ``B`` binary (0/1).

    Examples
    --------
    >>> milp = MILP(time_limit=10)
    >>> milp.add_vars(2, lb=0, ub=1, vtype=VarType.BINARY).tolist(), VarType("I")
    ([0, 1], <VarType.INTEGER: 'I'>)
    """

    CONTINUOUS = "C"
    INTEGER = "I"
    BINARY = "B"


class SolveStatus(StrEnum):
    """Outcome of one solve. Only ``OPTIMAL`` proves optimality; ``TIME_LIMIT`` and ``LIMIT``
    may still carry an incumbent (``SolveResult.has_solution``) and a valid dual bound.

    Examples
    --------
    >>> milp = MILP(time_limit=10)
    >>> y = milp.add_vars(1, lb=0, ub=1, vtype="B")
    >>> _ = milp.add_constrs(np.array([[1.0]]), lb=2, cols=y)      # y >= 2: impossible
    >>> res = milp.solve()
    >>> res.status, res.status is SolveStatus.INFEASIBLE, res.has_solution
    (<SolveStatus.INFEASIBLE: 'infeasible'>, True, False)
    """

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    TIME_LIMIT = "time_limit"
    CUTOFF = "cutoff"  # proven: no solution better than the cutoff (``bound`` = the cutoff)
    TARGET = "target_reached"  # stopped at an incumbent at least as good as the target
    LIMIT = "limit"  # node / iteration / solution limit, interrupt
    ERROR = "error"


@dataclass(frozen=True)
class SolveResult:
    """What a solve returns.

    Attributes
    ----------
    status : the :class:`SolveStatus` (only ``optimal`` proves optimality).
    objective : value of the incumbent (NaN without one).
    bound : the proven dual bound (a lower bound when minimising, upper when maximising; NaN
        when unknown).
    values : the incumbent's variable values (None without one).
    time : wall-clock seconds of the solve call.
    gap : relative MIP gap as the backend reports it.
    solver : the backend's name.
    node_count : branch-and-bound nodes explored.
    message : what went wrong or why the solve stopped (e.g. the backend's exception).

    Examples
    --------
    >>> milp = MILP(time_limit=10)
    >>> x = milp.add_vars(2, lb=0, ub=10, vtype=["I", "C"])
    >>> _ = milp.add_constrs(np.array([[2.0, 1.0]]), ub=7.5, cols=x)
    >>> milp.set_objective(x, [3.0, 1.0], sense="max")
    >>> res = milp.solve()
    >>> res.status.value, res.is_optimal, res.objective, res.values.tolist()
    ('optimal', True, 10.5, [3.0, 1.5])
    """

    status: SolveStatus
    objective: float = math.nan
    bound: float = math.nan
    values: np.ndarray | None = None
    time: float = 0.0
    gap: float = math.nan
    solver: str = ""
    node_count: int = 0
    message: str = ""

    @property
    def has_solution(self) -> bool:
        return self.values is not None

    @property
    def is_optimal(self) -> bool:
        return self.status is SolveStatus.OPTIMAL

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "objective": self.objective,
            "bound": self.bound,
            "time": self.time,
            "gap": self.gap,
            "solver": self.solver,
            "node_count": self.node_count,
            "message": self.message,
        }


# --- backends --------------------------------------------------------------------------------


def _gurobi_module():
    try:
        import gurobipy  # noqa: PLC0415 - optional dependency
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    return gurobipy


def available_solvers() -> list[str]:
    """Names of the MILP backends importable here (``"highs"`` always).

    Examples
    --------
    >>> "highs" in available_solvers()
    True
    """
    out = ["highs"]
    if _gurobi_module() is not None:
        out.append("gurobi")
    return out


def check_solver(solver: str) -> str:
    """Normalise a backend name; raise :class:`UnknownSolverError` (a ``ValueError``) if the
    name is unknown, :class:`SolverError` if the backend is not installed.

    Parameters
    ----------
    solver : "highs" or "gurobi" (any case).

    Returns
    -------
    str
        The normalised name.

    Examples
    --------
    >>> check_solver(" HiGHS ")
    'highs'
    >>> check_solver("cplex")
    Traceback (most recent call last):
        ...
    robustce.errors.UnknownSolverError: unknown MILP solver 'cplex'; available: [...]
    """
    if not isinstance(solver, str):
        raise UnknownSolverError(f"solver must be a string ('highs' or 'gurobi'), got {solver!r}")
    name = solver.strip().lower()
    if name in ("highs", "highspy"):
        return "highs"
    if name in ("gurobi", "gurobipy", "grb"):
        if _gurobi_module() is None:
            raise SolverError(
                "solver='gurobi' was asked for but gurobipy is not installed; "
                "install it with `pip install gurobipy` (or robustce[gurobi]) or use solver='highs'"
            )
        return "gurobi"
    raise UnknownSolverError(f"unknown MILP solver {solver!r}; available: {available_solvers()}")


@dataclass
class _Options:
    time_limit: float
    threads: int
    mip_gap: float
    abs_gap: float
    seed: int
    presolve: bool
    feasibility_tol: float | None
    extra: dict[str, Any]


@dataclass
class _ModelData:
    """Flat numpy representation handed to a backend."""

    lb: np.ndarray
    ub: np.ndarray
    cost: np.ndarray
    vtype: np.ndarray  # uint8: 0 continuous, 1 integer (binaries are integers in [0, 1])
    A: sp.csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray
    sense: int  # +1 minimise, -1 maximise
    offset: float
    start: dict[int, float] = field(default_factory=dict)


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
        h.setOptionValue("time_limit", float(time_limit))
        # HiGHS reads both options in its internal minimisation form (negated when maximising)
        h.setOptionValue("objective_bound", sense * float(cutoff) if cutoff is not None else INF)
        h.setOptionValue("objective_target", sense * float(target) if target is not None else -INF)
        t0 = time.perf_counter()
        try:
            run_status = h.run()
        except Exception as exc:  # pragma: no cover - defensive
            return SolveResult(SolveStatus.ERROR, time=time.perf_counter() - t0, solver=self.name,
                               message=f"HiGHS raised {type(exc).__name__}: {exc}")
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
                                   solver=self.name, message=message + " (nothing better than the cutoff)")
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
        return SolveResult(status, objective, bound, values, elapsed, gap, self.name, nodes, message)


class _GurobiBackend:
    name = "gurobi"

    def __init__(self, options: _Options):
        gp = _gurobi_module()
        if gp is None:  # pragma: no cover - checked before
            raise SolverError("gurobipy is not installed")
        self.gp = gp
        try:
            self.env = gp.Env(empty=True)
            self.env.setParam("OutputFlag", 0)
            self.env.setParam("LogToConsole", 0)
            self.env.start()
        except gp.GurobiError as exc:
            raise SolverError(f"Gurobi could not start (licence?): {exc}") from exc
        self.options = options
        self.model = None
        self.x = None

    def load(self, m: _ModelData) -> None:
        gp = self.gp
        GRB = gp.GRB
        if self.model is not None:
            self.model.dispose()
        model = gp.Model(env=self.env)
        o = self.options
        model.Params.Threads = int(o.threads)
        model.Params.Seed = int(o.seed)
        model.Params.MIPGap = float(o.mip_gap)
        model.Params.MIPGapAbs = float(o.abs_gap)
        model.Params.Presolve = -1 if o.presolve else 0
        for key, val in o.extra.items():
            model.setParam(key, val)
        if o.feasibility_tol is not None:
            model.Params.FeasibilityTol = max(float(o.feasibility_tol), 1e-9)
            model.Params.IntFeasTol = max(float(o.feasibility_tol), 1e-9)
        vt = np.where(m.vtype > 0, GRB.INTEGER, GRB.CONTINUOUS)
        lb = np.where(np.isinf(m.lb), -GRB.INFINITY, m.lb)
        ub = np.where(np.isinf(m.ub), GRB.INFINITY, m.ub)
        x = model.addMVar(len(m.lb), lb=lb, ub=ub, obj=m.cost, vtype=vt)
        model.ModelSense = GRB.MINIMIZE if m.sense > 0 else GRB.MAXIMIZE
        model.ObjCon = float(m.offset)
        A, rlb, rub = m.A, m.row_lb, m.row_ub
        eq = np.isfinite(rlb) & np.isfinite(rub) & (rlb == rub)
        ge = np.isfinite(rlb) & ~eq
        le = np.isfinite(rub) & ~eq
        if eq.any():
            model.addMConstr(A[eq], x, "=", rlb[eq])
        if ge.any():
            model.addMConstr(A[ge], x, ">", rlb[ge])
        if le.any():
            model.addMConstr(A[le], x, "<", rub[le])
        model.update()
        self.model, self.x = model, x

    def set_bounds(self, cols: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> None:
        GRB = self.gp.GRB
        sub = self.x[cols]
        sub.LB = np.where(np.isinf(lb), -GRB.INFINITY, lb)
        sub.UB = np.where(np.isinf(ub), GRB.INFINITY, ub)

    def set_costs(self, cost: np.ndarray, sense: int, offset: float) -> None:
        GRB = self.gp.GRB
        self.x.Obj = cost
        self.model.ModelSense = GRB.MINIMIZE if sense > 0 else GRB.MAXIMIZE
        self.model.ObjCon = float(offset)

    def set_start(self, start: dict[int, float]) -> None:
        if not start:
            return
        GRB = self.gp.GRB
        full = np.full(self.x.shape[0], GRB.UNDEFINED)
        full[np.fromiter(start.keys(), dtype=np.int64)] = np.fromiter(start.values(), dtype=np.float64)
        self.x.Start = full

    def solve(self, time_limit: float, sense: int, cutoff: float | None = None,
              target: float | None = None) -> SolveResult:
        gp, model = self.gp, self.model
        GRB = gp.GRB
        model.Params.TimeLimit = float(time_limit)
        model.Params.Cutoff = float(cutoff) if cutoff is not None else sense * GRB.INFINITY
        model.Params.BestObjStop = float(target) if target is not None else -sense * GRB.INFINITY
        t0 = time.perf_counter()
        try:
            model.optimize()
        except gp.GurobiError as exc:
            msg = str(exc)
            if getattr(exc, "errno", None) == 10010 or "size-limited" in msg:
                msg = f"Gurobi licence limit: {msg}"
            return SolveResult(SolveStatus.ERROR, time=time.perf_counter() - t0, solver=self.name,
                               message=msg)
        elapsed = time.perf_counter() - t0
        st = model.Status
        mapping = {
            GRB.OPTIMAL: SolveStatus.OPTIMAL,
            GRB.INFEASIBLE: SolveStatus.INFEASIBLE,
            GRB.UNBOUNDED: SolveStatus.UNBOUNDED,
            GRB.INF_OR_UNBD: SolveStatus.INFEASIBLE_OR_UNBOUNDED,
            GRB.TIME_LIMIT: SolveStatus.TIME_LIMIT,
            GRB.NODE_LIMIT: SolveStatus.LIMIT,
            GRB.ITERATION_LIMIT: SolveStatus.LIMIT,
            GRB.SOLUTION_LIMIT: SolveStatus.LIMIT,
            GRB.INTERRUPTED: SolveStatus.LIMIT,
            GRB.USER_OBJ_LIMIT: SolveStatus.TARGET,
            GRB.WORK_LIMIT: SolveStatus.LIMIT,
            GRB.CUTOFF: SolveStatus.CUTOFF,
        }
        status = mapping.get(st, SolveStatus.ERROR)
        if status is SolveStatus.CUTOFF:
            return SolveResult(status, bound=float(cutoff), time=elapsed, solver=self.name,
                               message="nothing better than the cutoff")
        has_sol = model.SolCount > 0 and status not in (SolveStatus.INFEASIBLE, SolveStatus.ERROR)
        values = np.asarray(self.x.X, dtype=np.float64) if has_sol else None
        objective = float(model.ObjVal) if has_sol else math.nan
        if model.IsMIP:
            try:
                bound = float(model.ObjBound)
            except gp.GurobiError:
                bound = math.nan
            try:
                gap = float(model.MIPGap)
            except gp.GurobiError:
                gap = math.nan
            nodes = int(model.NodeCount)
        else:
            bound = objective if status is SolveStatus.OPTIMAL else math.nan
            gap = 0.0 if status is SolveStatus.OPTIMAL else math.nan
            nodes = 0
        if not math.isfinite(bound) or abs(bound) >= GRB.INFINITY:
            bound = math.nan
        return SolveResult(status, objective, bound, values, elapsed, gap, self.name, nodes,
                           f"gurobi status {st}")

    def close(self) -> None:
        if self.model is not None:
            self.model.dispose()
            self.model = None
        self.env.dispose()


# --- the model builder ---------------------------------------------------------------------------


def _as_float_array(value: Any, n: int, name: str) -> np.ndarray:
    if isinstance(value, float | int) and not isinstance(value, bool):
        if value != value:
            raise ValidationError(f"{name} contains NaN")
        return np.full(n, float(value))
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        if np.isnan(arr):
            raise ValidationError(f"{name} contains NaN")
        return np.full(n, float(arr))
    arr = arr.reshape(-1)
    if arr.shape[0] != n:
        raise ValidationError(f"{name} must be a scalar or have {n} entries, got {arr.shape[0]}")
    if np.isnan(arr.sum()) and np.isnan(arr).any():  # the sum is NaN for inf - inf too
        raise ValidationError(f"{name} contains NaN")
    return arr.copy()


class MILP:
    """A mixed-integer linear program with a pluggable backend.

    Parameters
    ----------
    solver : "highs" (default) or "gurobi" (needs gurobipy and a licence).
    time_limit : default seconds per solve (finite, > 0); ``solve(time_limit=...)`` overrides.
    threads : solver threads (1 by default: tiny MILPs do not gain from more, and results
        stay deterministic).
    mip_gap, abs_gap : relative / absolute optimality gaps at which a solve counts as optimal.
    seed : the backend's random seed.
    presolve : whether the backend presolves.
    feasibility_tol : primal / integrality feasibility tolerance (backend default if None).
    options : backend-specific parameters passed through (HiGHS option names or Gurobi
        parameter names), e.g. ``{"mip_heuristic_run_feasibility_jump": False}``.

    Examples
    --------
    max 3 x₀ + x₁ subject to 2 x₀ + x₁ ≤ 7.5, x₀ integer, both in [0, 10]:

    >>> milp = MILP(time_limit=10)
    >>> x = milp.add_vars(2, lb=0, ub=10, vtype=["I", "C"])
    >>> _ = milp.add_constrs(np.array([[2.0, 1.0]]), ub=7.5, cols=x)
    >>> milp.set_objective(x, [3.0, 1.0], sense="max")
    >>> milp
    MILP(solver='highs', vars=2, constrs=1, time_limit=10.0)
    >>> milp.solve().values.tolist()
    [3.0, 1.5]
    """

    def __init__(self, solver: str = "highs", *, time_limit: float = 60.0, threads: int = 1,
                 mip_gap: float = 1e-6, abs_gap: float = 1e-9, seed: int = 0, presolve: bool = True,
                 feasibility_tol: float | None = None, options: dict[str, Any] | None = None):
        self.solver = check_solver(solver)
        self.time_limit = check_time_limit(time_limit)
        if int(threads) < 1:
            raise ValidationError(f"threads must be >= 1, got {threads}")
        if not (0 <= mip_gap < 1) or abs_gap < 0:
            raise ValidationError(f"mip_gap must be in [0, 1) and abs_gap >= 0, got {mip_gap}, {abs_gap}")
        self._options = _Options(self.time_limit, int(threads), float(mip_gap), float(abs_gap),
                                 int(seed), bool(presolve), feasibility_tol, dict(options or {}))
        self._lb: list[np.ndarray] = []
        self._ub: list[np.ndarray] = []
        self._vt: list[np.ndarray] = []
        self._n_vars = 0
        self._rows: list[np.ndarray] = []
        self._cols: list[np.ndarray] = []
        self._vals: list[np.ndarray] = []
        self._rlb: list[np.ndarray] = []
        self._rub: list[np.ndarray] = []
        self._n_rows = 0
        self._cost = np.zeros(0)
        self._sense = 1
        self._offset = 0.0
        self._start: dict[int, float] = {}
        self._backend: _HighsBackend | _GurobiBackend | None = None
        self._data: _ModelData | None = None
        self._loaded = False
        self.last_result: SolveResult | None = None

    # -- sizes ------------------------------------------------------------------------------------
    @property
    def n_vars(self) -> int:
        return self._n_vars

    @property
    def n_constrs(self) -> int:
        return self._n_rows

    @property
    def n_integer(self) -> int:
        """Number of integer (including binary) variables."""
        return int(self._materialise().vtype.sum())

    # -- building ---------------------------------------------------------------------------------
    def add_vars(self, n: int, lb: Any = 0.0, ub: Any = INF, vtype: Any = "C") -> np.ndarray:
        """Add ``n`` variables; returns their column indices (int array). ``vtype`` is one of
        ``"C"``, ``"I"``, ``"B"`` or an array of those codes (one per variable)."""
        n = int(n)
        if n < 0:
            raise ValidationError(f"n must be >= 0, got {n}")
        if isinstance(vtype, str) and vtype in _VTYPE_CODES:  # one code for all: no object array
            is_bin = np.full(n, vtype == "B")
            is_int = np.full(n, vtype != "C", dtype=np.uint8)
        else:
            codes = np.asarray(vtype, dtype=object)
            codes = np.full(n, codes.item(), dtype=object) if codes.ndim == 0 else codes.reshape(-1)
            if codes.shape[0] != n:
                raise ValidationError(f"vtype must be a code or have {n} entries, got "
                                      f"{codes.shape[0]}")
            try:
                kinds = [VarType(c) for c in dict.fromkeys(codes.tolist())]
            except ValueError:
                raise ValidationError(f"vtype must be 'C', 'I' or 'B', got "
                                      f"{sorted(set(map(str, codes)))}") from None
            is_bin = codes == VarType.BINARY.value if VarType.BINARY in kinds \
                else np.zeros(n, dtype=bool)
            is_int = (codes != VarType.CONTINUOUS.value).astype(np.uint8)
        lo = _as_float_array(lb, n, "lb")
        hi = _as_float_array(ub, n, "ub")
        if is_bin.any():
            lo[is_bin], hi[is_bin] = np.maximum(lo[is_bin], 0.0), np.minimum(hi[is_bin], 1.0)
        if np.any(lo > hi + 1e-12):
            bad = int(np.argmax(lo > hi + 1e-12))
            raise ValidationError(f"variable bounds have lb > ub (entry {bad}: {lo[bad]} > {hi[bad]})")
        np.maximum(lo, hi, out=hi)
        self._invalidate()
        self._lb.append(lo)
        self._ub.append(hi)
        self._vt.append(is_int)
        idx = np.arange(self._n_vars, self._n_vars + n)
        self._n_vars += n
        return idx

    def add_model(self, other: MILP) -> None:
        """Append the variables and rows of ``other`` (its indices shifted by this model's
        sizes; its objective is not copied) — e.g. a part encoded once and reused in many
        models."""
        if not isinstance(other, MILP):
            raise ValidationError(f"add_model needs a MILP, got {type(other).__name__}")
        d = other._materialise()
        self._invalidate()
        n0, r0 = self._n_vars, self._n_rows
        self._lb.append(d.lb.copy())
        self._ub.append(d.ub.copy())
        self._vt.append(d.vtype.copy())
        A = d.A
        rows = np.repeat(np.arange(A.shape[0], dtype=np.int64), np.diff(A.indptr))
        self._rows.append(rows + r0)
        self._cols.append(A.indices.astype(np.int64) + n0)
        self._vals.append(A.data.copy())
        self._rlb.append(d.row_lb.copy())
        self._rub.append(d.row_ub.copy())
        self._n_vars += len(d.lb)
        self._n_rows += A.shape[0]

    def add_constrs(self, A: Any, lb: Any = -INF, ub: Any = INF, *, cols: Any = None) -> np.ndarray:
        """Add rows ``lb <= A @ x[cols] <= ub``; ``A`` dense (m, k) or scipy sparse. Without
        ``cols``, ``A`` spans all current variables. Returns the row indices."""
        if sp.issparse(A):
            coo = sp.coo_matrix(A)
            m, k = coo.shape
            r, c, v = coo.row, coo.col, coo.data
        else:
            arr = np.asarray(A, dtype=np.float64)
            if arr.ndim == 1:
                arr = arr[None, :]
            if arr.ndim != 2:
                raise ValidationError(f"A must be 2-D, got shape {arr.shape}")
            m, k = arr.shape
            r, c = np.nonzero(arr)
            v = arr[r, c]
        if cols is None:
            if k != self._n_vars:
                raise ValidationError(f"A has {k} columns but the model has {self._n_vars} variables")
            colmap = None
        else:
            colmap = np.asarray(cols, dtype=np.int64).reshape(-1)
            if colmap.shape[0] != k:
                raise ValidationError(f"A has {k} columns but {colmap.shape[0]} cols were given")
        return self.add_constrs_coo(r, c if colmap is None else colmap[c], v, m, lb, ub)

    def add_constrs_coo(self, rows: Any, cols: Any, vals: Any, n_rows: int, lb: Any = -INF,
                        ub: Any = INF) -> np.ndarray:
        """Add ``n_rows`` rows given as triplets (row in 0..n_rows-1, variable index, coefficient);
        duplicate entries are summed."""
        n_rows = int(n_rows)
        r = np.asarray(rows, dtype=np.int64).reshape(-1)
        c = np.asarray(cols, dtype=np.int64).reshape(-1)
        v = np.asarray(vals, dtype=np.float64).reshape(-1)
        if not (r.shape == c.shape == v.shape):
            raise ValidationError("rows, cols and vals must have the same length")
        _check_index(r, n_rows, "row")
        _check_index(c, self._n_vars, "variable")
        if not np.isfinite(v).all():
            raise ValidationError("constraint coefficients must be finite")
        lo = _as_float_array(lb, n_rows, "lb")
        hi = _as_float_array(ub, n_rows, "ub")
        if np.any(lo > hi + 1e-12):
            raise ValidationError("constraint bounds have lb > ub")
        self._invalidate()
        if not v.all():
            keep = v != 0
            r, c, v = r[keep], c[keep], v[keep]
        self._rows.append(r + self._n_rows)
        self._cols.append(c)
        self._vals.append(v)
        self._rlb.append(lo)
        self._rub.append(hi)
        idx = np.arange(self._n_rows, self._n_rows + n_rows)
        self._n_rows += n_rows
        return idx

    def set_objective(self, cols: Any = None, coefs: Any = None, *, sense: str = "min",
                      constant: float = 0.0) -> None:
        """Replace the objective by ``constant + sum coefs * x[cols]`` (duplicates summed)."""
        if sense not in ("min", "max", "minimize", "maximize"):
            raise ValidationError(f"sense must be 'min' or 'max', got {sense!r}")
        cost = np.zeros(self._n_vars)
        if cols is not None:
            c = _check_index(cols, self._n_vars, "objective variable")
            v = _as_float_array(coefs, c.shape[0], "coefs")
            np.add.at(cost, c, v)
        self._cost = cost
        self._sense = 1 if sense.startswith("min") else -1
        self._offset = float(constant)
        if self._data is not None:
            self._data.cost, self._data.sense, self._data.offset = cost, self._sense, self._offset
            if self._loaded:
                self._backend.set_costs(cost, self._sense, self._offset)

    def set_var_bounds(self, cols: Any, lb: Any, ub: Any) -> None:
        """Change bounds of existing variables (forwarded to the backend without a reload)."""
        c = _check_index(cols, self._n_vars, "variable")
        lo = _as_float_array(lb, c.shape[0], "lb")
        hi = _as_float_array(ub, c.shape[0], "ub")
        if np.any(lo > hi + 1e-12):
            raise ValidationError("variable bounds have lb > ub")
        hi = np.maximum(lo, hi)
        if self._data is None:  # still being built: change the pending bounds, no matrix yet
            if c.size == 0:
                return
            if len(self._lb) != 1:
                self._lb, self._ub = [np.concatenate(self._lb)], [np.concatenate(self._ub)]
            self._lb[0][c], self._ub[0][c] = lo, hi
            return
        data = self._data
        data.lb[c], data.ub[c] = lo, hi
        if self._loaded:
            self._backend.set_bounds(c, lo, hi)

    def set_constr_bounds(self, rows: Any, lb: Any, ub: Any) -> None:
        r = _check_index(rows, self._n_rows, "row")
        lo = _as_float_array(lb, r.shape[0], "lb")
        hi = _as_float_array(ub, r.shape[0], "ub")
        data = self._materialise()
        data.row_lb[r], data.row_ub[r] = lo, hi
        if self._loaded:
            if isinstance(self._backend, _HighsBackend):
                self._backend.set_row_bounds(r, lo, hi)
            else:
                self._loaded = False  # Gurobi splits ranged rows; reload

    def set_start(self, values: Any, cols: Any = None) -> None:
        """A warm start (full vector, or values for ``cols``); used by the next solve where the
        backend supports MIP starts (HiGHS, Gurobi). NaN entries are left undefined."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        c = np.arange(self._n_vars) if cols is None else np.asarray(cols, dtype=np.int64).reshape(-1)
        if c.shape != v.shape:
            raise ValidationError("set_start: values and cols differ in length")
        keep = np.isfinite(v)
        self._start = dict(zip(c[keep].tolist(), v[keep].tolist(), strict=True))

    def relax(self) -> None:
        """Make every variable continuous: the model becomes its LP relaxation (used by
        :mod:`robustce.solvers.tightening`; the bounds of integer variables are kept)."""
        data = self._materialise()
        if data.vtype.any():
            data.vtype = np.zeros_like(data.vtype)
            self._loaded = False

    # -- solving ----------------------------------------------------------------------------------
    def solve_relaxation(self, time_limit: float | None = None, *, cols: Any = None,
                         cutoff: float | None = None) -> SolveResult:
        """Solve a relaxation and leave the model as it was (the next :meth:`solve` is the
        full MILP again): the integer variables ``cols`` (default: all) made continuous,
        bounds kept. Its ``bound`` (the LP optimum, or the dual bound of what stays a MILP)
        bounds the full model's optimum (below when minimising); ``cutoff`` as in
        :meth:`solve`."""
        data = self._materialise()
        vtype = data.vtype
        relaxed = np.zeros_like(vtype) if cols is None else vtype.copy()
        if cols is not None:
            relaxed[_check_index(cols, self._n_vars, "variable")] = 0
        data.vtype = relaxed
        self._loaded = False
        try:
            return self.solve(time_limit, cutoff=cutoff)
        finally:
            data.vtype = vtype
            self._loaded = False

    def solve(self, time_limit: float | None = None, *, cutoff: float | None = None,
              target: float | None = None) -> SolveResult:
        """Solve under ``time_limit`` seconds (default: the model's). Never raises for solver
        trouble: an ``ERROR`` result says what happened.

        ``cutoff``: only solutions strictly better than it matter (below it when minimising);
        if none exists the status is ``CUTOFF`` and ``bound`` is the cutoff — a proof that the
        optimum is no better. ``target``: stop as soon as an incumbent at least as good is found
        (status ``TARGET``). Both turn an optimisation into a faster decision.
        """
        limit = self.time_limit if time_limit is None else check_time_limit(time_limit)
        data = self._materialise()
        if self._backend is None:
            self._backend = _HighsBackend(self._options) if self.solver == "highs" \
                else _GurobiBackend(self._options)
        t0 = time.perf_counter()
        if not self._loaded:
            try:
                self._backend.load(data)
            except SolverError as exc:
                return SolveResult(SolveStatus.ERROR, time=time.perf_counter() - t0,
                                   solver=self.solver, message=str(exc))
            except Exception as exc:  # gurobipy errors (licence, size limits) and the like
                msg = f"{type(exc).__name__}: {exc}"
                if "size-limited" in msg or "10010" in msg:
                    msg = f"Gurobi licence limit: {msg}"
                return SolveResult(SolveStatus.ERROR, time=time.perf_counter() - t0,
                                   solver=self.solver, message=msg)
            self._loaded = True
        if self._start:
            self._backend.set_start(self._start)
        result = self._backend.solve(limit, data.sense, cutoff, target)
        self.last_result = result
        return result

    def close(self) -> None:
        """Free the backend (Gurobi environments hold a licence token)."""
        if isinstance(self._backend, _GurobiBackend):
            self._backend.close()
        self._backend = None
        self._loaded = False

    def __enter__(self) -> MILP:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"MILP(solver={self.solver!r}, vars={self._n_vars}, constrs={self._n_rows}, "
                f"time_limit={self.time_limit})")

    # -- internals -------------------------------------------------------------------------------
    def _invalidate(self) -> None:
        if self._data is not None:
            # fold the materialised arrays back so later appends extend them
            d = self._data
            self._lb, self._ub, self._vt = [d.lb], [d.ub], [d.vtype]
            coo = d.A.tocoo()
            self._rows, self._cols, self._vals = [coo.row.astype(np.int64)], \
                [coo.col.astype(np.int64)], [coo.data]
            self._rlb, self._rub = [d.row_lb], [d.row_ub]
            self._data = None
        self._loaded = False

    def _materialise(self) -> _ModelData:
        if self._data is not None:
            return self._data
        n, k = self._n_vars, self._n_rows
        lb = np.concatenate(self._lb) if self._lb else np.zeros(0)
        ub = np.concatenate(self._ub) if self._ub else np.zeros(0)
        vt = np.concatenate(self._vt) if self._vt else np.zeros(0, dtype=np.uint8)
        r = np.concatenate(self._rows) if self._rows else np.zeros(0, dtype=np.int64)
        c = np.concatenate(self._cols) if self._cols else np.zeros(0, dtype=np.int64)
        v = np.concatenate(self._vals) if self._vals else np.zeros(0)
        A = _csr(r, c, v, k, n)
        rlb = np.concatenate(self._rlb) if self._rlb else np.zeros(0)
        rub = np.concatenate(self._rub) if self._rub else np.zeros(0)
        cost = np.zeros(n)
        cost[: len(self._cost)] = self._cost[:n]
        self._cost = cost
        self._data = _ModelData(lb, ub, cost, vt, A, rlb, rub, self._sense, self._offset)
        return self._data


def _csr(r: np.ndarray, c: np.ndarray, v: np.ndarray, k: int, n: int) -> sp.csr_matrix:
    """The (k, n) CSR matrix of triplets ``(r, c, v)``: duplicates summed, indices sorted
    (built directly: scipy's COO route costs more than the whole model on small MILPs)."""
    order = np.lexsort((c, r))
    r, c, v = r[order], c[order], v[order]
    if r.size > 1:
        first = np.empty(r.size, dtype=bool)
        first[0] = True
        np.not_equal(r[1:], r[:-1], out=first[1:])
        first[1:] |= c[1:] != c[:-1]
        if not first.all():
            at = np.flatnonzero(first)
            r, c, v = r[at], c[at], np.add.reduceat(v, at)
    indptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=k), out=indptr[1:])
    A = sp.csr_matrix((v, c, indptr), shape=(k, n))
    A.has_sorted_indices = True
    A.has_canonical_format = True
    return A


def _check_index(idx: Any, size: int, what: str) -> np.ndarray:
    """``idx`` as a flat int64 array, every entry in ``0..size-1`` (else ValidationError)."""
    i = np.asarray(idx, dtype=np.int64).reshape(-1)
    if i.size and (i.min() < 0 or i.max() >= size):
        raise ValidationError(f"{what} index out of range")
    return i


def check_time_limit(time_limit: Any) -> float:
    """``time_limit`` as a float of seconds; :class:`ValidationError` unless positive and
    finite (every solver call in robustce has one).

    Parameters
    ----------
    time_limit : seconds, a positive finite number.

    Examples
    --------
    >>> check_time_limit(5)
    5.0
    >>> check_time_limit(float("inf"))
    Traceback (most recent call last):
        ...
    robustce.errors.ValidationError: time_limit must be a positive, finite number of seconds, got inf
    """
    try:
        t = float(time_limit)
    except (TypeError, ValueError):
        raise ValidationError(f"time_limit must be a positive number of seconds, got {time_limit!r}") \
            from None
    if not math.isfinite(t) or t <= 0:
        raise ValidationError(f"time_limit must be a positive, finite number of seconds, got {time_limit}")
    return t
