"""Network views in model space: ``ReLUNetwork`` (fixed weights), ``IntervalNetwork`` (weights
as intervals), and the helpers every certifier, MILP encoding and sampler shares: the class
margin, target resolution and the model → network view.

``ReLUNetwork``: ``weights = [(W1, b1), ..., (WL, bL)]`` with ``W`` of shape (out, in); ReLU after
every layer but the last; the last layer gives logits (one logit for binary classifiers, K for
K classes). A network imported from a user's model also keeps the user's parameterisation —
``layers`` as they are, a fixed ``input_map`` (the preprocessing), ``activations`` with
``"identity"`` where the user's model has no ReLU, a per-parameter ``shift_scale`` — which is
what every shift set ranges over; ``weights`` is then the same function folded into plain ReLU
layers (see ``docs/certification.md``, "What Δ covers").

``IntervalNetwork`` (PROPLACE Def. 5): per layer ``(W⁻, W⁺, b⁻, b⁺)``. Interval arithmetic for
one layer, input box [l, u], weight box [W⁻, W⁺]: each product term w·x ranges over min/max of
the four corner products. When l ≥ 0 (inputs in [0,1], post-ReLU activations) this reduces to
matrix products: lower = pos(W⁻)l + neg(W⁻)u, upper = pos(W⁺)u + neg(W⁺)l. For a point input x
of any sign: lower = W⁻x⁺ + W⁺x⁻, upper = W⁺x⁺ + W⁻x⁻. Inputs with both signs over a box use the
four-corner form (chunked to bound memory).

The class margin (one definition for the whole package): binary (one logit z): ``z`` for class
1, ``−z`` for class 0; K classes: ``z_t − max_{j≠t} z_j``. It is > 0 iff the target class is
predicted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.validation import check_bool

__all__ = [
    "IntervalNetwork",
    "ReLUNetwork",
    "as_network",
    "class_margin",
    "empirical_delta",
    "margin_bounds",
    "margin_terms",
    "model_space_rows",
    "resolve_targets",
    "torch_class_margin",
]


def _check_targets(t: np.ndarray, k: int) -> None:
    """``t`` (int array) must be classes of a network with ``k`` outputs."""
    valid = (t >= 0) & (t <= 1) if k == 1 else (t >= 0) & (t < k)
    if not valid.all():
        raise ValidationError(
            f"target_class out of range for a {'binary' if k == 1 else f'{k}-class'} network: "
            f"{np.unique(t[~valid]).tolist()}"
        )


def class_margin(logits: np.ndarray, target_class: int | np.ndarray) -> np.ndarray:
    """Margin of the target class along the last axis: > 0 iff the target class is predicted.

    Binary (one logit z): ``z`` for class 1, ``-z`` for class 0. Multi-class:
    ``z_t - max_{j != t} z_j``. ``target_class``: one class, or one per row — then ``logits``
    has shape (..., n, K) and row ``i`` uses ``target_class[i]``.
    """
    logits = np.asarray(logits)
    k = logits.shape[-1]
    t = np.asarray(target_class)
    if t.ndim == 0:
        target_class = int(t)
        if k == 1:
            if target_class not in (0, 1):
                raise ValidationError(f"binary network: target_class must be 0 or 1, got {target_class}")
            return logits[..., 0] if target_class == 1 else -logits[..., 0]
        if not 0 <= target_class < k:
            raise ValidationError(f"target_class must be in [0, {k}), got {target_class}")
        others = np.delete(logits, target_class, axis=-1)
        return logits[..., target_class] - others.max(axis=-1)
    t = t.astype(np.int64).reshape(-1)
    n = logits.shape[-2] if logits.ndim >= 2 else 0
    if t.shape[0] != n:
        raise ValidationError(f"target_class has {t.shape[0]} entries for {n} rows of logits")
    _check_targets(t, k)
    if k == 1:
        z = logits[..., 0]
        return np.where(t == 1, z, -z)
    rows = np.arange(n)
    zt = logits[..., rows, t]
    other = np.array(logits, dtype=np.float64, copy=True)
    other[..., rows, t] = -np.inf
    return zt - other.max(axis=-1)


def torch_class_margin(logits: Any, targets: Any) -> Any:
    """:func:`class_margin` of a torch tensor of logits (n, K) with one target per row, kept
    differentiable (gradient-based methods)."""
    import torch

    t = torch.as_tensor(np.asarray(targets), dtype=torch.long)
    if logits.shape[1] == 1:
        return (2.0 * t.to(logits.dtype) - 1.0) * logits[:, 0]
    zt = logits.gather(1, t[:, None])[:, 0]
    others = logits.masked_fill(torch.nn.functional.one_hot(t, logits.shape[1]).bool(), -torch.inf)
    return zt - others.max(dim=1).values


def margin_terms(lower: np.ndarray, upper: np.ndarray, target_class: np.ndarray) -> np.ndarray:
    """Sound lower bounds of the margin per competitor from logit bounds ``[lower, upper]``
    (rows): shape (n, K) with ``lower_t − upper_j`` in column j and +inf at j = t; binary:
    one column (``lower`` for target 1, ``−upper`` for target 0). Their row minimum is
    :func:`margin_bounds`' lower bound."""
    lo, hi = np.atleast_2d(lower), np.atleast_2d(upper)
    if lo.shape[1] == 1:  # binary: no per-row class indexing (a hot path of the sampled tests)
        return np.where(np.asarray(target_class) == 1, lo[:, 0], -hi[:, 0])[:, None]
    n = lo.shape[0]
    t = np.broadcast_to(np.asarray(target_class, dtype=np.int64), (n,))
    rows = np.arange(n)
    terms = lo[rows, t][:, None] - hi
    terms[rows, t] = np.inf
    return terms


def margin_bounds(lower: np.ndarray, upper: np.ndarray, target_class: Any
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Sound (lower, upper) bounds of the class margin per row when every logit lies in
    ``[lower, upper]`` (shape (n, K)); ``target_class`` one class or one per row."""
    lo, hi = np.atleast_2d(lower), np.atleast_2d(upper)
    n, k = lo.shape
    t = np.asarray(target_class)
    if t.ndim == 0:
        t = np.full(n, int(t))
    t = t.astype(np.int64).reshape(-1)
    if t.shape != (n,):
        raise ValidationError(f"target_class must be one int or one per row ({n}), got shape {t.shape}")
    _check_targets(t, k)
    m_lo = margin_terms(lo, hi, t).min(axis=1)
    if k == 1:
        return m_lo, np.where(t == 1, hi[:, 0], -lo[:, 0])
    rows = np.arange(n)
    others = lo.copy()
    others[rows, t] = -np.inf
    return m_lo, hi[rows, t] - others.max(axis=1)


ACTIVATIONS = ("relu", "identity")


def _check_layers(weights: Sequence[tuple[np.ndarray, np.ndarray]], what: str = "layer"
                  ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``weights`` as float64 ``(W, b)`` pairs of matching shapes (errors name the layer)."""
    if len(weights) == 0:
        raise ValidationError("a ReLUNetwork needs at least one layer")
    layers = []
    prev_out = None
    for i, layer in enumerate(weights):
        try:
            W, b = layer
        except (TypeError, ValueError):
            raise ValidationError(f"{what} {i} must be a (W, b) pair") from None
        W = np.array(W, dtype=np.float64)
        b = np.array(b, dtype=np.float64).reshape(-1)
        if W.ndim != 2:
            raise ValidationError(f"{what} {i}: W must be 2-D (out, in), got shape {W.shape}")
        if b.shape[0] != W.shape[0]:
            raise ValidationError(
                f"{what} {i}: b has {b.shape[0]} entries but W has {W.shape[0]} rows"
            )
        if prev_out is not None and W.shape[1] != prev_out:
            raise ValidationError(
                f"{what} {i}: W takes {W.shape[1]} inputs but {what} {i - 1} gives {prev_out}"
            )
        if not (np.isfinite(W).all() and np.isfinite(b).all()):
            raise ValidationError(f"{what} {i}: weights contain NaN or infinite values")
        layers.append((W, b))
        prev_out = W.shape[0]
    return layers


class ReLUNetwork:
    """A network given by its weights; ``forward`` is vectorised over rows.

    Plain (the default): ``weights = [(W1, b1), ..., (WL, bL)]``, ReLU after every layer but
    the last. A network imported from the user's own model keeps the user's parameterisation,
    which is what a shift set Δ ranges over:

    * ``input_map = (A, c)``: a fixed affine map ``z = A x + c`` from model space to the first
      layer's inputs (the user's preprocessing; standardised, possibly negative). It is data,
      never shifted.
    * ``activations``: one of ``"relu"`` / ``"identity"`` per hidden layer (a Linear→Linear
      pair of the user's module stays two layers with an identity between).
    * ``shift_scale``: per layer ``(S_W, S_b)`` arrays ≥ 0 of the layers' shapes: parameter
      ``θ_k`` moves within ``±δ·S_k`` under a shift of radius δ (0: a fixed parameter, e.g. a
      BatchNorm's running statistics or the zeros off a BatchNorm's diagonal; 1: the user's
      own weight; None: every parameter moves by ±δ).

    ``layers`` are the parameters as given; ``weights`` the plain ReLU layers computing the
    same function (the input map and identity activations composed away; ``layers`` itself for
    a plain network), which is what ``forward`` and every function-only consumer (MILP
    encodings of the model, gradients) use. Shift sets (sampling, intervals, the exact test,
    attacks) read ``layers``, ``activations``, ``input_map`` and ``shift_scale``.

    Parameters
    ----------
    weights : the layers ``[(W1, b1), ..., (WL, bL)]``, ``W_k`` of shape ``(out, in)``.
    activations : one of ``"relu"`` / ``"identity"`` per hidden layer (default all ReLU).
    input_map : ``(A, c)``, the fixed map ``z = A x + c`` before layer 1 (default none).
    shift_scale : per layer ``(S_W, S_b)`` ≥ 0 (default None: every parameter moves by ±δ).

    Examples
    --------
    >>> net = ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 0.5]]), np.array([0.0, -0.25])),
    ...                    (np.array([[2.0, -1.0]]), np.array([0.1]))])
    >>> net, net.layer_sizes
    (ReLUNetwork(2-2-1), [2, 2, 1])
    >>> X = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> net.forward(X).round(3).tolist(), net.predict(X).tolist()   # one logit: class 1 iff > 0
    ([[1.45], [-0.15]], [1, 0])
    """

    def __init__(self, weights: Sequence[tuple[np.ndarray, np.ndarray]], *,
                 activations: Sequence[str] | None = None,
                 input_map: tuple[np.ndarray, np.ndarray] | None = None,
                 shift_scale: Sequence[tuple[np.ndarray, np.ndarray]] | None = None):
        layers = _check_layers(weights)
        self.layers: list[tuple[np.ndarray, np.ndarray]] = layers
        n_hidden = len(layers) - 1
        acts = (("relu",) * n_hidden if activations is None
                else tuple(str(a) for a in activations))
        if len(acts) != n_hidden:
            raise ValidationError(f"activations has {len(acts)} entries for {n_hidden} "
                                  "hidden layers")
        bad = [a for a in acts if a not in ACTIVATIONS]
        if bad:
            raise ValidationError(f"unsupported activations {bad}; supported: {ACTIVATIONS}")
        self.activations: tuple[str, ...] = acts
        self.input_map: tuple[np.ndarray, np.ndarray] | None = None
        if input_map is not None:
            (A, c), = _check_layers([input_map], "input_map")
            if A.shape[0] != layers[0][0].shape[1]:
                raise ValidationError(f"input_map gives {A.shape[0]} values but layer 0 takes "
                                      f"{layers[0][0].shape[1]}")
            self.input_map = (A, c)
        self.shift_scale: list[tuple[np.ndarray, np.ndarray]] | None = None
        if shift_scale is not None:
            if len(shift_scale) != len(layers):
                raise ValidationError(f"shift_scale has {len(shift_scale)} layers, the network "
                                      f"{len(layers)}")
            scales = []
            for i, ((SW, Sb), (W, b)) in enumerate(zip(shift_scale, layers, strict=True)):
                SW = np.array(SW, dtype=np.float64).reshape(W.shape)
                Sb = np.array(Sb, dtype=np.float64).reshape(b.shape)
                if not (np.isfinite(SW).all() and np.isfinite(Sb).all()
                        and (SW >= 0).all() and (Sb >= 0).all()):
                    raise ValidationError(f"shift_scale of layer {i} must be finite and >= 0")
                scales.append((SW, Sb))
            self.shift_scale = scales
        self.plain = (all(a == "relu" for a in acts) and self.input_map is None
                      and self.shift_scale is None)
        self.weights: list[tuple[np.ndarray, np.ndarray]] = (
            layers if self.plain else self._fold())

    def _fold(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The plain ReLU layers of the same function: the input map composed into layer 1,
        each identity activation composed into the layer after it."""
        out: list[tuple[np.ndarray, np.ndarray]] = []
        pending = self.input_map  # an affine map waiting for the next layer
        for i, (W, b) in enumerate(self.layers):
            if pending is not None:
                A, c = pending
                W, b = W @ A, W @ c + b
            if i < len(self.layers) - 1 and self.activations[i] == "identity":
                pending = (W, b)
            else:
                out.append((W, b))
                pending = None
        return out

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
        """[n_inputs, hidden..., n_outputs] of the function (``weights``)."""
        return [self.n_inputs] + [W.shape[0] for W, _ in self.weights]

    @property
    def parameter_sizes(self) -> list[int]:
        """[first layer's inputs, widths of ``layers``...]: the parameterised architecture."""
        return [self.layers[0][0].shape[1]] + [W.shape[0] for W, _ in self.layers]

    def check_inputs(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.n_inputs:
            raise ValidationError(
                f"inputs must have shape (n, {self.n_inputs}), got {np.shape(X)}"
            )
        return X

    def map_inputs(self, X: np.ndarray) -> np.ndarray:
        """The first layer's inputs of model-space rows ``X``: ``X`` itself, or ``A x + c``."""
        if self.input_map is None:
            return X
        A, c = self.input_map
        return X @ A.T + c

    def with_layers(self, layers: Sequence[tuple[np.ndarray, np.ndarray]]) -> ReLUNetwork:
        """A network of the same structure (activations, input map, shift scale) with other
        parameters ``layers`` (e.g. a realisation in Δ)."""
        if self.plain:
            return ReLUNetwork(layers)
        checked = _check_layers(layers)
        if [(W.shape, b.shape) for W, b in checked] != [(W.shape, b.shape) for W, b in self.layers]:
            raise ValidationError(f"layers must have the shapes of {self!r}'s layers")
        net = object.__new__(ReLUNetwork)  # the structure is already validated: share it
        net.layers, net.activations, net.input_map = checked, self.activations, self.input_map
        net.shift_scale, net.plain = self.shift_scale, False
        net.weights = net._fold()
        return net

    def same_structure(self, other: ReLUNetwork) -> bool:
        """Whether ``other`` has this network's parameter shapes, activations, input map and
        shift scale (so both lie in one parameter space)."""
        if self.parameter_sizes != other.parameter_sizes or self.activations != other.activations:
            return False
        if (self.input_map is None) != (other.input_map is None):
            return False
        if self.input_map is not None and not all(
                np.array_equal(a, b) for a, b in zip(self.input_map, other.input_map, strict=True)):
            return False
        if (self.shift_scale is None) != (other.shift_scale is None):
            return False
        return self.shift_scale is None or all(
            np.array_equal(a, b) for la, lb in zip(self.shift_scale, other.shift_scale, strict=True)
            for a, b in zip(la, lb, strict=True))

    def forward(self, X: np.ndarray, return_hidden: bool = False):
        """Logits of shape (n, n_outputs); with ``return_hidden`` also the post-ReLU
        activations of each hidden layer (of ``weights``)."""
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

    def margin(self, X: np.ndarray, target_class: int | np.ndarray) -> np.ndarray:
        """Per row, :func:`class_margin` of the logits (one target, or one per row)."""
        return class_margin(self.forward(X), target_class)

    def copy(self) -> ReLUNetwork:
        return self.with_layers([(W.copy(), b.copy()) for W, b in self.layers])

    def flat(self) -> np.ndarray:
        """All parameters (``layers``) as one vector (layer by layer, W then b)."""
        return np.concatenate([np.concatenate([W.ravel(), b]) for W, b in self.layers])

    def __repr__(self) -> str:
        if self.plain:
            return f"ReLUNetwork({'-'.join(map(str, self.layer_sizes))})"
        sizes = [str(self.layers[0][0].shape[1])]
        for i, (W, _) in enumerate(self.layers):
            sep = "" if i == 0 else ("~" if self.activations[i - 1] == "identity" else "-")
            sizes.append(f"{sep}{W.shape[0]}")
        head = f"{self.n_inputs}→" if self.input_map is not None else ""
        return f"ReLUNetwork({head}{sizes[0]}-{''.join(sizes[1:])})"


def as_network(model: Any) -> ReLUNetwork:
    """A :class:`ReLUNetwork` from a network or from any model with ``.network()``.

    Parameters
    ----------
    model : a :class:`ReLUNetwork` (returned as is) or a model with a ``network()`` view.

    Examples
    --------
    A logistic regression's network view: one linear layer over model space.

    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> model = rc.models.wrap(LogisticRegression().fit(enc.transform(data.frame), data.y), enc)
    >>> net = as_network(model)
    >>> net, bool((net.predict(enc.transform(data.frame)) == model.predict(data.frame)).all())
    (ReLUNetwork(2-1), True)

    Raises
    ------
    ValidationError
        ``model`` is neither.
    """
    if isinstance(model, ReLUNetwork):
        return model
    if hasattr(model, "network"):
        return model.network()
    raise ValidationError(f"expected a ReLUNetwork or a model with .network(), got {type(model).__name__}")


def resolve_targets(target_class: Any, n: int, *, network: ReLUNetwork | None = None,
                    X: np.ndarray | None = None) -> np.ndarray:
    """Per-row target classes (int64, length ``n``) from an int, an array with one class per
    row, or None — the class ``network`` predicts at each row of ``X``. With a ``network`` the
    classes are checked against its outputs."""
    n = int(n)
    if target_class is None:
        if network is None or X is None:
            raise ValidationError("target_class=None needs a network (its prediction is the target)")
        return network.predict(X).astype(np.int64)
    try:
        t = np.asarray(target_class, dtype=np.float64)
    except (TypeError, ValueError):
        t = np.full(1, np.nan)
    if isinstance(target_class, bool) or not (np.isfinite(t).all() and (t == np.round(t)).all()
                                              and np.abs(t).max(initial=0) < 2**31):
        raise ValidationError(f"target_class must be an integer class or one per row, got "
                              f"{target_class!r}")
    if t.ndim == 0:
        t = np.full(n, int(t), dtype=np.int64)
    else:
        t = t.astype(np.int64).reshape(-1)
        if t.shape[0] != n:
            raise ValidationError(f"target_class must be one int or one per row: "
                                  f"{t.shape[0]} entries for {n} rows")
    if network is not None:
        _check_targets(t, network.n_outputs)
    return t


def model_space_rows(net: ReLUNetwork, X: Any, model: Any = None, name: str = "X"
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``X`` as a float array of shape (n, ``net.n_inputs``) and a bool mask of unusable rows
    (NaN or infinite entries). A DataFrame (raw features) is encoded with ``model.encode``;
    an :class:`~robustce.explanations.Explanations` object gives its CEs (model space) and
    its ``counterfactuals`` frame is taken as it is (``query_id`` / ``cf_rank`` dropped).
    ``name``: the caller's parameter, for error messages."""
    if hasattr(X, "counterfactuals_encoded"):  # an Explanations object (duck-typed: layering)
        X = X.counterfactuals_encoded
    if isinstance(X, pd.DataFrame):
        X = X.drop(columns=[c for c in ("query_id", "cf_rank") if c in X.columns])
        if model is None or not hasattr(model, "encode"):
            raise ValidationError(f"{name}: a DataFrame of counterfactuals needs a model with an "
                                  "encoder")
        X = model.encode(X)
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"{name} (the counterfactuals) must be a numeric array or a "
                              f"DataFrame, got {type(X).__name__}") from None
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != net.n_inputs:
        raise ValidationError(f"{name} (the counterfactuals) must have shape (n, {net.n_inputs}), "
                              f"got {X.shape}")
    bad = ~np.isfinite(X).all(axis=1)
    return X, bad


def empirical_delta(model_a: Any, model_b: Any, biases: bool = True) -> float:
    """max ‖θ_a − θ_b‖_∞ over all parameters (``layers``; biases too when ``biases``): the
    smallest δ whose Δ holds both. With a ``shift_scale`` each difference is divided by its
    parameter's scale (a fixed parameter that differs needs δ = inf).

    Parameters
    ----------
    model_a, model_b : two networks of the same architecture (:class:`ReLUNetwork` or models
        with ``.network()``), e.g. a model and its retrained version.
    biases : include the biases (True) or compare weights only.

    Raises
    ------
    ValidationError
        The architectures differ.

    Examples
    --------
    >>> net = ReLUNetwork([(np.array([[1.0, -1.0]]), np.array([0.5]))])
    >>> retrained = net.with_layers([(np.array([[1.2, -0.9]]), np.array([0.8]))])
    >>> round(empirical_delta(net, retrained), 3), round(empirical_delta(net, retrained, False), 3)
    (0.3, 0.2)
    """
    check_bool(biases, "biases")
    a, b = as_network(model_a), as_network(model_b)
    if a.layer_sizes != b.layer_sizes or a.parameter_sizes != b.parameter_sizes:
        raise ValidationError(
            f"architectures differ: {a!r} vs {b!r}"
        )
    if not a.same_structure(b):
        raise ValidationError(
            "the networks differ in their input map, activations or shift scale (e.g. two "
            "pipelines with differently fitted scalers): no shift of the parameters joins them")
    scales = a.shift_scale or [(None, None)] * len(a.layers)
    diffs = []
    for (Wa, ba), (Wb, bb), (SW, Sb) in zip(a.layers, b.layers, scales, strict=True):
        diffs.append(_scaled_max(np.abs(Wa - Wb), SW))
        if biases:
            diffs.append(_scaled_max(np.abs(ba - bb), Sb))
    return float(max(diffs))


def _scaled_max(diff: np.ndarray, scale: np.ndarray | None) -> float:
    if scale is None:
        return float(diff.max())
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(scale > 0, diff / scale, np.where(diff > 0, np.inf, 0.0))
    return float(q.max())


class IntervalNetwork:
    """Interval abstraction (PROPLACE Def. 5): per layer (W⁻, W⁺, b⁻, b⁺).

    ``activations`` (one per hidden layer, default all ``"relu"``) and ``input_map`` (a fixed
    affine ``z = A x + c`` before layer 1) mirror :class:`ReLUNetwork`'s structure.

    Parameters
    ----------
    layers : per layer ``(W⁻, W⁺, b⁻, b⁺)``, the elementwise lower and upper bounds of its
        weights and biases.
    activations : one of ``"relu"`` / ``"identity"`` per hidden layer (default all ReLU).
    input_map : ``(A, c)``, the fixed map ``z = A x + c`` before layer 1 (default none).

    Examples
    --------
    Every weight and bias of a network within ± 0.05 (``ParameterShift(0.05).interval(net)``
    builds the same); ``bounds`` holds the logit of every network in that box:

    >>> net = ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 0.5]]), np.array([0.0, -0.25])),
    ...                    (np.array([[2.0, -1.0]]), np.array([0.1]))])
    >>> box = IntervalNetwork([(W - 0.05, W + 0.05, b - 0.05, b + 0.05) for W, b in net.layers])
    >>> lower, upper = box.bounds(np.array([[0.9, 0.1]]))
    >>> lower.round(3).tolist(), upper.round(3).tolist()      # the network's own logit: 1.45
    ([[1.047]], [[1.852]])
    """

    _CHUNK_ELEMENTS = 4_000_000

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                 activations: Sequence[str] | None = None,
                 input_map: tuple[np.ndarray, np.ndarray] | None = None):
        self.layers = layers
        self.activations: tuple[str, ...] = (
            ("relu",) * (len(layers) - 1) if activations is None else tuple(activations))
        self.input_map = input_map

    @classmethod
    def point(cls, network: Any) -> IntervalNetwork:
        """The degenerate interval network of a plain network's function (``W⁻ = W⁺ = W``,
        over its ``weights``)."""
        net = as_network(network)
        return cls([(W, W, b, b) for W, b in net.weights])

    @property
    def n_inputs(self) -> int:
        if self.input_map is not None:
            return self.input_map[0].shape[1]
        return self.layers[0][0].shape[1]

    def map_bounds(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the first layer's inputs over the model-space box [lo, hi] (exact for
        point inputs; the input map is fixed)."""
        if self.input_map is None:
            return lo, hi
        A, c = self.input_map
        if lo is hi or np.array_equal(lo, hi):
            z = lo @ A.T + c
            return z, z
        Ap, An = np.maximum(A, 0).T, np.minimum(A, 0).T
        return lo @ Ap + hi @ An + c, hi @ Ap + lo @ An + c

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
        if self.input_map is not None:
            point = hi is lo
            lo, hi = self.map_bounds(lo, hi)
            if point:
                hi = lo
        out = []
        last = len(self.layers) - 1
        for i, (Wl, Wu, bl, bu) in enumerate(self.layers):
            plo, phi = _interval_affine(lo, hi, Wl, Wu, self._CHUNK_ELEMENTS)
            plo, phi = plo + bl, phi + bu
            out.append((plo, phi))
            if i < last:
                if self.activations[i] == "relu":
                    lo, hi = np.maximum(plo, 0.0), np.maximum(phi, 0.0)
                else:
                    lo, hi = plo, phi
        return out

    def bounds(self, X: np.ndarray, X_upper: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Sound (lower, upper) logits for inputs X (or the boxes [X, X_upper])."""
        return self.layer_bounds(X, X_upper)[-1]

    def margin_lower_bound(self, X: np.ndarray, target_class: int | np.ndarray) -> np.ndarray:
        """A sound lower bound of the target-class margin over Δ (binary or multi-class);
        ``target_class`` is one class or one per row."""
        lo, hi = self.bounds(X)
        return margin_bounds(lo, hi, target_class)[0]


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
