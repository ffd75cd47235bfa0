"""``APAS`` (APΔS Algorithm 2, Marzari et al. 2024): MILP-R's loop with the sampled Δ-test.

Per query: the nearest CE with validity margin ``tau``; APΔS's probabilistic test at the target
δ (:class:`~robustce.robustness.APASCertifier`: n = ⌈ln(1−α)/ln R⌉ draws from Δ, all must keep
the class); if a draw flips it, raise the margin ("increase the allowed distance") and repeat.
The loop — margin schedule, bisection after an unreachable margin, round and time caps, statuses
— is :class:`~robustce.methods.MILPRobust`'s, with this certifier plugged in. For a found CE the
certificate also reports its APΔS δ_max (Algorithm 1): how much larger a shift it withstands.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.milp_robust import MILPRobust
from robustce.robustness.apas import APASCertifier, _check_delta, apas_max_delta
from robustce.robustness.shift import ParameterShift
from robustce.validation import check_bool

__all__ = ["APAS"]

#: MILPRobust's default ``shift`` (APAS's default δ too)
_MILP_R_DEFAULT_DELTA = 0.05


class APAS(MILPRobust):
    """Nearest CE that passes APΔS's probabilistic Δ-test (Algorithm 2).

    Parameters
    ----------
    delta : δ of the shift set Δ (every weight and bias in [θ − δ, θ + δ]), or a
        :class:`~robustce.robustness.ParameterShift`; None: ``shift``, MILP-R's name for the same
        set (default 0.05). A non-default ``shift`` that disagrees with ``delta`` is an error.
    alpha, R : with confidence α, a fraction ≥ R of Δ keeps a returned CE's class (Lemma 4;
        n = ⌈ln(1−α)/ln R⌉ draws, 1379 for the defaults).
    n : draws per test instead of Lemma 4's (``alpha`` becomes 1 − Rⁿ).
    fixed_draws : every test samples the same n networks (needs an int ``random_state``), as the
        authors' generation loop does (10 000 draws, ``np.random.seed(1)`` before each test);
        default False: the draws are a function of the seed and the CE.
    delta_init : δ_init of the δ_max search reported per CE (its bisection resolution).
    report_delta_max : compute each found CE's δ_max (Algorithm 1; n draws per tested δ).
    model, data : see :class:`Explainer` (a ReLU network model; ``data`` gives the warm start).
    minimal : as :class:`MILPRobust`, default False (APΔS returns the first CE its test accepts).
    growth, max_rounds, slack, bisect_tol, refine_tol, tau_step, norm, tau, solver, fixed_costs,
    time_limit : as :class:`MILPRobust` (the margin loop). ``random_state``: an int makes every test's draws
        a function of the seed and the CE (same result in any order, with any ``n_jobs``).
    shift : MILP-R's name for Δ (see ``delta``).
    delta_time_limit : as :class:`MILPRobust`.
    certifier : must stay None: APAS's test is APΔS's sampled one
        (:class:`~robustce.robustness.APASCertifier` at ``delta``); another certifier is
        :class:`MILPRobust`'s ``certifier=``.
    weights, tie_break, mip_gap, threads : as :class:`MILPNearest`.
    warm_start, box_from_incumbent, bound_tightening, relax_first : as :class:`MILPNearest`.
    target_class, n_jobs, constraints : see :class:`Explainer`.
    random_state : see above (``growth, ...``): an int seeds every test's draws.

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : distance of the returned CE from the query (``norm``).
    delta, p : the shift set Δ the test samples.
    alpha, R, n : the test's confidence, fraction and number of draws.
    delta_status : the sampled test's status for the returned CE (``robust`` = all draws kept
        the class; not a proof over all of Δ).
    min_sampled_margin : the smallest target margin over the test's draws.
    tau, rounds, optimal, solver : as :class:`MILPRobust`.
    delta_max : the CE's APΔS δ_max (NaN when not reported).

    Statuses as :class:`MILPRobust`: ``found``, ``infeasible``, ``no_robust_point``, ``timeout``,
    ``error``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.APAS(model, train, delta=0.02).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> model.predict(res.counterfactuals[res.feature_names])
    array([1, 1, 1])
    """

    name: ClassVar[str] = "apas"
    _constraints: ClassVar[str] = "exact"  # its rounds are MILP-R's nearest-CE MILP
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "delta", "p", "alpha", "R", "n", "delta_status", "min_sampled_margin", "tau",
        "rounds", "optimal", "solver", "delta_max")

    def __init__(self, model: Any, data: Any = None, *, delta: ParameterShift | float | None = None,
                 alpha: float = 0.999, R: float = 0.995, n: int | None = None,
                 fixed_draws: bool = False, delta_init: float = 1e-4,
                 report_delta_max: bool = True, minimal: bool = False, **kwargs: Any):
        self.delta = delta
        self.fixed_draws = fixed_draws
        self.alpha = alpha
        self.R = R
        self.n = n
        self.delta_init = delta_init
        self.report_delta_max = report_delta_max
        super().__init__(model, data, minimal=minimal, **kwargs)

    def _check_params(self) -> None:
        # Δ is ``delta``, or MILP-R's ``shift`` when no delta is given; a non-default shift that
        # disagrees with delta is an error. The resolved ParameterShift goes to ``shift`` before
        # MILP-R's checks read it (get_params then round-trips: delta and shift agree).
        shift = ParameterShift.of(self.shift, "shift")
        if self.delta is not None:
            delta = ParameterShift.of(self.delta, "delta")
            if shift != delta and shift != ParameterShift(_MILP_R_DEFAULT_DELTA):
                raise ValidationError(f"delta and shift name the same shift set; got delta="
                                      f"{self.delta!r} and shift={self.shift!r}")
            shift = delta
        self.shift = shift
        super()._check_params()
        if self.certifier is not None:
            raise ValidationError("APAS's certifier is the sampled test (APASCertifier); to run "
                                  "the margin loop with another one use MILPRobust(certifier=...)")
        _check_delta(self.delta_init, "delta_init")
        check_bool(self.report_delta_max, "report_delta_max")
        check_bool(self.fixed_draws, "fixed_draws")
        self.certifier_ = APASCertifier(self.shift, alpha=self.alpha, R=self.R, n=self.n,
                                        random_state=self.random_state,
                                        fixed_draws=self.fixed_draws)

    def _certifier(self) -> APASCertifier:
        return self.certifier_

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        r = super()._explain_one(x, target)
        test = self.certifier_
        cert = r.certificate
        cert["min_sampled_margin"] = cert.pop("worst_case_margin", math.nan)
        cert.update({"alpha": test.alpha, "R": test.R, "n": test.n, "delta_max": math.nan})
        if r.status == "found" and self.report_delta_max and r.cfs is not None:
            cf = r.cfs[:1]
            dm = apas_max_delta(self._network, cf, R=test.R, delta_init=float(self.delta_init),
                                random_state=test.rng_for(cf, np.array([target])),
                                target_class=target, n=test.n, biases=self.shift.biases)
            cert["delta_max"] = float(dm.delta[0])
        return r
