"""Exact Δ-robustness certification of counterfactuals (PROPLACE Def. 7, APΔS Alg. 4's test).

Question: given a ReLU network θ, a counterfactual ``x`` (a fixed point) and the box
Δ = {θ' : |θ' − θ| ≤ δ elementwise} (p = ∞), what is the worst-case target margin

    m*(x) = min_{θ' ∈ Δ} margin_t(θ'(x))

(binary: the logit for target 1, minus it for target 0; K classes: ``min_{j≠t} z_t − z_j``)?
``x`` is Δ-robust iff ``m*(x) > 0``.

Why the MILP is exact, and how the witness is built: :mod:`robustce.robustness.delta_milp`.

Procedure (per batch, vectorised where it can be)
-------------------------------------------------
1. interval propagation for all counterfactuals at once: lower bound of the margin > 0 →
   ``robust`` (``decided_by="interval"``);
2. the base network and a cheap sign-gradient attack on the weights (vertices of Δ, batched
   over counterfactuals): a realisation that flips the prediction → ``not_robust`` with that
   witness (``decided_by="attack"``); then back-substituted bounds
   (:mod:`robustce.robustness.bounds`) for the rows still open: margin lower bound ≥ ``tol``
   → ``robust`` (``decided_by="bounds"``); they also give the MILP its big-M;
3. the MILP for the rest (``decided_by="milp"``). A timed-out MILP still decides when its dual
   bound is positive (robust) or its incumbent flips (not robust); otherwise the status is
   ``timeout`` — never robust.

``exact_worst_case`` returns the exact worst case (``value``) for every decided row: rows the
prechecks decided keep their status and ``decided_by`` and still get their MILP value (its
time counts in ``time``). The decision-only fast path — prechecks, then decision MILPs with a
cutoff at ``tol`` for the undecided rows only — is :func:`is_delta_robust` (``decide_only``).

As a :class:`~robustce.robustness.certifier.Certifier`: :class:`ExactDeltaCertifier`.

Modules: this one is the public face (the procedure, results, certifier);
:mod:`~robustce.robustness.delta_milp` the MILP engine and witness;
:mod:`~robustce.robustness.attack` the weight attack.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.models.network import (
    ReLUNetwork,
    as_network,
    class_margin,
    margin_terms,
    model_space_rows,
    resolve_targets,
)
from robustce.robustness.attack import flips_prediction, sign_attack
from robustce.robustness.bounds import MILP_SLACK, LayerBounds, crown_point_bounds
from robustce.robustness.certifier import Certificates, Certifier, CertStatus
from robustce.robustness.delta_milp import DeltaMILP
from robustce.robustness.shift import ParameterShift
from robustce.solvers.clock import Budget
from robustce.solvers.milp import SolveStatus, check_solver, check_time_limit
from robustce.validation import check_bool, check_choice, check_integer, check_number

MAX_ATTACK_STEPS = 10_000  # weight-attack steps per row (each one forward pass)
MAX_THREADS = 1024

__all__ = [
    "DeltaStatus",
    "DeltaTestRows",
    "ExactDeltaCertifier",
    "ExactResult",
    "delta_test",
    "exact_worst_case",
    "is_delta_robust",
    "point_layer_bounds",
    "resolve_targets",
    "sign_attack",
]

#: Outcome of the exact Δ-test for one counterfactual (the certifier protocol's statuses);
#: only ``ROBUST`` is a proof.
DeltaStatus = CertStatus


@dataclass
class ExactResult:
    """Per-counterfactual outcome of :func:`exact_worst_case` (arrays of length n).

    Parameters
    ----------
    value : exact worst-case target margin over Δ — for every decided row unless
        ``decide_only`` (NaN there, and where the MILP did not reach optimality in time).
    lower, upper : certified bounds on it (``lower`` from intervals or the MILP dual bound;
        ``upper`` attained by a concrete network: the base, an attack or the witness).
    status : :class:`DeltaStatus` values.
    solver_status : the MILP's :class:`~robustce.solvers.SolveStatus` (None where no MILP ran).
    decided_by : ``"interval"``, ``"attack"``, ``"bounds"``, ``"milp"`` or ``""`` (undecided).
    witness : a :class:`ReLUNetwork` in Δ attaining ``upper`` (None where no network was
        built, e.g. interval decisions with ``decide_only``).
    time : seconds spent per counterfactual (MILP and witness; the batched prechecks are
        shared and reported in ``meta["precheck_time"]``).
    target_class : the class each counterfactual was tested for.
    shift : the shift set Δ tested (its δ and ``biases``).
    solver : the MILP solver's name.
    meta : the run's settings (``precheck_time``, ``tol``, ``mode``, ``precheck``,
        ``decide_only``, ``time_limit``).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> shift = rc.robustness.ParameterShift(0.05)
    >>> out = rc.robustness.exact_worst_case(net, X, shift, target_class=1)
    >>> [str(s) for s in out.status], out.decided_by.tolist()
    (['robust', 'not_robust'], ['interval', 'attack'])
    >>> out.value.round(4)
    array([ 0.685, -0.113])
    >>> out.witness[1].forward(X[1:]).round(4)  # a network in Δ that flips the second row
    array([[-0.113]])
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
        # the solver fields describe the MILP that decided; a precheck's verdict (interval,
        # attack) has none, even where a MILP then computed ``value``
        ss = self.solver_status[i] if str(self.decided_by[i]) in ("milp", "") else None
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


# --- the Δ-test ------------------------------------------------------------------------------------


def point_layer_bounds(net: ReLUNetwork, X: np.ndarray, deltas: np.ndarray, biases: bool = True,
                       chunk_elements: int = 4_000_000) -> list[tuple[np.ndarray, np.ndarray]]:
    """Interval pre-activation bounds of every layer at point inputs ``X`` with a *per-row*
    radius ``deltas`` (sign-aware first layer, exact per neuron; chunked over rows)."""
    X = np.asarray(X, dtype=np.float64)
    deltas = np.asarray(deltas, dtype=np.float64).reshape(-1)
    n = len(X)
    if n and np.all(deltas == deltas[0]):
        return ParameterShift(float(deltas[0]), biases=biases).interval(net).layer_bounds(X)
    if not net.plain:  # structured (imported) network: one interval network per radius
        out_s: list[tuple[np.ndarray, np.ndarray]] = [
            (np.empty((n, W.shape[0])), np.empty((n, W.shape[0]))) for W, _ in net.layers]
        for d in np.unique(deltas):
            rows = np.flatnonzero(deltas == d)
            lb = ParameterShift(float(d), biases=biases).interval(net).layer_bounds(X[rows])
            for (lo, hi), (olo, ohi) in zip(lb, out_s, strict=True):
                olo[rows], ohi[rows] = lo, hi
        return out_s
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
class DeltaTestRows:
    """Per-row output of :func:`delta_test`; the fields mean what they mean in
    :class:`ExactResult`. ``precheck_time``: seconds of the batched prechecks (all rows)."""

    value: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    status: np.ndarray
    solver_status: list[SolveStatus | None]
    decided_by: np.ndarray
    witness: list[ReLUNetwork | None]
    time: np.ndarray
    precheck_time: float


def delta_test(net: ReLUNetwork, X: np.ndarray, t: np.ndarray, deltas: np.ndarray, *,
               biases: bool = True, bad: np.ndarray | None = None, solver: str = "highs",
               time_limit: float = 10.0, precheck: bool = True, decide_only: bool = True,
               mode: str = "rebuild", threads: int = 1, tol: float = 1e-6, attack_steps: int = 4,
               mip_gap: float = 1e-9, abs_gap: float = 1e-9,
               bounds_method: str = "crown", cut_rounds: int = 0) -> DeltaTestRows:
    """The Δ-test of the module docstring for checked rows with a radius δ_i *per row*
    (``deltas``): the engine under :func:`exact_worst_case` (one δ) and
    :func:`~robustce.robustness.max_provable_delta` (a candidate δ per row).

    ``bounds_method``: ``"crown"`` (plain networks: back-substituted bounds,
    :func:`robustce.robustness.bounds.crown_point_bounds`, decide rows the intervals left open
    — ``decided_by="bounds"`` — and give the MILP its big-M, its stable neurons and, for one
    output, the reduced last layer) or ``"interval"`` (interval bounds only: the formulation
    before issue 33, kept as the baseline of ``benchmarks/bench_deep.py``). ``cut_rounds``:
    root cuts of the ideal single-neuron formulation before each MILP (an experiment measured in
    ``benchmarks/bench_deep.py``; see :mod:`robustce.solvers.relu_cuts`).

    ``X``: finite model-space rows (unusable rows replaced by any finite stand-in and flagged
    in ``bad``: they get status ``error``); ``t``: target class per row; ``mode``: ``"rebuild"``
    or ``"reuse"`` (see :func:`exact_worst_case`); ``solver`` must already be checked.
    """
    n = len(X)
    bad = np.zeros(n, dtype=bool) if bad is None else np.asarray(bad, dtype=bool)
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
                cand = net.with_layers(aw[r])
                flips, m = flips_prediction(cand, X[i], t[i])
                upper[i] = min(upper[i], m)
                if flips:
                    status[i], decided[i], witness[i] = DeltaStatus.NOT_ROBUST, "attack", cand
                    todo[i] = False
    # back-substituted bounds for the rows a MILP may see (one δ at a time)
    crown = bounds_method == "crown" and net.plain
    lin: dict[int, tuple[LayerBounds, int]] = {}  # row -> (bounds of its δ group, its index)
    milp_rows = todo if decide_only else ~bad
    if crown:
        idx_all = np.flatnonzero(milp_rows)
        for d in np.unique(deltas[idx_all]):
            idx = idx_all[deltas[idx_all] == d]
            lb = crown_point_bounds(ParameterShift(float(d), biases=biases).interval(net), X[idx])
            for r_, i in enumerate(idx):
                lin[int(i)] = (lb, r_)
            lterm = margin_terms(lb.lower[-1], lb.upper[-1], t[idx])
            lower[idx] = np.maximum(lower[idx], lterm.min(axis=1))
            terms[idx] = np.maximum(terms[idx], lterm)
        if precheck:
            rob = todo & (lower >= tol) & ~bad
            status[rob], decided[rob] = DeltaStatus.ROBUST, "bounds"
            todo &= ~rob
    precheck_time = time.perf_counter() - t_pre

    # the MILP decides the rest; for exact values it also runs where a precheck decided
    milp_rows = todo if decide_only else ~bad
    idx_all = np.flatnonzero(milp_rows)
    for d in np.unique(deltas[idx_all]):
        idx = idx_all[deltas[idx_all] == d]
        shift = ParameterShift(float(d), biases=biases)
        inn = shift.interval(net)
        # structured networks (input map, identity layers) build one model per row
        mode_d = mode if net.plain else "rebuild"
        box = (X[idx].min(axis=0), X[idx].max(axis=0)) if mode_d == "reuse" else None
        engine = DeltaMILP(net, inn, shift, solver=solver, time_limit=time_limit, threads=threads,
                           mode=mode_d, box=box, mip_gap=mip_gap, abs_gap=abs_gap,
                           reduce_last=crown, cut_rounds=cut_rounds)
        fallback: DeltaMILP | None = None
        for i in idx:
            iv_i = [(lo[i], hi[i]) for lo, hi in bounds]
            if int(i) in lin:
                # back-substituted hidden bounds (widened a hair); the logits keep their
                # interval bounds: tight logit bounds sit at the optimum (MILP_SLACK)
                lb, r_ = lin[int(i)]
                b_i = lb.row(r_, MILP_SLACK)[:-1] + iv_i[-1:]
                um_i = lb.row_upper_min(r_, MILP_SLACK)
            else:
                b_i, um_i = iv_i, None
            row_budget = Budget(time_limit, threads)
            r = engine.solve(X[i], int(t[i]), b_i, terms[i], time_limit, decide_only, tol,
                             upper_min=um_i)
            if um_i is not None and r.status is SolveStatus.ERROR:
                # a numerical failure of the solver on the tightened model: the interval
                # formulation answers the same question exactly
                if fallback is None:
                    fallback = DeltaMILP(net, inn, shift, solver=solver, time_limit=time_limit,
                                         threads=threads, mode="rebuild", box=None,
                                         mip_gap=mip_gap, abs_gap=abs_gap)
                spent = r.time
                r = fallback.solve(X[i], int(t[i]), iv_i, terms[i],
                                   max(row_budget.remaining(), 1e-3), decide_only, tol)
                r.time += spent
            times[i] = r.time
            solver_status[i] = r.status
            lower[i] = max(lower[i], r.lower)
            if math.isfinite(r.value):
                value[i] = r.value
            if not todo[i]:  # a precheck decided: keep its verdict, take the better witness
                if r.witness is not None and r.witness_margin < upper[i] and (
                        r.flips or status[i] is not DeltaStatus.NOT_ROBUST):
                    witness[i], upper[i] = r.witness, r.witness_margin
                continue
            decided[i] = "milp"
            if r.witness is not None:
                witness[i] = r.witness
                upper[i] = min(upper[i], r.witness_margin)
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
    return DeltaTestRows(value, lower, upper, status, solver_status, decided, witness, times,
                         precheck_time)


def _check_options(shift: Any, solver: str, mode: str, time_limit: Any, tol: float,
                   **options: Any) -> str:
    """Validate the options of :func:`exact_worst_case`; returns the solver's name."""
    if not isinstance(shift, ParameterShift):
        raise ValidationError(f"shift must be a ParameterShift, got {type(shift).__name__}")
    check_choice(mode, "mode", ("auto", "rebuild", "reuse"))
    check_time_limit(time_limit)
    check_number(tol, "tol", low=0, low_open=True)
    for name in ("precheck", "decide_only"):
        if name in options:
            check_bool(options[name], name)
    if "threads" in options:
        check_integer(options["threads"], "threads", low=1, high=MAX_THREADS)
    if "attack_steps" in options:
        check_integer(options["attack_steps"], "attack_steps", low=0, high=MAX_ATTACK_STEPS)
    if "mip_gap" in options:
        check_number(options["mip_gap"], "mip_gap", low=0, high=1, high_open=True)
    if "abs_gap" in options:
        check_number(options["abs_gap"], "abs_gap", low=0)
    return check_solver(solver)


def exact_worst_case(network: Any, X: Any, shift: ParameterShift, target_class: Any = 1, *,
                     solver: str = "highs", time_limit: float = 10.0, precheck: bool = True,
                     decide_only: bool = False, mode: str = "auto", threads: int = 1,
                     tol: float = 1e-6, attack_steps: int = 4, mip_gap: float = 1e-9,
                     abs_gap: float = 1e-9, bounds_method: str = "crown") -> ExactResult:
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
    precheck : decide by intervals / the base network / a weight attack before any MILP (the
        MILP still computes ``value`` for the rows they decide, unless ``decide_only``).
    decide_only : only decide the sign of the worst case (MILPs with a cutoff at ``tol`` that
        stop at the first flipping incumbent, and only for rows the prechecks leave open) —
        much faster; ``value`` is then NaN.
    mode : ``"rebuild"`` (a model per counterfactual, tightest bounds), ``"reuse"`` (one model per
        batch, per-counterfactual bound changes) or ``"auto"``: reuse for decisions, rebuild for
        exact values (the faster of the two in ``benchmarks/bench_exact.py``).
    tol : a MILP lower bound must reach ``tol`` to prove robustness (solver tolerances).
    mip_gap, abs_gap : optimality gaps of the MILPs (tiny: ``value`` is meant to be exact).
    threads : solver threads per MILP.
    attack_steps : steps of the weight attack in the precheck (0: no attack), which looks for
        a network in Δ that flips a row before any MILP is built.
    bounds_method : ``"crown"`` (back-substituted bounds: a further precheck,
        ``decided_by="bounds"``, and a tighter MILP) or ``"interval"`` (the formulation before;
        same decisions, slower on deep networks). See ``docs/certification.md``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MILPRobust(model, train, shift=0.02).explain(rejected)
    >>> shift = rc.robustness.ParameterShift(0.02)
    >>> out = rc.robustness.exact_worst_case(model, res.counterfactuals_encoded, shift)
    >>> [s.value for s in out.status]
    ['robust', 'robust', 'robust']
    >>> bool((out.lower > 0).all())
    True
    """
    solver = _check_options(shift, solver, mode, time_limit, tol, precheck=precheck,
                            decide_only=decide_only, threads=threads, attack_steps=attack_steps,
                            mip_gap=mip_gap, abs_gap=abs_gap)
    check_choice(bounds_method, "bounds_method", ("crown", "interval"))
    if mode == "auto":
        mode = "reuse" if decide_only else "rebuild"
    net = as_network(network)
    X, bad = model_space_rows(net, X, network, name="X / cfs")
    Xc = np.where(bad[:, None], 0.0, X)
    t = resolve_targets(target_class, len(Xc), network=net, X=Xc)
    deltas = np.full(len(Xc), shift.delta)
    c = delta_test(net, Xc, t, deltas, biases=shift.biases, bad=bad, solver=solver,
                   time_limit=float(time_limit), precheck=precheck, decide_only=decide_only,
                   mode=mode, threads=threads, tol=tol, attack_steps=attack_steps, mip_gap=mip_gap,
                   abs_gap=abs_gap, bounds_method=bounds_method)
    if not net.plain:
        mode = "rebuild"  # structured networks build one model per row (see delta_test)
    meta = {"precheck_time": c.precheck_time, "tol": tol, "mode": mode, "precheck": precheck,
            "decide_only": decide_only, "time_limit": float(time_limit)}
    return ExactResult(c.value, c.lower, c.upper, c.status, c.solver_status, c.decided_by, c.witness,
                       c.time, t, shift, solver, meta)


def is_delta_robust(model: Any, cfs: Any, shift: ParameterShift, target_class: Any = None, *,
                    solver: str = "highs", time_limit: float = 10.0, return_result: bool = False,
                    **kwargs: Any) -> np.ndarray | tuple[np.ndarray, ExactResult]:
    """Exact Δ-robustness of counterfactuals: True only where proven (a timeout, an error or an
    inconclusive answer is never robust).

    ``target_class=None`` uses the class the model predicts for each counterfactual (robust
    then means: every network in Δ agrees with it). With ``return_result`` also returns the
    :class:`ExactResult` (statuses, witnesses, certificates). Other keyword arguments go to
    :func:`exact_worst_case` (``decide_only`` defaults to True here: the fast path).

    Parameters
    ----------
    model : a :class:`~robustce.models.ReLUNetwork` or a model with ``.network()`` (and
        ``.encode`` for raw frames).
    cfs : the counterfactuals: an :class:`~robustce.Explanations` (its first CE per query), a
        raw DataFrame, or a model-space array (n, d).
    shift : the set Δ (:class:`~robustce.robustness.ParameterShift`).
    target_class : int, one per row, or None (the class the model predicts for each CE).
    solver : MILP backend, "highs" (default) or "gurobi".
    time_limit : seconds per counterfactual for the MILP.
    return_result : also return the :class:`ExactResult`.
    **kwargs : options of :func:`exact_worst_case` (``mode``, ``threads``, ``attack_steps``,
        ``precheck``, ``decide_only``).

    Returns
    -------
    numpy.ndarray of bool, or (that array, ExactResult)
        True where the CE is proven to keep its class for every network in Δ.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MILPRobust(model, train, shift=0.02).explain(rejected)
    >>> shift = rc.robustness.ParameterShift(0.02)
    >>> rc.robustness.is_delta_robust(model, res, shift, target_class=1)
    array([ True,  True,  True])
    """
    check_bool(return_result, "return_result")
    kwargs.setdefault("decide_only", True)
    res = exact_worst_case(model, cfs, shift, target_class, solver=solver, time_limit=time_limit, **kwargs)
    return (res.robust, res) if return_result else res.robust


class ExactDeltaCertifier(Certifier):
    """The exact MILP Δ-test as a :class:`~robustce.robustness.certifier.Certifier`:
    ``robust`` is a proof that every network in Δ = ``shift`` keeps the target class.

    Parameters
    ----------
    shift : :class:`ParameterShift` or a number δ (p = ∞ box).
    solver, time_limit, tol : as :func:`exact_worst_case` (``time_limit``: seconds per row).
    exact_value : after deciding (the fast path of :func:`is_delta_robust`), compute the exact
        worst-case margin of the rows proven robust with the time left of ``time_limit``;
        ``lower`` then holds it (else the proven bound) and ``columns["value"]`` too.
    worst_case : skip the fast path: solve the worst-case MILP (PROPLACE's MILP (6)) for every
        row, so ``evidence`` of a non-robust row is the *worst* network in Δ (its argmax), not
        just one that flips it, and ``lower`` is the exact worst case where solved. Cutting-plane
        loops (PROPLACE) converge in fewer rounds with it.
    **options : ``mode``, ``threads``, ``attack_steps``, ``precheck``, ``bounds_method`` of
        :func:`exact_worst_case`.

    Notes
    -----
    Certificates: ``lower`` the proven lower bound of the worst case, ``upper`` the margin of
    the worst network found (the witness, in ``evidence``), ``columns``: ``value``,
    ``decided_by``, ``solver_status``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MILPRobust(model, train, shift=0.02).explain(rejected)
    >>> certifier = rc.robustness.ExactDeltaCertifier(0.02)
    >>> cert = certifier.certify(model, res.counterfactuals_encoded, 1)
    >>> [s.value for s in cert.status]
    ['robust', 'robust', 'robust']
    """

    name = "exact_delta"
    _OPTIONS = ("mode", "threads", "attack_steps", "precheck", "bounds_method")

    def __init__(self, shift: ParameterShift | float, *, solver: str = "highs",
                 time_limit: float = 10.0, tol: float = 1e-6, exact_value: bool = False,
                 worst_case: bool = False, **options: Any):
        shift = ParameterShift.of(shift)
        unknown = sorted(set(options) - set(self._OPTIONS))
        if unknown:
            raise ValidationError(
                f"ExactDeltaCertifier: unknown options {unknown}; known: {list(self._OPTIONS)}")
        self.shift = shift
        self.solver = check_solver(solver)
        self.time_limit = check_time_limit(time_limit)
        check_number(tol, "tol", low=0, low_open=True)
        check_bool(exact_value, "exact_value")
        check_bool(worst_case, "worst_case")
        if "bounds_method" in options:
            check_choice(options["bounds_method"], "bounds_method", ("crown", "interval"))
        self.tol = float(tol)
        self.exact_value = bool(exact_value)
        self.worst_case = bool(worst_case)
        self.options = dict(options)

    def params(self) -> dict[str, Any]:
        return {"delta": self.shift.delta, "p": "inf", "biases": self.shift.biases,
                "solver": self.solver, "time_limit": self.time_limit, "tol": self.tol}

    def certify(self, network: Any, X: Any, targets: Any, *,
                time_limit: float | None = None) -> Certificates:
        limit = self.time_limit if time_limit is None else check_time_limit(time_limit)
        budget = Budget(limit, self.options.get("threads", 1))
        net = as_network(network)
        X, _ = model_space_rows(net, X, network)
        res = exact_worst_case(net, X, self.shift, targets, solver=self.solver, time_limit=limit,
                               decide_only=not self.worst_case, tol=self.tol, **self.options)
        value, lower = res.value.copy(), res.lower.copy()
        solved = np.isfinite(value)
        lower[solved] = np.maximum(lower[solved], value[solved])
        rob = np.flatnonzero(res.robust & ~solved)
        left = budget.remaining()
        if self.exact_value and rob.size and left > 1e-2:
            ex = exact_worst_case(net, X[rob], self.shift, res.target_class[rob], solver=self.solver,
                                  time_limit=left, precheck=False, tol=self.tol,
                                  bounds_method=self.options.get("bounds_method", "crown"))
            ok = ex.robust & np.isfinite(ex.value)
            value[rob[ok]] = lower[rob[ok]] = ex.value[ok]
        return Certificates(
            res.status, lower, res.upper, res.witness, res.time, res.target_class, self.name,
            self.params(), {"value": value, "decided_by": res.decided_by,
                            "solver_status": np.array([None if s is None else str(s)
                                                       for s in res.solver_status], dtype=object)})
