"""Exact Δ-robustness certification of counterfactuals (PROPLACE Def. 7, APΔS Alg. 4's test).

Question: given a ReLU network θ, a counterfactual ``x`` (a fixed point) and the box
Δ = {θ' : |θ' − θ| ≤ δ elementwise} (p = ∞), what is the worst-case target margin

    m*(x) = min_{θ' ∈ Δ} margin_t(θ'(x))

(binary: the logit for target 1, minus it for target 0; K classes: ``min_{j≠t} z_t − z_j``)?
``x`` is Δ-robust iff ``m*(x) > 0``.

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

A witness is read off the MILP solution: layer by layer, with the activations the witness
itself produces, each neuron's weight row is interpolated between its lower-end and upper-end
choice so that its pre-activation equals the MILP's value. The witness lies in Δ by
construction and is checked by a plain forward pass.

Procedure (per batch, vectorised where it can be)
-------------------------------------------------
1. interval propagation for all counterfactuals at once: lower bound of the margin > 0 →
   ``robust`` (``decided_by="interval"``);
2. the base network and a cheap sign-gradient attack on the weights (vertices of Δ, batched
   over counterfactuals): a realisation that flips the prediction → ``not_robust`` with that
   witness (``decided_by="attack"``);
3. the MILP for the rest (``decided_by="milp"``). A timed-out MILP still decides when its dual
   bound is positive (robust) or its incumbent flips (not robust); otherwise the status is
   ``timeout`` — never robust.

With ``precheck=False`` every counterfactual goes to the MILP and ``value`` is the exact worst
case everywhere; otherwise ``value`` is NaN where steps 1–2 decided and ``lower`` / ``upper``
bracket the worst case.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.models.network import (
    IntervalNetwork,
    ReLUNetwork,
    as_network,
    class_margin,
    margin_terms,
    model_space_rows,
    resolve_targets,
)
from robustce.robustness.shift import ParameterShift
from robustce.solvers.encodings import InputVars, encode_interval_network
from robustce.solvers.milp import MILP, SolveStatus, _check_time_limit, check_solver

__all__ = [
    "DeltaStatus",
    "ExactResult",
    "exact_worst_case",
    "is_delta_robust",
    "point_layer_bounds",
    "resolve_targets",
    "sign_attack",
]


class DeltaStatus(StrEnum):
    """Outcome of the exact Δ-test for one counterfactual. Only ``ROBUST`` is a proof."""

    ROBUST = "robust"
    NOT_ROBUST = "not_robust"  # with a witness network in Δ that flips the prediction
    TIMEOUT = "timeout"  # the MILP hit its time limit without deciding
    INCONCLUSIVE = "inconclusive"  # worst case within solver tolerance of 0, no flipping witness
    ERROR = "error"  # solver failure or unusable input row


@dataclass
class ExactResult:
    """Per-counterfactual outcome of :func:`exact_worst_case` (arrays of length n).

    ``value``: exact worst-case target margin over Δ (NaN where not computed by a MILP solved
    to optimality). ``lower`` / ``upper``: certified bounds on it (``lower`` from intervals or the
    MILP dual bound; ``upper`` attained by a concrete network: the base, an attack or the
    witness). ``status``: :class:`DeltaStatus` values; ``solver_status``: the MILP's
    :class:`~robustce.solvers.SolveStatus` (None where no MILP ran). ``decided_by``:
    ``"interval"``, ``"attack"``, ``"milp"`` or ``""`` (undecided). ``witness``: a
    :class:`ReLUNetwork` in Δ attaining ``upper`` (None for interval decisions).
    ``time``: seconds spent per counterfactual (MILP and witness; the batched prechecks are
    shared and reported in ``meta["precheck_time"]``).
    """

    value: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    status: np.ndarray
    solver_status: list[SolveStatus | None]
    decided_by: np.ndarray
    witness: list[ReLUNetwork | None]
    time: np.ndarray
    target_class: np.ndarray
    shift: ParameterShift
    solver: str
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.value)

    @property
    def robust(self) -> np.ndarray:
        """True only where Δ-robustness is proven."""
        return np.array([s == DeltaStatus.ROBUST for s in self.status], dtype=bool)

    @property
    def not_robust(self) -> np.ndarray:
        return np.array([s == DeltaStatus.NOT_ROBUST for s in self.status], dtype=bool)

    def certificate(self, i: int) -> dict[str, Any]:
        """What counterfactual ``i``'s claim was computed with — enough to re-check it."""
        ss = self.solver_status[i]
        return {
            "delta": self.shift.delta,
            "p": "inf",
            "biases": self.shift.biases,
            "target_class": int(self.target_class[i]),
            "status": str(self.status[i]),
            "decided_by": str(self.decided_by[i]),
            "solver": self.solver if ss is not None else None,
            "solver_status": None if ss is None else str(ss),
            "value": _num(self.value[i]),
            "lower": _num(self.lower[i]),
            "upper": _num(self.upper[i]),
            "time": float(self.time[i]),
            "tol": self.meta.get("tol"),
        }

    def certificates(self) -> list[dict[str, Any]]:
        return [self.certificate(i) for i in range(len(self))]

    def to_frame(self) -> pd.DataFrame:
        """One row per counterfactual: the certificate fields."""
        return pd.DataFrame(self.certificates())


def _num(v: float) -> float | None:
    v = float(v)
    return None if math.isnan(v) else v


# --- helpers -----------------------------------------------------------------------------------


def _flips(net: ReLUNetwork, x: np.ndarray, t: int) -> tuple[bool, float]:
    """Whether ``net`` does not predict ``t`` at ``x`` (predict semantics), and its margin."""
    z = net.forward(x[None, :])
    m = float(class_margin(z, int(t))[0])
    pred = int(net.predict(x[None, :])[0])
    return pred != int(t), m


def sign_attack(network: Any, X: np.ndarray, shift: ParameterShift | np.ndarray, target_class: Any,
                steps: int = 4, chunk_elements: int = 4_000_000, biases: bool = True
                ) -> tuple[np.ndarray, list[list[tuple[np.ndarray, np.ndarray]]]]:
    """A cheap falsifier: iterated sign-gradient steps on the weights (each a vertex of Δ),
    batched over rows. Returns the best (lowest) margin per row and, per row, its weights.
    ``shift``: a :class:`ParameterShift`, or per-row radii δ (then ``biases`` says whether
    biases move too).

    Not a proof of anything; it only supplies concrete networks in Δ that often flip
    non-robust counterfactuals without a MILP.
    """
    net = as_network(network)
    X = net.check_inputs(X)
    t = resolve_targets(target_class, len(X), network=net, X=X)
    n = len(X)
    if isinstance(shift, ParameterShift):
        deltas = np.full(n, shift.delta)
        biases = shift.biases
    else:
        deltas = np.broadcast_to(np.asarray(shift, dtype=np.float64), (n,)).copy()
    n_params = sum(W.size + b.size for W, b in net.weights)
    step = max(1, int(chunk_elements // max(n_params, 1)))
    best = np.full(n, np.inf)
    best_w: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(n)]
    base = net.weights
    L = len(base)
    for s0 in range(0, n, step):
        xs, ts = X[s0:s0 + step], t[s0:s0 + step]
        m = len(xs)
        dW = deltas[s0:s0 + step][:, None, None]
        dB = dW[:, :, 0] if biases else 0.0
        Ws = [np.broadcast_to(W, (m,) + W.shape).copy() for W, _ in base]
        bs = [np.broadcast_to(b, (m,) + b.shape).copy() for _, b in base]
        cbest = np.full(m, np.inf)
        cw: list[Any] = [None] * m
        for it in range(steps + 1):
            hs = [xs]
            pre = []
            h = xs
            for li in range(L):
                z = np.einsum("noi,ni->no", Ws[li], h) + bs[li]
                pre.append(z)
                h = np.maximum(z, 0.0) if li < L - 1 else z
                if li < L - 1:
                    hs.append(h)
            marg = class_margin(h, ts)
            better = marg < cbest
            if better.any():
                cbest[better] = marg[better]
                for r in np.flatnonzero(better):
                    cw[r] = [(Ws[li][r].copy(), bs[li][r].copy()) for li in range(L)]
            if it == steps:
                break
            # gradient of the margin w.r.t. the output logits
            if h.shape[1] == 1:
                g = np.where(ts == 1, 1.0, -1.0)[:, None]
            else:
                other = h.copy()
                other[np.arange(m), ts] = -np.inf
                jstar = other.argmax(axis=1)
                g = np.zeros_like(h)
                g[np.arange(m), ts] = 1.0
                g[np.arange(m), jstar] -= 1.0
            new_W, new_b = [None] * L, [None] * L
            for li in range(L - 1, -1, -1):
                gW = g[:, :, None] * hs[li][:, None, :]
                new_W[li] = base[li][0][None] - dW * np.sign(gW)
                new_b[li] = base[li][1][None] - dB * np.sign(g)
                if li > 0:
                    g = np.einsum("noi,no->ni", Ws[li], g) * (pre[li - 1] > 0)
            Ws, bs = new_W, new_b
        best[s0:s0 + m] = cbest
        for r in range(m):
            best_w[s0 + r] = cw[r]
    return best, best_w


def _witness_from_activations(inn: IntervalNetwork, base: ReLUNetwork, x: np.ndarray,
                              post: list[np.ndarray], out_choice: dict[int, str]) -> ReLUNetwork:
    """A network in Δ whose hidden pre-activations match the MILP's activations ``post``
    (interpolating each row between its lower- and upper-end choice) and whose output rows in
    ``out_choice`` sit at the given end ('lo' / 'hi'); other output rows keep the base."""
    h = np.asarray(x, dtype=np.float64)
    weights = []
    last = len(inn.layers) - 1
    for li, (Wl, Wu, bl, bu) in enumerate(inn.layers):
        pos = h >= 0
        w_lo = np.where(pos[None, :], Wl, Wu)
        w_hi = np.where(pos[None, :], Wu, Wl)
        z_lo, z_hi = w_lo @ h + bl, w_hi @ h + bu
        width = z_hi - z_lo
        if li < last:
            target = np.asarray(post[li], dtype=np.float64)
            target = np.where(target > 0, target, np.minimum(z_lo, 0.0))
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(width > 0, (target - z_lo) / width, 0.0)
            frac = np.clip(frac, 0.0, 1.0)
            W = w_lo + frac[:, None] * (w_hi - w_lo)
            b = bl + frac * (bu - bl)
            h = np.maximum(W @ h + b, 0.0)
        else:
            W0, b0 = base.weights[-1]
            W, b = W0.copy(), b0.copy()
            for k, end in out_choice.items():
                if end == "lo":
                    W[k], b[k] = w_lo[k], bl[k]
                else:
                    W[k], b[k] = w_hi[k], bu[k]
        weights.append((W, b))
    return ReLUNetwork(weights)


# --- the MILP engine -----------------------------------------------------------------------------


@dataclass
class _Solved:
    value: float
    lower: float
    status: SolveStatus
    witness: ReLUNetwork | None
    witness_margin: float
    flips: bool
    time: float
    message: str = ""


class _DeltaMILP:
    """Builds and solves the worst-case MILP for single counterfactuals.

    ``mode="rebuild"``: one model per counterfactual with the input as a constant (first layer
    reduces to variable bounds; tightest per-point big-M). ``mode="reuse"``: one model for the
    whole batch with input variables over the batch's bounding box; per counterfactual only
    bounds change (inputs fixed, activation bounds tightened, binaries of neurons stable at that
    point fixed).
    """

    def __init__(self, net: ReLUNetwork, inn: IntervalNetwork, shift: ParameterShift, *, solver: str,
                 time_limit: float, threads: int, mode: str, box: tuple[np.ndarray, np.ndarray] | None,
                 mip_gap: float, abs_gap: float):
        self.net, self.inn, self.shift = net, inn, shift
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

    def _model_for(self, x: np.ndarray, bounds: list[tuple[np.ndarray, np.ndarray]]) -> tuple[MILP, Any]:
        if self.shared is None:
            milp = self._new_milp()
            enc = encode_interval_network(milp, self.inn, x, bounds=bounds, plain=False)
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
              terms: np.ndarray, deadline_s: float, decide_only: bool, tol: float) -> _Solved:
        """Worst case for one counterfactual. Binary: one MILP. K classes: one MILP per
        competitor ``j`` (objective ``lo_t − hi_j``), in order of their interval bounds, skipping
        those whose bound cannot beat the incumbent. ``decide_only``: each MILP only decides the
        sign (cutoff at ``tol``, stop at the first incumbent ≤ 0)."""
        t0 = time.perf_counter()
        milp, enc = self._model_for(x, bounds)
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
            if term_lb >= best_val or (decide_only and best_val <= 0):
                lower = min(lower, term_lb)  # cannot change the answer
                continue
            remaining = deadline_s - (time.perf_counter() - t0)
            if remaining <= 1e-3:
                failed = failed or SolveStatus.TIME_LIMIT
                lower = min(lower, term_lb)
                continue
            if k == 1:
                col, coef = (enc.out_lower[0], 1.0) if t == 1 else (enc.out_upper[0], -1.0)
                milp.set_objective([col], [coef], sense="min")
            else:
                milp.set_objective([enc.out_lower[t], enc.out_upper[j]], [1.0, -1.0], sense="min")
            if decide_only:
                res = milp.solve(time_limit=remaining, cutoff=tol, target=0.0)
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
            witness = _witness_from_activations(self.inn, self.net, x, post, choice)
            if self.shift.contains(self.net, witness, atol=1e-9):
                flips, wm = _flips(witness, x, t)
            else:  # pragma: no cover - interpolation stays in the box by construction
                witness, message = None, "witness left Δ (numerical); dropped"
        if failed is not None:
            status = failed
        elif decide_only and best_sol is not None and best_val <= 0:
            status = SolveStatus.TARGET
        else:
            status = SolveStatus.OPTIMAL
        exact = status is SolveStatus.OPTIMAL and not decide_only and best_sol is not None
        return _Solved(best_val if exact else math.nan, lower, status, witness, wm, flips,
                       time.perf_counter() - t0, message)


def _input_vars(milp: MILP, box: tuple[np.ndarray, np.ndarray]) -> InputVars:
    lo, hi = box
    idx = milp.add_vars(len(lo), lo, hi)
    return InputVars(idx, lo, hi)


# --- public API ------------------------------------------------------------------------------------


def point_layer_bounds(net: ReLUNetwork, X: np.ndarray, deltas: np.ndarray, biases: bool = True,
                       chunk_elements: int = 4_000_000) -> list[tuple[np.ndarray, np.ndarray]]:
    """Interval pre-activation bounds of every layer at point inputs ``X`` with a *per-row*
    radius ``deltas`` (sign-aware first layer, exact per neuron; chunked over rows)."""
    X = np.asarray(X, dtype=np.float64)
    deltas = np.asarray(deltas, dtype=np.float64).reshape(-1)
    n = len(X)
    if n and np.all(deltas == deltas[0]):
        return ParameterShift(float(deltas[0]), biases=biases).interval(net).layer_bounds(X)
    out: list[tuple[np.ndarray, np.ndarray]] = [
        (np.empty((n, W.shape[0])), np.empty((n, W.shape[0]))) for W, _ in net.weights]
    width = max(W.size for W, _ in net.weights)
    step = max(1, int(chunk_elements // max(width, 1)))
    last = len(net.weights) - 1
    for s0 in range(0, n, step):
        x, d = X[s0:s0 + step], deltas[s0:s0 + step]
        db = d if biases else np.zeros_like(d)
        W, b = net.weights[0]
        centre = x @ W.T + b
        rad = (d * np.abs(x).sum(axis=1) + db)[:, None]
        lo, hi = centre - rad, centre + rad
        out[0][0][s0:s0 + step], out[0][1][s0:s0 + step] = lo, hi
        for li in range(1, last + 1):
            vlo, vhi = np.maximum(lo, 0.0), np.maximum(hi, 0.0)
            W, b = net.weights[li]
            Wl = W[None] - d[:, None, None]
            Wu = W[None] + d[:, None, None]
            lo = (np.einsum("noi,ni->no", np.maximum(Wl, 0), vlo)
                  + np.einsum("noi,ni->no", np.minimum(Wl, 0), vhi) + b - db[:, None])
            hi = (np.einsum("noi,ni->no", np.maximum(Wu, 0), vhi)
                  + np.einsum("noi,ni->no", np.minimum(Wu, 0), vlo) + b + db[:, None])
            out[li][0][s0:s0 + step], out[li][1][s0:s0 + step] = lo, hi
    return out


@dataclass
class _Certified:
    value: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    status: np.ndarray
    solver_status: list[SolveStatus | None]
    decided: np.ndarray
    witness: list[ReLUNetwork | None]
    time: np.ndarray
    precheck_time: float


def _certify(net: ReLUNetwork, X: np.ndarray, bad: np.ndarray, t: np.ndarray, deltas: np.ndarray,
             biases: bool, *, solver: str, time_limit: float, precheck: bool, decide_only: bool,
             mode: str, threads: int, tol: float, attack_steps: int, mip_gap: float,
             abs_gap: float) -> _Certified:
    """The Δ-test for rows with per-row radii ``deltas`` (see the module docstring)."""
    n = len(X)
    value = np.full(n, np.nan)
    lower = np.full(n, -np.inf)
    upper = np.full(n, np.inf)
    status = np.full(n, DeltaStatus.TIMEOUT, dtype=object)
    decided = np.full(n, "", dtype=object)
    solver_status: list[SolveStatus | None] = [None] * n
    witness: list[ReLUNetwork | None] = [None] * n
    times = np.zeros(n)
    status[bad] = DeltaStatus.ERROR

    t_pre = time.perf_counter()
    bounds = point_layer_bounds(net, X, deltas, biases)
    terms = margin_terms(bounds[-1][0], bounds[-1][1], t)
    lower_iv = terms.min(axis=1)
    # unusable rows were replaced by zeros to keep the batch rectangular: their bounds describe
    # that stand-in, not the row, so they carry none
    lower[:] = np.where(bad, np.nan, lower_iv)
    upper[:] = np.where(bad, np.nan, class_margin(net.forward(X), t))
    todo = ~bad
    if precheck:
        rob = todo & (lower_iv > 0)
        status[rob], decided[rob] = DeltaStatus.ROBUST, "interval"
        todo &= ~rob
        base_flip = todo & (net.predict(X) != t)
        for i in np.flatnonzero(base_flip):
            status[i], decided[i], witness[i] = DeltaStatus.NOT_ROBUST, "attack", net.copy()
        todo &= ~base_flip
        if todo.any() and attack_steps > 0:
            idx = np.flatnonzero(todo)
            _, aw = sign_attack(net, X[idx], deltas[idx], t[idx], steps=attack_steps, biases=biases)
            for r, i in enumerate(idx):
                cand = ReLUNetwork(aw[r])
                flips, m = _flips(cand, X[i], t[i])
                upper[i] = min(upper[i], m)
                if flips:
                    status[i], decided[i], witness[i] = DeltaStatus.NOT_ROBUST, "attack", cand
                    todo[i] = False
    precheck_time = time.perf_counter() - t_pre

    idx_all = np.flatnonzero(todo)
    for d in np.unique(deltas[idx_all]):
        idx = idx_all[deltas[idx_all] == d]
        shift = ParameterShift(float(d), biases=biases)
        inn = shift.interval(net)
        box = (X[idx].min(axis=0), X[idx].max(axis=0)) if mode == "reuse" else None
        engine = _DeltaMILP(net, inn, shift, solver=solver, time_limit=time_limit, threads=threads,
                            mode=mode, box=box, mip_gap=mip_gap, abs_gap=abs_gap)
        for i in idx:
            b_i = [(lo[i], hi[i]) for lo, hi in bounds]
            r = engine.solve(X[i], int(t[i]), b_i, terms[i], time_limit, decide_only, tol)
            times[i] = r.time
            solver_status[i] = r.status
            lower[i] = max(lower[i], r.lower)
            decided[i] = "milp"
            if r.witness is not None:
                witness[i] = r.witness
                upper[i] = min(upper[i], r.witness_margin)
            if math.isfinite(r.value):
                value[i] = r.value
            if r.witness is not None and r.flips:
                status[i] = DeltaStatus.NOT_ROBUST
            elif lower[i] >= tol:
                status[i] = DeltaStatus.ROBUST
            elif r.status in (SolveStatus.OPTIMAL, SolveStatus.TARGET, SolveStatus.CUTOFF):
                status[i] = DeltaStatus.INCONCLUSIVE
            elif r.status in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
                status[i], decided[i] = DeltaStatus.TIMEOUT, ""
            else:
                status[i], decided[i] = DeltaStatus.ERROR, ""
    return _Certified(value, lower, upper, status, solver_status, decided, witness, times, precheck_time)


def _check_options(shift: Any, solver: str, mode: str, time_limit: Any, tol: float) -> str:
    if not isinstance(shift, ParameterShift):
        raise ValidationError(f"shift must be a ParameterShift, got {type(shift).__name__}")
    if mode not in ("auto", "rebuild", "reuse"):
        raise ValidationError(f"mode must be 'auto', 'rebuild' or 'reuse', got {mode!r}")
    _check_time_limit(time_limit)
    if not tol > 0:
        raise ValidationError(f"tol must be positive, got {tol}")
    return check_solver(solver)


def exact_worst_case(network: Any, X: Any, shift: ParameterShift, target_class: Any = 1, *,
                     solver: str = "highs", time_limit: float = 10.0, precheck: bool = True,
                     decide_only: bool = False, mode: str = "auto", threads: int = 1,
                     tol: float = 1e-6, attack_steps: int = 4, mip_gap: float = 1e-9,
                     abs_gap: float = 1e-9) -> ExactResult:
    """Exact worst-case target margin of each row of ``X`` over the shift set Δ.

    Parameters
    ----------
    network : a :class:`ReLUNetwork` or a model with ``.network()``.
    X : counterfactuals in model space, shape (n, d) (a DataFrame needs a model). Rows with
        NaN get status ``error``.
    shift : :class:`ParameterShift` (p = ∞).
    target_class : int, per-row array, or None (the base network's prediction per row).
    solver : ``"highs"`` or ``"gurobi"``.
    time_limit : seconds of MILP time per counterfactual (all competitor classes together).
    precheck : decide by intervals / the base network / a weight attack before any MILP.
    decide_only : only decide the sign of the worst case (MILPs with a cutoff at ``tol`` that
        stop at the first flipping incumbent) — much faster; ``value`` is then NaN.
    mode : ``"rebuild"`` (a model per counterfactual, tightest bounds), ``"reuse"`` (one model per
        batch, per-counterfactual bound changes) or ``"auto"``: reuse for decisions, rebuild for
        exact values (the faster of the two in ``benchmarks/bench_exact.py``).
    tol : a MILP lower bound must reach ``tol`` to prove robustness (solver tolerances).
    mip_gap, abs_gap : optimality gaps of the MILPs (tiny: ``value`` is meant to be exact).
    """
    solver = _check_options(shift, solver, mode, time_limit, tol)
    if mode == "auto":
        mode = "reuse" if decide_only else "rebuild"
    net = as_network(network)
    X, bad = model_space_rows(net, X, network)
    Xc = np.where(bad[:, None], 0.0, X)
    t = resolve_targets(target_class, len(Xc), network=net, X=Xc)
    deltas = np.full(len(Xc), shift.delta)
    c = _certify(net, Xc, bad, t, deltas, shift.biases, solver=solver, time_limit=float(time_limit),
                 precheck=precheck, decide_only=decide_only, mode=mode, threads=threads, tol=tol,
                 attack_steps=attack_steps, mip_gap=mip_gap, abs_gap=abs_gap)
    meta = {"precheck_time": c.precheck_time, "tol": tol, "mode": mode, "precheck": precheck,
            "decide_only": decide_only, "time_limit": float(time_limit)}
    return ExactResult(c.value, c.lower, c.upper, c.status, c.solver_status, c.decided, c.witness, c.time,
                       t, shift, solver, meta)


def is_delta_robust(model: Any, cfs: Any, shift: ParameterShift, target_class: Any = None, *,
                    solver: str = "highs", time_limit: float = 10.0, return_result: bool = False,
                    **kwargs: Any) -> np.ndarray | tuple[np.ndarray, ExactResult]:
    """Exact Δ-robustness of counterfactuals: True only where proven (a timeout, an error or an
    inconclusive answer is never robust).

    ``target_class=None`` uses the class the model predicts for each counterfactual (robust
    then means: every network in Δ agrees with it). With ``return_result`` also returns the
    :class:`ExactResult` (statuses, witnesses, certificates). Other keyword arguments go to
    :func:`exact_worst_case` (``decide_only`` defaults to True here).
    """
    kwargs.setdefault("decide_only", True)
    res = exact_worst_case(model, cfs, shift, target_class, solver=solver, time_limit=time_limit, **kwargs)
    return (res.robust, res) if return_result else res.robust
