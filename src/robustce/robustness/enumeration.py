"""Exact enumeration of Δ by interval splitting (APΔS Algorithm 3), for small networks.

Δ is a box of parameters. For a fixed counterfactual, interval propagation over a sub-box gives
sound bounds of the target margin: lower > 0 means every network in the sub-box keeps the
prediction (robust), upper < 0 means every one flips it (non-robust); otherwise the sub-box is
split in half along one parameter and both halves are examined. After at most ``max_splits``
halvings per branch the proven fractions of Δ's volume are reported:

* ``robust`` — volume proven robust (a lower bound of the true robust fraction),
* ``non_robust`` — volume proven non-robust (a lower bound of the true non-robust fraction),
* ``unknown`` — the rest.

Each level of the search is evaluated for all open sub-boxes at once (batched numpy). The
parameter to split is the one with the largest ``width × |input magnitude| × downstream
weight`` in its sub-box — a cheap estimate of how much of the margin's uncertainty it causes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.models.network import as_network, margin_bounds, model_space_rows, resolve_targets
from robustce.robustness.shift import ParameterShift
from robustce.validation import check_integer

__all__ = ["EnumerationResult", "enumerate_delta"]


@dataclass
class EnumerationResult:
    """Volume fractions of Δ proven robust / non-robust / left unknown, and the search size.

    Parameters
    ----------
    robust, non_robust, unknown : fractions of Δ's volume (summing to 1) proven robust,
        proven non-robust, and left undecided.
    n_robust_boxes, n_non_robust_boxes : sub-boxes of Δ proven robust / non-robust.
    n_unknown_boxes : sub-boxes still open when the search stopped.
    depth : number of bisection rounds run.
    time : seconds spent.
    meta : the search's settings (``delta``, ``p``, ``biases``, ``target_class``,
        ``max_splits``, ``max_boxes``, ``stopped_early``).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> shift = rc.robustness.ParameterShift(0.05)
    >>> out = rc.robustness.enumerate_delta(net, X[1], shift, max_splits=6, target_class=1)
    >>> round(out.robust, 3), round(out.non_robust, 3), round(out.unknown, 3)
    (0.5, 0.0, 0.5)
    >>> out.depth, out.meta["stopped_early"]
    (6, False)
    """

    robust: float
    non_robust: float
    unknown: float
    n_robust_boxes: int
    n_non_robust_boxes: int
    n_unknown_boxes: int
    depth: int
    time: float
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "robust", "non_robust", "unknown", "n_robust_boxes", "n_non_robust_boxes",
            "n_unknown_boxes", "depth", "time")} | {"meta": dict(self.meta)}


def _propagate(layers: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], x: np.ndarray,
               activations: tuple[str, ...] | None = None
               ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
    """Batched interval bounds at the point ``x`` for B sub-boxes: per layer (lo, hi) of shape
    (B, m), and per layer the input magnitudes (B, d) the weights multiply. ``activations``:
    per hidden layer ``"relu"`` (default) or ``"identity"`` (values of any sign: four-corner
    products)."""
    xp, xn = np.maximum(x, 0.0), np.minimum(x, 0.0)
    bounds, mags = [], []
    last = len(layers) - 1
    vlo = vhi = None
    signed = False
    for li, (Wl, Wu, bl, bu) in enumerate(layers):
        if li == 0:
            lo = Wl @ xp + Wu @ xn + bl
            hi = Wu @ xp + Wl @ xn + bu
            mags.append(np.abs(x)[None, :])
        elif signed:
            a, b = vlo[:, None, :], vhi[:, None, :]
            corners = np.stack([Wl * a, Wl * b, Wu * a, Wu * b])
            lo = corners.min(axis=0).sum(axis=2) + bl
            hi = corners.max(axis=0).sum(axis=2) + bu
            mags.append(np.maximum(np.abs(vlo), np.abs(vhi)))
        else:
            lo = (np.einsum("boi,bi->bo", np.maximum(Wl, 0), vlo)
                  + np.einsum("boi,bi->bo", np.minimum(Wl, 0), vhi) + bl)
            hi = (np.einsum("boi,bi->bo", np.maximum(Wu, 0), vhi)
                  + np.einsum("boi,bi->bo", np.minimum(Wu, 0), vlo) + bu)
            mags.append(vhi)
        bounds.append((lo, hi))
        if li < last:
            signed = activations is not None and activations[li] == "identity"
            vlo, vhi = (lo, hi) if signed else (np.maximum(lo, 0.0), np.maximum(hi, 0.0))
    return bounds, mags


def enumerate_delta(model: Any, cf: Any, shift: ParameterShift, *, max_splits: int = 10,
                    target_class: Any = None, max_boxes: int = 1 << 14) -> EnumerationResult:
    """Fractions of Δ's volume on which ``cf`` is proven robust / non-robust after at most
    ``max_splits`` halvings per branch (APΔS Algorithm 3). ``max_boxes`` caps the number of
    open sub-boxes at one level (memory); the search stops early when it would be exceeded.
    ``target_class=None``: the class the base model predicts at ``cf``.

    Parameters
    ----------
    model : a :class:`~robustce.models.ReLUNetwork` or a model with ``.network()``.
    cf : one counterfactual (model space, or a raw row with a model).
    shift : the set Δ (:class:`ParameterShift`).
    max_splits : halvings per branch.
    target_class : see above.
    max_boxes : see above.

    Returns
    -------
    EnumerationResult

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> shift = rc.robustness.ParameterShift(0.05)
    >>> rc.robustness.enumerate_delta(net, X[0], shift, target_class=1).robust  # all of Δ
    1.0
    >>> out = rc.robustness.enumerate_delta(net, X[1], shift, max_splits=6, target_class=1)
    >>> round(out.robust + out.non_robust + out.unknown, 6)
    1.0
    """
    if not isinstance(shift, ParameterShift):
        raise ValidationError(f"shift must be a ParameterShift, got {type(shift).__name__}")
    check_integer(max_splits, "max_splits", low=0, high=1000)
    check_integer(max_boxes, "max_boxes", low=1, high=1 << 24)
    net = as_network(model)
    X, bad = model_space_rows(net, cf, model, name="cf")
    if len(X) != 1:
        raise ValidationError(f"enumerate_delta takes one counterfactual, got {len(X)}")
    if bad[0]:
        raise ValidationError("the counterfactual contains NaN or infinite values")
    t = int(resolve_targets(target_class, 1, network=net, X=X)[0])
    x = net.map_inputs(X)[0]  # an imported model's parameters start after its input map
    acts = None if net.plain else net.activations
    t0 = time.perf_counter()

    shapes = [(W.shape, b.shape) for W, b in net.layers]
    sizes = [W.size + b.size for W, b in net.layers]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    theta = net.flat()
    P = theta.size
    rad = np.empty(P)
    for li, (W, _) in enumerate(net.layers):
        o = offsets[li]
        rad[o:o + W.size] = shift.delta
        rad[o + W.size:o + sizes[li]] = shift.bias_delta
        if net.shift_scale is not None:  # fixed entries (scale 0) have zero width: never split
            rad[o:o + W.size] *= net.shift_scale[li][0].ravel()
            rad[o + W.size:o + sizes[li]] *= net.shift_scale[li][1]
    lo = (theta - rad)[None, :]
    hi = (theta + rad)[None, :]
    abs_w = [np.abs(W) for W, _ in net.layers]

    def unflatten(A: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for li, ((ws, bs), o) in enumerate(zip(shapes, offsets[:-1], strict=True)):
            nW = int(np.prod(ws))
            out.append((A[:, o:o + nW].reshape((A.shape[0],) + ws),
                        A[:, o + nW:o + sizes[li]].reshape((A.shape[0],) + bs)))
        return out

    rob_vol = non_vol = 0.0
    n_rob = n_non = 0
    depth = 0
    stopped_early = False
    k_out = net.n_outputs
    while True:
        Ls, Us = unflatten(lo), unflatten(hi)
        layers = [(Wl, Wu, bl, bu) for (Wl, bl), (Wu, bu) in zip(Ls, Us, strict=True)]
        bounds, mags = _propagate(layers, x, acts)
        olo, ohi = bounds[-1]
        m_lo, m_hi = margin_bounds(olo, ohi, t)
        vol = 0.5 ** depth
        robust, non = m_lo > 0, m_hi < 0
        rob_vol += vol * int(robust.sum())
        non_vol += vol * int(non.sum())
        n_rob += int(robust.sum())
        n_non += int(non.sum())
        open_ = ~(robust | non)
        lo, hi = lo[open_], hi[open_]
        if lo.shape[0] == 0 or depth >= int(max_splits):
            break
        if 2 * lo.shape[0] > int(max_boxes):
            stopped_early = True
            break
        # choose the parameter to split: width x input magnitude x downstream weight
        B = lo.shape[0]
        g = np.ones((B, k_out))
        scores = []
        for li in range(len(layers) - 1, -1, -1):
            Wl, Wu, bl, bu = (a[open_] for a in layers[li])
            identity = acts is not None and li < len(layers) - 1 and acts[li] == "identity"
            act = (np.ones_like(bl) if li == len(layers) - 1 or identity
                   else (bounds[li][1][open_] > 0))
            gi = g * act
            width_W = Wu - Wl
            mag = mags[0] if li == 0 else mags[li][open_]
            scores.append((li, width_W * gi[:, :, None] * mag[:, None, :], (bu - bl) * gi))
            if li > 0:
                g = gi @ abs_w[li]
        score = np.zeros((B, P))
        for li, sW, sb in scores:
            o = offsets[li]
            nW = sW.shape[1] * sW.shape[2]
            score[:, o:o + nW] = sW.reshape(B, -1)
            score[:, o + nW:o + sizes[li]] = sb
        width = hi - lo
        score = np.where(width > 0, score + 1e-300, -1.0)
        pick = score.argmax(axis=1)
        rows = np.arange(B)
        mid = 0.5 * (lo[rows, pick] + hi[rows, pick])
        left_hi = hi.copy()
        left_hi[rows, pick] = mid
        right_lo = lo.copy()
        right_lo[rows, pick] = mid
        lo = np.concatenate([lo, right_lo])
        hi = np.concatenate([left_hi, hi])
        depth += 1
    unknown = max(0.0, 1.0 - rob_vol - non_vol)
    meta = {"delta": shift.delta, "p": "inf", "biases": shift.biases, "target_class": t,
            "max_splits": int(max_splits), "max_boxes": int(max_boxes), "stopped_early": stopped_early}
    return EnumerationResult(rob_vol, non_vol, unknown, n_rob, n_non, int(lo.shape[0]), depth,
                             time.perf_counter() - t0, meta)
