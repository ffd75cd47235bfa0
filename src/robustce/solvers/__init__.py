"""Solvers: the one MILP interface (HiGHS default, Gurobi optional) and network encodings."""

from robustce.solvers.milp import (
    MILP,
    SolveResult,
    SolveStatus,
    VarType,
    available_solvers,
    check_solver,
    check_time_limit,
)

__all__ = [
    "MILP",
    "SolveResult",
    "SolveStatus",
    "VarType",
    "available_solvers",
    "check_solver",
    "check_time_limit",
]
