"""``EnsembleRobust``: the nearest counterfactual of a tree ensemble that is *proven*
(δ, ε)-robust — it keeps its class for every ensemble whose leaf values move by at most δ and
whose split thresholds move by at most ε (:mod:`robustce.robustness.ensemble`).

The search is the tree MILP of :class:`~robustce.methods.MILPNearest` (the nearest-CE
engine's :mod:`robustce.nearest.trees`: same domain, distance, incumbents and growing radii)
with the prediction constraint replaced by the exact worst case over the set
(:func:`robustce.solvers.robust_trees.encode_robust_ensemble`): per tree the leaves some
ensemble of the ε-set can route the point to, the least vote among them, and the summed votes
beating each rival ``k`` by ``δ·Σ_trees (m_t + m_k)`` — what moving every leaf value by δ can
take away — plus the round's margin ``τ``. The MILP's optimum is therefore the nearest
(δ, ε)-robust CE (``optimal``), and ``infeasible`` proves that no actionable point is
robust.

Each CE is still tested by the exact (δ, ε)-test
(:class:`~robustce.robustness.ensemble.EnsembleCertifier`, a second, independent computation)
inside the margin loop shared with MILP-R (:func:`~robustce.methods.margin_loop.run_margin_loop`):
a CE is returned only when the test proves it robust; otherwise (a tie within solver
tolerance) ``τ`` rises by the margin the worst ensemble took away.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from robustce.errors import UnsupportedModelError
from robustce.explanations import QueryResult
from robustce.methods.margin_loop import Candidate, run_margin_loop
from robustce.methods.milp_nearest import MILPNearest
from robustce.robustness.ensemble import EnsembleCertifier, EnsembleShift, VoteEnsemble
from robustce.solvers.encodings import InputDomain
from robustce.solvers.milp import MILP
from robustce.solvers.robust_trees import encode_robust_ensemble
from robustce.solvers.tree_encoding import TreeEncoding, TreeEnsemble, ensemble_of, tree_parts
from robustce.validation import check_integer, check_number

__all__ = ["EnsembleRobust"]


class EnsembleRobust(MILPNearest):
    """Nearest CE of a tree model (decision tree, forest, boosted ensemble) proven
    (δ, ε)-robust (module docstring).

    Parameters
    ----------
    delta : δ ≥ 0, how far each leaf value may move (a booster's logit units; a forest's or
        tree's class-probability units).
    epsilon : ε ≥ 0, how far each split threshold may move, in model space (columns scaled to
        [0, 1]): one number, or one per model-space column.
    growth, max_rounds, slack, bisect_tol : the margin loop's (see
        :class:`~robustce.methods.MILPRobust`); ``τ`` starts at 0 on top of the δ-margin.
    model, data : see :class:`Explainer`: a tree model (as :class:`MILPNearest` takes) and the
        optional training data of the warm start.
    norm, weights, tie_break, solver, mip_gap, threads, fixed_costs : as :class:`MILPNearest`.
    tau : as :class:`MILPNearest`: the validity margin each round's CE must reach on top of
        the δ-margin.
    warm_start, box_from_incumbent, bound_tightening, relax_first : as :class:`MILPNearest`.
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer`; ``time_limit``
        is the total per query (all rounds).

    Certificate columns
    -------------------
    distance : distance of the CE from the query (``norm``).
    delta, epsilon : the set the CE is certified against.
    delta_status : the exact (δ, ε)-test's status for the returned CE (``robust``).
    worst_case_margin : the CE's exact worst summed-vote margin over the set (> 0).
    tau : the vote margin of the last round beyond the δ-margin; rounds : rounds used.
    optimal : the last MILP was solved to optimality: no (δ, ε)-robust actionable point is
        nearer; solver : the MILP backend.

    Statuses: ``found`` (proven robust), ``infeasible`` (proven: no actionable point is
    (δ, ε)-robust), ``no_robust_point`` (rounds exhausted), ``timeout``, ``error``.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> enc = rc.data.Encoder(train.schema).fit(train.frame)
    >>> forest = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
    >>> model = rc.models.wrap(forest.fit(enc.transform(train.frame), train.y), enc)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.EnsembleRobust(model, train, delta=0.01, epsilon=0.01).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> certifier = rc.robustness.EnsembleCertifier(0.01, epsilon=0.01)
    >>> [s.value for s in certifier.certify(model, res.counterfactuals_encoded, 1).status]
    ['robust', 'robust', 'robust']
    """

    name: ClassVar[str] = "ensemble_robust"
    _constraints: ClassVar[str] = "exact"  # MILPNearest's tree stages, constraint rows included
    _tree_gallop: ClassVar[bool] = True  # robust incumbents are far: growing balls first
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "delta", "epsilon", "delta_status", "worst_case_margin", "tau", "rounds",
        "optimal", "solver")

    def __init__(self, model: Any, data: Any = None, *, delta: float = 0.01,
                 epsilon: Any = 0.01, growth: float = 2.0, max_rounds: int = 10,
                 slack: float = 0.05, bisect_tol: float = 1e-3, **kwargs: Any):
        self.delta = delta
        self.epsilon = epsilon
        self.growth = growth
        self.max_rounds = max_rounds
        self.slack = slack
        self.bisect_tol = bisect_tol
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        if tree_parts(self.model) is None:
            raise UnsupportedModelError(
                f"EnsembleRobust needs a tree model (decision tree, forest or boosted "
                f"ensemble; kind {getattr(self.model, 'kind', None)!r} given): for networks "
                f"use MILPRobust")
        #: the set certified against (read by :meth:`_tree_ensemble` inside the base check)
        self.shift_ = EnsembleShift(self.delta, self.epsilon)
        super()._check_params()
        check_number(self.growth, "growth", low=1, low_open=True)
        check_integer(self.max_rounds, "max_rounds", low=1)
        check_number(self.slack, "slack", low=0)
        check_number(self.bisect_tol, "bisect_tol", low=0, high=1, low_open=True,
                     high_open=True)
        self._votes_ = VoteEnsemble.of(self.model)
        self._certifier_ = EnsembleCertifier(self.shift_)
        self._tau_ = 0.0

    def _tree_ensemble(self, kind: str, parts: Any) -> TreeEnsemble:
        """The ensemble with two literals per split, at θ − ε and θ + ε."""
        eps = self.shift_.epsilons(self.encoder.n_features_out_)
        return ensemble_of(kind, parts, self.encoder, epsilon=eps)

    # --- the search at a margin ----------------------------------------------------------------
    def _tree_margins(self, target: int) -> tuple[float, float]:
        strict, weak = super()._tree_margins(target)
        return strict + self._tau_, weak + self._tau_

    def _encode_trees(self, m: MILP, dom: InputDomain, target: int,
                      prune: Any) -> TreeEncoding:
        """The exact worst case over the set (:func:`encode_robust_ensemble`): every rival's
        summed vote beaten by the tie margin, the δ-shift and the round's ``τ``."""
        strict, weak = self._tree_margins(target)
        rivals = [k for k in range(self._ensemble_.n_classes) if k != target]
        tie = np.array([strict if k < target else weak for k in rivals])
        return encode_robust_ensemble(m, self._ensemble_, dom, target,
                                      tie + self._votes_.rival_shift(target, self.shift_.delta))

    def _margins(self, X: np.ndarray, target: int) -> np.ndarray:
        """The worst summed-vote margin over the set (so that only robust training points
        and segment points become incumbents)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        t = np.full(len(X), int(target), dtype=np.int64)
        return self._votes_.worst(X, t, self.shift_)[0]

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        def find(rows: np.ndarray, taus: np.ndarray, remaining: float) -> list[Candidate]:
            self._tau_ = float(taus[0])
            try:
                near = self._nearest(x, target, max(self._tau_, 1e-9), remaining)
            finally:
                self._tau_ = 0.0
            status, message = near.status, near.message
            if status == "infeasible":
                message = (f"proven infeasible: no actionable point keeps the target class "
                           f"for every ensemble of the (δ, ε)-set (vote margin "
                           f"{float(taus[0]):g} beyond the δ-shift)")
            return [Candidate(status, near.cf, message, {"optimal": near.optimal})]

        eps = self.shift_.params()["epsilon"]
        cert = {c: math.nan for c in self.certificate_columns}
        cert.update({"delta": self.shift_.delta, "epsilon": eps, "optimal": False,
                     "solver": self.solver})
        (r,) = run_margin_loop(
            find, self._certifier_, self._votes_, x[None], np.array([target]), tau=0.0,
            growth=self.growth, slack=self.slack, bisect_tol=self.bisect_tol,
            max_rounds=self.max_rounds, time_limit=self.time_limit, base_cert=cert,
            unreachable_text="no actionable point is robust at margin")
        if r.status == "found":
            # the distance minimised (fixed costs included)
            r.certificate["distance"] = float(self.distance_.rowwise(x, r.cfs, self.encoder)[0])
        return r
