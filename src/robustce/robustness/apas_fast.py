"""APΔS Algorithm 1's fast tests: float32 draws drawn in two parts (the top bits of every unit
draw first, the low bits only where they decide), the output layer drawn only where it can
change the outcome, per-pattern plans of the kept coordinates, the batched test over many CEs
(:func:`_lazy_test`) and the one-CE path on 2-D arrays with its grid of interval bounds
(:func:`_algorithm1_one`). Every decision is the float64 one of the full draw
(``docs/apas.md``). The δ_max search that runs these tests, and the public face, are in
:mod:`~robustce.robustness.apas`.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np

from robustce.models.network import ReLUNetwork, class_margin, margin_bounds, margin_terms
from robustce.robustness.apas_sampling import _CHUNK_ELEMENTS, Layers
from robustce.robustness.exact import point_layer_bounds

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
    """:func:`~robustce.robustness.apas._algorithm1` for one valid row, with scalar
    bookkeeping and the bounds of every test read off :func:`_one_row_grid`: the
    interval-proven doubling prefix as :func:`~robustce.robustness.apas._skip_interval_prefix`
    finds it, then the rounds. Returns (lo, hi, status, n_tests, n_interval, n_samples, rounds,
    limited)."""
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
