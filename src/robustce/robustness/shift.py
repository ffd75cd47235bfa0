"""Model-parameter shift sets Δ and their two views: samples and intervals.

``ParameterShift(delta)`` is the set of networks whose every weight and bias lies within
``[w - δ, w + δ]`` of the base network (the p = ∞ ball of PROPLACE Def. 4 / APΔS). It offers

* ``sample(net, n)`` — n realisations drawn uniformly from the box, stored as batched arrays so
  ``forward(X)`` evaluates all of them on all inputs in one call: shape (n, len(X), n_outputs);
* ``interval(net)`` — the interval abstraction (PROPLACE Def. 5): weights as intervals;
  ``bounds(X)`` gives sound output bounds for any inputs, negative values included, and
  ``layer_bounds(lo, hi)`` per-layer pre-activation bounds over an input box (the big-M source
  of every MILP encoding).

Interval arithmetic for one layer, input box [l, u], weight box [W⁻, W⁺]: each product term
w·x ranges over min/max of the four corner products. When l ≥ 0 (inputs in [0,1], post-ReLU
activations) this reduces to matrix products: lower = pos(W⁻)l + neg(W⁻)u, upper =
pos(W⁺)u + neg(W⁺)l. For a point input x of any sign: lower = W⁻x⁺ + W⁺x⁻, upper = W⁺x⁺ + W⁻x⁻.
Inputs with both signs over a box use the four-corner form (chunked to bound memory).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.models.network import ReLUNetwork, class_margin
from robustce.utils import check_random_state

__all__ = ["IntervalNetwork", "ParameterShift", "SampledNetworks", "as_network", "empirical_delta"]


def as_network(model: Any) -> ReLUNetwork:
    """A :class:`ReLUNetwork` from a network or from any model with ``.network()``."""
    if isinstance(model, ReLUNetwork):
        return model
    if hasattr(model, "network"):
        return model.network()
    raise ValidationError(f"expected a ReLUNetwork or a model with .network(), got {type(model).__name__}")


@dataclass(frozen=True)
class ParameterShift:
    """Δ = {θ' : ‖θ' − θ‖_p ≤ δ}, p = ∞: every weight (and bias, if ``biases``) within ±δ."""

    delta: float
    p: float = math.inf
    biases: bool = True

    def __post_init__(self) -> None:
        try:
            delta = float(self.delta)
        except (TypeError, ValueError):
            raise ValidationError(f"delta must be a number, got {self.delta!r}") from None
        if not math.isfinite(delta) or delta <= 0:
            raise ValidationError(f"delta must be a positive finite number, got {self.delta}")
        if self.p != math.inf:
            raise ValidationError(
                f"only p=inf (box) parameter shifts are supported, got p={self.p}"
            )
        object.__setattr__(self, "delta", delta)

    def _bias_delta(self) -> float:
        return self.delta if self.biases else 0.0

    def sample(self, network: Any, n: int,
               random_state: int | np.random.Generator | None = None) -> SampledNetworks:
        """n networks drawn uniformly from the box around ``network``."""
        net = as_network(network)
        if int(n) < 1:
            raise ValidationError(f"n must be a positive integer, got {n}")
        rng = check_random_state(random_state)
        n = int(n)
        db = self._bias_delta()
        layers = []
        for W, b in net.weights:
            # in place, and bit-identical to W + rng.uniform(-δ, δ): uniform is -δ + 2δ·u
            Ws = rng.random((n,) + W.shape)
            Ws *= 2.0 * self.delta
            Ws += -self.delta
            Ws += W
            if db:
                bs = rng.random((n,) + b.shape)
                bs *= 2.0 * db
                bs += -db
                bs += b
            else:
                bs = np.broadcast_to(b, (n,) + b.shape).copy()
            layers.append((Ws, bs))
        return SampledNetworks(layers)

    def interval(self, network: Any) -> IntervalNetwork:
        net = as_network(network)
        db = self._bias_delta()
        return IntervalNetwork(
            [(W - self.delta, W + self.delta, b - db, b + db) for W, b in net.weights]
        )

    def contains(self, base: Any, other: Any, atol: float = 1e-12) -> bool:
        """Whether network ``other`` lies in Δ around ``base``."""
        a, b = as_network(base), as_network(other)
        if a.layer_sizes != b.layer_sizes:
            return False
        for (Wa, ba), (Wb, bb) in zip(a.weights, b.weights, strict=True):
            if np.abs(Wa - Wb).max() > self.delta + atol:
                return False
            if np.abs(ba - bb).max() > self._bias_delta() + atol:
                return False
        return True

    def to_dict(self) -> dict[str, Any]:
        return {"delta": self.delta, "p": "inf", "biases": self.biases}


class SampledNetworks:
    """n networks of one architecture as batched arrays: W of shape (n, out, in)."""

    _CHUNK_ELEMENTS = 1 << 19

    def __init__(self, weights: list[tuple[np.ndarray, np.ndarray]]):
        self.weights = weights

    def __len__(self) -> int:
        return self.weights[0][0].shape[0]

    def forward(self, X: np.ndarray) -> np.ndarray:
        """Logits of every sample on every input: shape (n_samples, len(X), n_outputs)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.shape[1] != self.weights[0][0].shape[2]:
            raise ValidationError(
                f"inputs must have {self.weights[0][0].shape[2]} columns, got {X.shape[1]}"
            )
        n, N = len(self), len(X)
        out = np.empty((n, N, self.weights[-1][0].shape[1]))
        # Samples in chunks whose activations stay in cache (~4 MB); within a chunk one batched
        # matmul per layer: small per-sample GEMMs, which BLAS runs single-threaded (no thread
        # oversubscription) and which give exactly the per-sample results.
        width = max(W.shape[1] for W, _ in self.weights)
        step = max(1, self._CHUNK_ELEMENTS // max(N * width, 1))
        last = len(self.weights) - 1
        for a in range(0, n, step):
            sl = slice(a, min(n, a + step))
            h = X[None]  # (1, N, in) broadcasts against (chunk, in, out)
            for i, (W, b) in enumerate(self.weights):
                h = np.matmul(h, W[sl].transpose(0, 2, 1))
                h += b[sl, None, :]
                if i < last:
                    np.maximum(h, 0.0, out=h)
            out[sl] = h
        return out

    def margin(self, X: np.ndarray, target_class: int) -> np.ndarray:
        """Target-class margin of every sample on every input, shape (n_samples, len(X))."""
        return class_margin(self.forward(X), target_class)

    def network(self, i: int) -> ReLUNetwork:
        return ReLUNetwork([(W[i], b[i]) for W, b in self.weights])


class IntervalNetwork:
    """Interval abstraction: per layer (W⁻, W⁺, b⁻, b⁺)."""

    _CHUNK_ELEMENTS = 4_000_000

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]):
        self.layers = layers

    @property
    def n_inputs(self) -> int:
        return self.layers[0][0].shape[1]

    def layer_bounds(self, lower: np.ndarray, upper: np.ndarray | None = None
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Sound pre-activation bounds of every layer over the input box [lower, upper]
        (rows are independent boxes; ``upper=None`` means point inputs). Returns a list of
        (lo, hi) arrays of shape (n_rows, layer_width), the last entry being the logits."""
        lo = np.atleast_2d(np.asarray(lower, dtype=np.float64))
        hi = lo if upper is None else np.atleast_2d(np.asarray(upper, dtype=np.float64))
        if lo.shape != hi.shape or lo.shape[1] != self.n_inputs:
            raise ValidationError(
                f"input bounds must both have shape (n, {self.n_inputs}), got {lo.shape}, {hi.shape}"
            )
        if np.any(lo > hi):
            raise ValidationError("input box has lower > upper")
        out = []
        last = len(self.layers) - 1
        for i, (Wl, Wu, bl, bu) in enumerate(self.layers):
            plo, phi = _interval_affine(lo, hi, Wl, Wu, self._CHUNK_ELEMENTS)
            plo, phi = plo + bl, phi + bu
            out.append((plo, phi))
            if i < last:
                lo, hi = np.maximum(plo, 0.0), np.maximum(phi, 0.0)
        return out

    def bounds(self, X: np.ndarray, X_upper: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Sound (lower, upper) logits for inputs X (or the boxes [X, X_upper])."""
        return self.layer_bounds(X, X_upper)[-1]

    def margin_lower_bound(self, X: np.ndarray, target_class: int | np.ndarray) -> np.ndarray:
        """A sound lower bound of the target-class margin over Δ (binary or multi-class);
        ``target_class`` is one class or one per row."""
        lo, hi = self.bounds(X)
        n, k = lo.shape
        t = np.asarray(target_class)
        if t.ndim == 0:
            t = np.full(n, int(t))
        if t.shape != (n,):
            raise ValidationError(f"target_class must be one int or one per row ({n}), got shape {t.shape}")
        t = t.astype(np.int64)
        n_classes = 2 if k == 1 else k
        if np.any((t < 0) | (t >= n_classes)):
            raise ValidationError(f"target_class must be in [0, {n_classes}), got {np.unique(t).tolist()}")
        if k == 1:
            return np.where(t == 1, lo[:, 0], -hi[:, 0])
        rows = np.arange(n)
        others = hi.copy()
        others[rows, t] = -np.inf
        return lo[rows, t] - others.max(axis=1)


def _interval_affine(lo: np.ndarray, hi: np.ndarray, Wl: np.ndarray, Wu: np.ndarray,
                     chunk_elements: int) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of W x over x in [lo, hi] (rows), W in [Wl, Wu] (elementwise)."""
    if np.all(lo >= 0):
        lower = lo @ np.maximum(Wl, 0).T + hi @ np.minimum(Wl, 0).T
        upper = hi @ np.maximum(Wu, 0).T + lo @ np.minimum(Wu, 0).T
        return lower, upper
    if np.array_equal(lo, hi):  # point inputs of any sign
        xp, xn = np.maximum(lo, 0), np.minimum(lo, 0)
        return xp @ Wl.T + xn @ Wu.T, xp @ Wu.T + xn @ Wl.T
    n, (m, d) = lo.shape[0], Wl.shape
    lower, upper = np.empty((n, m)), np.empty((n, m))
    step = max(1, chunk_elements // max(m * d, 1))
    for s in range(0, n, step):
        a, b = lo[s:s + step, None, :], hi[s:s + step, None, :]
        corners = np.stack([Wl * a, Wl * b, Wu * a, Wu * b])  # (4, chunk, m, d)
        lower[s:s + step] = corners.min(axis=0).sum(axis=2)
        upper[s:s + step] = corners.max(axis=0).sum(axis=2)
    return lower, upper


def empirical_delta(model_a: Any, model_b: Any, biases: bool = True) -> float:
    """max ‖θ_a − θ_b‖_∞ over all weights (and biases): the smallest δ whose Δ holds both."""
    a, b = as_network(model_a), as_network(model_b)
    if a.layer_sizes != b.layer_sizes:
        raise ValidationError(
            f"architectures differ: {a.layer_sizes} vs {b.layer_sizes}"
        )
    diffs = []
    for (Wa, ba), (Wb, bb) in zip(a.weights, b.weights, strict=True):
        diffs.append(np.abs(Wa - Wb).max())
        if biases:
            diffs.append(np.abs(ba - bb).max())
    return float(max(diffs))
