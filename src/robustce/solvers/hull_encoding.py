"""Input variables restricted to the convex hull of given points (PROPLACE's plausible
region)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robustce.errors import ValidationError
from robustce.solvers.domain_encoding import InputVars
from robustce.solvers.milp import MILP


@dataclass
class HullRegion:
    """Convex-combination weights of an encoded hull: ``x = Σ_l λ_l v_l``, ``λ ≥ 0``, ``Σ λ = 1``."""

    weights: np.ndarray  # λ variables, one per vertex
    vertices: np.ndarray  # (n_vertices, d)
    rows: np.ndarray  # the columns j tied to the hull (``x_j = Σ_l λ_l v_lj``)


def encode_hull_region(milp: MILP, vertices: np.ndarray, inputs: InputVars | np.ndarray, *,
                       columns: np.ndarray | None = None) -> HullRegion:
    """Restrict input variables to the convex hull of ``vertices`` (PROPLACE Def. 10, MILP (5g)).

    Adds λ ∈ [0, 1]^n with ``Σ λ = 1`` and, for each column ``j`` in ``columns`` (default all),
    ``x_j − Σ_l λ_l v_lj = 0``. Columns left out (e.g. ones fixed to a value every vertex shares)
    are not tied. ``inputs``: :class:`InputVars` or the input variables' indices.
    """
    V = np.asarray(vertices, dtype=np.float64)
    idx = inputs.index if isinstance(inputs, InputVars) else np.asarray(inputs, dtype=np.int64).reshape(-1)
    if V.ndim != 2 or V.shape[0] < 1 or V.shape[1] != idx.shape[0]:
        raise ValidationError(f"vertices must have shape (n >= 1, {idx.shape[0]}), got {V.shape}")
    if not np.isfinite(V).all():
        raise ValidationError("vertices contain NaN or infinite values")
    cols = np.arange(V.shape[1]) if columns is None else np.asarray(columns, dtype=np.int64).reshape(-1)
    n = V.shape[0]
    lam = milp.add_vars(n, 0.0, 1.0)
    milp.add_constrs_coo(np.zeros(n, dtype=np.int64), lam, np.ones(n), 1, 1.0, 1.0)
    k = cols.size
    if k:
        r = np.arange(k)
        # x_j - Σ_l v_lj λ_l = 0
        milp.add_constrs_coo(np.concatenate([r, np.repeat(r, n)]),
                             np.concatenate([idx[cols], np.tile(lam, k)]),
                             np.concatenate([np.ones(k), -V[:, cols].T.ravel()]), k, 0.0, 0.0)
    return HullRegion(lam, V, cols)
