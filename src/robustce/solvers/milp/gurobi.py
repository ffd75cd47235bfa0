"""The Gurobi backend (optional: ``gurobipy`` and a licence) of
:class:`~robustce.solvers.milp.MILP`; gurobipy is imported only when a model asks for it.

Unlike the HiGHS backend, ``time_limit`` stays Gurobi's own ``TimeLimit``: **wall-clock**
seconds (no CPU budget, no safety-net slack), so on a loaded host a Gurobi solve can end at its
time limit where an idle host would finish; its ``work_limit``-style parameters (``WorkLimit``)
can be passed through ``options``."""

from __future__ import annotations

import math
import time

import numpy as np

from robustce.errors import SolverError
from robustce.solvers.milp.common import SolveResult, SolveStatus, _gurobi_module, _ModelData, _Options


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
