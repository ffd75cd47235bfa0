"""``MACE``: model-agnostic nearest counterfactuals with an optimality certificate
(Karimi, Barthe, Balle, Valera — AISTATS 2020).

For a query ``x̂`` with target class ``t`` MACE asks an SMT solver (z3) a sequence of
satisfiability questions

    φ_{x̂,δ}(x) = φ_CF(x) ∧ φ_d(x, δ) ∧ φ_g(x)      "is there a CE at distance <= δ?"

where ``φ_CF`` is the model's characteristic formula for class ``t``, ``φ_d`` the distance
formula and ``φ_g`` the plausibility (type, range, actionability) and diversity clauses (see
:mod:`robustce.solvers.smt`). Algorithm 1 bisects δ over ``[0, 1]``: an unsatisfiable call
proves that no CE lies within δ and raises ``δ_min``; a satisfiable one gives a CE and lowers
``δ_max`` to its distance. It stops when ``δ_max − δ_min <= ε``: the returned CE is within ε
of the optimum, and ``δ_min`` is a certified lower bound (no plausible CE is closer).

Two small departures from the paper's pseudo-code, both only tightening: the first call has no
distance bound (unsatisfiable = proof that no plausible CE exists at all: status
``infeasible``), and after a satisfiable call ``δ_max`` becomes the distance of the CE found
rather than the threshold δ.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import z3

from robustce.distance import Distance, feature_fixed_costs
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.methods.mace_milp import MILPBackend, _TreeMILP
from robustce.methods.mace_work import (  # noqa: F401 - WORK_PER_SECOND: read as mace.WORK_PER_SECOND
    WALL_SLACK,
    WORK_PER_SECOND,
    _model_parts,
    default_work_limit,
)
from robustce.methods.milp_nearest import MILPNearest
from robustce.methods.minimum_observable import (
    MinimumObservable,
    check_actionability,
    mace_distance,
    normalise_norm,
)
from robustce.models.base import Model
from robustce.nearest import priced_weights
from robustce.solvers import smt
from robustce.solvers.clock import Budget
from robustce.solvers.tree_encoding import distance_pruner
from robustce.validation import check_choice, check_integer, check_number

__all__ = ["MACE", "mace_distance", "normalise_norm"]

BACKENDS = ("auto", "smt", "milp")
_MAX_STEPS = 200  # bisection cap (ε >= 1e-12 needs at most ~40)


class MACE(MILPBackend, Explainer):
    """Nearest plausible counterfactual within ε of the optimum, with a lower-bound certificate.

    Parameters
    ----------
    model : a fitted decision tree or random forest (``rc.models.wrap`` of a scikit-learn
        ``DecisionTreeClassifier`` / ``RandomForestClassifier`` / ``Extra*``), a logistic
        regression, or a ReLU MLP (sklearn ``MLPClassifier``, :class:`~robustce.models.MLP`,
        any model with a ``network()`` view). Others raise :class:`UnsupportedModelError`.
    data : optional training :class:`~robustce.data.Dataset`. When given, Algorithm 1 starts
        from the nearest plausible training point in the target class (the MO baseline)
        instead of δ_max = 1, so the CE is never farther than MO's and networks need no
        unbounded first call.
    norm : "l1" (default), "l0", "linf", or a mapping ``{"l0": α, "l1": β, "linf": γ}`` with
        α + β + γ = 1 — the distance of eq. 3, normalised to [0, 1] (:func:`mace_distance`).
    epsilon : accuracy ε > 0 of the binary search: ``delta_max − delta_min <= epsilon``.
    backend : "auto" (default), "smt" (z3; the paper's method) or "milp": one MILP on HiGHS with the same
        distance and constraints — δ_max is the incumbent's distance, δ_min the solver's
        proven bound / J; one CE per query. Trees, forests and boosted trees (scikit-learn's,
        XGBoost, LightGBM: the summed leaf scores of
        :meth:`~robustce.models.AdditiveTrees.vote_trees` as the vote):
        :class:`~robustce.methods.mace_milp._TreeMILP` (:mod:`robustce.solvers.tree_encoding`;
        any norm, actionability overrides; a forest's
        target must win the summed vote by 1e-6 against rivals that win ties, so δ_min is
        proven for CEs with that margin). Logistic regression and ReLU MLPs:
        :class:`~robustce.methods.MILPNearest` with MACE's margin (single norm, schema
        actionability). "auto" takes the faster where both apply (adult, ℓ1, ε = 1e-3, 20–40
        queries, median s per CE MILP vs z3, ``benchmarks/bench_mace.py``): "milp" for trees
        (0.014 vs 0.022), logistic regression (0.006 vs 0.15) and ReLU MLPs (0.011 vs 2.3;
        networks only with one norm and the schema's actionability) when one CE per query is
        asked and no hint; "smt" for forests (0.57 vs 1.36), boosted trees and everything
        else. The resolved choice is ``backend_``.
    n_counterfactuals : number of CEs per query; each further one must differ from all earlier
        ones in at least one feature (diversity clause) and gets its own bounds.
    actionability : optional ``{feature: "immutable" | "increase" | "decrease" | "free"}``
        overriding the schema's actionability (e.g. ``{"age": "immutable"}``).
    tau : margin by which the target class must win (None = 1e-6 for logit models, whose
        float64 forward pass must agree with exact arithmetic; 0 for trees and forests, which
        are encoded exactly, ties resolved as scikit-learn does).
    hint : None (default) or "milp" (SMT backend; trees, forests and boosted trees, or logistic regression
        and ReLU MLPs with one norm and the schema's actionability): the MILP backend's
        incumbent for the first CE, checked by a plain ``predict``, becomes δ_max, and
        Algorithm 1's first SAT call asks for a CE within δ_max − ε — an unsatisfiable answer
        is z3's proof that the hint is within ε of the optimum. The certificate (δ_min) is
        still z3's; the hint only saves the calls near the optimum, the slowest ones. On
        trees and forests the MILP gets half of the query's remaining time (its stages
        below the last a tenth each; one too large to pay off is left to z3), so z3 always
        has the other half.
    work_limit : z3 work budget per query, in z3 resource units (its deterministic
        ``rlimit`` counter), shared by the query's satisfiability calls (all its CEs); each
        call may spend what is left. None (default) = ``time_limit ×`` the model family's
        :data:`WORK_PER_SECOND` (units per nominal second, calibrated so that a budget takes
        about ``time_limit`` seconds or less on the reference machine: 2e6 for trees, 3e6
        for forests and boosted trees, 5e5 for logistic regression, 5e4 for ReLU MLPs). A
        spent budget stops the query with status ``timeout`` (never a certificate the solver
        did not prove), the same on every host and under any load: given the same inputs and
        ``random_state`` the SMT backend's CEs and bounds are repeatable (each query runs on
        a fresh z3 context, so not even the queries before it matter).
    sat_timeout : optional wall-clock limit per satisfiability call in seconds (None = the
        query's safety net). A safety net like ``time_limit``: where it binds, results depend
        on the host's speed and load.
    fixed_costs : optional ``{feature: cost}`` charged once when the feature changes at all:
        the distance becomes ``(α‖δ‖₀ + β‖δ‖₁ + γ‖δ‖∞ + Σ_j c_j 𝕀[feature j changes]) / J``
        (:func:`mace_distance`; a cost of 1 weighs as much as moving a feature across its
        whole range). Every backend: z3 (an ``If`` term), the tree MILP and the network MILP
        (:class:`~robustce.methods.MILPNearest`'s ``fixed_costs``; ``norm="l1"`` only, so
        "auto" picks z3 for another norm). δ_min, δ_max and ε are on this distance.
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer`. On the
        SMT backend ``time_limit`` is the nominal budget per query, turned into the work budget
        (``work_limit``); the wall clock only stops a query after ``WALL_SLACK × time_limit``
        seconds (:data:`WALL_SLACK` = 10), a safety net against pathological hangs.
        ``random_state`` (an int; 0 otherwise) seeds z3 (``random_seed``). The MILP backend
        and ``hint`` spend ``time_limit`` as CPU seconds of HiGHS's thread, with the same
        wall-clock net (:mod:`robustce.solvers.clock`). With a causal model in
        ``constraints`` (MINT) a CE is an action set, as in MILPNearest: a child moves only
        with its parents (its actionability does not apply) and its change costs nothing
        (weight 0 in every norm).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    delta_max : distance of the returned (first) CE, :func:`mace_distance`.
    delta_min : certified lower bound: no plausible CE has distance <= delta_min.
    epsilon : the accuracy asked for; ``found`` guarantees delta_max − delta_min <= epsilon.
    sat_calls : number of satisfiability calls (all CEs of the query).
    solver_time : seconds spent inside z3.
    solver_work : z3 resource units spent (SMT backend; None on the MILP backend) — the
        quantity ``work_limit`` bounds, repeatable where ``solver_time`` is not.
    diverse_delta_max, diverse_delta_min : lists over all CEs of the query (when
        ``n_counterfactuals > 1``), each CE's bounds under the diversity clauses before it.

    Statuses: ``found`` (converged within ε); ``infeasible`` (z3 proved that no plausible CE
    exists); ``timeout`` (the work budget or the wall-clock safety net ran out, or z3
    answered unknown: the certificate carries the bounds reached so far, and the best CE
    found, if any, is returned); ``error``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MACE(model, train).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> model.predict(res.counterfactuals[res.feature_names])
    array([1, 1, 1])
    """

    name: ClassVar[str] = "mace"
    #: relations and ``max_changes`` are z3 formulas (:func:`robustce.solvers.smt.
    #: constraint_formulas`) or MILP rows (:func:`robustce.solvers.encodings.encode_constraints`);
    #: the seed (MO) is the nearest training point that satisfies them
    _constraints: ClassVar[str] = "exact"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "delta_max", "delta_min", "epsilon", "sat_calls", "solver_time", "solver_work",
        "diverse_delta_max", "diverse_delta_min")

    def __init__(self, model: Model, data: Any = None, *, norm: str | Mapping[str, float] = "l1",
                 epsilon: float = 1e-3, backend: str = "auto", n_counterfactuals: int = 1,
                 actionability: Mapping[str, str] | None = None, tau: float | None = None,
                 sat_timeout: float | None = None, work_limit: int | None = None,
                 hint: str | None = None,
                 fixed_costs: Mapping[str, float] | None = None, **kwargs: Any):
        self.norm = norm
        self.fixed_costs = fixed_costs
        self.epsilon = epsilon
        self.backend = backend
        self.n_counterfactuals = n_counterfactuals
        self.actionability = actionability
        self.tau = tau
        self.sat_timeout = sat_timeout
        self.work_limit = work_limit
        self.hint = hint
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        self._norm = normalise_norm(self.norm)
        eps = float(check_number(self.epsilon, "epsilon", low=0, low_open=True, high=1))
        check_choice(self.backend, "backend", BACKENDS)
        check_integer(self.n_counterfactuals, "n_counterfactuals", low=1)
        if self.tau is not None:
            check_number(self.tau, "tau", low=0)
        if self.sat_timeout is not None:
            check_number(self.sat_timeout, "sat_timeout", low=0, low_open=True)
        check_integer(self.work_limit, "work_limit", low=1, allow_none=True)
        acts = check_actionability(self.encoder, self.actionability)
        self._eps = eps
        self._n_cf = int(self.n_counterfactuals)
        self._user_acts = acts
        # MINT: a causal child is not acted upon, it moves with its parents (free), and its
        # change costs nothing (weight 0 in every norm, as MILPNearest prices it)
        children = self.causal_children()
        child_names = {self.encoder.blocks_[int(f)].name
                       for f in np.unique(self.encoder.feature_of_column_[children])}
        self._acts = {**acts, **dict.fromkeys(sorted(child_names), "free")}
        self._children = children
        self._priced = [b.name not in child_names for b in self.encoder.blocks_]
        self._fixed = (None if self.fixed_costs is None
                       else feature_fixed_costs(self.encoder, self.fixed_costs))
        self._sat_timeout = None if self.sat_timeout is None else float(self.sat_timeout)
        rs = self.random_state
        self._z3_seed = (int(rs) if isinstance(rs, int | np.integer) and not isinstance(rs, bool)
                         else 0)
        self._kind, self._parts = _model_parts(self.model)
        self._tau = (float(self.tau) if self.tau is not None
                     else (1e-6 if self._kind in ("network", "boosted") else 0.0))
        self._work_limit = (int(self.work_limit) if self.work_limit is not None
                            else default_work_limit(self._kind, self._parts, float(self.time_limit)))
        self._input: smt.SMTInput | None = None
        self._omega = priced_weights(Distance("l1", space="raw").column_weights(self.encoder),
                                     children)
        #: the largest distance of any point of the box (Algorithm 1's first δ_max)
        self._top = 1.0 + (0.0 if self._fixed is None
                           else sum(self._fixed) / len(self.encoder.blocks_))
        if self.hint is not None:
            check_choice(self.hint, "hint", ("milp",))
        self.backend_ = self.backend if self.backend != "auto" else self._auto_backend()
        self._milp: MILPNearest | _TreeMILP | None = None
        if self.backend_ == "milp":
            self._milp = self._milp_backend()
        self._hint: MILPNearest | _TreeMILP | None = None
        if self.hint == "milp" and self.backend_ == "smt":
            self._hint = self._milp_backend(one_ce=False)
        self._mo = (None if self.data is None else
                    MinimumObservable(self.model, self.data, norm=self.norm,
                                      actionability=self._acts or None,
                                      target_class=self.target_class,
                                      constraints=self._constraints_obj))

    def __getstate__(self) -> dict[str, Any]:  # z3 objects do not pickle (joblib workers)
        state = dict(self.__dict__)
        state["_input"] = None
        return state

    # --- formula construction ---------------------------------------------------------------
    def _smt_input(self) -> smt.SMTInput:
        if self._input is None:
            self._input = smt.SMTInput(self.encoder)
        return self._input

    def _radius(self, delta: float) -> float:
        """Largest per-feature distance δ_j possible when d <= ``delta`` (inf if unbounded)."""
        J = len(self.encoder.blocks_)
        r = math.inf
        for key in ("l1", "linf"):
            if key in self._norm:
                r = min(r, J * delta / self._norm[key])
        if "l0" in self._norm and J * delta / self._norm["l0"] < 1.0:
            r = 0.0
        return r

    def _pruner(self, x: np.ndarray, delta: float) -> Any:
        """``prune(lo, hi)``: True when every point whose columns lie in ``[lo, hi]`` is
        farther than ``delta`` from ``x`` — a lower bound of d from the column ranges alone
        (each column's ω-weighted gap to the query bounds its feature's δ_f from below).
        ``lo``, ``hi``: one box (1-D, returns a bool) or a stack of boxes (2-D, one bool
        per row)."""
        enc = self.encoder
        J = len(enc.blocks_)
        return distance_pruner(x, self._omega, enc.feature_of_column_, J, self._norm,
                               delta * (1 + 1e-12) + 1e-15, scale=1.0 / J)

    def _solver(self, x: np.ndarray, target: int, delta: float | None,
                extra: list[z3.BoolRef]) -> tuple[z3.Solver, smt.SMTInput, z3.ArithRef]:
        """z3 solver holding φ_CF ∧ φ_g for query ``x`` and the distance variable ``D``
        (``D <= δ`` is then asserted per call). The model formula is partially evaluated over
        the box that the actionability and, when ``delta`` is given, the bound ``d <= delta``
        leave to each column (tree branches outside it dropped, neurons stable on it written
        without ``If``); the solver is then valid for every bound up to ``delta``."""
        inp = self._smt_input()
        lo, hi = inp.box(x, self._acts)
        if delta is not None:
            blo, bhi = inp.ball(x, self._radius(delta))
            # a causal child's change costs nothing: the ball does not bound it
            blo[self._children], bhi[self._children] = lo[self._children], hi[self._children]
            lo, hi = np.maximum(lo, blo), np.minimum(hi, bhi)
        box = (lo, hi)
        s = z3.Solver()
        s.add(*inp.domain_at(x))  # the query's box: beyond [0, 1] where x is
        s.add(*inp.actionability(x, self._acts))
        if self.constraints_ is not None:
            s.add(*smt.constraint_formulas(inp, x, self.constraints_))
        prune = None if delta is None else self._pruner(x, delta)
        if self._kind == "tree":
            s.add(smt.tree_formula(self._parts[0], inp, target, box, prune=prune))
        elif self._kind == "forest":
            smt.assert_all(s, smt.forest_formula(self._parts, inp, target, box, tau=self._tau,
                                                 prune=prune))
        elif self._kind == "boosted":
            smt.assert_all(s, smt.additive_formula(self._parts, inp, target, box, tau=self._tau,
                                                   prune=prune))
        else:
            first = None
            if delta is not None and "l1" in self._norm:
                # the ℓ1 budget couples the columns: exact first-layer bounds over it
                W0, b0 = self._parts[0]
                J = len(self.encoder.blocks_)
                first = smt.l1_ball_bounds(W0, b0, x, lo, hi, self._omega,
                                           J * delta / self._norm["l1"])
            s.add(*smt.network_formula(self._parts, inp, target, box, tau=self._tau,
                                       first=first))
        D, dcons = inp.distance(x, self._norm, priced=self._priced, fixed=self._fixed)
        s.add(*dcons)
        if delta is not None:
            s.add(D <= smt.rational(delta))
        s.add(*extra)
        return s, inp, D

    # --- Algorithm 1 ------------------------------------------------------------------------
    def _distances(self, x: np.ndarray, C: np.ndarray) -> np.ndarray:
        """MACE's distance of each row of ``C`` from ``x`` (children priced 0, fixed costs
        added)."""
        return mace_distance(self.encoder, x, C, self._norm, column_weights=self._omega,
                             fixed=self._fixed)

    def _distance(self, x: np.ndarray, cf: np.ndarray) -> float:
        """:meth:`_distances` of one point."""
        return float(self._distances(x, cf[None])[0])

    def _seed(self, x: np.ndarray, target: int, previous: list[np.ndarray]
              ) -> np.ndarray | None:
        """The nearest training point (MACE distance) that the model puts in ``target``,
        satisfies the plausibility clauses and differs from the ``previous`` CEs — the MO
        baseline (:class:`MinimumObservable`); it starts Algorithm 1 at its distance instead
        of 1. None without data."""
        if self._mo is None:
            return None
        return self._mo.nearest(x, target, previous)[0]

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        if self._milp is not None:
            return self._explain_milp(x, target)
        # each query on its own z3 context (its z3 run then depends on the query alone, not
        # on the queries before it); the variables are made anew in it
        with smt.fresh_context():
            self._input = None
            try:
                return self._explain_smt(x, target)
            finally:
                self._input = None

    def _explain_smt(self, x: np.ndarray, target: int) -> QueryResult:
        """Algorithm 1 for each of the query's CEs (:meth:`_search`), on z3."""
        # the hint's (HiGHS) CPU budget; its wall-clock net is also z3's
        budget = Budget(self.time_limit)
        stats = {"calls": 0, "time": 0.0, "work": 0}
        cfs: list[np.ndarray] = []
        highs: list[float] = []
        lows: list[float] = []
        diversity: list[z3.BoolRef] = []
        status, message, low = "found", "", 0.0
        for k in range(self._n_cf):
            st, cf, hi, low, message = self._search(x, target, low, cfs, diversity, budget,
                                                    stats)
            if cf is not None:
                cfs.append(cf)
                highs.append(hi)
                lows.append(low)
            if st != "found":
                if st == "infeasible" and k > 0:
                    st = "found"  # fewer diverse CEs exist than asked for
                    message = f"only {k} distinct plausible CE(s) exist"
                status = st
                break
            diversity.append(self._smt_input().differs(cf))
        cert: dict[str, Any] = {
            "delta_max": highs[0] if highs else math.nan,
            "delta_min": lows[0] if lows else low,
            "epsilon": self._eps,
            "sat_calls": stats["calls"],
            "solver_time": stats["time"],
            "solver_work": stats["work"],
            "diverse_delta_max": highs if self._n_cf > 1 else None,
            "diverse_delta_min": lows if self._n_cf > 1 else None,
        }
        return QueryResult(status, np.array(cfs) if cfs else None, cert, message=message)

    def _search(self, x: np.ndarray, target: int, low: float, previous: list[np.ndarray],
                diversity: list[z3.BoolRef], budget: Budget, stats: dict[str, Any]
                ) -> tuple[str, np.ndarray | None, float, float, str]:
        """Algorithm 1 from ``δ_min = low``: (status, CE, δ_max, δ_min, message).

        The search first doubles δ up from δ_min (calls on small balls are cheap: few
        unstable neurons, few reachable tree leaves) until a call is satisfiable or δ reaches
        the midpoint, then bisects. (adult forest, 20 queries: bisecting from MO's distance
        spent 28 s in satisfiable calls on wide balls; galloping up, 5 s.) Tree models keep
        one solver while the bound shrinks (``D <= δ`` pushed and popped) and rebuild it,
        partially evaluated on the smaller distance ball, once δ has shrunk fourfold or
        grown; networks get a fresh formula every step (most neurons become stable). Every
        step keeps the invariant of Algorithm 1 (δ_min refuted, a CE at δ_max), so the
        certificate is the same."""
        rebuild = 1.0 if self._kind == "network" else 4.0
        base: tuple[z3.Solver, smt.SMTInput, z3.ArithRef] | None = None
        built = math.inf  # the bound the current solver was built for

        def ask(delta: float | None) -> smt.SMTResult:
            nonlocal base, built
            # z3's wall-clock safety net, WALL_SLACK × time_limit from the query's start (the
            # work budget is the limit that normally binds)
            left = budget.wall_left()
            limit = left if self._sat_timeout is None else min(left, self._sat_timeout)
            work = self._work_limit - stats["work"]
            if work < 1:
                return smt.SMTResult("unknown", None, "work limit reached")
            t0 = time.perf_counter()
            want = math.inf if delta is None else delta
            if base is None or want > built or want * rebuild <= built:
                base = self._solver(x, target, delta, diversity)
                built = want
            solver, inp, D = base
            extra = [] if delta is None or delta == built else [D <= smt.rational(delta)]
            r = smt.check(solver, inp, extra, timeout=limit - (time.perf_counter() - t0),
                          rlimit=work, seed=self._z3_seed)
            stats["calls"] += 1
            stats["time"] += time.perf_counter() - t0
            stats["work"] += r.work
            if r.status == "sat" and self.model.predict(r.x[None])[0] != target:
                return smt.SMTResult("error", r.x, "the float64 forward pass disagrees with the "
                                     "exact formula (raise tau)", r.time)
            return r

        gallop = True  # small balls first
        seed = self._seed(x, target, previous)
        best: np.ndarray | None = None
        high = self._top  # d <= 1 (+ fixed costs) on the unit box; beyond it, ask(None)
        if seed is not None:
            best, high = seed, self._distance(x, seed)
        hinted = False
        if self._hint is not None and not previous:
            cf = self._milp_hint(x, target, budget)
            if cf is not None and self._distance(x, cf) <= high:  # (= : the seed is optimal)
                best, high, hinted = cf, self._distance(x, cf), True
        for _ in range(_MAX_STEPS):
            if high - low <= self._eps and best is None:
                r = ask(None)  # no CE within 1 - ε yet: is there one at all?
                if r.status == "unsat":
                    return "infeasible", None, math.nan, 1.0, "proved: no plausible CE exists"
                if r.status != "sat":
                    return self._stop(r, None, math.nan, low)
                best, high = r.x, self._distance(x, r.x)
            if high - low <= self._eps:
                return "found", best, high, low, ""
            mid = 0.5 * (low + high)
            if hinted:  # first ask whether the hint is within ε of the optimum
                # (just above high − ε, so that an unsat answer closes the gap in float)
                mid, hinted, gallop = max(high - self._eps * (1 - 1e-9), mid), False, False
            if gallop:
                probe = max(low * 2.0, low + self._eps)
                gallop = probe < mid
                if gallop:
                    mid = probe
            r = ask(mid)
            if r.status == "sat":
                best, high = r.x, min(self._distance(x, r.x), high)
            elif r.status == "unsat":
                low = mid
            else:
                return self._stop(r, best, high, low)
        return "found" if high - low <= self._eps else "timeout", best, high, low, ""

    @staticmethod
    def _stop(r: smt.SMTResult, best: np.ndarray | None, high: float, low: float
              ) -> tuple[str, np.ndarray | None, float, float, str]:
        if r.status == "error":
            return "error", best, high, low, r.reason
        note = f"z3: {r.reason or 'unknown'}; bounds [{low:.6g}, {high:.6g}] not within epsilon"
        return "timeout", best, high, low, note
