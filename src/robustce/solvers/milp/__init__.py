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

The package, by part: :mod:`~robustce.solvers.milp.common` (variable types, the solve status
and result, the choice of backend, the time-limit check), :mod:`~robustce.solvers.milp.model`
(the :class:`MILP` builder), :mod:`~robustce.solvers.milp.highs` and
:mod:`~robustce.solvers.milp.gurobi` (the two backends; gurobipy is imported only when a model
asks for it).
"""

from robustce.solvers.milp.common import INF as INF  # importable from here as before
from robustce.solvers.milp.common import (
    SolveResult,
    SolveStatus,
    VarType,
    available_solvers,
    check_solver,
)
from robustce.solvers.milp.common import check_time_limit as check_time_limit
from robustce.solvers.milp.highs import highs_work_limits
from robustce.solvers.milp.model import MILP

__all__ = [
    "MILP",
    "SolveResult",
    "SolveStatus",
    "VarType",
    "available_solvers",
    "check_solver",
    "highs_work_limits",
]
