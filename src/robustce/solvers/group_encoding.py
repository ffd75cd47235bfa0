"""Feature groups (:mod:`robustce.data.groups`: none or all of a group's features change) as
MILP rows.

Per group one binary ``g``. Any move of a member forces ``g = 1`` (``x_j − q_j <= (hi_j − q_j) g``
and ``q_j − x_j <= (q_j − lo_j) g``; a 0/1 column: ``|x_j − q_j| <= g``, linear as the query's
value is 0 or 1). With ``g = 1`` every member changes: a numeric member moves by at least its
least change ``ε`` up or down (two binaries ``u + w = g``: ``x_j >= lo_j + (ε + q_j − lo_j) u``,
``x_j <= hi_j − (ε + hi_j − q_j) w``); a categorical member's columns differ from the query's
(``Σ_j |x_j − q_j| >= g``). A member that cannot move by ``ε`` within the box forces ``g = 0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["encode_groups"]


def encode_groups(milp: Any, domain: Any, query: np.ndarray, groups: Any) -> None:
    """Add each :class:`~robustce.data.groups.CompiledGroup` in ``groups`` to ``milp`` over
    ``domain``'s input variables (module docstring)."""
    x, lo, hi = domain.index, np.asarray(domain.lower), np.asarray(domain.upper)
    q = np.asarray(query, dtype=np.float64).reshape(-1)

    def row(idx: list[int], val: list[float], lower: float, upper: float) -> None:
        milp.add_constrs_coo(np.zeros(len(idx), dtype=np.int64), np.asarray(idx, dtype=np.int64),
                             np.asarray(val, dtype=np.float64), 1, lower, upper)

    for grp in groups:
        g = int(milp.add_vars(1, 0.0, 1.0, "B")[0])
        for cols, numeric, eps in zip(grp.columns, grp.numeric, grp.min_move, strict=True):
            if numeric:
                j = int(cols[0])
                up, down = hi[j] - q[j], q[j] - lo[j]
                if up > 0:
                    row([x[j], g], [1.0, -up], -np.inf, q[j])
                if down > 0:
                    row([x[j], g], [-1.0, -down], -np.inf, -q[j])
                parts = [g]
                vals = [-1.0]
                if up >= eps:
                    u = int(milp.add_vars(1, 0.0, 1.0, "B")[0])
                    row([x[j], u], [1.0, -(eps + q[j] - lo[j])], lo[j], np.inf)
                    parts.append(u)
                    vals.append(1.0)
                if down >= eps:
                    w = int(milp.add_vars(1, 0.0, 1.0, "B")[0])
                    row([x[j], w], [1.0, eps + hi[j] - q[j]], -np.inf, hi[j])
                    parts.append(w)
                    vals.append(1.0)
                row(parts, vals, 0.0, 0.0)  # u + w = g (g = 0 when neither move fits)
            else:
                sgn = np.where(q[cols] >= 0.5, -1.0, 1.0)  # sgn·(x − q) = |x − q| on 0/1
                for jj, s in zip(cols, sgn, strict=True):
                    row([x[jj], g], [s, -1.0], -np.inf, s * q[jj])
                row([*x[cols], g], [*sgn, -1.0], float(sgn @ q[cols]), np.inf)
