"""``WachterRobust`` (Wacht-R, Jiang, Leofante, Rago & Toni, AAAI 2023): Wachter's gradient
search with the exact Δ-test in the loop.

Round r searches, for every query still open at once, a CE whose target margin is at least
``tau_r`` (:class:`~robustce.methods.Wachter` with the validity loss asking for
``tau_r + margin`` and a CE accepted only once its projected point reaches ``tau_r``); the CEs are
tested together by the certifier (default: the exact MILP Δ-test,
:class:`~robustce.robustness.ExactDeltaCertifier`); a query whose CE is not Δ-robust gets a higher
margin next round. The margin schedule, the bisection after an unreachable margin and the
honesty rules (a timed-out test is never robust) are MILP-R's, shared in
:mod:`robustce.methods.margin_loop`.

Against the authors' code (``junqi-jiang/robust-ce-inn``, ``expnns/utilexp.py``): their Wacht-R
re-runs alibi's Wachter search with a halved λ (at most 8 times) until the INN test passes; ours
raises the margin the search must reach — the knob the exact test reacts to, and the same loop
as MILP-R. A gradient search that finds no CE at a raised margin has not *proven* it unreachable:
the bisection treats it as unreachable all the same (the message says "the gradient search found
no CE at margin …").
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from robustce.explanations import QueryResult
from robustce.methods.margin_loop import Candidate, DeltaRobustLoop
from robustce.methods.wachter import Wachter
from robustce.solvers.milp import check_solver
from robustce.validation import check_number

__all__ = ["WachterRobust"]


class WachterRobust(DeltaRobustLoop, Wachter):
    """Wachter's search, margin raised until the CE is Δ-robust (Wacht-R).

    Parameters
    ----------
    model : a ReLU network model (``model.network()``: the Δ-test needs it).
    data : training Dataset (only for ``distance_weights="mad"`` / ``"range"``).
    tau : the margin the first round asks for (> 0, logit units).
    solver : MILP backend of the default exact Δ-test ("highs" or "gurobi").
    shift, growth, max_rounds, slack, bisect_tol, minimal, refine_tol, tau_step, delta_time_limit,
    certifier :
        the margin loop (:class:`~robustce.methods.margin_loop.DeltaRobustLoop`; as
        :class:`MILPRobust`, but ``minimal`` defaults to False: the first Δ-robust CE).
    lam_init, lam_schedule, max_lambda_steps, max_iter, lr, loss, margin, distance_weights : Wachter's
        search of each round (:class:`~robustce.methods.Wachter`); ``margin`` is added to the
        round's ``tau`` in the loss (the search aims a little past the margin it must reach).
    check_every, init_noise, straight_through : as :class:`~robustce.methods.Wachter`, in each
        round's search.
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer`; ``time_limit``
        bounds the whole loop (all rounds; the queries advance together).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : Wachter's (weighted) L1 distance of the CE from the query.
    delta, p : the shift set the CE is certified against.
    delta_status : the Δ-test's status of the last CE tested (``robust`` for a found CE).
    worst_case_margin : the CE's worst-case target margin over Δ (the certifier's lower bound;
        exact for the default test when time allowed).
    tau : the margin of the last round; rounds : rounds used.
    margin : the CE's target margin under the model; lambda, n_iter : Wachter's λ and steps in
        the last round.

    Statuses: ``found`` (proven Δ-robust); ``not_found`` (round 1 found no valid CE);
    ``infeasible`` (every feature immutable); ``no_robust_point`` (rounds exhausted, or the
    bisection closed without a Δ-robust CE); ``timeout`` (the time limit, or some Δ-test was
    undecided); ``error``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.WachterRobust(model, train, shift=0.02, random_state=0).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> shift = rc.robustness.ParameterShift(0.02)
    >>> bool(rc.robustness.is_delta_robust(model, res, shift, target_class=1).all())
    True
    """

    name: ClassVar[str] = "wachter_robust"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "delta", "p", "delta_status", "worst_case_margin", "tau", "rounds", "margin",
        "lambda", "n_iter")

    def __init__(self, model: Any, data: Any = None, *, tau: float = 1e-3, solver: str = "highs",
                 **kwargs: Any):
        self.tau = tau
        self.solver = solver
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        check_number(self.tau, "tau", low=0, low_open=True)
        self.solver_ = check_solver(self.solver)  # SolverError for unknown / missing backends

    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        def find(rows: np.ndarray, taus: np.ndarray, remaining: float) -> list[Candidate]:
            self._prepare_rows(rows)
            res = self._search(X[rows], targets[rows], required=taus, time_budget=remaining)
            return [Candidate(r.status, None if r.cfs is None else r.cfs[0], r.message,
                              dict(r.certificate)) for r in res]

        self._prepare_batch(X, targets)
        return self._robust_search(X, targets, find, tau=self.tau, base_cert={},
                                   unreachable_text="the gradient search found no CE at margin")

    # hooks for searches that need per-query state (ProtoRobust's prototypes)
    def _prepare_batch(self, X: np.ndarray, targets: np.ndarray) -> None:
        """Called once per batch before the loop."""

    def _prepare_rows(self, rows: np.ndarray) -> None:
        """Called before each round's search with the batch positions it searches."""
