"""The nearest-CE search's costs: per-column distance weights, the distance of candidate rows
from a query as the search measures it, and MINT's pricing of causal children (an action set
costs its actions)."""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.distance import L0_TOL, Distance, raw_column_weights

__all__ = ["column_weights", "feature_distance", "priced_weights"]


def column_weights(encoder: Any) -> np.ndarray:
    """Per model-space column, the weight of ``|x_j - q_j|`` in its feature's distance
    (:func:`robustce.distance.raw_column_weights`)."""
    return raw_column_weights(encoder)


def feature_distance(encoder: Any, q: np.ndarray, X: np.ndarray, norm: str = "l1",
                     weights: np.ndarray | None = None, tol: float = L0_TOL) -> np.ndarray:
    """Distance of each row of ``X`` from the query ``q`` as :class:`MILPNearest` measures it:
    ``Distance(norm, weights, space="raw", tol=tol)``."""
    return Distance(norm, weights=weights, space="raw", tol=tol).rowwise(q, X, encoder)


def priced_weights(distance_weights: np.ndarray, children: np.ndarray) -> np.ndarray:
    """MINT's pricing: a CE is an action set and costs its actions, so the causal
    ``children``'s columns weigh 0 (a copy of ``distance_weights``)."""
    w = np.array(distance_weights, dtype=np.float64, copy=True)
    w[np.asarray(children, dtype=np.int64)] = 0.0
    return w
