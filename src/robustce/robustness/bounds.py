"""Pre-activation bounds for the exact MILPs: plain intervals and back-substituted linear
(CROWN-style) bounds.

Two settings share one back-substitution:

* **interval weights at a fixed input** (the Δ-test): every weight lies in ``[W⁻, W⁺]``, the
  input ``x`` is a constant. With ``v^l ≥ 0`` the post-ReLU activations, neuron ``i`` of layer
  ``l`` has a *lower end* ``lo_i(v) = W⁻_i v + b⁻_i`` and an *upper end*
  ``hi_i(v) = W⁺_i v + b⁺_i``, and the reachable activations are exactly
  ``relu(lo(v^{l-1})) ≤ v^l ≤ relu(hi(v^{l-1}))`` (:mod:`robustce.robustness.delta_milp`). The
  first layer's ends are constants (sign-aware in ``x``), so ``v¹`` ranges over an exact box.
* **fixed weights, input in a box** (MILPNearest, MILP-R): ``W⁻ = W⁺``, and the back-substitution
  goes one level further, to ``x`` in its box (standard CROWN / DeepPoly).

Back-substitution (Zhang et al. 2018, CROWN; Singh et al. 2019, DeepPoly). To bound
``max c·v^l + d`` replace each ``v^l_j`` by a linear function of ``v^{l-1}`` that bounds it on
the side the sign of ``c_j`` needs:

* ``c_j > 0``: ``v_j ≤ relu(hi_j) ≤ a_j hi_j(v^{l-1}) + e_j`` (the chord of ReLU over the
  upper end's range ``[ȟ_j, ĥ_j]``: ``a = ĥ/(ĥ − ȟ)``, ``e = −a ȟ`` when it straddles 0);
* ``c_j < 0``: ``v_j ≥ relu(lo_j) ≥ λ_j lo_j(v^{l-1})`` with ``λ_j ∈ {0, 1}`` (both are valid
  lower lines; the one with the smaller area is taken, as CROWN's adaptive rule).

Each step keeps a valid upper bound of ``c·v^l + d`` as a linear function of the layer below;
at the base it is maximised exactly over the base box. The minimum is ``−max(−c·v − d)``. The
resulting bounds are intersected with interval bounds (layer by layer, so each layer's
relaxation uses the tightest bounds of the layers below) — never looser than intervals.

Per layer the result holds ``lower`` = min of the lower end, ``upper`` = max of the upper end
(the pre-activation of every network in Δ lies in ``[lower, upper]``), ``upper_min`` = min of
the upper end and ``lower_max`` = max of the lower end: a neuron whose ``upper_min ≥ 0`` or
``upper ≤ 0`` needs no binary in the MILP (:func:`robustce.solvers.encodings.encode_interval_network`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.models.network import IntervalNetwork
from robustce.solvers.tightening import l1_ball_max

#: relative widening of back-substituted bounds before they become a MILP's variable bounds and
#: big-M: a bound that is tight at the optimum lets the solver place its solution just outside
#: within its feasibility tolerance (HiGHS then reports a solve error; measured on a 100-100
#: network), and a tight logit bound slowed the solve 3× (benchmarks/README.md, issue 33)
MILP_SLACK = 1e-6

__all__ = ["MILP_SLACK", "LayerBounds", "box_bounds", "crown_box_bounds", "crown_point_bounds",
           "interval_point_bounds", "n_unstable"]


@dataclass
class LayerBounds:
    """Bounds of every layer for ``n`` rows: lists (one entry per layer, the last the logits)
    of arrays of shape (n, width). ``lower`` ≤ lower end ≤ ``lower_max``; ``upper_min`` ≤
    upper end ≤ ``upper``. For a plain network both ends coincide."""

    lower: list[np.ndarray]
    upper: list[np.ndarray]
    upper_min: list[np.ndarray]
    lower_max: list[np.ndarray]

    def row(self, i: int, slack: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
        """Row ``i``'s per-layer ``(lower, upper)`` — the ``bounds`` argument of the encoders —
        widened by ``slack · (1 + |bound|)`` (still sound; see :data:`MILP_SLACK`)."""
        return [(lo[i] - slack * (1 + np.abs(lo[i])), hi[i] + slack * (1 + np.abs(hi[i])))
                for lo, hi in zip(self.lower, self.upper, strict=True)]

    def row_upper_min(self, i: int, slack: float = 0.0) -> list[np.ndarray]:
        """Row ``i``'s per-hidden-layer ``upper_min`` (the encoders' ``upper_min``), lowered
        by ``slack · (1 + |bound|)``."""
        return [u[i] - slack * (1 + np.abs(u[i])) for u in self.upper_min[:-1]]


def n_unstable(b: LayerBounds) -> np.ndarray:
    """Per row, the number of hidden neurons the MILP needs a binary for: upper end able to
    change sign (``upper_min < 0 < upper``)."""
    n = b.lower[0].shape[0]
    out = np.zeros(n, dtype=np.int64)
    for hmin, hmax in zip(b.upper_min[:-1], b.upper[:-1], strict=True):
        out += ((hmin < 0) & (hmax > 0)).sum(axis=1)
    return out


def _check_plain(inn: IntervalNetwork) -> None:
    if inn.input_map is not None or any(a != "relu" for a in inn.activations):
        raise ValidationError("back-substituted bounds need a plain ReLU network (no input map, "
                              "no identity layers)")


def _first_layer(inn: IntervalNetwork, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact ends of layer 0 at point inputs X (sign-aware): (min lower end, max upper end)."""
    Wl, Wu, bl, bu = inn.layers[0]
    Xp, Xn = np.maximum(X, 0.0), np.minimum(X, 0.0)
    return Xp @ Wl.T + Xn @ Wu.T + bl, Xp @ Wu.T + Xn @ Wl.T + bu


def _relaxations(lmin, lmax, hmin, hmax):
    """Upper line ``a·hi + e`` of ``relu(hi)`` over [hmin, hmax] and lower slope ``λ`` of
    ``relu(lo) ≥ λ lo`` over [lmin, lmax] (all arrays (n, m))."""
    unstable = (hmin < 0) & (hmax > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(hmin >= 0, 1.0, np.where(unstable, hmax / (hmax - hmin), 0.0))
    a = np.nan_to_num(a, nan=0.0)
    e = np.where(unstable, -a * hmin, 0.0)
    lam = np.where(lmin >= 0, 1.0, np.where((lmax > 0) & (lmax > -lmin), 1.0, 0.0))
    return a, e, lam


def _backsub_max(inn: IntervalNetwork, C: np.ndarray, d: np.ndarray, k: int, rel: list,
                 base_lo: np.ndarray, base_hi: np.ndarray, box_input: bool,
                 ball: tuple | None = None) -> np.ndarray:
    """Upper bound of ``C v^k + d`` (``C`` (n, r, m_{k-1}), ``d`` (n, r)) where ``v^k`` is the
    input of layer ``k``. ``rel[j]``: relaxation (a, e, λ) of hidden layer j. Fixed input: the
    base is ``v¹`` in [base_lo, base_hi]; ``box_input``: the base is ``x`` in that box,
    intersected with the weighted L1 ball ``ball = (q, w, radius)`` when given (one row)."""
    stop = 0 if box_input else 1
    for j in range(k - 1, stop - 1, -1):
        a, e, lam = rel[j]
        Cp, Cn = np.maximum(C, 0.0), np.minimum(C, 0.0)
        Au, Al = Cp * a[:, None, :], Cn * lam[:, None, :]
        Wl, Wu, bl, bu = inn.layers[j]
        d = d + Au @ bu + Al @ bl + np.einsum("nrm,nm->nr", Cp, e)
        C = Au @ Wu + Al @ Wl
    if ball is not None:  # exact max of each row over box ∩ ball (a fractional knapsack)
        q, w, radius = ball
        top = l1_ball_max(C[0], q, base_lo[0], base_hi[0], w, radius)
        return d + (C[0] @ q + top)[None]
    Cp, Cn = np.maximum(C, 0.0), np.minimum(C, 0.0)
    return d + np.einsum("nrm,nm->nr", Cp, base_hi) + np.einsum("nrm,nm->nr", Cn, base_lo)


def _propagate(inn: IntervalNetwork, lo0, hi0, base_lo, base_hi, box_input: bool,
               crown: bool, known: list | None = None, ball: tuple | None = None) -> LayerBounds:
    n = lo0.shape[0]
    if known is not None:
        lo0, hi0 = _intersect(lo0, hi0, known[0])
    lower, upper, upper_min, lower_max = [lo0], [hi0], [], []
    if box_input:  # plain network over a box: both ends coincide
        upper_min.append(lo0.copy())
        lower_max.append(hi0.copy())
    else:  # fixed input: the ends are constants
        upper_min.append(hi0.copy())
        lower_max.append(lo0.copy())
    rel = [_relaxations(lower[0], lower_max[0], upper_min[0], upper[0])]
    for k in range(1, len(inn.layers)):
        Wl, Wu, bl, bu = inn.layers[k]
        vlo, vhi = np.maximum(lower[-1], 0.0), np.maximum(upper[-1], 0.0)
        Wlp, Wln, Wup, Wun = (np.maximum(Wl, 0), np.minimum(Wl, 0), np.maximum(Wu, 0),
                              np.minimum(Wu, 0))
        lmin = vlo @ Wlp.T + vhi @ Wln.T + bl
        lmax = vhi @ Wlp.T + vlo @ Wln.T + bl
        hmin = vlo @ Wup.T + vhi @ Wun.T + bu
        hmax = vhi @ Wup.T + vlo @ Wun.T + bu
        if crown and (k > 1 or box_input):  # (layer 1 at a fixed input: intervals are exact)
            m = Wl.shape[0]
            C = np.broadcast_to(np.concatenate([Wu, -Wl, -Wu, Wl])[None], (n, 4 * m, Wl.shape[1]))
            d = np.broadcast_to(np.concatenate([bu, -bl, -bu, bl])[None], (n, 4 * m))
            top = _backsub_max(inn, C, d, k, rel, base_lo, base_hi, box_input, ball)
            hmax = np.minimum(hmax, top[:, :m])
            lmin = np.maximum(lmin, -top[:, m:2 * m])
            hmin = np.maximum(hmin, -top[:, 2 * m:3 * m])
            lmax = np.minimum(lmax, top[:, 3 * m:])
        if known is not None:
            lmin, hmax = _intersect(lmin, hmax, known[k])
            lmax, hmin = np.minimum(lmax, hmax), np.maximum(hmin, lmin)
        # the upper end is never below the lower end (W⁺ ≥ W⁻, v ≥ 0)
        hmin, lmax = np.maximum(hmin, lmin), np.minimum(lmax, hmax)
        hmax, lmin = np.maximum(hmax, hmin), np.minimum(lmin, lmax)
        lower.append(lmin)
        upper.append(hmax)
        upper_min.append(hmin)
        lower_max.append(lmax)
        rel.append(_relaxations(lmin, lmax, hmin, hmax))
    return LayerBounds(lower, upper, upper_min, lower_max)


def _intersect(lo: np.ndarray, hi: np.ndarray, other: tuple[np.ndarray, np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray]:
    lo = np.maximum(lo, other[0])
    return lo, np.maximum(np.minimum(hi, other[1]), lo)


def interval_point_bounds(inn: IntervalNetwork, X: np.ndarray) -> LayerBounds:
    """Plain interval bounds of an interval network at point inputs ``X`` (n, d)."""
    _check_plain(inn)
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    lo0, hi0 = _first_layer(inn, X)
    return _propagate(inn, lo0, hi0, np.maximum(lo0, 0), np.maximum(hi0, 0), False, crown=False)


def crown_point_bounds(inn: IntervalNetwork, X: np.ndarray) -> LayerBounds:
    """Back-substituted bounds of an interval network (weights in ``[W⁻, W⁺]``) at point
    inputs ``X`` (n, d), intersected with interval bounds. See the module docstring.

    Raises
    ------
    ValidationError
        If the network has an input map or identity layers.
    """
    _check_plain(inn)
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    lo0, hi0 = _first_layer(inn, X)
    return _propagate(inn, lo0, hi0, np.maximum(lo0, 0), np.maximum(hi0, 0), False, crown=True)


def crown_box_bounds(inn: IntervalNetwork, lower: np.ndarray, upper: np.ndarray,
                     known: list[tuple[np.ndarray, np.ndarray]] | None = None,
                     ball: tuple[np.ndarray, np.ndarray, float] | None = None) -> LayerBounds:
    """CROWN bounds of a *plain* network (``W⁻ = W⁺``, e.g. ``IntervalNetwork.point(net)``)
    over input boxes ``[lower, upper]`` (rows, shape (n, d)), intersected with intervals.

    ``known``: per-layer bounds already known to hold on the set that matters (e.g. the
    bounds over a weighted L1 ball ∩ the box of
    :func:`robustce.solvers.tightening.l1_ball_layer_bounds`), intersected layer by layer
    before the next layer's relaxation is built. The result then holds on that set (every
    relaxation is valid at each of its points), which is all the MILP admits. ``ball =
    (q, w, radius)``: the input also satisfies ``Σ_j w_j |x_j − q_j| ≤ radius`` (one row only):
    each back-substituted linear bound is then maximised exactly over box ∩ ball
    (:func:`robustce.solvers.tightening.l1_ball_max`) instead of over the box.

    Raises
    ------
    ValidationError
        If the network has moving weights, an input map or identity layers.
    """
    _check_plain(inn)
    if any(not (np.array_equal(Wl, Wu) and np.array_equal(bl, bu)) for Wl, Wu, bl, bu in inn.layers):
        raise ValidationError("crown_box_bounds needs fixed weights (W⁻ = W⁺)")
    lo = np.atleast_2d(np.asarray(lower, dtype=np.float64))
    hi = np.atleast_2d(np.asarray(upper, dtype=np.float64))
    W, _, b, _ = inn.layers[0]
    Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
    lo0, hi0 = lo @ Wp.T + hi @ Wn.T + b, hi @ Wp.T + lo @ Wn.T + b
    if ball is not None and lo.shape[0] != 1:
        raise ValidationError("crown_box_bounds: a ball needs exactly one input box")
    return _propagate(inn, lo0, hi0, lo, hi, True, crown=True, known=known, ball=ball)


def box_bounds(network: Any, lower: np.ndarray, upper: np.ndarray,
               known: list[tuple[np.ndarray, np.ndarray]] | None = None,
               ball: tuple[np.ndarray, np.ndarray, float] | None = None
               ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per-layer ``(lo, hi)`` pre-activation bounds of a plain ReLU ``network`` over one input
    box (1-D ``lower`` / ``upper``) by :func:`crown_box_bounds`, widened by
    :data:`MILP_SLACK` — the ``bounds`` argument of
    :func:`robustce.solvers.encodings.encode_network`. ``known``, ``ball`` as there (1-D
    arrays)."""
    kn = None if known is None else [(np.atleast_2d(a), np.atleast_2d(b)) for a, b in known]
    lb = crown_box_bounds(IntervalNetwork.point(network), np.atleast_2d(lower),
                          np.atleast_2d(upper), kn, ball)
    return lb.row(0, MILP_SLACK)
