"""APΔS: probabilistic Δ-robustness by sampling (Marzari et al., ECAI 2024).

Lemma 4 (tolerance limits). Draw n networks θ₁..θₙ i.i.d. uniformly from the box
Δ_δ = {θ' : |θ' − θ| ≤ δ elementwise}. If the counterfactual ``x`` keeps its target class on
all n, then with confidence α = 1 − Rⁿ at least a fraction R of Δ_δ keeps it: a CE whose true
robust fraction p is below R passes all n draws with probability pⁿ < Rⁿ = 1 − α. Hence

    n = ⌈ln(1 − α) / ln R⌉                                               (apas_sample_size)

(1379 for α = 0.999, R = 0.995; the paper's 1378 rounds down and gives 1 − 0.995¹³⁷⁸ ≈ 0.998999,
slightly less than the stated α).

* :func:`apas_certify` — the probabilistic Δ-test at one δ for many CEs: all CEs × all n draws in
  batched array code; per CE whether every draw kept the class, the smallest sampled margin and
  the number of draws that flipped it.
* :func:`apas_max_delta` — Algorithm 1: per CE, double δ from δ_init until some draw flips the
  CE, then bisect to δ_init resolution; every tested δ gets n *fresh* draws.

Realisations are drawn as θ + δ·U with U uniform in [−1, 1] per weight (and bias), one U per
sample shared by all CEs tested in the same step (each CE still sees n i.i.d. draws from its own
Δ_δ, which is all Lemma 4 asks). A δ at which interval propagation already proves every network
in Δ_δ keeps the class needs no draws: all n would pass with certainty, so skipping them leaves
the algorithm's output distribution unchanged. A test stops drawing for a CE at its first flip.

Margins follow :func:`robustce.models.network.class_margin` (> 0 iff the target class is
predicted); a draw with margin ≤ 0 counts as a flip (a tie is not a keep).
"""

from __future__ import annotations

import bisect
import math
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.models.network import (
    ReLUNetwork,
    as_network,
    class_margin,
    margin_bounds,
    margin_terms,
    model_space_rows,
    resolve_targets,
)
from robustce.robustness.certifier import Certificates, Certifier, CertStatus
from robustce.robustness.exact import point_layer_bounds
from robustce.robustness.shift import ParameterShift
from robustce.utils import check_random_state
from robustce.validation import check_bool, check_integer, check_number

__all__ = ["APASCertifier", "APASMaxDeltaResult", "APASResult", "apas_certify", "apas_max_delta",
           "apas_sample_size"]

#: float64 elements one chunk of noise or activations may hold (about 16 MB)
_CHUNK_ELEMENTS = 1 << 21


def _unit_interval(value: Any, name: str) -> float:
    return float(check_number(value, name, low=0.0, high=1.0, low_open=True, high_open=True))


def apas_sample_size(alpha: float, R: float) -> int:
    """Number of draws n = ⌈ln(1 − α) / ln R⌉ for confidence α that a fraction ≥ R of Δ keeps
    the CE (Lemma 4): the smallest n with Rⁿ ≤ 1 − α.

    For α = 0.999, R = 0.995 this is 1379. The paper's 1378 is ``log_R(1 − α) = 1378.1`` rounded
    down, which gives confidence 1 − 0.995¹³⁷⁸ ≈ 0.998999 < α: one draw short.

    Parameters
    ----------
    alpha : confidence α in (0, 1).
    R : the fraction of Δ that must keep the CE's class, in (0, 1).

    Returns
    -------
    int
        n, the number of draws.

    Examples
    --------
    >>> apas_sample_size(0.999, 0.995)
    1379
    """
    a = _unit_interval(alpha, "alpha")
    r = _unit_interval(R, "R")
    log_fail, log_r = math.log1p(-a), math.log(r)
    n = max(1, math.ceil(log_fail / log_r))
    # guard the ceiling against rounding in the ratio: the defining inequality is n ln R ≤ ln(1−α)
    while n > 1 and (n - 1) * log_r <= log_fail:
        n -= 1
    while n * log_r > log_fail:
        n += 1
    return n


def _check_delta(delta: Any, name: str = "delta") -> float:
    return float(check_number(delta, name, low=0.0, low_open=True))


#: most draws one tested δ may take (about 10 minutes of one CE's draws on a 20-10 network)
MAX_DRAWS = 10**8


def _resolve_n(alpha: Any, R: Any, n: Any) -> tuple[int, float, float]:
    """(n, α, R): n from Lemma 4, or a given n with the confidence α = 1 − Rⁿ it buys; at most
    :data:`MAX_DRAWS`."""
    r = _unit_interval(R, "R")
    if n is None:
        a = _unit_interval(alpha, "alpha")
        need = apas_sample_size(a, r)
        if need > MAX_DRAWS:
            raise ValidationError(f"alpha = {a!r} and R = {r!r} need n = {need} draws per tested "
                                  f"delta, above the cap of {MAX_DRAWS:.0e}; lower alpha or R")
        return need, a, r
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
        raise ValidationError(f"n must be a positive integer or None, got {n!r}")
    if int(n) > MAX_DRAWS:
        raise ValidationError(f"n = {int(n)} draws per tested delta is above the cap of "
                              f"{MAX_DRAWS:.0e}")
    return int(n), -math.expm1(int(n) * math.log(r)), r


# --- the sampling engine -------------------------------------------------------------------------


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


# --- Algorithm 1's test: float32 draws, the output layer drawn only where it matters -----------

#: float32 rounding error bound factor (2⁻²⁰ = 16 × float32's unit roundoff) per summed term
_F32_TOL = 2.0 ** -20


#: random bits drawn up front per coordinate of a draw (8 or 16; the other 23 − b come later, and
#: only for draws the coarse bits leave undecided)
_COARSE_BITS = 16


class _FreshNoise:
    """Source of the unit draws of Algorithm 1's tests, fresh on every call from an SFC64 bit
    generator seeded by the caller's generator (its raw output is ≈ 30 % faster than PCG64's,
    and raw bits are the floor of this test).

    Every coordinate's unit draw is v = 1 + k·2⁻²³, k uniform on {0, …, 2²³ − 1} (r = v − 1
    uniform on the 2⁻²³ grid of [0, 1); the realisation θ + δ(2r − 1) = θ + δ(2v − 3)), drawn
    in two independent parts: its top b = :data:`_COARSE_BITS` bits u first, for every draw,
    and its other 23 − b bits only for the draws whose outcome the top bits leave undecided
    (``refine``). ``layers(first, draws, shapes, bias)`` returns, for the given draws of the
    current test and each (out_idx, in_idx) in ``shapes`` — the kept coordinates of layer
    ``first + k`` — u as float32 for the weights ``W[out_idx][:, in_idx]``, shape
    (len(draws), len(out_idx), len(in_idx)), and for the biases ``b[out_idx]`` (None without
    ``bias``); this source adds a third entry, both in one array: (in + n_b, m, out) for layer
    1 (a row's layer 1 is then one GEMV), (m, out, in + n_b) after it (the bias last: one
    per-draw product with [h, 1]). ``affine`` = (a, s): the centre of u's cell of v is a + s·u, and
    ``coarse_eps`` bounds |v − (a + s·u)|. ``refine(first, draws, shapes, bias, u)`` returns the
    full v (float64) of those coordinates, drawing their low bits. ``start_test()`` marks a new
    tested δ. Tests substitute a source that reads a fixed table, to compare the fast test draw
    by draw with a plain float64 forward of the same realisations (a source without
    ``affine`` returns v itself: a = 0, s = 1, exact)."""

    def __init__(self, rng: np.random.Generator):
        self.bitgen = np.random.SFC64(rng.integers(2**63))
        b = _COARSE_BITS
        if b not in (8, 16):
            raise ValueError(f"_COARSE_BITS must be 8 or 16, got {b}")
        self.bits, self._dtype = b, np.uint8 if b == 8 else np.uint16
        self.affine = (1.0 + 2.0 ** -(b + 1), 2.0 ** -b)
        self.coarse_eps = 2.0 ** -(b + 1)

    def start_test(self) -> None:
        pass

    def layers(self, first: int, draws: np.ndarray, shapes: list[tuple[np.ndarray, np.ndarray]],
               bias: bool) -> list[tuple[np.ndarray, np.ndarray | None]]:
        m, nb = len(draws), int(bias)
        size = m * sum(len(o) * (len(i) + nb) for o, i in shapes)
        per = 64 // self.bits  # top bits from one raw 64-bit output
        v = self.bitgen.random_raw(-(-size // per)).view(self._dtype)[:size].astype(np.float32)
        out, a = [], 0
        for k, (o, i) in enumerate(shapes):
            no, ni = len(o), len(i)
            size = m * no * (ni + nb)
            if first + k == 0:  # (in + n_b, m, out): one row's layer 1 is x @ v (a GEMV 'n')
                aug = v[a:a + size].reshape(ni + nb, m, no)
                vW, vb = aug[:ni].transpose(1, 2, 0), aug[ni] if bias else None
            else:  # (m, out, in + n_b)
                aug = v[a:a + size].reshape(m, no, ni + nb)
                vW, vb = aug[:, :, :ni], aug[:, :, ni] if bias else None
            out.append((vW, vb, aug))
            a += size
        return out

    def refine(self, first: int, draws: np.ndarray, shapes: list[tuple[np.ndarray, np.ndarray]],
               bias: bool, u: list[tuple[np.ndarray, np.ndarray | None]]
               ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        low = 23 - self.bits

        def full(a: np.ndarray) -> np.ndarray:
            k = self.bitgen.random_raw(a.size).reshape(a.shape) >> np.uint64(64 - low)
            return 1.0 + (a.astype(np.float64) * 2.0 ** low + k) * 2.0 ** -23

        return [(full(e[0]), None if e[1] is None else full(e[1])) for e in u]


def _affine(noise: Any) -> tuple[float, float]:
    """(a, s): the unit draws ``noise.layers`` returns are u with v ≈ a + s·u."""
    return getattr(noise, "affine", (0.0, 1.0))


def _full_draws(noise: Any, first: int, draws: np.ndarray,
                shapes: list[tuple[np.ndarray, np.ndarray]], bias: bool,
                u: list[tuple[np.ndarray, np.ndarray | None]]
                ) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The exact unit draws v of coordinates given as ``noise.layers`` returned them (u)."""
    refine = getattr(noise, "refine", None)
    if refine is not None:
        return refine(first, draws, shapes, bias, u)
    a, s = _affine(noise)
    if (a, s) == (0.0, 1.0):
        return u
    return [(a + s * uW.astype(np.float64), None if ub is None else a + s * ub.astype(np.float64))
            for uW, ub in u]


def _column_sums(h: np.ndarray) -> np.ndarray:
    """Σ over axis 1 of float32 h (m, in, N), as (m, 1, N): a matmul with ones, ≈ 5× faster
    than ``h.sum(axis=1)`` on these short axes."""
    return np.matmul(np.ones((1, h.shape[1]), dtype=h.dtype), h)


def _noisy(h: np.ndarray, c: np.ndarray, vW: np.ndarray, vb: np.ndarray | None, d: np.ndarray,
           nb: int, affine: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """Pre-activations (m, out, N) of the realisations W + δ(2v_W − 3), b + δ(2v_b − 3) at inputs
    h (m, in, N) given c = W h + b: c + δ(2(v_W h + v_b) − 3(Σh + 1)); δ per row N. The unit
    draws come as u with v = a + s·u (``affine``): c + δ(2s(u_W h + u_b) + (2a − 3)(Σh + 1))."""
    m, o, i = vW.shape
    if h.shape[0] == 1 and h.shape[2] == 1:  # one row, layer 1: one GEMV over all draws
        vt = vW.transpose(2, 0, 1)
        z = (h[0, :, 0] @ (vt.reshape(i, m * o) if vt.flags.c_contiguous
                           else vW.reshape(m * o, i).T)).reshape(m, o, 1)
    else:  # per-draw GEMMs, small enough that BLAS runs them on one thread
        z = np.matmul(vW, h)
    if vb is not None:
        z += vb[:, :, None]
    a, s = affine
    z *= np.float32(2.0 * s)
    z += np.float32(2.0 * a - 3.0) * (_column_sums(h) + np.float32(nb))
    z *= d
    z += c
    return z


def _margin_range(lo: np.ndarray, hi: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) target margins over logit boxes [lo, hi] of shape (m, K, N), K > 1."""
    m, k, n = lo.shape
    a, b = (np.moveaxis(v, 1, 2).reshape(m * n, k) for v in (lo, hi))
    m_lo, m_hi = margin_bounds(a, b, np.tile(t, m))
    return m_lo.reshape(m, n), m_hi.reshape(m, n)


def _margins(z: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Target margins of logits (m, K, N), K > 1: (m, N)."""
    return class_margin(np.moveaxis(z, 1, 2), t)


def _exact_margins(weights: Layers, x: np.ndarray, d: np.ndarray, t: np.ndarray,
                   v: list[tuple[np.ndarray, np.ndarray | None]]) -> np.ndarray:
    """float64 margins of single realisations, one per pair: rows x (p, in), δ (p,), targets,
    unit draws v per layer ((p, out, in) and (p, out) or None)."""
    h = x
    last = len(weights) - 1
    for i, ((W, b), (vW, vb)) in enumerate(zip(weights, v, strict=True)):
        Wp = W[None] + d[:, None, None] * (2.0 * vW.astype(np.float64) - 3.0)
        z = np.einsum("poi,pi->po", Wp, h) + b
        if vb is not None:
            z += d[:, None] * (2.0 * vb.astype(np.float64) - 3.0)
        h = np.maximum(z, 0.0) if i < last else z
    return class_margin(h, t)


class _Plan:
    """What Algorithm 1's sampled tests need of one network, computed once per call: float32
    weights, |W| and the rounding band's term count."""

    def __init__(self, net: ReLUNetwork, biases: bool):
        self.net, self.nb = net, int(biases)
        self.W32 = [(W.astype(np.float32), b.astype(np.float32)) for W, b in net.weights]
        self.absW = [(np.abs(W).T, np.abs(b)) for W, b in net.weights]
        self.n_terms = sum(W.shape[1] + 8 for W, _ in net.weights)
        self._restricted: dict[bytes, tuple[Any, ...]] = {}
        self._one_row: dict[bytes, tuple[Any, ...]] = {}

    def restricted(self, masks: list[np.ndarray]) -> tuple[Any, ...]:
        """For kept-coordinate masks per layer input (and all outputs): the (out_idx, in_idx)
        shapes, the float32 and float64 weights restricted to them. Cached per pattern: a CE's
        tests at nearby δ mostly keep the same neurons."""
        key = b"".join(m.tobytes() for m in masks)
        hit = self._restricted.get(key)
        if hit is None:
            keep = [np.flatnonzero(m) for m in masks] + [np.arange(self.net.n_outputs)]
            shapes = [(keep[i + 1], keep[i]) for i in range(len(masks))]
            W64 = [(W[o][:, i], b[o]) for (W, b), (o, i) in zip(self.net.weights, shapes, strict=True)]
            W32 = [(W.astype(np.float32), b.astype(np.float32)) for W, b in W64]
            hit = self._restricted[key] = (shapes, W32, W64)
        return hit

    def one_row(self, masks: list[np.ndarray], x: np.ndarray, t: int) -> tuple[Any, ...]:
        """What :func:`_one_row_test` needs of one row ``x`` (target ``t``) under kept-coordinate
        masks, apart from δ; cached per pattern (one plan serves one row there): the shapes,
        the float64 weights restricted to them, x's kept entries (as they are, float32, and
        [x, 1] or x), Σx, W₁x + b₁, per later hidden layer [Wᵀ; b] and the column
        [1, …, 1, n_b] (the constant part is [Wᵀ; b] − shift·that column), the output layer's
        float32 matrix (one GEMM of [h, 1] gives the logits — signed for a binary network —
        and Σh), and the draws per chunk."""
        key = b"".join(m.tobytes() for m in masks)
        hit = self._one_row.get(key)
        if hit is None:
            shapes, _, W64 = self.restricted(masks)
            nb, last = self.nb, len(W64) - 1
            xk = x[shapes[0][1]]
            W, b = W64[0]
            W1x = W @ xk + b
            hidden = [(np.vstack([W.T, b]), np.append(np.ones(W.shape[1]), float(nb))[:, None])
                      for W, b in W64[1:last]]
            out = None
            if last:
                W, b = W64[last]
                Wo = np.vstack([W.T, b]) * ((1.0 if t == 1 else -1.0) if W.shape[0] == 1 else 1.0)
                out = np.hstack([Wo, np.append(np.ones(W.shape[1]), 0.0)[:, None]]
                                ).astype(np.float32)
            n_params = sum(len(o) * (len(i) + nb) for o, i in shapes)
            cap = max(1, _CHUNK_ELEMENTS // max(n_params, max(len(o) for o, _ in shapes)))
            hit = self._one_row[key] = (shapes, W64, xk, xk.astype(np.float32),
                                        np.append(xk, 1.0) if nb else xk, float(xk.sum()),
                                        W1x, hidden, out, cap)
        return hit

    def tolerance(self, X: np.ndarray, deltas: np.ndarray, coarse_eps: float = 0.0
                  ) -> np.ndarray:
        """Per row a bound on the float32 rounding error of any margin the test computes:
        2⁻²⁰ · Σ(in + 8) · 2M, M bounding every |term| of every pre-activation over Δ_δ.

        With ``coarse_eps`` > 0 (unit draws v known only to ± coarse_eps, so every weight and
        bias of a realisation only to ± ε = 2δ·coarse_eps), plus a bound E on how far the
        margin of any realisation in Δ_δ moves when every parameter moves by ≤ ε within Δ_δ:
        per layer |Δz| ≤ (|W| + δ)|Δh| + ε(Σ|h| + n_b) with |h| ≤ M and |Δh| ≤ |Δz| (ReLU is
        1-Lipschitz); E = max |Δz| at the output (twice that for a multi-class margin)."""
        M = np.abs(X)
        dc = deltas[:, None]
        D = np.zeros_like(M) if coarse_eps else None
        for aW, ab in self.absW:
            Ms = M.sum(axis=1, keepdims=True) + self.nb
            if D is not None:
                D = D @ aW + dc * D.sum(axis=1, keepdims=True) + (2.0 * coarse_eps) * dc * Ms
            M = M @ aW + dc * Ms + ab
        tol = (_F32_TOL * 2.0 * self.n_terms) * M.max(axis=1)
        if D is not None:
            tol += D.max(axis=1) * ((1.0 if self.net.n_outputs == 1 else 2.0) * (1.0 + 2.0 ** -20))
        return tol


def _lazy_test(plan: _Plan, X: np.ndarray, t: np.ndarray, deltas: np.ndarray, n: int,
               noise: _FreshNoise, bounds: list[tuple[np.ndarray, np.ndarray]]
               ) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1's test at δ_row for each row: n draws θ + δ_row(2r − 1), stopping at a row's
    first flip. Returns (draws evaluated, passed) per row.

    * The hidden layers' noise is drawn for every draw, the output layer's only where it can
      change the outcome: given a draw's last hidden activations h ≥ 0, its logits over all
      values of the output layer's noise fill exactly the box c ± δ(Σh + 1) (independently per
      logit), so the margin's range over that noise is known in closed form; when it is > 0
      throughout (or ≤ 0 throughout) every completion gives the same outcome, and not drawing
      it leaves the distribution of the outcome — and of the test — unchanged.
    * Draws are float32 and forwarded in float32, first with the top bits of every unit draw
      only (the centre of their cell, :class:`_FreshNoise`); a draw whose float32 margin (or
      margin range) lies within a band of 0 that bounds the rounding error and the effect of
      the bits not yet drawn (:meth:`_Plan.tolerance`) gets its low bits and is re-evaluated
      in float64, so every outcome is the float64 one of the full draw.
    * Hidden-layer draws are shared by all rows. Coordinates no draw can see get no draws:
      input columns that are 0 in every row, and hidden neurons whose interval upper bound over
      Δ_δ (``bounds``) is ≤ 0 in every row — inactive for every network in Δ_δ, so their
      incoming and outgoing weights never matter."""
    N = len(X)
    evaluated = np.zeros(N, dtype=np.int64)
    flips = np.zeros(N, dtype=bool)
    if N == 0:
        return evaluated, ~flips
    net, nb, f32 = plan.net, plan.nb, np.float32
    biases = bool(nb)
    last = len(net.weights) - 1
    if N == 1:  # one row: no reductions over rows
        masks = [X[0] != 0.0] + [hi[0] > -1e-12 for _, hi in bounds[:-1]]
    else:
        masks = [np.any(X != 0.0, axis=0)] + [np.any(hi > -1e-12, axis=0) for _, hi in bounds[:-1]]
    shapes, W32, W64 = plan.restricted(masks)
    tol_all = plan.tolerance(X, deltas, getattr(noise, "coarse_eps", 0.0))
    af = _affine(noise)
    X = X[:, shapes[0][1]]
    W0, b0 = W64[0]
    c0_all = (X @ W0.T + b0).T.astype(f32)  # (o1, N)
    X32 = X.T.astype(f32)                                                       # (in, N)
    binary = net.n_outputs == 1
    sign_all = np.where(t == 1, f32(1.0), f32(-1.0))
    n_params = sum(len(o) * (len(i) + nb) for o, i in shapes)
    width = max(len(o) for o, _ in shapes)
    row_chunk = min(N, 4096)
    cap = max(1, _CHUNK_ELEMENTS // max(n_params, row_chunk * width))
    step = min(cap, 256)
    open_ = np.ones(N, dtype=bool)
    done = 0
    while done < n and open_.any():
        s = min(step, n - done)
        draws = np.arange(done, done + s)
        v = noise.layers(0, draws, shapes[:last], biases) if last else []
        rows = np.flatnonzero(open_)
        for a in range(0, len(rows), row_chunk):
            rr = rows[a:a + row_chunk]
            d, tr, tol = deltas[rr].astype(f32), t[rr], tol_all[rr]
            h, c = X32[None, :, rr], c0_all[None, :, rr]
            for i in range(last):  # hidden layers: every draw
                h = np.maximum(_noisy(h, c, v[i][0], v[i][1], d, nb, af), f32(0.0))
                W, b = W32[i + 1]
                c = np.matmul(W, h) if h.shape[2] > 1 else (h[:, :, 0] @ W.T)[:, :, None]
                c += b[:, None]
            flipped = np.zeros(len(rr), dtype=bool)
            if last == 0:
                go, pend = np.arange(s), np.ones((s, len(rr)), dtype=bool)
            else:  # output layer: only draws whose margin range over its noise straddles 0
                rad = d * (_column_sums(h)[:, 0] + f32(nb)) + tol                        # (s, Nr)
                if binary:
                    a_ = sign_all[rr] * c[:, 0]
                    flipped |= (~(a_ >= -rad)).any(axis=0)
                    pend = np.abs(a_) <= rad
                else:
                    m_lo, m_hi = _margin_range(c - rad[:, None], c + rad[:, None], tr)
                    flipped |= (~(m_hi >= 0)).any(axis=0)
                    pend = (m_lo <= 0) & (m_hi >= 0)
                go = np.flatnonzero(pend.any(axis=1))
                if go.size < s:
                    h, c, pend = h[go], c[go], pend[go]
            if go.size:
                vl = noise.layers(last, draws[go], shapes[last:], biases)[0]
                z = _noisy(h, c, vl[0], vl[1], d, nb, af)
                m = sign_all[rr] * z[:, 0] if binary else _margins(z, tr)
                flipped |= (pend & ~(m >= -tol)).any(axis=0)
                unsure = pend & (np.abs(m) <= tol)
                if unsure.any():  # within the rounding band: decide in float64
                    gi, ri = np.nonzero(unsure)
                    g = go[gi]
                    vv = _full_draws(noise, 0, draws[g], shapes[:last], biases,
                                     [(vW[g], None if vb is None else vb[g])
                                      for vW, vb, *_ in v])
                    vv += _full_draws(noise, last, draws[g], shapes[last:], biases,
                                      [(vl[0][gi], None if vl[1] is None else vl[1][gi])])
                    m64 = _exact_margins(W64, X[rr[ri]], deltas[rr[ri]], tr[ri], vv)
                    np.logical_or.at(flipped, ri, ~(m64 > 0))
            flips[rr] |= flipped
            evaluated[rr] += s
        open_ &= ~flips
        step = cap  # the first chunk catches early flips; a row that survives it likely passes
        done += s
    return evaluated, ~flips


# --- Algorithm 1 for one CE: the same test on 2-D arrays, with scalar bookkeeping ---------------


def _first_layer(x: np.ndarray, vW: np.ndarray) -> np.ndarray:
    """x v_W of every draw, (m, out): one GEMV over all draws (``vW`` (m, out, in), stored
    input-major by :class:`_FreshNoise`; other layouts are multiplied as they come)."""
    m, o, i = vW.shape
    vt = vW.transpose(2, 0, 1)
    if vt.flags.c_contiguous:
        return (x @ vt.reshape(i, m * o)).reshape(m, o)
    return (vW.reshape(m * o, i) @ x).reshape(m, o)


#: draws in the first chunk of a one-CE test: a flip, where there is one, is mostly found there
_FIRST_CHUNK = 512


def _one_row_test(plan: _Plan, x: np.ndarray, t: int, d: float, n: int, noise: _FreshNoise,
                  masks: list[np.ndarray], tol: float) -> tuple[int, bool]:
    """:func:`_lazy_test` for one row at one δ (the same draws, the same decisions), on 2-D
    arrays (draws × neurons) and stopping at the first flip. Per layer the realisation
    W + δ(2v − 3), b + δ(2v_b − 3) with v = a + s·u gives
    z = 2δs(u h + u_b) + (W − (3 − 2a)δ) h + b − (3 − 2a)δ·n_b, with u h one GEMV over all
    draws for the first layer and per-draw products after it; the constant part is one GEMM
    of [h, 1]. ``masks``: the coordinates kept (as in :func:`_lazy_test`, here from bounds at
    some δ' ≥ δ: a superset); ``tol``: the band of :meth:`_Plan.tolerance` at some δ' ≥ δ (it
    grows with δ). Returns (draws evaluated, passed)."""
    net, nb, f32 = plan.net, plan.nb, np.float32
    biases = bool(nb)
    last = len(net.weights) - 1
    shapes, W64, xk, x32, xa, sx, W1x, hidden, out, cap = plan.one_row(masks, x, t)
    a_, s_ = _affine(noise)
    scale = 2.0 * s_ * d
    two_d = f32(scale)
    shift = (3.0 - 2.0 * a_) * d
    # layer 1 at x: scale·(x u_W + u_b) as one GEMV with [scale·x, scale], and its constant part
    xs32 = (xa * scale).astype(f32)
    c0 = (W1x - shift * (sx + nb)).astype(f32)
    # after it: [(W − shift)ᵀ; b − shift·n_b], applied to [h, 1]
    consts = [(Wb - shift * ones).astype(f32) for Wb, ones in hidden]
    binary = net.n_outputs == 1
    sign = 1.0 if t == 1 else -1.0
    if last:  # output layer: its logits at [h, 1] (binary: signed) and Σh, in one GEMM
        k_out = out.shape[1] - 1
        rad0 = f32(d * nb + tol)
    s = min(cap, _FIRST_CHUNK, n)
    done = 0
    while done < n:
        s = min(s, n - done)
        draws = np.arange(done, done + s)
        done += s
        v = noise.layers(0, draws, shapes[:last], biases) if last else []
        h = None  # [h, 1] of the last hidden layer, (s, width + 1)
        for k in range(last):  # hidden layers: every draw
            vk = v[k]
            if len(vk) > 2:  # one array: a GEMV (layer 1) or one product with [h, 1]
                aug = vk[2]
                if k == 0:
                    z = (xs32 @ aug.reshape(aug.shape[0], -1)).reshape(s, -1)
                else:
                    z = np.matmul(aug, (h if biases else h[:, :-1])[:, :, None])[:, :, 0]
                if k:
                    z *= two_d
            else:
                vW, vb = vk
                z = _first_layer(x32, vW) if k == 0 else np.matmul(vW, h[:, :-1, None])[:, :, 0]
                if vb is not None:
                    z += vb
                z *= two_d
            if k == 0:
                z += c0
            else:
                z += h @ consts[k - 1]
            h = np.ones((s, z.shape[1] + 1), dtype=f32)
            np.maximum(z, f32(0.0), out=h[:, :-1])
        go = None
        if last:  # output layer: only draws whose margin range over its noise straddles 0
            P = h @ out
            c, sh = P[:, :k_out], P[:, k_out]
            rad = sh * f32(d)
            rad += rad0
            if binary:
                a = c[:, 0]
                if not (a >= -rad).all():
                    return done, False
                go = np.flatnonzero(a <= rad)
            else:
                m_lo, m_hi = margin_bounds(c - rad[:, None], c + rad[:, None], t)
                if not (m_hi >= 0).all():
                    return done, False
                go = np.flatnonzero(m_lo <= 0)
            if go.size == 0:
                s = cap
                continue
            h, c = h[go], c[go]
            c -= (f32(shift * (sign if binary else 1.0)) * (sh[go] + f32(nb)))[:, None]
            vl = noise.layers(last, draws[go], shapes[last:], biases)[0]
            if len(vl) > 2:
                z = np.matmul(vl[2], (h if biases else h[:, :-1])[:, :, None])[:, :, 0]
            else:
                z = np.matmul(vl[0], h[:, :-1, None])[:, :, 0]
                if vl[1] is not None:
                    z += vl[1]
            if binary:
                z *= f32(sign)
        else:
            vl = noise.layers(0, draws, shapes, biases)[0]
            z = _first_layer(x32, vl[0])
            if vl[1] is not None:
                z += vl[1]
            c = c0 * f32(sign) if binary else c0
            if binary:
                z *= f32(sign)
        z *= two_d
        z += c
        m = z[:, 0] if binary else class_margin(z, t)
        if not (m >= -tol).all():
            return done, False
        unsure = np.flatnonzero(np.abs(m) <= tol)
        if unsure.size:  # within the band: decide in float64 from the full draws
            g = unsure if go is None else go[unsure]
            vv = _full_draws(noise, 0, draws[g], shapes[:last], biases,
                             [(vk[0][g], None if vk[1] is None else vk[1][g]) for vk in v])
            vv += _full_draws(noise, last, draws[g], shapes[last:], biases,
                              [(vl[0][unsure], None if vl[1] is None else vl[1][unsure])])
            p = unsure.size
            m64 = _exact_margins(W64, np.broadcast_to(xk, (p, xk.size)), np.full(p, d),
                                 np.full(p, t), vv)
            if not (m64 > 0).all():
                return done, False
        s = cap  # the first chunk catches early flips; a row that survives it likely passes
    return done, True


#: one CE goes through :func:`_algorithm1_one` (tests switch it off to check the batched path
#: on single rows against the plain Algorithm 1 too)
_ONE_ROW_PATH = True

#: points per doubling of δ of the grid on which one CE's interval bounds and rounding band are
#: computed up front (a test at δ uses the grid point just above it)
_GRID_STEPS = 8


def _one_row_grid(plan: _Plan, x: np.ndarray, t: int, d0: float, dmax: float, biases: bool,
                  coarse_eps: float) -> tuple[list[float], np.ndarray, list[np.ndarray],
                                              np.ndarray]:
    """One CE's interval bounds over Δ_δ and rounding band on the grid δ_init·2^(k/G) (capped at
    ``delta_max``; G = :data:`_GRID_STEPS`), which holds every doubling test δ_init·2ᵏ: the grid,
    per point whether bounds prove every network in Δ_δ keeps the class, the kept-coordinate
    masks (input columns ≠ 0, hidden neurons whose upper bound is > 0) and the band. All three
    are monotone in δ — Δ_δ grows with δ and interval bounds are inclusion-monotone — so the
    values at a grid point δ' ≥ δ are sound at δ: a proof at δ' holds at δ, the neurons kept
    at δ' include those kept at δ, the band at δ' is at least the one at δ."""
    grid, k = [], 0
    while True:
        g = d0 * 2.0 ** (k / _GRID_STEPS)
        if g >= dmax:
            grid.append(dmax)
            break
        grid.append(g)
        k += 1
    deltas = np.asarray(grid)
    X = np.broadcast_to(x, (len(grid), x.size))
    bounds = point_layer_bounds(plan.net, X, deltas, biases)
    sure = margin_terms(bounds[-1][0], bounds[-1][1], np.full(len(grid), t)).min(axis=1) > 0
    masks = [hi > -1e-12 for _, hi in bounds[:-1]]
    return grid, sure, masks, plan.tolerance(X, deltas, coarse_eps)


def _algorithm1_one(plan: _Plan, x: np.ndarray, t: int, d0: float, dmax: float, n: int,
                    noise: _FreshNoise, biases: bool, max_rounds: int) -> tuple[Any, ...]:
    """:func:`_algorithm1` for one valid row, with scalar bookkeeping and the bounds of every
    test read off :func:`_one_row_grid`: the interval-proven doubling prefix as
    :func:`_skip_interval_prefix` finds it, then the rounds. Returns (lo, hi, status, n_tests,
    n_interval, n_samples, rounds, limited)."""
    grid, sure, hidden, tol = _one_row_grid(plan, x, t, d0, dmax, biases,
                                            getattr(noise, "coarse_eps", 0.0))
    lo, hi, n_tests, n_interval, n_samples, rounds = 0.0, math.inf, 0, 0, 0, 0
    # the doubling prefix that bounds prove (each such test would pass with certainty)
    ladder = list(range(0, len(grid) - 1, _GRID_STEPS)) + [len(grid) - 1]
    for j in ladder[:max_rounds]:
        if not sure[j]:
            break
        noise.start_test()
        lo = grid[j]
        n_tests += 1
    n_interval = n_tests
    if n_tests and lo >= dmax:
        return lo, hi, "capped", n_tests, n_interval, n_samples, rounds, False
    cand = min(2.0 * lo, dmax) if n_tests else d0
    in_cols = x != 0.0
    while True:
        if n_tests >= max_rounds:
            return lo, hi, "ok", n_tests, n_interval, n_samples, rounds, True
        rounds += 1
        noise.start_test()
        j = bisect.bisect_left(grid, cand)  # grid[j] ≥ cand: its bounds are sound at cand
        if sure[j]:
            ok = True  # all of Δ_δ keeps the class: every draw would pass
            n_interval += 1
        else:
            masks = [in_cols] + [m[j] for m in hidden]
            used, ok = _one_row_test(plan, x, t, cand, n, noise, masks, float(tol[j]))
            n_samples += used
        n_tests += 1
        if ok:
            lo = cand
        else:
            hi = cand
        if math.isinf(hi):
            if lo >= dmax:
                return lo, hi, "capped", n_tests, n_interval, n_samples, rounds, False
            cand = min(2.0 * lo, dmax)
        elif lo == 0.0:
            return lo, hi, "not_robust", n_tests, n_interval, n_samples, rounds, False
        elif hi - lo <= d0:
            return lo, hi, "ok", n_tests, n_interval, n_samples, rounds, False
        else:
            cand = 0.5 * (lo + hi)


def _rows_and_targets(model: Any, cfs: Any, target_class: Any
                      ) -> tuple[ReLUNetwork, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The network, the rows (unusable ones replaced by zeros), the unusable-row mask, the
    per-row targets and the nominal target margins."""
    net = as_network(model)
    X, bad = model_space_rows(net, cfs, model, name="cfs")
    X = np.where(bad[:, None], 0.0, X)
    t = resolve_targets(target_class, len(X), network=net, X=X)
    nominal = class_margin(net.forward(X), t)
    return net, X, bad, t, nominal


# --- the probabilistic Δ-test --------------------------------------------------------------------


@dataclass
class APASResult:
    """Per counterfactual outcome of :func:`apas_certify` (arrays of length N).

    Parameters
    ----------
    passed : every one of the n draws from Δ_δ kept the target class — then, with confidence
        ``alpha``, at least a fraction ``R`` of Δ_δ does.
    status : ``"passed"``, ``"failed"`` (some draw flipped it), ``"invalid"`` (not valid on the
        nominal model; never passed) or ``"error"`` (NaN/inf row).
    min_margin : the smallest target margin over the draws (NaN for error rows).
    n_flips : draws with margin ≤ 0 (``n_flips / n`` estimates the non-robust fraction).
    nominal_margin : the target margin on the unshifted model (NaN for error rows).
    target_class : the class each counterfactual was tested for.
    message : why a row is invalid or an error (``""`` otherwise).
    delta : the shift size δ tested.
    alpha, R : confidence α and robust fraction R of Lemma 4 (α = 1 − Rⁿ when ``n`` was given).
    n : number of draws from Δ_δ.
    time : seconds for the whole batch.
    meta : the test's settings (``biases``, ``p``).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> out = rc.robustness.apas_certify(net, X, 0.05, target_class=1, random_state=0)
    >>> out.status.tolist(), out.n_flips.tolist(), out.n
    (['passed', 'failed'], [0, 47], 1379)
    >>> out.to_frame()[["passed", "status", "n_flips"]]
       passed  status  n_flips
    0    True  passed        0
    1   False  failed       47
    """

    passed: np.ndarray
    status: np.ndarray
    min_margin: np.ndarray
    n_flips: np.ndarray
    nominal_margin: np.ndarray
    target_class: np.ndarray
    message: np.ndarray
    delta: float
    alpha: float
    R: float
    n: int
    time: float
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.passed)

    def certificate(self, i: int) -> dict[str, Any]:
        """What counterfactual ``i``'s claim rests on — enough to re-check it."""
        m = float(self.min_margin[i])
        return {
            "passed": bool(self.passed[i]), "status": str(self.status[i]),
            "delta": self.delta, "p": "inf", "biases": self.meta.get("biases", True),
            "alpha": self.alpha, "R": self.R, "n": self.n,
            "min_margin": None if math.isnan(m) else m, "n_flips": int(self.n_flips[i]),
            "target_class": int(self.target_class[i]), "message": str(self.message[i]),
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per counterfactual."""
        return pd.DataFrame({
            "passed": self.passed, "status": self.status.astype(str),
            "min_margin": self.min_margin, "n_flips": self.n_flips,
            "nominal_margin": self.nominal_margin, "target_class": self.target_class,
            "delta": self.delta, "alpha": self.alpha, "R": self.R, "n": self.n,
            "message": self.message.astype(str),
        })


def apas_certify(model: Any, cfs: Any, delta: Any, alpha: float = 0.999, R: float = 0.995,
                 target_class: Any = None, random_state: int | np.random.Generator | None = None,
                 *, n: int | None = None, biases: bool = True) -> APASResult:
    """Probabilistic Δ-test (APΔS, Lemma 4) of counterfactuals at one shift size δ.

    Parameters
    ----------
    model : a :class:`ReLUNetwork` or a model with ``.network()`` (and ``.encode`` for frames).
    cfs : counterfactuals: model-space array (N, d) or a raw DataFrame.
    delta : δ > 0 (every weight and bias uniform in [θ − δ, θ + δ]), or a
        :class:`~robustce.robustness.ParameterShift` (its δ and ``biases``).
    alpha, R : confidence α and robust fraction R, both in (0, 1); n = ⌈ln(1−α)/ln R⌉ draws.
    target_class : int, per-row array, or None (the class the model predicts per row).
    random_state : int, Generator or None.
    n : number of draws instead of Lemma 4's (``alpha`` is then reported as 1 − Rⁿ).
    biases : whether the shift moves biases too.

    All CEs are evaluated on the same n draws (batched, chunked to bound memory).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> out = rc.robustness.apas_certify(net, X, 0.05, alpha=0.999, R=0.995, target_class=1,
    ...                                  random_state=0)
    >>> out.passed, out.n  # n = ⌈ln(1 − α) / ln R⌉ draws from Δ
    (array([ True, False]), 1379)
    >>> out.certificate(0)["min_margin"] > 0
    True
    """
    if isinstance(delta, ParameterShift):
        delta, biases = delta.delta, delta.biases
    d = _check_delta(delta)
    check_bool(biases, "biases")
    n, a, r = _resolve_n(alpha, R, n)
    rng = check_random_state(random_state)
    t0 = time.perf_counter()
    net, X, bad, t, nominal = _rows_and_targets(model, cfs, target_class)
    N = len(X)
    use = np.flatnonzero(~bad)
    min_m = np.full(N, np.nan)
    flips = np.zeros(N, dtype=np.int64)
    mm, fl = _sampled_test(net, X[use], t[use], np.full(len(use), d), n, rng, biases)
    min_m[use], flips[use] = mm, fl
    invalid = ~bad & ~(nominal > 0)
    passed = ~bad & ~invalid & (flips == 0)
    status = np.where(passed, "passed", "failed").astype(object)
    message = np.full(N, "", dtype=object)
    status[invalid] = "invalid"
    for i in np.flatnonzero(invalid):
        message[i] = (f"not valid on the nominal model: target-{int(t[i])} margin "
                      f"{nominal[i]:.4g} <= 0")
    status[bad] = "error"
    message[bad] = "counterfactual contains NaN or infinite values"
    nominal = np.where(bad, np.nan, nominal)
    meta = {"biases": bool(biases), "p": "inf"}
    return APASResult(passed, status, min_m, flips, nominal, t, message, d, a, r, n,
                      time.perf_counter() - t0, meta)


# --- Algorithm 1: the largest δ that passes ------------------------------------------------------


@dataclass
class APASMaxDeltaResult:
    """Per counterfactual outcome of :func:`apas_max_delta` (arrays of length N).

    Parameters
    ----------
    delta : δ_max — the largest tested δ at which all n fresh draws kept the class (0 when the
        CE is invalid on the nominal model or a draw at δ_init already flips it).
    upper : the smallest tested δ at which a draw flipped it (inf when none did).
    status : ``"ok"``, ``"not_robust"`` (flipped at δ_init), ``"invalid"`` (not valid on the
        nominal model), ``"capped"`` (kept up to the cap ``delta_max``), ``"round_limit"`` or
        ``"error"`` (NaN row).
    n_tests : δ values tested.
    n_interval : of which decided by interval bounds (all of Δ_δ proven to keep the class, so
        every draw would have passed).
    n_samples : draws evaluated.
    target_class : the class each counterfactual was tested for.
    message : why a row stopped early or is invalid (``""`` otherwise).
    alpha, R : confidence α and robust fraction R of Lemma 4.
    n : draws per tested δ.
    time : seconds for the whole batch.
    meta : the search's settings (``delta_init``, ``delta_max``, ``biases``, ``p``, ``rounds``).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> out = rc.robustness.apas_max_delta(net, X, target_class=1, n=200, random_state=0)
    >>> out.status.tolist(), out.delta_max.round(3)
    (['ok', 'ok'], array([0.278, 0.038]))
    >>> out.to_frame()[["delta_max", "status", "n_tests"]]
       delta_max status  n_tests
    0     0.2782     ok       24
    1     0.0377     ok       19
    """

    delta: np.ndarray
    upper: np.ndarray
    status: np.ndarray
    n_tests: np.ndarray
    n_interval: np.ndarray
    n_samples: np.ndarray
    target_class: np.ndarray
    message: np.ndarray
    alpha: float
    R: float
    n: int
    time: float
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.delta)

    @property
    def delta_max(self) -> np.ndarray:
        """Alias of ``delta`` under the paper's name."""
        return self.delta

    def to_frame(self) -> pd.DataFrame:
        """One row per counterfactual."""
        return pd.DataFrame({
            "delta_max": self.delta, "upper": self.upper, "status": self.status.astype(str),
            "n_tests": self.n_tests, "n_interval": self.n_interval, "n_samples": self.n_samples,
            "target_class": self.target_class, "alpha": self.alpha, "R": self.R, "n": self.n,
            "message": self.message.astype(str),
        })


def apas_max_delta(model: Any, cfs: Any, alpha: float = 0.999, R: float = 0.995,
                   delta_init: float = 1e-4, random_state: int | np.random.Generator | None = None,
                   *, target_class: Any = None, delta_max: float = 10.0, n: int | None = None,
                   biases: bool = True, max_rounds: int = 200) -> APASMaxDeltaResult:
    """Largest δ each counterfactual passes the probabilistic Δ-test at (APΔS Algorithm 1).

    Test δ_init; on a flip δ_max = 0. Otherwise double δ until a draw flips the CE, then bisect
    between the last passing and the first flipping δ until they are ≤ δ_init apart; δ_max is the
    last passing δ. Each tested δ gets n fresh draws, so each test alone carries Lemma 4's
    guarantee (across the ``n_tests`` tests of one CE a union bound gives confidence at least
    1 − n_tests·(1 − α) for all of them at once).

    Vectorised over CEs: each round tests every still-active CE at its own candidate δ with one
    shared set of unit-box draws (θ + δ_i·U). Where δ is at most the exact max provable δ every
    draw passes, so δ_max ≥ ``max_provable_delta`` (same ``delta_init`` / ``delta_max``).

    Parameters
    ----------
    model, cfs, target_class, biases, n : as :func:`apas_certify`.
    alpha, R : Lemma 4's confidence and fraction (n = ⌈ln(1−α)/ln R⌉ draws per tested δ).
    delta_init : first δ tested and the bisection's resolution (the paper's 0.0001).
    delta_max : cap on δ; a CE still passing there gets status ``capped``.
    max_rounds : cap on the tests per CE (each round tests every active CE once; the first
        doubling tests that interval bounds decide up front count too).
    random_state : int, Generator or None — the source of every test's draws.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MILPRobust(model, train, shift=0.02).explain(rejected)
    >>> out = rc.robustness.apas_max_delta(model, res, target_class=1, n=200, random_state=0)
    >>> out.status.tolist()
    ['ok', 'ok', 'ok']
    >>> bool((out.delta >= 0.02).all())
    True
    """
    d0 = _check_delta(delta_init, "delta_init")
    try:
        dmax = float(delta_max)
    except (TypeError, ValueError):
        raise ValidationError(f"delta_max must be a number, got {delta_max!r}") from None
    if not (math.isfinite(dmax) and dmax >= d0):
        raise ValidationError(f"delta_max must be finite and >= delta_init, got {delta_max!r}")
    check_integer(max_rounds, "max_rounds", low=1)
    check_bool(biases, "biases")
    n, a, r = _resolve_n(alpha, R, n)
    rng = check_random_state(random_state)
    t0 = time.perf_counter()
    net, X, bad, t, nominal = _rows_and_targets(model, cfs, target_class)
    res = _algorithm1(net, X, bad, t, nominal, d0, dmax, n, _FreshNoise(rng), biases,
                      int(max_rounds))
    res.alpha, res.R, res.time = a, r, time.perf_counter() - t0
    return res


def _bounds(net: ReLUNetwork, X: np.ndarray, deltas: np.ndarray, biases: bool
            ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Interval pre-activation bounds of every layer over Δ_δ at point inputs X, δ per row
    (:func:`~robustce.robustness.exact.point_layer_bounds`), with a lean path for one δ."""
    d = float(deltas[0])
    if not (net.plain and np.all(deltas == d)):
        return point_layer_bounds(net, X, deltas, biases)
    db = d if biases else 0.0
    W, b = net.weights[0]
    c = X @ W.T + b
    r = d * np.abs(X).sum(axis=1, keepdims=True) + db
    out = [(c - r, c + r)]
    for W, b in net.weights[1:]:
        lo, hi = np.maximum(out[-1][0], 0.0), np.maximum(out[-1][1], 0.0)
        Wl, Wu = W - d, W + d
        out.append((lo @ np.maximum(Wl, 0.0).T + hi @ np.minimum(Wl, 0.0).T + (b - db),
                    hi @ np.maximum(Wu, 0.0).T + lo @ np.minimum(Wu, 0.0).T + (b + db)))
    return out


def _skip_interval_prefix(net: ReLUNetwork, X: np.ndarray, t: np.ndarray, active: np.ndarray,
                          lo: np.ndarray, cand: np.ndarray, n_tests: np.ndarray,
                          n_interval: np.ndarray, status: np.ndarray, d0: float, dmax: float,
                          noise: _FreshNoise, biases: bool, max_rounds: int) -> None:
    """Algorithm 1's first doubling tests, δ = δ_init·2^k, that interval propagation decides,
    all at once: Δ_δ grows with δ and interval bounds are inclusion-monotone, so the tests
    proven this way form a prefix of the doubling sequence; each would have passed with
    certainty. Moves every active row (in place) past its proven prefix, as the round-by-round
    loop would, and leaves ``active`` rows that reached ``delta_max`` capped."""
    idx = np.flatnonzero(active)
    if idx.size == 0:
        return
    ladder = [d0]
    while ladder[-1] < dmax:
        ladder.append(min(2.0 * ladder[-1], dmax))
    L = len(ladder)
    rows = np.repeat(idx, L)
    bounds = _bounds(net, X[rows], np.tile(ladder, idx.size), biases)
    sure = margin_terms(bounds[-1][0], bounds[-1][1], t[rows]).min(axis=1) > 0
    proven = np.cumprod(sure.reshape(idx.size, L), axis=1).sum(axis=1)   # prefix length
    proven = np.minimum(proven, max_rounds)          # max_rounds caps the tests, these included
    for _ in range(int(proven.max())):
        noise.start_test()
    has = proven > 0
    i, p = idx[has], proven[has]
    ladder_arr = np.asarray(ladder)
    lo[i] = ladder_arr[p - 1]
    n_tests[i] += p
    n_interval[i] += p
    capped = lo[i] >= dmax
    status[i[capped]] = "capped"
    active[i[capped]] = False
    more = i[~capped]
    cand[more] = np.minimum(2.0 * lo[more], dmax)


def _algorithm1(net: ReLUNetwork, X: np.ndarray, bad: np.ndarray, t: np.ndarray,
                nominal: np.ndarray, d0: float, dmax: float, n: int, noise: _FreshNoise,
                biases: bool, max_rounds: int) -> APASMaxDeltaResult:
    """:func:`apas_max_delta` on validated rows, drawing from ``noise`` (α, R and time are
    filled in by the caller)."""
    N = len(X)
    lo = np.zeros(N)
    hi = np.full(N, np.inf)
    cand = np.full(N, d0)
    n_tests = np.zeros(N, dtype=np.int64)
    n_interval = np.zeros(N, dtype=np.int64)
    n_samples = np.zeros(N, dtype=np.int64)
    status = np.full(N, "ok", dtype=object)
    message = np.full(N, "", dtype=object)
    invalid = ~bad & ~(nominal > 0)
    status[invalid] = "invalid"
    for i in np.flatnonzero(invalid):
        message[i] = (f"not valid on the nominal model: target-{int(t[i])} margin "
                      f"{nominal[i]:.4g} <= 0; delta_max = 0")
    status[bad] = "error"
    message[bad] = "counterfactual contains NaN or infinite values"
    active = ~bad & ~invalid
    plan = _Plan(net, biases)
    rounds = 0
    limited = np.zeros(N, dtype=bool)
    if N == 1 and active[0] and _ONE_ROW_PATH and net.plain:  # one CE: tests on scalars
        (lo[0], hi[0], status[0], n_tests[0], n_interval[0], n_samples[0], rounds,
         limited[0]) = _algorithm1_one(plan, X[0], int(t[0]), d0, dmax, n, noise, biases,
                                       max_rounds)
        active[0] = False
    _skip_interval_prefix(net, X, t, active, lo, cand, n_tests, n_interval, status, d0, dmax,
                          noise, biases, max_rounds)
    while True:
        over = active & (n_tests >= max_rounds)
        limited |= over
        active &= ~over
        if not active.any():
            break
        rounds += 1
        noise.start_test()
        idx = np.flatnonzero(active)
        # interval bounds: where all of Δ_δ keeps the class, every draw would pass
        bounds = _bounds(net, X[idx], cand[idx], biases)
        sure = margin_terms(bounds[-1][0], bounds[-1][1], t[idx]).min(axis=1) > 0
        ok = sure.copy()
        need = idx[~sure]
        if need.size:
            nb = [(lo_[~sure], hi_[~sure]) for lo_, hi_ in bounds]
            if net.plain:
                used, keep = _lazy_test(plan, X[need], t[need], cand[need], n, noise, nb)
            else:  # structured network: plain float64 draws of its own parameters
                _, fl = _sampled_test(net, X[need], t[need], cand[need], n,
                                      np.random.Generator(noise.bitgen), biases)
                used, keep = np.full(need.size, n, dtype=np.int64), fl == 0
            ok[~sure] = keep
            n_samples[need] += used
        n_tests[idx] += 1
        n_interval[idx[sure]] += 1
        lo[idx[ok]] = cand[idx[ok]]
        hi[idx[~ok]] = cand[idx[~ok]]
        li, hi_i = lo[idx], hi[idx]
        doubling = np.isinf(hi_i)
        capped = doubling & (li >= dmax)
        flipped_at_init = ~doubling & (li == 0.0)
        narrow = ~doubling & ~flipped_at_init & (hi_i - li <= d0)
        status[idx[capped]] = "capped"
        status[idx[flipped_at_init]] = "not_robust"
        active[idx[capped | flipped_at_init | narrow]] = False
        grow = doubling & ~capped
        cand[idx[grow]] = np.minimum(2.0 * li[grow], dmax)
        bis = ~doubling & ~flipped_at_init & ~narrow
        cand[idx[bis]] = 0.5 * (li[bis] + hi_i[bis])
    for i in np.flatnonzero(status == "not_robust"):
        message[i] = f"a sampled realisation at delta_init = {d0:g} flips it; delta_max = 0"
    for i in np.flatnonzero(status == "capped"):
        message[i] = f"every draw kept the class up to the cap delta_max = {dmax:g}"
    for i in np.flatnonzero(limited):
        status[i] = "round_limit"
        message[i] = (f"stopped after max_rounds = {max_rounds}; delta_max is the last "
                      f"passing delta tested")
    meta = {"delta_init": d0, "delta_max": dmax, "biases": bool(biases), "p": "inf",
            "rounds": rounds}
    return APASMaxDeltaResult(lo, hi, status, n_tests, n_interval, n_samples, t, message,
                              math.nan, math.nan, n, math.nan, meta)


# --- the certifier protocol ----------------------------------------------------------------------


class APASCertifier(Certifier):
    """APΔS's probabilistic Δ-test as a :class:`~robustce.robustness.certifier.Certifier`.

    ``robust`` means: all n = ⌈ln(1−α)/ln R⌉ draws from Δ = ``shift`` kept the target class, so
    with confidence α at least a fraction R of Δ does (Lemma 4) — an average-case claim, not a
    proof over all of Δ (that is :class:`~robustce.robustness.ExactDeltaCertifier`). A draw
    that flips the CE makes it ``not_robust``; so does a CE the network itself does not give
    the target class.

    Parameters
    ----------
    shift : :class:`ParameterShift` or a number δ.
    alpha, R : Lemma 4's confidence and fraction, in (0, 1).
    n : draws per CE instead of Lemma 4's (``alpha`` then becomes 1 − Rⁿ).
    random_state : None (fresh entropy per call), an int (each call's draws are seeded by it and
        the rows tested — the same CE gets the same draws in any order or process) or a
        Generator (consumed call by call).
    fixed_draws : with an int ``random_state``, every call draws the same n networks, whatever
        the rows (the APΔS authors' loop reseeds before each test: ``np.random.seed(1)``); a
        CE that fails once then fails at every margin whose CE sits where it does.

    Notes
    -----
    Certificates: ``lower`` — the smallest sampled margin where the test passed (Lemma 4: with
    confidence α a fraction ≥ R of Δ has at least this margin; NaN where it failed);
    ``upper`` — the smallest margin of a concrete network seen (a draw, or the base network);
    ``evidence`` — per row ``{"n": n, "n_flips": k, "min_margin": m}``; ``columns``:
    ``min_sampled_margin``, ``n_flips``. A sampled test runs n forward passes per row and no
    solver, so ``time_limit`` does not apply.

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> certifier = rc.robustness.APASCertifier(0.05, alpha=0.999, R=0.995, random_state=0)
    >>> certs = certifier.certify(net, X, 1)
    >>> [str(s) for s in certs.status], certs.columns["n_flips"].tolist()
    (['robust', 'not_robust'], [0, 42])
    >>> certifier.params()["n"]
    1379
    """

    name = "apas"

    def __init__(self, shift: ParameterShift | float, *, alpha: float = 0.999, R: float = 0.995,
                 n: int | None = None, random_state: int | np.random.Generator | None = None,
                 fixed_draws: bool = False):
        self.shift = ParameterShift.of(shift)
        self.n, self.alpha, self.R = _resolve_n(alpha, R, n)
        if not (random_state is None or isinstance(random_state, np.random.Generator)
                or (isinstance(random_state, int | np.integer) and not isinstance(random_state, bool))):
            raise ValidationError(
                f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}")
        self.random_state = random_state
        check_bool(fixed_draws, "fixed_draws")
        if fixed_draws and not isinstance(random_state, int | np.integer):
            raise ValidationError("fixed_draws needs an int random_state (the seed of the one "
                                  f"set of draws), got {type(random_state).__name__}")
        self.fixed_draws = fixed_draws

    def params(self) -> dict[str, Any]:
        return {"delta": self.shift.delta, "p": "inf", "biases": self.shift.biases,
                "alpha": self.alpha, "R": self.R, "n": self.n, "fixed_draws": self.fixed_draws}

    def rng_for(self, X: np.ndarray, targets: np.ndarray) -> np.random.Generator:
        """The generator one call draws from (see ``random_state``)."""
        if isinstance(self.random_state, np.random.Generator):
            return self.random_state
        if self.random_state is None:
            return np.random.default_rng()
        if self.fixed_draws:
            return np.random.default_rng(int(self.random_state))
        key = zlib.crc32(np.ascontiguousarray(X, dtype=np.float64).tobytes())
        key = zlib.crc32(np.ascontiguousarray(targets, dtype=np.int64).tobytes(), key)
        return np.random.default_rng(np.random.SeedSequence([int(self.random_state), key]))

    def certify(self, network: Any, X: Any, targets: Any, *,
                time_limit: float | None = None) -> Certificates:
        net = as_network(network)
        X, bad = model_space_rows(net, X, network)
        Xc = np.where(bad[:, None], 0.0, X)
        t = resolve_targets(targets, len(X), network=net, X=Xc)
        res = apas_certify(net, X, self.shift, target_class=t, random_state=self.rng_for(Xc, t),
                           R=self.R, n=self.n)
        status = np.full(len(X), CertStatus.NOT_ROBUST, dtype=object)
        status[res.passed] = CertStatus.ROBUST
        status[res.status == "error"] = CertStatus.ERROR
        lower = np.where(res.passed, res.min_margin, np.nan)
        upper = np.fmin(res.min_margin, res.nominal_margin)
        evidence: list[Any] = [
            None if s == "error" else {"n": res.n, "n_flips": int(k), "min_margin": float(m)}
            for s, k, m in zip(res.status, res.n_flips, res.min_margin, strict=True)]
        per_row = np.full(len(X), res.time / max(len(X), 1))
        return Certificates(status, lower, upper, evidence, per_row, res.target_class, self.name,
                            self.params(), {"min_sampled_margin": res.min_margin,
                                            "n_flips": res.n_flips})
