"""User constraints (:class:`robustce.data.constraints.CompiledConstraints`) as z3 formulas
over :class:`~robustce.solvers.smt.SMTInput`'s variables, in rational arithmetic."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import z3

from robustce.solvers.smt.domain import SMTInput
from robustce.solvers.smt.terms import rational

#: relative slack of a constraint row's bounds in z3 (see :func:`constraint_formulas`)
_ROW_SLACK = 1e-12


def constraint_formulas(inp: SMTInput, x: np.ndarray, constraints: Any) -> list[z3.BoolRef]:
    """The constraints (:class:`robustce.data.constraints.CompiledConstraints`) as z3
    formulas over ``inp``'s variables in rational arithmetic (each bound widened by 1e-12 of
    the row's magnitude: the compiled float64 rows would otherwise make an equality over
    integer features exactly unsatisfiable, e.g. ``b − a = 0.1 · 10`` with 0.1 ≠ 1/10): each relation row
    ``lower <= Σ_j A_j x_j <= upper`` (:meth:`SMTInput.linear`), and with ``max_changes = k``
    ``Σ_f [feature f differs from the query x] <= k`` (a categorical counts once); each
    conditional as ``Implies(condition, consequence)``; each group of features as "all keep
    the query's value, or all change" (a real column by at least the group's least move)."""
    out: list[z3.BoolRef] = []

    def within(e: z3.ArithRef, a: np.ndarray, lo: float, hi: float) -> list[z3.BoolRef]:
        # the compiled rows are float64 (a coefficient 1/10, a query's 0.1): in exact
        # arithmetic an equality over integer features could lose its lattice solutions, so
        # each bound is widened by 1e-12 of the row's magnitude (far below any lattice step)
        slack = _ROW_SLACK * (1.0 + float(np.abs(a).sum())
                              + max(abs(v) for v in (lo, hi, 0.0) if math.isfinite(v)))
        return ([e >= rational(lo - slack)] if math.isfinite(lo) else []) + (
            [e <= rational(hi + slack)] if math.isfinite(hi) else [])

    A = np.asarray(constraints.A, dtype=np.float64)
    for i in range(A.shape[0]):
        if not np.any(A[i]):
            continue
        e = inp.linear(A[i], 0.0)
        out += within(e, A[i], float(constraints.lower[i]), float(constraints.upper[i]))
    if constraints.max_changes is not None:
        moved = [z3.If(inp.equal(i, v), 0, 1) for i, v in enumerate(inp.values(x))]
        out.append(z3.Sum(moved) <= int(constraints.max_changes))
    q = np.asarray(x, dtype=np.float64).reshape(-1)
    for c in getattr(constraints, "conditionals", ()):
        if c.kind in ("expr", "category_change"):
            coef, const = c.indicator(q)
            cond = inp.linear(coef, const) > rational(0.5)
        else:
            m = inp.linear(c.cond, -float(c.cond @ q))
            cond = {1: m > 0, -1: m < 0, 0: m != 0}[c.direction]
        v = inp.linear(c.a, 0.0)
        shift = float(c.q_coef @ q)
        cons = within(v, c.a, c.lower + shift, c.upper + shift)
        out.append(z3.Implies(cond, z3.And(cons)))
    vals = inp.values(x) if getattr(constraints, "groups", ()) else []
    owner = np.asarray(constraints.feature_of_column)
    for g in getattr(constraints, "groups", ()):
        same, moved = [], []
        for cols, eps in zip(g.columns, g.min_move, strict=True):
            i = int(owner[cols[0]])
            v = inp.vars[i]
            same.append(inp.equal(i, vals[i]))
            if v.sort == "real":  # a real column moves by at least ε (as the MILP asks)
                c = rational(vals[i])
                moved.append(z3.Or(v.var >= c + rational(eps), v.var <= c - rational(eps)))
            else:
                moved.append(z3.Not(same[-1]))
        out.append(z3.Or(z3.And(same), z3.And(moved)))
    return out

