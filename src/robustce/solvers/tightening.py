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

import numpy as np

from robustce.models.network import IntervalNetwork
from robustce.solvers.encodings import NetworkEncoding
from robustce.solvers.milp import MILP, SolveStatus

__all__ = ["TightenedBounds", "lp_tighten_bounds"]

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
    t0 = time.perf_counter()
    b = [(np.array(lo, dtype=np.float64).reshape(-1), np.array(hi, dtype=np.float64).reshape(-1))
         for lo, hi in bounds]
    um = [np.full(len(lo), -np.inf) for lo, _ in b[:-1]]
    n_lps, complete = 0, True
    for li in range(len(b) - 1):
        left = time_limit - (time.perf_counter() - t0)
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
                left = time_limit - (time.perf_counter() - t0)
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
