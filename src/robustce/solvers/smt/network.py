"""Characteristic formulae of ReLU networks (logistic regression is the one-layer case), with the
neuron bounds that leave stable neurons without an ``If``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import z3

from robustce.errors import ValidationError
from robustce.solvers.smt.domain import SMTInput
from robustce.solvers.smt.terms import rational
from robustce.solvers.tightening import l1_ball_max


def interval_bounds(weights: Sequence[tuple[np.ndarray, np.ndarray]], lo: np.ndarray,
                    hi: np.ndarray, first: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pre-activation bounds of every layer over the input box ``[lo, hi]`` (interval
    arithmetic, sign-aware). ``first``: sound first-layer bounds to intersect with the
    interval ones (e.g. :func:`l1_ball_bounds`); later layers propagate from the tighter ones."""
    out = []
    a, b = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    for i, (W, bias) in enumerate(weights):
        Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
        zl = Wp @ a + Wn @ b + bias
        zu = Wp @ b + Wn @ a + bias
        pad = 1e-12 * (1.0 + np.abs(zl) + np.abs(zu))  # float rounding: keep the bounds sound
        zl, zu = zl - pad, zu + pad
        if i == 0 and first is not None:
            zl, zu = np.maximum(zl, first[0]), np.minimum(zu, first[1])
        out.append((zl, zu))
        if i < len(weights) - 1:
            a, b = np.maximum(zl, 0.0), np.maximum(zu, 0.0)
    return out


def l1_ball_bounds(W: np.ndarray, bias: np.ndarray, x: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray, w: np.ndarray, budget: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Exact bounds of ``W @ y + bias`` over ``{y ∈ [lo, hi] : Σ_c w_c |y_c − x_c| <= budget}``
    (:func:`robustce.solvers.tightening.l1_ball_max`, a fractional knapsack per neuron and
    direction), padded for float rounding. With w the raw-distance column weights ω (each
    feature's ω-weighted column moves bound its δ_f from below) and budget J·δ/β, the set
    contains every input within MACE's ℓ1 distance δ: the bounds are sound for it, and much
    tighter than the box's when several columns may move but their sum may not."""
    W = np.asarray(W, dtype=np.float64)
    z0 = W @ np.asarray(x, dtype=np.float64) + bias
    zu = z0 + l1_ball_max(W, x, lo, hi, w, budget)
    zl = z0 - l1_ball_max(-W, x, lo, hi, w, budget)
    pad = 1e-9 * (1.0 + np.abs(zl) + np.abs(zu))
    return zl - pad, zu + pad


def network_formula(weights: Sequence[tuple[np.ndarray, np.ndarray]], inp: SMTInput, target: int,
                    box: tuple[np.ndarray, np.ndarray] | None = None, tau: float = 1e-6,
                    prefix: str = "h",
                    first: tuple[np.ndarray, np.ndarray] | None = None) -> list[z3.BoolRef]:
    """φ_f(x, target) of a ReLU network (last layer = logits; one logit for binary models,
    class 1 iff logit > 0): one real per hidden neuron with ``h = If(z >= 0, z, 0)``, stable
    neurons (by interval bounds over ``box``, first-layer ones tightened by ``first`` when
    given) without the ``If``; the target wins by >= ``tau``."""
    d = inp.encoder.n_features_out_
    lo, hi = box if box is not None else (np.zeros(d), np.ones(d))
    bounds = interval_bounds(weights, lo, hi, first)
    cons: list[z3.BoolRef] = []
    W0, b0 = weights[0]
    pre = [inp.linear(W0[i], b0[i]) for i in range(W0.shape[0])]
    for layer in range(1, len(weights)):
        zl, zu = bounds[layer - 1]
        post: list[z3.ArithRef] = []
        for i, z in enumerate(pre):
            if zu[i] <= 0:
                post.append(z3.RealVal(0))
                continue
            h = z3.Real(f"{prefix}_{inp.prefix}_{layer}_{i}")
            if zl[i] >= 0:
                cons.append(h == z)
            else:
                # exact ReLU, plus its triangle relaxation as redundant cuts for z3's simplex
                slope = zu[i] / (zu[i] - zl[i])
                cons += [h == z3.If(z >= 0, z, z3.RealVal(0)), h >= 0, h >= z,
                         h <= rational(slope) * z - rational(slope * zl[i])
                         + rational(1e-9 * (1 + zu[i] - zl[i]))]
            post.append(h)
        W, b = weights[layer]
        pre = []
        for i in range(W.shape[0]):
            terms = [rational(W[i, j]) * post[j] for j in range(W.shape[1])
                     if W[i, j] != 0 and not (z3.is_rational_value(post[j]))]
            pre.append(z3.Sum([*terms, rational(b[i])]))
    t = rational(tau)
    if len(pre) == 1:
        if target not in (0, 1):
            raise ValidationError(f"binary network: target class must be 0 or 1, got {target}")
        cons.append(pre[0] >= t if target == 1 else pre[0] <= -t)
    else:
        cons += [pre[target] - pre[c] >= t for c in range(len(pre)) if c != target]
    return cons

