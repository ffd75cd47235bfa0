"""LP-based bound tightening (optimisation-based bound tightening, OBBT) for ReLU encodings.

The big-M constants of :func:`~robustce.solvers.encodings.encode_interval_network` and the set
of neurons that need a binary come from per-neuron pre-activation bounds. Interval propagation
over the input box gives sound but loose bounds; here each bound that decides a binary is
replaced by the optimum of a linear program: the LP relaxation of the *whole* model (every
constraint the caller put in it — e.g. the validity-margin row and a distance row
``dist(x, q) ≤ z₀`` from an incumbent), with the neuron's pre-activation as objective.

Soundness: every point feasible for the MILP is feasible for its LP relaxation, so
``min / max`` of a pre-activation over the relaxation bounds it over the MILP's feasible set;
bounds are widened by a small tolerance for the LP solver's. Tightening a layer changes the
big-M rows of that layer, so the relaxation is rebuilt (through the caller's ``build``) before
the next layer is tightened: layer by layer, each layer sees the tighter relaxation of the
layers before it.

Which neurons: for the upper-end pre-activation ``hi_i(v)`` of a hidden neuron that has a
binary (its upper end can change sign) the LP computes ``max hi_i`` (→ the bound ``U``; ≤ 0
means the neuron is off on the whole feasible set: no binary) and, if still positive,
``min hi_i`` (→ ``upper_min``; ≥ 0 means no binary either; for a plain network ``hi = lo`` and
this is the lower bound ``L``). Budget: a time limit over all LPs (each LP solve has its own
limit, the time left) and a cap on the number of LPs; when the budget runs out the bounds
computed so far are returned (``complete=False``) — always sound.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.models.network import IntervalNetwork
from robustce.solvers.clock import Budget
from robustce.solvers.encodings import NetworkEncoding
from robustce.solvers.milp import MILP, SolveStatus

__all__ = ["TightenedBounds", "l1_ball_layer_bounds", "l1_ball_max", "lp_tighten_bounds"]

#: the LP objective is widened by this (relative + absolute) before it becomes a bound
LP_TOL = 1e-6

Bounds = list[tuple[np.ndarray, np.ndarray]]


@dataclass
class TightenedBounds:
    """Per-layer pre-activation bounds ``(L, U)`` (the last entry the outputs', unchanged) and
    per hidden layer ``upper_min`` (the least upper-end pre-activation, ``-inf`` where not
    computed), with the number of LPs solved, their time and whether the budget sufficed."""

    bounds: Bounds
    upper_min: list[np.ndarray]
    n_lps: int
    time: float
    complete: bool
    infeasible: bool = False  # an LP relaxation was infeasible: so is the MILP


def lp_tighten_bounds(build: Callable[[Bounds, list[np.ndarray]], tuple[MILP, NetworkEncoding]],
                      inn: IntervalNetwork, bounds: Bounds, *, plain: bool, time_limit: float,
                      max_lps: int = 10_000) -> TightenedBounds:
    """Tighten ``bounds`` (per-layer ``(L, U)``, as :meth:`IntervalNetwork.layer_bounds` for one
    row) over the LP relaxation of the model ``build(bounds, upper_min)`` returns (a fresh
    :class:`MILP` with every constraint of the problem and the network encoded with those
    bounds; its objective is overwritten). ``inn``: the (interval) network encoded, ``plain``:
    whether it is a plain network. The first layer is tightened only when its inputs are
    variables without a sign split (a fixed input point already has exact first-layer
    bounds). See the module docstring."""
    t0 = time.perf_counter()  # the report (TightenedBounds.time) is wall-clock
    budget = Budget(time_limit)  # the budget is CPU (robustce.solvers.clock)
    b = [(np.array(lo, dtype=np.float64).reshape(-1), np.array(hi, dtype=np.float64).reshape(-1))
         for lo, hi in bounds]
    um = [np.full(len(lo), -np.inf) for lo, _ in b[:-1]]
    n_lps, complete = 0, True
    for li in range(len(b) - 1):
        left = budget.remaining()
        if left <= 1e-3 or n_lps >= max_lps:
            complete = False
            break
        milp, enc = build(b, um)
        layer = enc.hidden[li]
        if li == 0:
            if enc.inputs is None or "sign_split" in enc.aux:
                continue
            cols = enc.inputs
        else:
            cols = enc.hidden[li - 1].post
        need = np.flatnonzero(layer.binary >= 0)
        if need.size == 0:
            continue
        _, Wu, _, bu = inn.layers[li]
        milp.relax()
        L, U = np.maximum(b[li][0], layer.lower), np.minimum(b[li][1], layer.upper)
        hmin = np.maximum(um[li], layer.upper_min)
        for i in need:
            for sense in ("max", "min"):
                left = budget.remaining()
                if left <= 1e-3 or n_lps >= max_lps:
                    complete = False
                    break
                milp.set_objective(cols, Wu[i], sense=sense, constant=float(bu[i]))
                r = milp.solve(time_limit=left)
                n_lps += 1
                if r.status is SolveStatus.INFEASIBLE:
                    return TightenedBounds(b, um, n_lps, time.perf_counter() - t0, complete, True)
                if r.status is not SolveStatus.OPTIMAL:
                    continue
                eps = LP_TOL * (1.0 + abs(r.objective))
                if sense == "max":
                    U[i] = min(U[i], r.objective + eps)
                    if U[i] <= 0:
                        break  # off everywhere: no binary, min not needed
                else:
                    hmin[i] = max(hmin[i], r.objective - eps)
            if not complete:
                break
        if plain:
            L = np.maximum(L, hmin)
        b[li] = (np.minimum(L, U), U)
        um[li] = np.minimum(hmin, U)
        if not complete:
            break
    return TightenedBounds(b, um, n_lps, time.perf_counter() - t0, complete)


def l1_ball_max(A: np.ndarray, query: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                weights: np.ndarray, radius: float) -> np.ndarray:
    """Per row ``a`` of ``A`` (m, d), ``max a·(x − q)`` over ``{x : lower ≤ x ≤ upper,
    Σ_j w_j |x_j − q_j| ≤ radius}`` (``-inf`` where that set is empty).

    A fractional knapsack, solved exactly by the greedy rule: column j moves toward the side
    where ``a_j`` gains, by at most its room in the box ``c_j``; it gains ``|a_j|`` per unit and
    costs ``w_j`` per unit of the budget, so columns are filled by decreasing ``|a_j| / w_j``
    until the budget is spent (columns of weight 0 cost nothing and move to the box's edge). A
    query outside the box first pays ``w_j · dist(q_j, [lower_j, upper_j])`` and moves to the
    box (the cost of every point of the box includes it)."""
    A = np.atleast_2d(np.asarray(A, dtype=np.float64))
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    lo = np.asarray(lower, dtype=np.float64).reshape(-1)
    hi = np.asarray(upper, dtype=np.float64).reshape(-1)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    qc = np.clip(q, lo, hi)
    r = float(radius) - float(np.sum(w * np.abs(q - qc)))
    base = A @ (qc - q)  # a·(q' − q): the part every point of the box shares
    if r < 0 or np.any(lo > hi):
        return np.full(A.shape[0], -np.inf)
    room = np.where(A > 0, hi - qc, qc - lo)  # (m, d), ≥ 0
    gain = np.abs(A) * room  # a column moved to the box edge
    free = w <= 0
    out = base + gain[:, free].sum(axis=1)
    if (~free).any():
        wp = w[~free]
        rho = np.abs(A[:, ~free]) / wp
        order = np.argsort(-rho, axis=1, kind="stable")
        cost = np.take_along_axis(room[:, ~free] * wp, order, axis=1)
        g = np.take_along_axis(gain[:, ~free], order, axis=1)
        before = np.cumsum(cost, axis=1) - cost  # budget spent on better columns
        frac = np.clip((r - before) / np.where(cost > 0, cost, 1.0), 0.0, 1.0)
        out = out + (frac * g).sum(axis=1)
    return out


def l1_ball_layer_bounds(network: Any, query: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                         weights: np.ndarray, radius: float,
                         first: tuple[np.ndarray, np.ndarray] | None = None) -> Bounds:
    """Sound pre-activation bounds of every layer of a plain ReLU ``network`` over the box
    ``[lower, upper]`` intersected with the weighted L1 ball ``Σ_j w_j |x_j − q_j| ≤ radius``:
    exact for the first layer (:func:`l1_ball_max` per neuron, both signs), intersected with
    interval bounds over the box, and interval arithmetic after it. Every point of the box
    within the ball has its pre-activations inside them, so they may replace the box's bounds
    whenever the MILP only admits such points (e.g. with the row ``distance ≤ radius``).
    ``first``: other sound first-layer bounds over the MILP's feasible set (e.g. exact ones over
    a convex hull), intersected with the ball's before the propagation."""
    inn = IntervalNetwork.point(network)
    box = [(lo[0], hi[0]) for lo, hi in inn.layer_bounds(lower, upper)]
    W, b = inn.layers[0][0], inn.layers[0][2]
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    # a·(x − q) + a·q + b, with max and −max(−a) as the two ends
    both = l1_ball_max(np.vstack([W, -W]), q, lower, upper, weights, radius)  # rows independent
    m = W.shape[0]
    top = both[:m] + W @ q + b
    bot = -both[m:] + W @ q + b
    if not (np.isfinite(top).all() and np.isfinite(bot).all()):
        # empty ball ∩ box: nothing to bound; keep the box's (the MILP is infeasible anyway)
        return box if first is None else [first] + box[1:]
    lo1, hi1 = np.maximum(box[0][0], bot), np.minimum(box[0][1], top)
    if first is not None:
        lo1, hi1 = np.maximum(lo1, first[0]), np.minimum(hi1, first[1])
    hi1 = np.maximum(hi1, lo1)
    out = [(lo1, hi1)]
    lo, hi = lo1, hi1
    for Wl, _, bl, _ in inn.layers[1:]:
        vlo, vhi = np.maximum(lo, 0.0), np.maximum(hi, 0.0)
        Wp, Wn = np.maximum(Wl, 0.0), np.minimum(Wl, 0.0)
        lo, hi = Wp @ vlo + Wn @ vhi + bl, Wp @ vhi + Wn @ vlo + bl
        k = len(out)
        lo, hi = np.maximum(lo, box[k][0]), np.minimum(hi, box[k][1])
        hi = np.maximum(hi, lo)
        out.append((lo, hi))
    return out
