"""A cheap falsifier of Δ-robustness: sign-gradient steps on the weights.

Every step moves each weight and bias to a vertex of the box Δ = {θ' : |θ' − θ| ≤ δ}, chosen
by the sign of the target margin's gradient with respect to it, batched over counterfactuals.
The networks it returns lie in Δ, so a flip they produce is a proof of non-robustness (a
witness); finding no flip proves nothing. The exact test (:mod:`robustce.robustness.exact`)
runs it before any MILP.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.models.network import ReLUNetwork, as_network, class_margin, resolve_targets
from robustce.robustness.shift import ParameterShift

__all__ = ["flips_prediction", "sign_attack"]


def flips_prediction(net: ReLUNetwork, x: np.ndarray, t: int) -> tuple[bool, float]:
    """Whether ``net`` does not predict ``t`` at ``x`` (predict semantics), and its margin."""
    z = net.forward(x[None, :])
    m = float(class_margin(z, int(t))[0])
    pred = int(net.predict(x[None, :])[0])
    return pred != int(t), m


def sign_attack(network: Any, X: np.ndarray, shift: ParameterShift | np.ndarray, target_class: Any,
                steps: int = 4, chunk_elements: int = 4_000_000, biases: bool = True
                ) -> tuple[np.ndarray, list[list[tuple[np.ndarray, np.ndarray]]]]:
    """A cheap falsifier: iterated sign-gradient steps on the weights (each a vertex of Δ),
    batched over rows. Returns the best (lowest) margin per row and, per row, its weights.
    ``shift``: a :class:`ParameterShift`, or per-row radii δ (then ``biases`` says whether
    biases move too).

    Not a proof of anything; it only supplies concrete networks in Δ that often flip
    non-robust counterfactuals without a MILP. On a structured network (input map, identity
    layers, ``shift_scale``) the steps move its ``layers`` (each within ±δ·scale) on the
    mapped inputs; the weights returned are ``layers`` (``network.with_layers`` makes them a
    network).
    """
    net = as_network(network)
    X = net.check_inputs(X)
    t = resolve_targets(target_class, len(X), network=net, X=X)
    X = net.map_inputs(X)
    relu = [a == "relu" for a in net.activations]
    scales = net.shift_scale
    n = len(X)
    if isinstance(shift, ParameterShift):
        deltas = np.full(n, shift.delta)
        biases = shift.biases
    else:
        deltas = np.broadcast_to(np.asarray(shift, dtype=np.float64), (n,)).copy()
    n_params = sum(W.size + b.size for W, b in net.layers)
    step = max(1, int(chunk_elements // max(n_params, 1)))
    best = np.full(n, np.inf)
    best_w: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(n)]
    base = net.layers
    L = len(base)
    for s0 in range(0, n, step):
        xs, ts = X[s0:s0 + step], t[s0:s0 + step]
        m = len(xs)
        dW = deltas[s0:s0 + step][:, None, None]
        dB = dW[:, :, 0] if biases else 0.0
        Ws = [np.broadcast_to(W, (m,) + W.shape).copy() for W, _ in base]
        bs = [np.broadcast_to(b, (m,) + b.shape).copy() for _, b in base]
        cbest = np.full(m, np.inf)
        cw: list[Any] = [None] * m
        for it in range(steps + 1):
            hs = [xs]
            pre = []
            h = xs
            for li in range(L):
                z = np.einsum("noi,ni->no", Ws[li], h) + bs[li]
                pre.append(z)
                h = np.maximum(z, 0.0) if li < L - 1 and relu[li] else z
                if li < L - 1:
                    hs.append(h)
            marg = class_margin(h, ts)
            better = marg < cbest
            if better.any():
                cbest[better] = marg[better]
                for r in np.flatnonzero(better):
                    cw[r] = [(Ws[li][r].copy(), bs[li][r].copy()) for li in range(L)]
            if it == steps:
                break
            # gradient of the margin w.r.t. the output logits
            if h.shape[1] == 1:
                g = np.where(ts == 1, 1.0, -1.0)[:, None]
            else:
                other = h.copy()
                other[np.arange(m), ts] = -np.inf
                jstar = other.argmax(axis=1)
                g = np.zeros_like(h)
                g[np.arange(m), ts] = 1.0
                g[np.arange(m), jstar] -= 1.0
            new_W, new_b = [None] * L, [None] * L
            for li in range(L - 1, -1, -1):
                gW = g[:, :, None] * hs[li][:, None, :]
                if scales is None:
                    new_W[li] = base[li][0][None] - dW * np.sign(gW)
                    new_b[li] = base[li][1][None] - dB * np.sign(g)
                else:
                    new_W[li] = base[li][0][None] - dW * scales[li][0][None] * np.sign(gW)
                    new_b[li] = base[li][1][None] - dB * scales[li][1][None] * np.sign(g)
                if li > 0:
                    g = np.einsum("noi,no->ni", Ws[li], g)
                    if relu[li - 1]:
                        g = g * (pre[li - 1] > 0)
            if all(np.array_equal(a, b) for a, b in zip(new_W + new_b, Ws + bs, strict=True)):
                break  # a fixed point: every later step repeats this one (nothing better)
            Ws, bs = new_W, new_b
        best[s0:s0 + m] = cbest
        for r in range(m):
            best_w[s0 + r] = cw[r]
    return best, best_w
