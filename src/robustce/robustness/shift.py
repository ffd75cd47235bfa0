"""Model-parameter shift sets Δ and their two views: samples and intervals.

``ParameterShift(delta)`` is the set of networks whose every weight and bias lies within
``[w - δ, w + δ]`` of the base network (the p = ∞ ball of PROPLACE Def. 4 / APΔS). The weights
and biases are the network's parameters, ``ReLUNetwork.layers``: for an imported model the
user's own layers behind a fixed input map, each entry within ±δ times its ``shift_scale``
(0 for fixed entries such as BatchNorm statistics). It offers

* ``sample(net, n)`` — n realisations drawn uniformly from the box, stored as batched arrays so
  ``forward(X)`` evaluates all of them on all inputs in one call: shape (n, len(X), n_outputs);
* ``interval(net)`` — the interval abstraction (PROPLACE Def. 5), a
  :class:`~robustce.models.network.IntervalNetwork`: ``bounds(X)`` gives sound output bounds for
  any inputs, negative values included, and ``layer_bounds(lo, hi)`` per-layer pre-activation
  bounds over an input box (the big-M source of every MILP encoding).

``IntervalNetwork``, ``as_network`` and ``empirical_delta`` live in
:mod:`robustce.models.network` and are re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.models.network import (
    IntervalNetwork,
    ReLUNetwork,
    as_network,
    class_margin,
    empirical_delta,
)
from robustce.utils import check_random_state
from robustce.validation import check_bool, check_integer, check_number

MAX_SAMPLED_PARAMS = 1 << 31  # parameters held by one sample() call (16 GiB of float64)

__all__ = ["MAX_SHIFT_DELTA", "IntervalNetwork", "ParameterShift", "SampledNetworks", "as_network",
           "empirical_delta"]


#: the largest δ a :class:`ParameterShift` takes (parameters of a trained network are far
#: smaller; the worst cases over a larger box overflow what the MILP solver represents)
MAX_SHIFT_DELTA = 1e3


@dataclass(frozen=True)
class ParameterShift:
    """Δ = {θ' : ‖θ' − θ‖_p ≤ δ}, p = ∞: every weight (and bias, if ``biases``) within ±δ.

    Parameters
    ----------
    delta : δ in (0, :data:`MAX_SHIFT_DELTA`], the radius of the box around the trained
        parameters θ. Larger boxes are refused: the worst-case outputs over them grow like δ to
        the power of the depth (δ = 10⁶ gives margins near 10²⁰ on a two-layer network), past
        what the exact MILP certificates' solver can represent.
    p : the norm; only ``math.inf`` (a box: each parameter independently) is supported.
    biases : whether biases move too (True) or only weights.

    Raises
    ------
    ValidationError
        δ not a finite number in (0, MAX_SHIFT_DELTA], ``biases`` not a bool, or p ≠ ∞.

    Examples
    --------
    >>> shift = ParameterShift(0.05)             # every weight and bias within ± 0.05
    >>> shift
    ParameterShift(delta=0.05, p=inf, biases=True)
    """

    delta: float
    p: float = math.inf
    biases: bool = True

    def __post_init__(self) -> None:
        check_number(self.delta, "delta", low=0, low_open=True)
        if float(self.delta) > MAX_SHIFT_DELTA:
            raise ValidationError(
                f"delta must be at most {MAX_SHIFT_DELTA:g}, got {self.delta!r}: a shift of every "
                "parameter by more than that makes the worst-case outputs over the box too large "
                "for the exact MILP certificates' solver")
        check_bool(self.biases, "biases")
        delta = float(self.delta)
        if self.p != math.inf:
            raise ValidationError(
                f"only p=inf (box) parameter shifts are supported, got p={self.p}"
            )
        object.__setattr__(self, "delta", delta)

    @classmethod
    def of(cls, shift: Any, name: str = "shift") -> ParameterShift:
        """``shift`` itself, the box shift of radius δ = ``shift``, or one from its
        :meth:`to_dict` mapping (e.g. saved metadata); errors name ``name``."""
        if isinstance(shift, cls):
            return shift
        if isinstance(shift, Mapping):
            unknown = set(shift) - {"delta", "p", "biases"}
            if unknown or "delta" not in shift or str(shift.get("p", "inf")) != "inf":
                raise ValidationError(f"{name} must be a ParameterShift, a number δ or "
                                      f"{{'delta': δ, 'biases': bool}}, got {shift!r}")
            return cls(float(check_number(shift["delta"], f"{name}.delta", low=0, low_open=True)),
                       biases=check_bool(shift.get("biases", True), f"{name}.biases"))
        return cls(float(check_number(shift, name, low=0, low_open=True)))

    @property
    def bias_delta(self) -> float:
        """The radius of the bias box: δ, or 0 when biases are fixed."""
        return self.delta if self.biases else 0.0

    def sample(self, network: Any, n: int,
               random_state: int | np.random.Generator | None = None) -> SampledNetworks:
        """n networks drawn uniformly from the box around ``network``'s parameters (its
        ``layers``; a parameter of ``shift_scale`` s moves within ±δ·s, the input map never)."""
        net = as_network(network)
        check_integer(n, "n", low=1)
        n_params = sum(W.size + b.size for W, b in net.layers)
        if n * n_params > MAX_SAMPLED_PARAMS:
            raise ValidationError(f"n={n} networks of {n_params} parameters would need "
                                  f"{8 * n * n_params / 2**30:.3g} GiB; sample in batches")
        rng = check_random_state(random_state)
        n = int(n)
        db = self.bias_delta
        scales = net.shift_scale
        layers = []
        for li, (W, b) in enumerate(net.layers):
            # in place, and bit-identical to W + rng.uniform(-δ, δ): uniform is -δ + 2δ·u
            Ws = rng.random((n,) + W.shape)
            Ws *= 2.0 * self.delta
            Ws += -self.delta
            if scales is not None:
                Ws *= scales[li][0]
            Ws += W
            if db:
                bs = rng.random((n,) + b.shape)
                bs *= 2.0 * db
                bs += -db
                if scales is not None:
                    bs *= scales[li][1]
                bs += b
            else:
                bs = np.broadcast_to(b, (n,) + b.shape).copy()
            layers.append((Ws, bs))
        return SampledNetworks(layers, base=None if net.plain else net)

    def interval(self, network: Any) -> IntervalNetwork:
        """The interval network of Δ around ``network``'s parameters (PROPLACE Def. 5), with
        its activations and fixed input map (a plain network: every parameter ±δ)."""
        net = as_network(network)
        db = self.bias_delta
        scales = net.shift_scale or [(1.0, 1.0)] * len(net.layers)
        layers = []
        for (W, b), (SW, Sb) in zip(net.layers, scales, strict=True):
            rW, rb = self.delta * np.asarray(SW), db * np.asarray(Sb)
            layers.append((W - rW, W + rW, b - rb, b + rb))
        return IntervalNetwork(layers, net.activations, net.input_map)

    def contains(self, base: Any, other: Any, atol: float = 1e-12) -> bool:
        """Whether network ``other`` lies in Δ around ``base`` (same structure, every
        parameter within its radius)."""
        check_number(atol, "atol", low=0)
        a, b = as_network(base), as_network(other)
        if a.layer_sizes != b.layer_sizes or not a.same_structure(b):
            return False
        scales = a.shift_scale or [(1.0, 1.0)] * len(a.layers)
        for (Wa, ba), (Wb, bb), (SW, Sb) in zip(a.layers, b.layers, scales, strict=True):
            if np.any(np.abs(Wa - Wb) > self.delta * np.asarray(SW) + atol):
                return False
            if np.any(np.abs(ba - bb) > self.bias_delta * np.asarray(Sb) + atol):
                return False
        return True

    def to_dict(self) -> dict[str, Any]:
        return {"delta": self.delta, "p": "inf", "biases": self.biases}


class SampledNetworks:
    """n networks of one architecture as batched arrays: W of shape (n, out, in).

    Parameters
    ----------
    weights : per layer ``(W, b)`` with ``W`` of shape ``(n, out, in)`` and ``b`` of shape
        ``(n, out)``, one slice per sampled network.
    base : the structured network the samples share activations and input map with (None
        for plain ReLU networks).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> samples = rc.robustness.ParameterShift(0.05).sample(net, 1000, random_state=0)
    >>> len(samples), samples.forward(X).shape  # (networks, rows, logits)
    (1000, (1000, 2, 1))
    >>> (samples.margin(X, 1) > 0).mean(axis=0)  # share of the draws keeping class 1
    array([1.   , 0.969])
    >>> samples.network(0)
    ReLUNetwork(2-2-1)
    """

    _CHUNK_ELEMENTS = 1 << 19

    def __init__(self, weights: list[tuple[np.ndarray, np.ndarray]],
                 base: ReLUNetwork | None = None):
        self.weights = weights
        self.base = base

    def __len__(self) -> int:
        return self.weights[0][0].shape[0]

    def forward(self, X: np.ndarray) -> np.ndarray:
        """Logits of every sample on every input: shape (n_samples, len(X), n_outputs)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        acts: tuple[str, ...] | None = None
        if self.base is not None:
            X = self.base.map_inputs(self.base.check_inputs(X))
            acts = self.base.activations
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
                if i < last and (acts is None or acts[i] == "relu"):
                    np.maximum(h, 0.0, out=h)
            out[sl] = h
        return out

    def margin(self, X: np.ndarray, target_class: int | np.ndarray) -> np.ndarray:
        """Target-class margin of every sample on every input, shape (n_samples, len(X))."""
        return class_margin(self.forward(X), target_class)

    def network(self, i: int) -> ReLUNetwork:
        layers = [(W[i], b[i]) for W, b in self.weights]
        return ReLUNetwork(layers) if self.base is None else self.base.with_layers(layers)
