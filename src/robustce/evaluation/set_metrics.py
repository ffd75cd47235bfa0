"""Metrics of *sets* of counterfactuals (Leofante & Potyka): k-distance, k-diversity and the
set distances between the CE sets of a query and of its perturbed copy.

Notation: x is a query, S = {x'_1, …, x'_|S|} the CEs a multi-CE method returned for it, in
model space; dist is :class:`robustce.distance.Distance` with the given norm.

* k-distance (eq. 12): (1/|S|) Σ_j dist(x, x'_j).
* k-diversity (eq. 13): (|S| choose 2)⁻¹ Σ_{j<l} dist(x'_j, x'_l); NaN when |S| < 2.
* set-distance_Σ(S₁, S₂) (eq. 4) = 1/(2|S₁|) Σ_{c₁∈S₁} min_{c₂∈S₂} d(c₁, c₂)
  + 1/(2|S₂|) Σ_{c₂∈S₂} min_{c₁∈S₁} d(c₂, c₁).
* set-distance_max(S₁, S₂) (eq. 5) = ½ (max_{c₁} min_{c₂} d(c₁, c₂) + max_{c₂} min_{c₁} d(c₂, c₁)).

The ``*_batch`` functions compute many sets at once from long-format rows (``owner[i]`` = the
query that CE row i belongs to), padded to (n, k_max, d) with a mask — no Python loop over sets.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from robustce.distance import Distance
from robustce.errors import ValidationError

__all__ = [
    "k_distance",
    "k_distance_batch",
    "k_diversity",
    "k_diversity_batch",
    "set_distance_max",
    "set_distance_sum",
    "set_distances_batch",
]


def _dist(A: np.ndarray, B: Any, norm: str) -> np.ndarray:
    """‖A − B‖_p along the last axis (broadcasting), model space."""
    return Distance(norm)(A, B)


def _set(S: Any) -> np.ndarray:
    S = np.atleast_2d(np.asarray(S, dtype=np.float64))
    if len(S) == 0:
        raise ValidationError("a CE set must not be empty")
    return S


def k_distance(x: np.ndarray, S: np.ndarray, norm: str = "l1") -> float:
    """(1/|S|) Σ_j dist(x, x'_j) (eq. 12)."""
    S = _set(S)
    return float(_dist(S, np.asarray(x, dtype=np.float64)[None, :], norm).mean())


def k_diversity(S: np.ndarray, norm: str = "l1") -> float:
    """(|S| choose 2)⁻¹ Σ_{j<l} dist(x'_j, x'_l) (eq. 13); NaN when |S| < 2."""
    S = _set(S)
    if len(S) < 2:
        return math.nan
    D = _dist(S[:, None, :], S[None, :, :], norm)
    j, l = np.triu_indices(len(S), k=1)
    return float(D[j, l].mean())


def set_distance_sum(S1: np.ndarray, S2: np.ndarray, norm: str = "l1") -> float:
    """set-distance_Σ(S₁, S₂) (eq. 4)."""
    D = _dist(_set(S1)[:, None, :], _set(S2)[None, :, :], norm)
    return float(0.5 * D.min(axis=1).mean() + 0.5 * D.min(axis=0).mean())


def set_distance_max(S1: np.ndarray, S2: np.ndarray, norm: str = "l1") -> float:
    """set-distance_max(S₁, S₂) (eq. 5)."""
    D = _dist(_set(S1)[:, None, :], _set(S2)[None, :, :], norm)
    return float(0.5 * (D.min(axis=1).max() + D.min(axis=0).max()))


def _rows(C: Any, n_rows: int, d: int | None = None) -> np.ndarray:
    """C as a 2-D float array of ``n_rows`` rows (an empty C keeps its width, or ``d``)."""
    C = np.asarray(C, dtype=np.float64)
    if C.ndim == 2 and len(C) == n_rows:
        return C
    if C.size == 0 and n_rows == 0:
        return np.zeros((0, C.shape[-1] if C.ndim == 2 else (d or 0)))
    if n_rows == 0 or C.size % n_rows:
        raise ValidationError(f"{C.size} values cannot form {n_rows} CE rows")
    return C.reshape(n_rows, -1)


def _padded(C: np.ndarray, owner: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Long-format sets (rows C, set id ``owner`` in [0, n)) -> (n, k_max, d) and a mask."""
    owner = np.asarray(owner, dtype=np.int64)
    C = _rows(C, len(owner))
    counts = np.bincount(owner, minlength=n)
    k = max(int(counts.max(initial=0)), 1)
    order = np.argsort(owner, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(len(owner)) - starts[owner[order]]
    P = np.zeros((n, k, C.shape[1]))
    mask = np.zeros((n, k), dtype=bool)
    P[owner[order], slot] = C[order]
    mask[owner[order], slot] = True
    return P, mask


def k_distance_batch(X: np.ndarray, C: np.ndarray, owner: np.ndarray, norm: str = "l1"
                     ) -> np.ndarray:
    """eq. 12 for many sets at once: X (n, d) queries, C rows owned by query ``owner``.
    NaN for queries without CEs."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    owner = np.asarray(owner, dtype=np.int64)
    d = _dist(_rows(C, len(owner), X.shape[1]), X[owner], norm)
    counts = np.bincount(owner, minlength=len(X))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(owner, weights=d, minlength=len(X)) / np.where(counts, counts, np.nan)


def k_diversity_batch(C: np.ndarray, owner: np.ndarray, n: int, norm: str = "l1") -> np.ndarray:
    """eq. 13 for many sets at once; NaN for sets with fewer than two CEs."""
    P, mask = _padded(C, owner, n)
    D = _dist(P[:, :, None, :], P[:, None, :, :], norm)
    k = P.shape[1]
    pair = mask[:, :, None] & mask[:, None, :] & np.triu(np.ones((k, k), dtype=bool), 1)[None]
    n_pairs = pair.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_pairs > 0, (D * pair).sum(axis=(1, 2)) / np.maximum(n_pairs, 1), np.nan)


def set_distances_batch(C1: np.ndarray, owner1: np.ndarray, C2: np.ndarray, owner2: np.ndarray,
                        n: int, norm: str = "l1") -> tuple[np.ndarray, np.ndarray]:
    """(set-distance_Σ, set-distance_max) between S₁ = rows of C1 owned by i and S₂ = rows
    of C2 owned by i, for i in [0, n); NaN where either set is empty."""
    P1, m1 = _padded(C1, owner1, n)
    P2, m2 = _padded(C2, owner2, n)
    D = _dist(P1[:, :, None, :], P2[:, None, :, :], norm)
    both = m1[:, :, None] & m2[:, None, :]
    D = np.where(both, D, np.inf)
    to2 = D.min(axis=2)  # (n, k1): min over S2 for each c1
    to1 = D.min(axis=1)  # (n, k2): min over S1 for each c2
    ok = m1.any(axis=1) & m2.any(axis=1)
    c1, c2 = m1.sum(axis=1), m2.sum(axis=1)
    s1 = np.where(m1, to2, 0.0).sum(axis=1) / np.maximum(c1, 1)
    s2 = np.where(m2, to1, 0.0).sum(axis=1) / np.maximum(c2, 1)
    mx1 = np.where(m1, to2, -np.inf).max(axis=1)
    mx2 = np.where(m2, to1, -np.inf).max(axis=1)
    with np.errstate(invalid="ignore"):
        total = np.where(ok, 0.5 * (s1 + s2), np.nan)
        worst = np.where(ok, 0.5 * (mx1 + mx2), np.nan)
    return total, worst
