"""The largest provably safe shift δ per counterfactual (APΔS Algorithm 4).

For each counterfactual: test δ_init with the exact Δ-test; if it fails, the answer is 0.
Otherwise double δ while the test passes, then bisect between the last passing and the first
failing δ until the bracket is narrower than δ_init. Robustness is monotone in δ (the boxes are
nested), so the bisection is valid and the returned δ is *proven*: the exact test passed there.

Vectorised over counterfactuals: every round tests all still-active counterfactuals at their
own candidate δ at once — interval bounds, the base network and the weight attack for all of
them in one batched call — and runs a MILP only for those the prechecks leave undecided. A
MILP timeout counts as "not proven" (the bracket's upper end moves down), so the result stays
a valid lower bound of the true maximum; ``n_timeouts`` says where that happened.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.models.network import as_network, model_space_rows, resolve_targets
from robustce.robustness.exact import MAX_ATTACK_STEPS, MAX_THREADS, DeltaStatus, delta_test
from robustce.solvers.milp import check_solver, check_time_limit
from robustce.validation import check_bool, check_choice, check_integer, check_number

__all__ = ["MaxDeltaResult", "max_provable_delta"]


@dataclass
class MaxDeltaResult:
    """Per counterfactual outcome of :func:`max_provable_delta` (arrays of length N; the names
    match :func:`~robustce.robustness.apas_max_delta`'s).

    Parameters
    ----------
    delta : the largest δ proven Δ-robust (0 when δ_init already fails).
    upper : the smallest δ tested that was not proven (inf when capped).
    status : ``"ok"``, ``"not_robust"`` (a witness flips it at δ_init), ``"undecided"`` (the
        test at δ_init timed out or was inconclusive: 0 is proven, nothing more is known),
        ``"capped"`` (robust at ``delta_max``), ``"round_limit"`` (``max_rounds`` ran out before
        the bracket closed: ``delta`` is proven but only a *lower* bound of the largest robust
        δ, ``upper`` is inf while still doubling), ``"error"`` (unusable row).
    n_tests, n_milp, n_timeouts : exact tests run, of which decided by a MILP, of which timed
        out.
    target_class : the class each counterfactual was tested for.
    time : seconds for the whole batch.
    meta : the search's settings (``delta_init``, ``delta_max``, ``biases``, ``solver``,
        ``time_limit``, ``rounds``, ``tol``, ``p``).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> out = rc.robustness.max_provable_delta(net, X, target_class=1)
    >>> out.status.tolist(), out.delta.round(4)
    (['ok', 'ok'], array([0.1721, 0.023 ]))
    >>> out.to_frame()[["delta", "status", "n_tests"]]
         delta status  n_tests
    0  0.17205     ok       23
    1  0.02305     ok       17
    """

    delta: np.ndarray
    upper: np.ndarray
    status: np.ndarray
    n_tests: np.ndarray
    n_milp: np.ndarray
    n_timeouts: np.ndarray
    target_class: np.ndarray
    time: float
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.delta)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({
            "delta": self.delta, "upper": self.upper, "status": self.status.astype(str),
            "target_class": self.target_class, "n_tests": self.n_tests, "n_milp": self.n_milp,
            "n_timeouts": self.n_timeouts,
        })


def max_provable_delta(model: Any, cfs: Any, target_class: Any = None, *, delta_init: float = 1e-4,
                       delta_max: float = 10.0, biases: bool = True, solver: str = "highs",
                       time_limit: float = 10.0, mode: str = "reuse", tol: float = 1e-6,
                       attack_steps: int = 4, threads: int = 1, max_rounds: int = 200) -> MaxDeltaResult:
    """Largest δ for which each counterfactual is provably Δ-robust (APΔS Algorithm 4).

    Parameters
    ----------
    model : a :class:`ReLUNetwork` or a model with ``.network()``.
    cfs : counterfactuals, model space (n, d) or a raw DataFrame (with a model).
    target_class : int, per-row array or None (the class the model predicts per row).
    delta_init : first δ tested and the bisection's tolerance (the paper's 0.0001).
    delta_max : cap on δ; a counterfactual still robust there gets status ``capped``.
    biases : whether the shift moves biases too.
    time_limit : seconds per exact test (per counterfactual and candidate δ).
    max_rounds : cap on the tests per counterfactual; rows still open then get status
        ``round_limit`` (their δ is proven, but only a lower bound of the maximum).
    solver, tol, attack_steps, threads : as :func:`~robustce.robustness.exact_worst_case`, for
        each exact test.
    mode : ``"reuse"`` (one MILP per batch with per-counterfactual bound changes, default) or
        ``"rebuild"`` (one per counterfactual), as in :func:`~robustce.robustness.exact_worst_case`.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MILPRobust(model, train, shift=0.02).explain(rejected)
    >>> out = rc.robustness.max_provable_delta(model, res, target_class=1)
    >>> out.status.tolist()
    ['ok', 'ok', 'ok']
    >>> bool((out.delta >= 0.02).all())  # MILPRobust proved them robust at δ = 0.02
    True
    """
    check_number(delta_init, "delta_init", low=0, low_open=True)
    check_number(delta_max, "delta_max", low=0, low_open=True)
    if not float(delta_max) >= float(delta_init):
        raise ValidationError(f"delta_max must be >= delta_init, got delta_max={delta_max!r} and "
                              f"delta_init={delta_init!r}")
    check_bool(biases, "biases")
    time_limit = check_time_limit(time_limit)
    check_choice(mode, "mode", ("rebuild", "reuse"))
    check_number(tol, "tol", low=0, low_open=True)
    check_integer(attack_steps, "attack_steps", low=0, high=MAX_ATTACK_STEPS)
    check_integer(threads, "threads", low=1, high=MAX_THREADS)
    check_integer(max_rounds, "max_rounds", low=1, high=100_000)
    solver = check_solver(solver)
    d0, dmax = float(delta_init), float(delta_max)
    net = as_network(model)
    X, bad = model_space_rows(net, cfs, model, name="cfs")
    X = np.where(bad[:, None], 0.0, X)
    t = resolve_targets(target_class, len(X), network=net, X=X)
    n = len(X)
    lo = np.zeros(n)
    hi = np.full(n, np.inf)
    n_tests = np.zeros(n, dtype=np.int64)
    n_milp = np.zeros(n, dtype=np.int64)
    n_to = np.zeros(n, dtype=np.int64)
    status = np.full(n, "ok", dtype=object)
    status[bad] = "error"
    cand = np.full(n, d0)
    active = ~bad
    t0 = time.perf_counter()
    rounds = 0
    while active.any() and rounds < max_rounds:
        rounds += 1
        idx = np.flatnonzero(active)
        c = delta_test(net, X[idx], t[idx], cand[idx], biases=biases, solver=solver,
                       time_limit=time_limit, precheck=True, decide_only=True, mode=mode,
                       threads=threads, tol=tol, attack_steps=attack_steps)
        rob = np.array([s == DeltaStatus.ROBUST for s in c.status], dtype=bool)
        n_tests[idx] += 1
        n_milp[idx] += (c.decided_by == "milp")
        n_to[idx] += np.array([s == DeltaStatus.TIMEOUT for s in c.status], dtype=np.int64)
        lo[idx[rob]] = cand[idx[rob]]
        hi[idx[~rob]] = cand[idx[~rob]]
        flipped = dict(zip(idx, (s == DeltaStatus.NOT_ROBUST for s in c.status), strict=True))
        for i in idx:
            if math.isinf(hi[i]):  # doubling phase: everything tested so far was robust
                if lo[i] >= dmax:
                    status[i], active[i] = "capped", False
                else:
                    cand[i] = min(2.0 * lo[i], dmax)
            elif lo[i] == 0.0 and hi[i] <= d0:
                status[i], active[i] = ("not_robust" if flipped[i] else "undecided"), False
            elif hi[i] - lo[i] <= d0:
                active[i] = False
            else:
                cand[i] = 0.5 * (lo[i] + hi[i])
    status[active] = "round_limit"  # still open: δ is proven, not maximal
    meta = {"delta_init": d0, "delta_max": dmax, "biases": biases, "solver": solver,
            "time_limit": time_limit, "rounds": rounds, "tol": tol, "p": "inf"}
    return MaxDeltaResult(lo, hi, status, n_tests, n_milp, n_to, t, time.perf_counter() - t0, meta)
