"""The nearest-CE search's input domains: the query's actionable box with causal children
freed (MINT), the box that holds every point as near as an incumbent, and the solver's own
point of a solved domain."""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.solvers.encodings import InputDomain, encode_input_domain
from robustce.solvers.milp import MILP

__all__ = ["causal_input_domain", "incumbent_box", "milp_point"]


def milp_point(res: Any, dom: InputDomain, encoder: Any) -> np.ndarray:
    """The solver's own input point of a tree MILP (binaries rounded, projected onto the
    domain), instead of the query clipped to the leaves' ranges: with constraint relations
    the leaves' decoding may move columns towards the query where a relation forbids it, while
    the MILP's point satisfies the relation rows and lies in its leaves by the split rows'
    margins."""
    x = np.clip(res.values[dom.index], dom.lower, dom.upper)
    b = dom.column_kind == "binary"
    x[b] = np.round(x[b])
    return encoder.project(x[None], dom.lower, dom.upper)[0]



def incumbent_box(query: np.ndarray, lower: np.ndarray, upper: np.ndarray, weights: np.ndarray,
                  radius: float, kind: np.ndarray | None = None,
                  grid_steps: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The box ``[lower, upper] ∩ {x : w_j |x_j − q_j| ≤ radius for every column with
    w_j > 0}`` — under an ``l1`` or ``linf`` distance whose per-unit delta is a non-negative
    weighted sum of ``|x_j − q_j|`` (model or raw space), every point of distance ≤ ``radius``
    lies in it. Binary and grid columns (``kind`` "binary" / "grid" with ``grid_steps``) are
    rounded inward to their lattice."""
    q = np.asarray(query, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    r = np.full(q.shape, np.inf)
    pos = w > 0
    r[pos] = radius / w[pos]
    lo = np.maximum(lower, q - r)
    hi = np.minimum(upper, q + r)
    if kind is not None:
        eps = 1e-9
        b = kind == "binary"
        lo[b], hi[b] = np.ceil(lo[b] - eps), np.floor(hi[b] + eps)
        if grid_steps is not None:
            g = kind == "grid"
            st = grid_steps[g].astype(np.float64)
            lo[g], hi[g] = np.ceil(lo[g] * st - eps) / st, np.floor(hi[g] * st + eps) / st
        lo, hi = np.maximum(lo, lower), np.minimum(hi, upper)
    return lo, hi


def causal_input_domain(m: MILP, encoder: Any, q: np.ndarray, children: np.ndarray,
                        solver: str = "highs", integer_grid: bool = True) -> InputDomain:
    """The query's actionable input domain in ``m``, the causal ``children``'s columns
    spanning their whole box whatever their actionability (MINT: a child is not acted upon;
    it moves with its parents by the structural equations, which the constraint rows
    encode). Raises ValidationError when the box is empty."""
    if not len(children):
        return encode_input_domain(m, encoder, q, actionability=True, integer_grid=integer_grid)
    probe = encode_input_domain(MILP(solver), encoder, q, actionability=True, integer_grid=False)
    full_lo, full_hi = encoder.domain(q)
    lo, hi = probe.lower.copy(), probe.upper.copy()
    lo[children], hi[children] = full_lo[children], full_hi[children]
    return encode_input_domain(m, encoder, q, lower=lo, upper=hi, actionability=False,
                               integer_grid=integer_grid)
