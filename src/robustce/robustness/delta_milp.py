"""The worst-case MILP of the exact Δ-test, and the witness read off its solution.

For a counterfactual ``x`` (a fixed point), a target class ``t`` and the box
Δ = {θ' : |θ' − θ| ≤ δ}, :class:`DeltaMILP` computes ``min_{θ' ∈ Δ} margin_t(θ'(x))`` exactly.

Why the MILP is exact
---------------------
Write ``v⁰ = x`` and ``v^l`` for the post-ReLU activations. Every neuron ``i`` of layer ``l``
owns its weight row and bias, so given the previous layer's values the neurons of layer ``l``
choose their pre-activations *independently*. For a fixed previous layer ``v``, the set of
values neuron ``i`` can take as its row ranges over the box is the interval

    [ W⁻_i v⁺ + W⁺_i v⁻ + b⁻_i ,  W⁺_i v⁺ + W⁻_i v⁻ + b⁺_i ]      (v⁺ = max(v,0), v⁻ = min(v,0))

(each product ``w·v_j`` is linear in ``w``, so its extremes sit at the box ends chosen by the
sign of ``v_j``; the interval is connected because the row box is). For the hidden layers
``v ≥ 0``, so the two ends are the *linear* functions ``lo_i(v) = W⁻_i v + b⁻_i`` and
``hi_i(v) = W⁺_i v + b⁺_i``; for the first layer ``x`` is a constant, so its interval is a
constant of either sign (the sign-aware rule — this is why inputs of any sign are fine for a
fixed point). Hence the reachable set of activation vectors is exactly

    { (v¹, …, v^L) : relu(lo(v^{l-1})) ≤ v^l ≤ relu(hi(v^{l-1})) for every layer },

and the output margin for a chosen competitor ``j`` is minimised at ``lo_t(v^L) − hi_j(v^L)``.
Each constraint is a ReLU of an affine function, which a MILP encodes exactly
(:func:`robustce.solvers.encodings.encode_interval_network`): the left inequality is convex,
the right one needs one binary per neuron whose upper end can change sign, with big-M from
interval bounds. So the MILP optimum over the interval network *equals* the true worst case over
Δ — it is not a relaxation. Per-neuron interval propagation alone (``IntervalNetwork.bounds``)
is only a sound lower bound: it lets different neurons of the next layer see the same
activation at different ends of its range.

Imported models (:class:`~robustce.models.network.ReLUNetwork` with an input map, identity
layers, a shift scale) keep this argument. The fixed input map turns ``x`` into the constant
``z = A x + c`` before the first shifted layer. A layer without activation reaches exactly
``lo(v) ≤ v' ≤ hi(v)`` (two linear rows); its values may be negative, so the next layer takes
its ends sign-aware with an exact split ``v = v⁺ − v⁻`` where a range straddles 0. Fixed or
rescaled entries only change the box ``[W⁻, W⁺]``; each neuron still owns its row.

A witness is read off the MILP solution: layer by layer, with the activations the witness
itself produces, each neuron's weight row is interpolated between its lower-end and upper-end
choice so that its pre-activation equals the MILP's value. The witness lies in Δ by
construction and is checked by a plain forward pass.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.models.network import IntervalNetwork, ReLUNetwork
from robustce.robustness.attack import flips_prediction
from robustce.robustness.shift import ParameterShift
from robustce.solvers.clock import Budget
from robustce.solvers.encodings import InputVars, encode_interval_network
from robustce.solvers.milp import MILP, SolveStatus
from robustce.solvers.relu_cuts import root_cut_rounds
from robustce.solvers.tightening import lp_tighten_bounds

__all__ = ["DeltaMILP", "MILPOutcome", "witness_from_activations"]


def witness_from_activations(inn: IntervalNetwork, base: ReLUNetwork, x: np.ndarray,
                              post: list[np.ndarray], out_choice: dict[int, str]) -> ReLUNetwork:
    """A network in Δ whose hidden pre-activations match the MILP's activations ``post``
    (interpolating each row between its lower- and upper-end choice) and whose output rows in
    ``out_choice`` sit at the given end ('lo' / 'hi'); other output rows keep the base. On a
    structured ``base`` the rows are its ``layers`` (input map applied first; an identity
    layer's value is matched as it is, a ReLU layer's through the ReLU)."""
    h = np.asarray(x, dtype=np.float64)
    if inn.input_map is not None:
        A, c = inn.input_map
        h = A @ h + c
    weights = []
    last = len(inn.layers) - 1
    for li, (Wl, Wu, bl, bu) in enumerate(inn.layers):
        pos = h >= 0
        w_lo = np.where(pos[None, :], Wl, Wu)
        w_hi = np.where(pos[None, :], Wu, Wl)
        z_lo, z_hi = w_lo @ h + bl, w_hi @ h + bu
        width = z_hi - z_lo
        if li < last:
            relu = inn.activations[li] == "relu"
            target = np.asarray(post[li], dtype=np.float64)
            if relu:
                target = np.where(target > 0, target, np.minimum(z_lo, 0.0))
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(width > 0, (target - z_lo) / width, 0.0)
            frac = np.clip(frac, 0.0, 1.0)
            # clipped: the interpolation may round a parameter an ulp past its end of the box
            W = np.clip(w_lo + frac[:, None] * (w_hi - w_lo), Wl, Wu)
            b = np.clip(bl + frac * (bu - bl), bl, bu)
            h = W @ h + b
            if relu:
                h = np.maximum(h, 0.0)
        else:
            W0, b0 = base.layers[-1]
            W, b = W0.copy(), b0.copy()
            for k, end in out_choice.items():
                if end == "lo":
                    W[k], b[k] = w_lo[k], bl[k]
                else:
                    W[k], b[k] = w_hi[k], bu[k]
        weights.append((W, b))
    return base.with_layers(weights)


@dataclass
class MILPOutcome:
    """One counterfactual's worst-case MILP(s): the exact value (NaN unless solved to
    optimality without ``decide_only``), the proven lower bound, the solver status and the
    witness network (with its margin and whether it flips the prediction)."""

    value: float
    lower: float
    status: SolveStatus
    witness: ReLUNetwork | None
    witness_margin: float
    flips: bool
    time: float
    message: str = ""


class DeltaMILP:
    """Builds and solves the worst-case MILP for single counterfactuals.

    ``mode="rebuild"``: one model per counterfactual with the input as a constant (first layer
    reduces to variable bounds; tightest per-point big-M). ``mode="reuse"``: one model for the
    whole batch with input variables over the batch's bounding box; per counterfactual only
    bounds change (inputs fixed, activation bounds tightened, binaries of neurons stable at that
    point fixed).

    ``bound_tightening="lp"`` (rebuild mode): before the solve, the bounds of the neurons that
    need a binary are tightened by LPs over the relaxation
    (:func:`robustce.solvers.tightening.lp_tighten_bounds`, at most a quarter of the time
    limit); "interval" (default): the bounds as given (interval or back-substituted,
    :mod:`robustce.robustness.bounds`). Same optimum either way.

    ``reduce_last=True`` (rebuild mode, one output): each neuron of the last hidden layer keeps
    only the side of ``relu(lo) ≤ v ≤ relu(hi)`` the objective presses against (the sign of
    its output weight): the other side, and its binary, is dropped — exact for that objective
    (see ``last_side`` of :func:`~robustce.solvers.encodings.encode_interval_network`).

    ``cut_rounds > 0`` (rebuild mode, plain networks): before the first solve, that many
    rounds of root cuts from the ideal single-neuron formulation
    (:mod:`robustce.solvers.relu_cuts`); the root LP bounds seen are kept in
    ``last_root_bounds``. Same optimum; measured slower, so off by default.
    """

    def __init__(self, net: ReLUNetwork, inn: IntervalNetwork, shift: ParameterShift, *, solver: str,
                 time_limit: float, threads: int, mode: str, box: tuple[np.ndarray, np.ndarray] | None,
                 mip_gap: float, abs_gap: float, bound_tightening: str = "interval",
                 reduce_last: bool = False, cut_rounds: int = 0):
        self.net, self.inn, self.shift = net, inn, shift
        self.cut_rounds = cut_rounds
        self.last_root_bounds: list[float] = []
        self.reduce_last = reduce_last
        self.bound_tightening = bound_tightening
        self.solver, self.time_limit, self.threads = solver, time_limit, threads
        self.mode = mode
        self.mip_gap, self.abs_gap = mip_gap, abs_gap
        self.shared: tuple[MILP, Any] | None = None
        if mode == "reuse":
            if box is None:
                raise ValidationError("reuse mode needs an input box")
            milp = self._new_milp()
            enc = encode_interval_network(milp, inn, _input_vars(milp, box), plain=False)
            self.shared = (milp, enc)

    def _new_milp(self) -> MILP:
        # feasibility jump costs more than it finds on these small MILPs (measured)
        opts = {"mip_heuristic_run_feasibility_jump": False} if self.solver == "highs" else {}
        return MILP(self.solver, time_limit=self.time_limit, threads=self.threads,
                    mip_gap=self.mip_gap, abs_gap=self.abs_gap, options=opts)

    def _last_side(self, t: int) -> np.ndarray | None:
        """Per last-hidden neuron, the side the objective presses against (``reduce_last``):
        the sign of its coefficient in ``min lo_0`` (target 1) or ``min −hi_0`` (target 0)."""
        if not self.reduce_last or self.net.n_outputs != 1 or not self.net.plain:
            return None
        Wl, Wu, _, _ = self.inn.layers[-1]
        return np.sign(Wl[0] if t == 1 else -Wu[0]).astype(np.int64)

    def _model_for(self, x: np.ndarray, bounds: list[tuple[np.ndarray, np.ndarray]],
                   upper_min: list[np.ndarray] | None, t: int) -> tuple[MILP, Any]:
        if self.shared is None:
            side = self._last_side(t)
            milp = self._new_milp()
            enc = encode_interval_network(milp, self.inn, x, bounds=bounds, plain=False,
                                          upper_min=upper_min, last_side=side)
            if (self.bound_tightening == "lp" and enc.n_binaries > 0 and self.net.plain):
                um0 = upper_min

                def build(b, um):
                    m = MILP(self.solver, time_limit=self.time_limit, threads=self.threads,
                             presolve=False)
                    if um0 is not None:
                        um = [np.maximum(u, u0) for u, u0 in zip(um, um0, strict=False)]
                    return m, encode_interval_network(m, self.inn, x, bounds=b, plain=False,
                                                      upper_min=um, last_side=side)
                tb = lp_tighten_bounds(build, self.inn, bounds, plain=False,
                                       time_limit=0.25 * self.time_limit)
                um_t = tb.upper_min if um0 is None else [
                    np.maximum(u, u0) for u, u0 in zip(tb.upper_min, um0, strict=False)]
                milp = self._new_milp()
                enc = encode_interval_network(milp, self.inn, x, bounds=tb.bounds, plain=False,
                                              upper_min=um_t, last_side=side)
            return milp, enc
        milp, enc = self.shared
        milp.set_var_bounds(enc.inputs, x, x)
        # tighten hidden activations to this point's bounds; fix binaries of stable neurons
        cols, lbs, ubs = [], [], []
        prev_lo, prev_hi = None, None
        for li, layer in enumerate(enc.hidden):
            L, U = bounds[li]
            if li == 0:
                hi_min = U  # fixed point: the upper end is a constant
            else:
                _, Wu, _, bu = self.inn.layers[li]
                hi_min = np.maximum(Wu, 0) @ prev_lo + np.minimum(Wu, 0) @ prev_hi + bu
            if upper_min is not None:
                hi_min = np.maximum(hi_min, upper_min[li])
            vlo, vhi = np.maximum(L, 0.0), np.maximum(U, 0.0)
            cols.append(layer.post)
            lbs.append(np.minimum(vlo, vhi))
            ubs.append(vhi)
            has_b = layer.binary >= 0
            if has_b.any():
                bl = np.zeros(has_b.sum())
                bu_ = np.ones(has_b.sum())
                on = hi_min[has_b] >= 0
                off = U[has_b] <= 0
                bl[on] = 1.0
                bu_[off] = 0.0
                bl = np.minimum(bl, bu_)
                cols.append(layer.binary[has_b])
                lbs.append(bl)
                ubs.append(bu_)
            prev_lo, prev_hi = vlo, vhi
        if cols:
            milp.set_var_bounds(np.concatenate(cols), np.concatenate(lbs), np.concatenate(ubs))
        return milp, enc

    def solve(self, x: np.ndarray, t: int, bounds: list[tuple[np.ndarray, np.ndarray]],
              terms: np.ndarray, deadline_s: float, decide_only: bool, tol: float,
              upper_min: list[np.ndarray] | None = None) -> MILPOutcome:
        """Worst case for one counterfactual. Binary: one MILP. K classes: one MILP per
        competitor ``j`` (objective ``lo_t − hi_j``), in order of their interval bounds, skipping
        those whose bound cannot beat the incumbent. ``decide_only``: each MILP only decides the
        sign (cutoff at ``tol``, stop at the first incumbent ≤ ``−tol``). An incumbent that
        only ties (margin in (−tol, 0], e.g. every logit equal where all last-layer neurons are
        off) does not decide: its witness need not flip the prediction, so the search goes on
        (to that competitor's optimum, then the other competitors). ``bounds`` / ``upper_min``:
        this point's per-layer bounds (see :class:`robustce.robustness.bounds.LayerBounds`)."""
        t0 = time.perf_counter()  # the report (MILPOutcome's time) is wall-clock
        budget = Budget(deadline_s, self.threads)  # the budget: CPU seconds (robustce.solvers.clock)
        milp, enc = self._model_for(x, bounds, upper_min, t)
        k = self.net.n_outputs
        if k == 1:
            jobs: list[tuple[int, float]] = [(0, -math.inf)]
        else:
            jobs = [(int(j), float(terms[j])) for j in np.argsort(terms, kind="stable") if j != t]
        best_val, best_sol, best_job = math.inf, None, None
        lower = math.inf
        failed: SolveStatus | None = None
        message = ""
        for j, term_lb in jobs:
            if term_lb >= best_val or (decide_only and best_val <= -tol):
                lower = min(lower, term_lb)  # cannot change the answer
                continue
            remaining = budget.remaining()
            if remaining <= 1e-3:
                failed = failed or SolveStatus.TIME_LIMIT
                message = message or f"{budget.stop_text()} reached"
                lower = min(lower, term_lb)
                continue
            if k == 1:
                col, coef = (enc.out_lower[0], 1.0) if t == 1 else (enc.out_upper[0], -1.0)
                milp.set_objective([col], [coef], sense="min")
            else:
                milp.set_objective([enc.out_lower[t], enc.out_upper[j]], [1.0, -1.0], sense="min")
            if self.cut_rounds and self.shared is None and self.net.plain and k == 1:
                self.last_root_bounds = root_cut_rounds(milp, enc, self.inn, self.cut_rounds,
                                                        remaining)
                remaining = budget.remaining()
            if decide_only:
                res = milp.solve(time_limit=remaining, cutoff=tol, target=-tol)
            else:
                cut = best_val + 1e-9 if math.isfinite(best_val) else None
                res = milp.solve(time_limit=remaining, cutoff=cut)
            st = res.status
            if st in (SolveStatus.OPTIMAL, SolveStatus.CUTOFF):
                b = res.bound if math.isfinite(res.bound) else res.objective
            elif st in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT, SolveStatus.TARGET):
                b = max(res.bound, term_lb) if math.isfinite(res.bound) else term_lb
                if st is not SolveStatus.TARGET:
                    failed = failed or st
                    message = res.message
            else:  # infeasible / unbounded cannot happen for a consistent encoding
                b = term_lb
                failed, message = SolveStatus.ERROR, f"worst-case MILP: {st.value} ({res.message})"
            lower = min(lower, b)
            if res.has_solution and res.objective < best_val:
                best_val, best_sol, best_job = res.objective, res.values, j
        witness, wm, flips = None, math.nan, False
        if best_sol is not None:
            post = [best_sol[layer.post] for layer in enc.hidden]
            choice = {0: "lo" if t == 1 else "hi"} if k == 1 else {t: "lo", best_job: "hi"}
            witness = witness_from_activations(self.inn, self.net, x, post, choice)
            if self.shift.contains(self.net, witness, atol=1e-9):
                flips, wm = flips_prediction(witness, x, t)
            else:  # pragma: no cover - interpolation stays in the box by construction
                witness, message = None, "witness left Δ (numerical); dropped"
        if failed is not None:
            status = failed
        elif decide_only and best_sol is not None and best_val <= 0:
            status = SolveStatus.TARGET
        else:
            status = SolveStatus.OPTIMAL
        exact = status is SolveStatus.OPTIMAL and not decide_only and best_sol is not None
        return MILPOutcome(best_val if exact else math.nan, lower, status, witness, wm, flips,
                       time.perf_counter() - t0, message)


def _input_vars(milp: MILP, box: tuple[np.ndarray, np.ndarray]) -> InputVars:
    lo, hi = box
    idx = milp.add_vars(len(lo), lo, hi)
    return InputVars(idx, lo, hi)
