"""Fixed costs of changing a feature at all (``Distance(fixed=...)``) as MILP terms.

Per raw feature ``f`` with a fixed cost ``c_f > 0`` and a movable column, one binary ``z_f``
that must be 1 for any of its columns to move (``q_j − (q_j − lo_j) z_f <= x_j <= q_j +
(hi_j − q_j) z_f``, big-M from the domain's box); the objective gains ``Σ_f c_f z_f``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.solvers.encodings import DistanceObjective

__all__ = ["add_fixed_costs"]


def add_fixed_costs(milp: Any, domain: Any, query: np.ndarray, fixed: Any, owner: np.ndarray,
                    obj: DistanceObjective) -> DistanceObjective:
    """``obj`` plus the fixed-cost terms of ``fixed`` (one cost per raw feature; ``owner``:
    the raw feature of each model-space column) over ``domain``'s input variables."""
    f = np.asarray(fixed, dtype=np.float64)
    x, lo, hi = domain.index, np.asarray(domain.lower), np.asarray(domain.upper)
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    cols = np.flatnonzero((hi > lo) & (f[owner] > 0))
    if cols.size == 0:
        return obj
    feats = np.unique(owner[cols])
    z = milp.add_vars(len(feats), 0.0, 1.0, "B")
    zmap = np.full(len(f), -1, dtype=np.int64)
    zmap[feats] = z
    zc = zmap[owner[cols]]
    n = cols.size
    r = np.arange(n)
    up, down = np.maximum(hi[cols] - q[cols], 0.0), np.maximum(q[cols] - lo[cols], 0.0)
    milp.add_constrs_coo(np.concatenate([r, r]), np.concatenate([x[cols], zc]),
                         np.concatenate([np.ones(n), -up]), n, -np.inf, q[cols])
    milp.add_constrs_coo(np.concatenate([r, r]), np.concatenate([x[cols], zc]),
                         np.concatenate([-np.ones(n), -down]), n, -np.inf, -q[cols])
    return DistanceObjective(np.concatenate([obj.cols, z]), np.concatenate([obj.coefs, f[feats]]),
                             obj.constant, obj.abs_vars, obj.changed_vars)
