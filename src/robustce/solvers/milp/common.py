"""What the MILP builder and its backends share: the variable types, the solve status and
result, the backends' options and flat model data, the choice of backend (gurobipy imported
only when asked for) and the time-limit check."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
import scipy.sparse as sp

from robustce.errors import SolverError, UnknownSolverError, ValidationError

INF = math.inf


class VarType(StrEnum):
    """The domain of a MILP variable: ``C`` continuous, ``I`` integer, ``B`` binary (0/1).

    Examples
    --------
    >>> from robustce.solvers import MILP
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
    >>> from robustce.solvers import MILP
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
    TIME_LIMIT = "time_limit"  # the CPU budget or the wall-clock safety net (``stopped_by``)
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
    message : what went wrong or why the solve stopped (e.g. the backend's exception, or
        which limit stopped it).
    stopped_by : for ``time_limit``, the limit that stopped the solve: "cpu" (the CPU budget,
        ``time_limit``) or "wall" (the wall-clock safety net, :data:`~robustce.solvers.clock.WALL_SLACK`
        × ``time_limit``); "" otherwise.

    Examples
    --------
    >>> from robustce.solvers import MILP
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
    stopped_by: str = ""

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
            "stopped_by": self.stopped_by,
        }



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
