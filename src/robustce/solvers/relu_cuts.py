"""Cuts of the ideal single-neuron ReLU formulation (Anderson et al. 2020) for the worst-case
MILP of the exact Δ-test — an experiment kept as an option (issue 33), off by default.

In :func:`~robustce.solvers.encodings.encode_interval_network` a hidden neuron whose upper end
``hi(v) = W⁺ v + b⁺`` can change sign over the box ``v ∈ [l, u]`` (``v ≥ 0``) gets a binary
``z`` and the big-M rows ``y ≤ hi(v) − L(1 − z)``, ``y ≤ U z``. Those two rows are the extreme
members (``I`` = all inputs, ``I = ∅``) of the family that describes the convex hull of
``{(v, y, z) : y ≤ relu(hi(v)), z = [hi(v) ≥ 0]}`` over the box, one row per subset ``I``::

    y ≤ Σ_{i∈I} w_i (v_i − l̆_i (1 − z)) + (b + Σ_{i∉I} w_i ŭ_i) z

with ``w = W⁺`` row, ``l̆_i, ŭ_i`` = ``l_i, u_i`` where ``w_i ≥ 0`` and ``u_i, l_i`` where
``w_i < 0``. Every member is valid (at ``z = 1`` it is ``≥ hi(v)``, at ``z = 0`` it is ``≥ 0``),
so adding any of them never changes the MILP optimum. The most violated member at an LP point
``(v*, y*, z*)`` takes ``i ∈ I`` exactly where ``w_i (v*_i − l̆_i (1 − z*)) < w_i ŭ_i z*``
(linear-time separation).

Measured (``benchmarks/bench_deep.py --rows ideal_cuts``, benchmarks/README.md): five rounds at
the root close about a fifth of the root gap on 10-50-50-50-1 and make the MILP slower — the
gap left is between neurons, not within one. Hence off by default.
"""

from __future__ import annotations

import numpy as np

from robustce.models.network import IntervalNetwork
from robustce.solvers.encodings import NetworkEncoding
from robustce.solvers.milp import MILP

__all__ = ["add_ideal_relu_cuts", "most_violated_cuts", "root_cut_rounds"]


def most_violated_cuts(W: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                       v: np.ndarray, z: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For neurons ``y_k ≤ relu(W_k v + b_k)`` over the box ``lo ≤ v ≤ hi`` (``v ≥ 0``), the
    member of the ideal family most violated at ``(v, z)`` (one point, ``z`` per neuron).

    Returns ``(member, coef_z, const, value)``: the cut of neuron ``k`` reads
    ``y_k ≤ Σ_{i: member[k, i]} W[k, i] v_i + coef_z[k] z_k + const[k]``; ``value[k]`` is its
    right-hand side at the given point (a violated cut has ``y_k > value[k]``)."""
    z = np.asarray(z, dtype=np.float64)[:, None]
    l_end = np.where(W >= 0, lo, hi)  # l̆ per (neuron, input)
    u_end = np.where(W >= 0, hi, lo)  # ŭ
    in_part = W * (v[None, :] - l_end * (1.0 - z))
    out_part = W * u_end * z
    member = in_part < out_part
    wl = np.where(member, W * l_end, 0.0).sum(axis=1)
    coef_z = wl + b + np.where(member, 0.0, W * u_end).sum(axis=1)
    value = np.where(member, in_part, out_part).sum(axis=1) + b * z[:, 0]
    return member, coef_z, -wl, value


def add_ideal_relu_cuts(milp: MILP, enc: NetworkEncoding, inn: IntervalNetwork,
                        values: np.ndarray, tol: float = 1e-6) -> int:
    """Add, for every hidden neuron with a binary past the first layer, the ideal-formulation
    cut most violated at ``values`` (an LP solution of ``milp``) if it is violated by more than
    ``tol``. Plain ReLU stacks only (no input map, no identity layers). Returns the number of
    cuts added."""
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    coefs: list[np.ndarray] = []
    ubs: list[float] = []
    for li in range(1, len(enc.hidden)):
        layer, prev = enc.hidden[li], enc.hidden[li - 1]
        has = np.flatnonzero(layer.binary >= 0)
        if has.size == 0:
            continue
        _, Wu, _, bu = inn.layers[li]
        W = Wu[has]
        member, coef_z, const, value = most_violated_cuts(
            W, bu[has], np.maximum(prev.lower, 0.0), np.maximum(prev.upper, 0.0),
            values[prev.post], values[layer.binary[has]])
        for k in np.flatnonzero(values[layer.post[has]] > value + tol):
            m = member[k]
            # y − Σ_member w v − coef_z z ≤ const
            c = np.concatenate([[layer.post[has[k]]], prev.post[m], [layer.binary[has[k]]]])
            rows.append(np.full(c.size, len(ubs)))
            cols.append(c)
            coefs.append(np.concatenate([[1.0], -W[k][m], [-coef_z[k]]]))
            ubs.append(float(const[k]))
    if ubs:
        milp.add_constrs_coo(np.concatenate(rows), np.concatenate(cols), np.concatenate(coefs),
                             len(ubs), -np.inf, np.asarray(ubs))
    return len(ubs)


def root_cut_rounds(milp: MILP, enc: NetworkEncoding, inn: IntervalNetwork, rounds: int,
                    time_limit: float) -> list[float]:
    """Up to ``rounds`` rounds of: solve the LP relaxation (the objective already set), add the
    violated cuts of :func:`add_ideal_relu_cuts`; stops early when none is violated. Returns
    the root LP bounds seen (before the first round, and after each round that added cuts)."""
    bounds: list[float] = []
    for _ in range(rounds):
        res = milp.solve_relaxation(time_limit)
        if not res.has_solution:
            break
        bounds.append(float(res.objective))
        if add_ideal_relu_cuts(milp, enc, inn, res.values) == 0:
            break
    else:
        res = milp.solve_relaxation(time_limit)
        if res.has_solution:
            bounds.append(float(res.objective))
    return bounds
