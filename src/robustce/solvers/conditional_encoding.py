"""Conditional constraints (:mod:`robustce.data.conditionals`) as big-M rows of a MILP.

For a conditional "if C then lower <= a·x <= upper" over the input variables ``x`` of a
domain with box ``[lo, hi]`` and query ``q``:

* the condition's indicator ``z``: for ``f == value`` and a category change, the linear 0/1
  expression of the encoding itself (one-hot / binary / thermometer columns, exact on valid
  encodings); for ``f increases`` (``decreases``, ``changes``) a new binary with
  ``m(x) <= M⁺ z`` (``−m(x) <= M⁻ z``), ``m = c·(x − q)`` the feature's movement and ``M±``
  its largest value over the box — any movement forces ``z = 1``;
* the consequence, relaxed by big-M when ``z = 0``: ``a·x <= upper + M_u (1 − z)`` and
  ``a·x >= lower − M_l (1 − z)``, ``M_u = max_box a·x − upper``, ``M_l = lower − min_box a·x``.

Every big-M is the exact range over the box, so the rows admit exactly the points of the box
that satisfy the conditional.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["encode_conditionals"]


def _range(c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[float, float]:
    """min and max of ``c @ x`` over the box."""
    return float(np.minimum(c * lo, c * hi).sum()), float(np.maximum(c * lo, c * hi).sum())


def encode_conditionals(milp: Any, domain: Any, query: np.ndarray, conditionals: Any) -> None:
    """Add each :class:`~robustce.data.conditionals.CompiledConditional` of ``conditionals``
    to ``milp`` over ``domain``'s input variables (module docstring); ``query`` is the
    model-space query row."""
    x, lo, hi = domain.index, np.asarray(domain.lower), np.asarray(domain.upper)
    q = np.asarray(query, dtype=np.float64).reshape(-1)

    def row(coef: np.ndarray, zcoef: float, z: int | None, lower: float, upper: float) -> None:
        cols = np.flatnonzero(coef)
        idx, val = list(x[cols]), list(coef[cols])
        if z is not None and zcoef:
            idx.append(z)
            val.append(zcoef)
        if idx:
            milp.add_constrs_coo(np.zeros(len(idx), dtype=np.int64), np.asarray(idx),
                                 np.asarray(val, dtype=np.float64), 1, lower, upper)

    for c in conditionals:
        shift = float(c.q_coef @ q)
        L, U = c.lower + shift, c.upper + shift
        amin, amax = _range(c.a, lo, hi)
        if c.kind in ("expr", "category_change"):
            zc, zk = c.indicator(q)  # z = zc·x + zk
            z = None
        else:
            cq = float(c.cond @ q)
            cmin, cmax = _range(c.cond, lo, hi)
            up, down = cmax - cq, cq - cmin
            possible = {1: up > 0, -1: down > 0, 0: up > 0 or down > 0}[c.direction]
            if not possible:
                continue  # the condition cannot become true in this box
            z = int(milp.add_vars(1, 0.0, 1.0, "B")[0])
            if c.direction in (1, 0) and up > 0:
                row(c.cond, -up, z, -np.inf, cq)  # c·x − M⁺ z <= c·q
            if c.direction in (-1, 0) and down > 0:
                row(-c.cond, -down, z, -np.inf, -cq)  # −c·x − M⁻ z <= −c·q
            zc, zk = np.zeros_like(c.a), 0.0
        # consequence, active when z = 1:  a·x + M (z − 1) <= U  /  a·x − M (z − 1) >= L
        if np.isfinite(U) and amax > U:
            M = amax - U
            if z is None:
                row(c.a + M * zc, 0.0, None, -np.inf, U + M - M * zk)
            else:
                row(c.a, M, z, -np.inf, U + M)
        if np.isfinite(L) and amin < L:
            M = L - amin
            if z is None:
                row(c.a - M * zc, 0.0, None, L - M + M * zk, np.inf)
            else:
                row(c.a, -M, z, L - M, np.inf)
