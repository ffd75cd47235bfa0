"""A distance to the query as a MILP objective (:func:`encode_distance`: ``l0``, ``l1``,
``linf`` over the input variables of an :class:`~robustce.solvers.encodings.InputDomain`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.distance import Distance
from robustce.errors import ValidationError
from robustce.solvers.domain_encoding import InputDomain
from robustce.solvers.milp import MILP


@dataclass(frozen=True)
class DistanceObjective:
    """A linear expression Σ coefs·vars + constant over a MILP's variables: the encoded
    distance (plus any tie-break), ready for ``milp.set_objective(cols, coefs, constant=...)``.
    ``abs_vars`` (per column, −1 where none): the variable e_j ≥ |x_j − q_j| of a column that
    is not a 0/1 column at a 0/1 query value; ``changed_vars`` (``l0``, per column, −1 where
    none): the binary that must be 1 for the column to move. Encodings may tighten them."""

    cols: np.ndarray
    coefs: np.ndarray
    constant: float
    abs_vars: np.ndarray | None = None
    changed_vars: np.ndarray | None = None

    def set_as_objective(self, milp: MILP) -> None:
        """Minimise this expression."""
        milp.set_objective(self.cols, self.coefs, constant=self.constant)


def encode_distance(milp: MILP, domain: InputDomain, query: np.ndarray, distance: Distance,
                    encoder: Any = None, *, tie_break: float = 0.0) -> DistanceObjective:
    """Encode ``distance(x, query)`` over the input variables of ``domain`` (Mohammadi et al.).

    Per column, |x_j − q_j| is linear for a 0/1 column with q_j ∈ {0, 1} (``x_j`` or
    ``1 − x_j``) and otherwise a new variable e_j ≥ ±(x_j − q_j); fixed columns (zero-width
    box) contribute nothing. The column terms carry the distance's column weights w_j and add
    up per unit (:meth:`Distance.units`: columns, or raw features in raw space):

    * ``l1``: Σ_j w_j |x_j − q_j|;
    * ``linf``: t with t ≥ Σ_{j∈u} w_j |x_j − q_j| for every unit u;
    * ``l0``: Σ_u c_u with binaries c_u that must be 1 for any column of u (of positive
      weight) to move (big-M from the column's box: q_j − (q_j − lo_j) c_u ≤ x_j ≤ q_j +
      (hi_j − q_j) c_u).

    ``l0`` and ``linf`` add ``tie_break`` times the ``l1`` expression so that the optimum does
    not move more than it must. ``l2`` is not linear and raises ValidationError. Raw space
    needs the model's ``encoder``. Returns the objective; the caller sets it (or adds to it).
    """
    if distance.norm == "l2":
        raise ValidationError("an l2 distance is not linear; a MILP objective supports l0, l1, linf")
    if not (np.isfinite(tie_break) and tie_break >= 0):
        raise ValidationError(f"tie_break must be a finite number >= 0, got {tie_break}")
    x, lo, hi = domain.index, domain.lower, domain.upper
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    d = len(x)
    if q.shape[0] != d:
        raise ValidationError(f"query must have {d} model-space values, got {q.shape[0]}")
    w = distance.column_weights(encoder, d=d)
    owner = distance.units(encoder, d=d)
    # per column, |x_j - q_j| as a_j * var_j + c_j
    movable = hi > lo
    is_bin = (domain.column_kind == "binary") & np.isin(q, (0.0, 1.0))
    lin = movable & is_bin
    gen = movable & ~is_bin
    dvar = np.full(d, -1, dtype=np.int64)
    acoef = np.zeros(d)
    const = np.zeros(d)
    dvar[lin], acoef[lin], const[lin] = x[lin], np.where(q[lin] == 0.0, 1.0, -1.0), q[lin]
    g = np.flatnonzero(gen)
    if g.size:
        dv = milp.add_vars(g.size, 0.0, np.maximum(hi[g] - q[g], q[g] - lo[g]))
        rr = np.arange(g.size)
        # e - x >= -q ; e + x >= q
        milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([dv, x[g]]),
                             np.concatenate([np.ones(g.size), -np.ones(g.size)]), g.size, -q[g], np.inf)
        milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([dv, x[g]]),
                             np.concatenate([np.ones(g.size), np.ones(g.size)]), g.size, q[g], np.inf)
        dvar[g], acoef[g] = dv, 1.0
    cols = np.flatnonzero(movable)
    l1_cols, l1_coef = dvar[cols], w[cols] * acoef[cols]
    l1_const = float((w[cols] * const[cols]).sum())
    abs_vars = np.where(gen, dvar, -1)
    if distance.norm == "l1":
        return DistanceObjective(l1_cols, l1_coef, l1_const, abs_vars)
    units = np.unique(owner[cols])
    if distance.norm == "linf":
        tvar = milp.add_vars(1, 0.0, np.inf)
        uidx = {u: i for i, u in enumerate(units)}
        rows = np.array([uidx[u] for u in owner[cols]], dtype=np.int64)
        rhs = np.zeros(len(units))
        np.add.at(rhs, rows, w[cols] * const[cols])
        # t - sum_j w_j a_j var_j >= sum_j w_j c_j
        milp.add_constrs_coo(np.concatenate([np.arange(len(units)), rows]),
                             np.concatenate([np.full(len(units), tvar[0]), dvar[cols]]),
                             np.concatenate([np.ones(len(units)), -w[cols] * acoef[cols]]),
                             len(units), rhs, np.inf)
        return DistanceObjective(np.concatenate([tvar, l1_cols]),
                                 np.concatenate([[1.0], tie_break * l1_coef]), tie_break * l1_const,
                                 abs_vars)
    # l0: a column of zero weight never counts, so it moves freely
    cols = cols[w[cols] > 0]
    units = np.unique(owner[cols])
    cvar = milp.add_vars(len(units), 0.0, 1.0, "B")
    umap = dict(zip(units.tolist(), cvar.tolist(), strict=True))
    cu = np.array([umap[u] for u in owner[cols]], dtype=np.int64)
    n = cols.size
    rr = np.arange(n)
    # x_j - (hi_j - q_j) c_u <= q_j ;  -x_j - (q_j - lo_j) c_u <= -q_j
    milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cu]),
                         np.concatenate([np.ones(n), -(hi[cols] - q[cols])]), n, -np.inf, q[cols])
    milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cu]),
                         np.concatenate([-np.ones(n), -(q[cols] - lo[cols])]), n, -np.inf, -q[cols])
    changed = np.full(d, -1, dtype=np.int64)
    changed[cols] = cu
    return DistanceObjective(np.concatenate([cvar, l1_cols]),
                             np.concatenate([np.ones(len(cvar)), tie_break * l1_coef]),
                             tie_break * l1_const, abs_vars, changed)

