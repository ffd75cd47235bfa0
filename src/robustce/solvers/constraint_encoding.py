"""User constraints as MILP rows over the input variables (:func:`encode_constraints`:
relations, ``max_changes``; conditionals and feature groups in their own modules)."""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.solvers.domain_encoding import InputDomain
from robustce.solvers.milp import MILP


def encode_constraints(milp: MILP, domain: InputDomain, query: np.ndarray | None,
                       constraints: Any) -> np.ndarray:
    """Encode model-space constraints (:class:`robustce.data.constraints.CompiledConstraints`:
    rows ``lower <= A x <= upper`` and ``max_changes`` over ``feature_of_column``) on the
    input variables of ``domain``. Relations are added as they are (exact: the encoder's
    scaled columns are affine in the raw values). ``max_changes`` (needs the ``query``): one
    binary ``c_f`` per raw feature with a movable column, which must be 1 for any of its
    columns to move (``q_j − (q_j − lo_j) c_f <= x_j <= q_j + (hi_j − q_j) c_f``, big-M from
    the domain's box; a one-hot or thermometer group has one binary), and ``Σ_f c_f <= k``.
    Returns the changed binaries per feature (−1 where none or without ``max_changes``)."""
    x, lo, hi = domain.index, domain.lower, domain.upper
    A = np.asarray(constraints.A, dtype=np.float64)
    rows = np.flatnonzero(np.any(A != 0, axis=1))
    if rows.size:
        r, c = np.nonzero(A[rows])
        milp.add_constrs_coo(r, x[c], A[rows][r, c], rows.size,
                             np.asarray(constraints.lower)[rows],
                             np.asarray(constraints.upper)[rows])
    if getattr(constraints, "conditionals", ()):  # if-then rows (issue 34)
        from robustce.solvers.conditional_encoding import encode_conditionals

        if query is None:
            raise ValidationError("conditional constraints need the query")
        encode_conditionals(milp, domain, query, constraints.conditionals)
    if getattr(constraints, "groups", ()):  # none or all of a group's features change
        from robustce.solvers.group_encoding import encode_groups

        if query is None:
            raise ValidationError("feature groups need the query")
        encode_groups(milp, domain, query, constraints.groups)
    owner = np.asarray(constraints.feature_of_column)
    changed = np.full(int(constraints.n_features), -1, dtype=np.int64)
    k = constraints.max_changes
    if k is None:
        return changed
    if query is None:
        raise ValidationError("max_changes needs the query to count changed features")
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    cols = np.flatnonzero(hi > lo)
    if cols.size == 0:
        return changed
    feats = np.unique(owner[cols])
    cvar = milp.add_vars(len(feats), 0.0, 1.0, "B")
    changed[feats] = cvar
    cu = changed[owner[cols]]
    n = cols.size
    rr = np.arange(n)
    up = np.maximum(hi[cols] - q[cols], 0.0)
    down = np.maximum(q[cols] - lo[cols], 0.0)
    # x_j - (hi_j - q_j) c_f <= q_j ;  -x_j - (q_j - lo_j) c_f <= -q_j
    milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cu]),
                         np.concatenate([np.ones(n), -up]), n, -np.inf, q[cols])
    milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cu]),
                         np.concatenate([-np.ones(n), -down]), n, -np.inf, -q[cols])
    milp.add_constrs_coo(np.zeros(len(cvar), dtype=np.int64), cvar, np.ones(len(cvar)), 1,
                         -np.inf, float(k))
    return changed

