"""The feasible set of a gradient search in model space, shared by the gradient explainers
(``Wachter``, ``ROAR``, ``RBR``): the box [0, 1]^d (per query, the encoder's
:meth:`~robustce.data.Encoder.domain`: widened to the query's own value beyond an observed
range), immutable columns fixed at the query,
increase-only columns ≥ the query, decrease-only columns ≤ it. ``FeasibleSet`` projects onto
it (torch in place inside an optimisation loop, or numpy), and :func:`distance_weights` turns a
``distance_weights`` parameter into per-column weights of the L1 proximity term.

Projection onto this set is exact and per coordinate (clip to [0, 1], then to the one-sided
bound, then fix the immutables), so the projected gradient methods built on it are the
textbook ones. Valid *encodings* (one-hot, integer grids) are the encoder's ``project``, applied
by the callers where they check validity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.errors import ValidationError

__all__ = ["FeasibleSet", "distance_weights"]


class FeasibleSet:
    """Actionability constraints of an encoder as projections (see the module docstring)."""

    def __init__(self, encoder: Encoder):
        self.encoder = encoder
        self.observed = encoder.observed_columns_
        self.free = ~encoder.immutable_mask_
        self.inc = encoder.increasing_mask_
        self.dec = encoder.decreasing_mask_

    def bounds(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The feasible box of each query: the encoder's domain, immutable columns fixed at
        the query, increase-only columns bounded below and decrease-only columns above by it.

        Parameters
        ----------
        X : queries, (n, d) or one query (d,), model space.

        Returns
        -------
        ``(lower, upper)``, each shaped as ``X``.
        """
        lo, hi = self.encoder.domain(X)
        lo, hi = np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)
        X = np.asarray(X, dtype=np.float64)
        lo[..., self.inc] = np.maximum(lo[..., self.inc], X[..., self.inc])
        hi[..., self.dec] = np.minimum(hi[..., self.dec], X[..., self.dec])
        lo[..., ~self.free] = hi[..., ~self.free] = X[..., ~self.free]
        return lo, hi

    def project_np(self, Z: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Copy of ``Z`` (n, d) clipped to the queries' feasible boxes (:meth:`bounds`)."""
        return np.clip(Z, *self.bounds(X))

    def projector(self, X: Any) -> Callable[[Any], None]:
        """``project(var)``: the in-place projection of a torch tensor ``var`` (n, d) for the
        queries ``X`` (a tensor of the same shape and dtype), their boxes and the column
        masks computed here once, for every step of an optimisation loop; call it under
        ``torch.no_grad()``."""
        import torch

        lo = hi = None
        if self.observed.size:  # the box of each query: [0, 1] widened to its own value
            lo, hi = torch.zeros_like(X), torch.ones_like(X)
            cols = torch.as_tensor(self.observed)
            lo[:, cols] = X[:, cols].clamp(max=0.0)
            hi[:, cols] = X[:, cols].clamp(min=1.0)
        inc = torch.as_tensor(self.inc) if self.inc.any() else None
        dec = torch.as_tensor(self.dec) if self.dec.any() else None
        fixed = torch.as_tensor(~self.free)
        x_inc = X[:, inc] if inc is not None else None
        x_dec = X[:, dec] if dec is not None else None
        x_fixed = X[:, fixed]

        def project(var: Any) -> None:
            if lo is not None:
                var.copy_(torch.minimum(torch.maximum(var, lo), hi))
            else:
                var.clamp_(0.0, 1.0)
            if inc is not None:
                var[:, inc] = torch.maximum(var[:, inc], x_inc)
            if dec is not None:
                var[:, dec] = torch.minimum(var[:, dec], x_dec)
            var[:, fixed] = x_fixed

        return project


def distance_weights(spec: Any, encoder: Encoder, data: Dataset | None) -> np.ndarray:
    """Per model-space column weights of an L1 proximity term from a ``distance_weights``
    parameter: ``None`` (uniform), ``"mad"`` (1/median absolute deviation of the training
    data; zero MAD → 1/std, then 1), ``"range"`` (1/(max − min); zero ranges → 1) or an array
    of d finite weights ≥ 0."""
    d = encoder.n_features_out_
    if spec is None:
        return np.ones(d)
    if isinstance(spec, str):
        if spec not in ("mad", "range"):
            raise ValidationError(f"distance_weights must be None, 'mad', 'range' or an array, "
                                  f"got {spec!r}")
        if data is None:
            raise ValidationError(f"distance_weights={spec!r} needs the training data (data=)")
        X = encoder.transform(data.frame)
        if spec == "mad":
            scale = np.median(np.abs(X - np.median(X, axis=0)), axis=0)
            std = X.std(axis=0)
            scale = np.where(scale > 0, scale, np.where(std > 0, std, 1.0))
        else:
            scale = X.max(axis=0) - X.min(axis=0)
            scale = np.where(scale > 0, scale, 1.0)
        return 1.0 / scale
    try:
        w = np.asarray(spec, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        w = np.full(0, np.nan)
    if w.shape != (d,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValidationError(f"distance_weights must be None, 'mad', 'range' or {d} finite "
                              f"non-negative numbers, got {spec!r}")
    return w
