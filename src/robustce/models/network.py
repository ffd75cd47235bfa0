"""``ReLUNetwork``: the numpy view of a feed-forward ReLU classifier in model space.

Every certifier, MILP encoding and sampler reads a model through this one view:
``weights = [(W1, b1), ..., (WL, bL)]`` with ``W`` of shape (out, in); ReLU after every layer
but the last; the last layer gives logits (one logit for binary classifiers, K for K classes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robustce.errors import ValidationError

__all__ = ["ReLUNetwork", "class_margin"]


def class_margin(logits: np.ndarray, target_class: int) -> np.ndarray:
    """Margin of ``target_class`` along the last axis: > 0 iff the target class is predicted.

    Binary (one logit z): ``z`` for class 1, ``-z`` for class 0. Multi-class:
    ``z_t - max_{j != t} z_j``.
    """
    logits = np.asarray(logits)
    k = logits.shape[-1]
    if k == 1:
        if target_class not in (0, 1):
            raise ValidationError(f"binary network: target_class must be 0 or 1, got {target_class}")
        return logits[..., 0] if target_class == 1 else -logits[..., 0]
    if not 0 <= target_class < k:
        raise ValidationError(f"target_class must be in [0, {k}), got {target_class}")
    others = np.delete(logits, target_class, axis=-1)
    return logits[..., target_class] - others.max(axis=-1)


class ReLUNetwork:
    """A ReLU network given by its weights; ``forward`` is vectorised over rows."""

    def __init__(self, weights: Sequence[tuple[np.ndarray, np.ndarray]]):
        if len(weights) == 0:
            raise ValidationError("a ReLUNetwork needs at least one layer")
        layers = []
        prev_out = None
        for i, layer in enumerate(weights):
            try:
                W, b = layer
            except (TypeError, ValueError):
                raise ValidationError(f"layer {i} must be a (W, b) pair") from None
            W = np.array(W, dtype=np.float64)
            b = np.array(b, dtype=np.float64).reshape(-1)
            if W.ndim != 2:
                raise ValidationError(f"layer {i}: W must be 2-D (out, in), got shape {W.shape}")
            if b.shape[0] != W.shape[0]:
                raise ValidationError(
                    f"layer {i}: b has {b.shape[0]} entries but W has {W.shape[0]} rows"
                )
            if prev_out is not None and W.shape[1] != prev_out:
                raise ValidationError(
                    f"layer {i}: W takes {W.shape[1]} inputs but layer {i - 1} gives {prev_out}"
                )
            if not (np.isfinite(W).all() and np.isfinite(b).all()):
                raise ValidationError(f"layer {i}: weights contain NaN or infinite values")
            layers.append((W, b))
            prev_out = W.shape[0]
        self.weights: list[tuple[np.ndarray, np.ndarray]] = layers

    @property
    def n_inputs(self) -> int:
        return self.weights[0][0].shape[1]

    @property
    def n_outputs(self) -> int:
        return self.weights[-1][0].shape[0]

    @property
    def n_classes(self) -> int:
        return 2 if self.n_outputs == 1 else self.n_outputs

    @property
    def layer_sizes(self) -> list[int]:
        """[n_inputs, hidden..., n_outputs]."""
        return [self.n_inputs] + [W.shape[0] for W, _ in self.weights]

    def check_inputs(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.n_inputs:
            raise ValidationError(
                f"inputs must have shape (n, {self.n_inputs}), got {np.shape(X)}"
            )
        return X

    def forward(self, X: np.ndarray, return_hidden: bool = False):
        """Logits of shape (n, n_outputs); with ``return_hidden`` also the post-ReLU
        activations of each hidden layer."""
        h = self.check_inputs(X)
        hidden = []
        for i, (W, b) in enumerate(self.weights):
            h = h @ W.T + b
            if i < len(self.weights) - 1:
                h = np.maximum(h, 0.0)
                hidden.append(h)
        return (h, hidden) if return_hidden else h

    __call__ = forward

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Class labels 0..K-1 (binary: logit > 0 means class 1)."""
        z = self.forward(X)
        return (z[:, 0] > 0).astype(np.int64) if z.shape[1] == 1 else np.argmax(z, axis=1)

    def margin(self, X: np.ndarray, target_class: int) -> np.ndarray:
        """Per row, :func:`class_margin` of the logits."""
        return class_margin(self.forward(X), target_class)

    def copy(self) -> ReLUNetwork:
        return ReLUNetwork([(W.copy(), b.copy()) for W, b in self.weights])

    def flat(self) -> np.ndarray:
        """All weights and biases as one vector (layer by layer, W then b)."""
        return np.concatenate([np.concatenate([W.ravel(), b]) for W, b in self.weights])

    def __repr__(self) -> str:
        return f"ReLUNetwork({'-'.join(map(str, self.layer_sizes))})"
