"""APΔS's plain sampled test: n draws θ + δ(2r − 1) of a network's parameters per row, in
float64 batched array code (:func:`~robustce.robustness.apas_certify`'s test, and Algorithm 1's
on structured networks). The fast float32 tests of Algorithm 1 are in
:mod:`~robustce.robustness.apas_fast`; the public face is :mod:`~robustce.robustness.apas`.
"""

from __future__ import annotations

import numpy as np

from robustce.models.network import ReLUNetwork, class_margin

#: float64 elements one chunk of noise or activations may hold (about 16 MB)
_CHUNK_ELEMENTS = 1 << 21


Layers = list[tuple[np.ndarray, np.ndarray]]


def _draw_noise(weights: Layers, s: int, rng: np.random.Generator, biases: bool
                ) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """s draws r ∈ [0, 1) of every weight (and bias), in the order :meth:`ParameterShift.sample`
    draws them (W₁, b₁, W₂, …); the realisation is θ + δ(2r − 1)."""
    return [(rng.random((s,) + W.shape), rng.random((s,) + b.shape) if biases else None)
            for W, b in weights]


def _sampled_margins(weights: Layers, X: np.ndarray, t: np.ndarray, deltas: np.ndarray,
                     noise: list[tuple[np.ndarray, np.ndarray | None]]) -> np.ndarray:
    """Target margins of every row under θ + δ_row·(2r_s − 1) for every draw s: shape (s, N).

    Everything is batched per-draw GEMMs (small ones, which BLAS runs single-threaded: no
    thread oversubscription). Many rows at one δ: the draws' weights W − δ + 2δr_s are formed
    and applied. Otherwise the noise product is applied to the activations,
    z = hWᵀ + b + δ_row·(2(h r_sᵀ + r_b) − Σh − 1), which never touches the noise twice."""
    last = len(weights) - 1
    same = bool(np.all(deltas == deltas[0]))
    h = X[None]  # (1, N, in) broadcasts against the draws
    for i, ((W, b), (rW, rb)) in enumerate(zip(weights, noise, strict=True)):
        if same and len(X) > W.shape[1]:
            d = float(deltas[0])
            Ws = rW * (2.0 * d)
            Ws += W - d
            z = np.matmul(h, Ws.transpose(0, 2, 1))
            if rb is None:
                z += b
            else:
                bs = rb * (2.0 * d)
                bs += b - d
                z += bs[:, None, :]
        else:
            z = np.matmul(h, rW.transpose(0, 2, 1))
            if rb is not None:
                z += rb[:, None, :]
            z *= 2.0
            z -= h.sum(axis=-1, keepdims=True) + (0.0 if rb is None else 1.0)
            z *= deltas[None, :, None]
            z += h @ W.T
            z += b
        if i < last:
            np.maximum(z, 0.0, out=z)
        h = z
    return class_margin(h, t)


def _structured_margins(net: ReLUNetwork, Z: np.ndarray, t: np.ndarray, deltas: np.ndarray,
                        noise: list[tuple[np.ndarray, np.ndarray | None]]) -> np.ndarray:
    """:func:`_sampled_margins` of a structured network (identity layers, ``shift_scale``) on
    its first layer's inputs ``Z``: layer by layer z = hWᵀ + b + δ_row·(h Nᵀ + N_b) with the
    noise N = s·(2r − 1) of every draw (s the parameter's shift scale)."""
    last = len(net.layers) - 1
    scales = net.shift_scale
    h = Z[None]
    for i, ((W, b), (rW, rb)) in enumerate(zip(net.layers, noise, strict=True)):
        nW = 2.0 * rW - 1.0
        if scales is not None:
            nW *= scales[i][0]
        z = np.matmul(h, nW.transpose(0, 2, 1))
        if rb is not None:
            nb = 2.0 * rb - 1.0
            if scales is not None:
                nb *= scales[i][1]
            z += nb[:, None, :]
        z *= deltas[None, :, None]
        z += h @ W.T
        z += b
        if i < last and net.activations[i] == "relu":
            np.maximum(z, 0.0, out=z)
        h = z
    return class_margin(h, t)


def _sampled_test(net: ReLUNetwork, X: np.ndarray, t: np.ndarray, deltas: np.ndarray, n: int,
                  rng: np.random.Generator, biases: bool) -> tuple[np.ndarray, np.ndarray]:
    """n draws from each row's Δ_δ (θ + δ_row(2r − 1), r shared across rows, drawn as
    :meth:`ParameterShift.sample` draws them). Returns per row the smallest margin seen and
    the number of draws with margin ≤ 0. A structured network is drawn over its ``layers``
    (the input map applied first, each parameter within ±δ·scale)."""
    N = len(X)
    min_m = np.full(N, np.inf)
    flips = np.zeros(N, dtype=np.int64)
    if N == 0:
        return min_m, flips
    weights = net.layers  # the parameters Δ ranges over (== weights for a plain network)
    X = net.map_inputs(X)
    n_params = sum(W.size + (b.size if biases else 0) for W, b in weights)
    width = max(1, max(W.shape[0] for W, _ in weights))
    row_chunk = min(N, 4096)
    cap = max(1, _CHUNK_ELEMENTS // max(n_params, row_chunk * width))
    for done in range(0, n, cap):
        s = min(cap, n - done)
        noise = _draw_noise(weights, s, rng, biases)
        for a in range(0, N, row_chunk):
            r = np.arange(a, min(N, a + row_chunk))
            m = (_sampled_margins(weights, X[r], t[r], deltas[r], noise) if net.plain
                 else _structured_margins(net, X[r], t[r], deltas[r], noise))
            min_m[r] = np.minimum(min_m[r], m.min(axis=0))
            flips[r] += (~(m > 0)).sum(axis=0)
    return min_m, flips
