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
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import numpy as np
import z3

from robustce.distance import L0_TOL, Distance, feature_fixed_costs
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.methods.feature_tweaking import PlausibleFeatureTweaking
from robustce.methods.milp_nearest import (  # the tree MILP's vote margin and first radius
    _N_ROUND_TRIP,
    _TREE_FIRST_RADIUS,
    _TREE_VOTE_MARGIN,
    MILPNearest,
    _Nearest,
    incumbent_box,
    milp_point,
    priced_weights,
    tree_candidates,
)
from robustce.methods.minimum_observable import (
    MinimumObservable,
    check_actionability,
    mace_distance,
    normalise_norm,
    reachable,
)
from robustce.models.base import Model, model_name
from robustce.solvers import smt
from robustce.solvers.encodings import (
    DistanceObjective,
    encode_constraints,
    encode_distance,
    encode_input_domain,
    restrict_domain,
)
from robustce.solvers.fixed_cost_encoding import add_fixed_costs
from robustce.solvers.milp import MILP, SolveStatus
from robustce.solvers.tree_encoding import (
    TreeEnsemble,
    distance_pruner,
    encode_tree_ensemble,
    ensemble_of,
    solve_tree_stage,
    tree_parts,
)
from robustce.validation import check_choice, check_integer, check_number

__all__ = ["MACE", "mace_distance", "normalise_norm"]

BACKENDS = ("auto", "smt", "milp")
_MAX_STEPS = 200  # bisection cap (ε >= 1e-12 needs at most ~40)


class MACE(Explainer):
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
        :meth:`~robustce.models.AdditiveTrees.vote_trees` as the vote): :class:`_TreeMILP`
        (:mod:`robustce.solvers.tree_encoding`; any norm, actionability overrides; a forest's
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
    sat_timeout : z3 time limit per satisfiability call in seconds (None = the remaining
        per-query ``time_limit``).
    fixed_costs : optional ``{feature: cost}`` charged once when the feature changes at all:
        the distance becomes ``(α‖δ‖₀ + β‖δ‖₁ + γ‖δ‖∞ + Σ_j c_j 𝕀[feature j changes]) / J``
        (:func:`mace_distance`; a cost of 1 weighs as much as moving a feature across its
        whole range). Every backend: z3 (an ``If`` term), the tree MILP and the network MILP
        (:class:`~robustce.methods.MILPNearest`'s ``fixed_costs``; ``norm="l1"`` only, so
        "auto" picks z3 for another norm). δ_min, δ_max and ε are on this distance.
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer`; ``time_limit`` is
        the wall-clock budget per query. With a causal model in ``constraints`` (MINT) a CE
        is an action set, as in MILPNearest: a child moves only with its parents (its
        actionability does not apply) and its change costs nothing (weight 0 in every norm).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    delta_max : distance of the returned (first) CE, :func:`mace_distance`.
    delta_min : certified lower bound: no plausible CE has distance <= delta_min.
    epsilon : the accuracy asked for; ``found`` guarantees delta_max − delta_min <= epsilon.
    sat_calls : number of satisfiability calls (all CEs of the query).
    solver_time : seconds spent inside z3.
    diverse_delta_max, diverse_delta_min : lists over all CEs of the query (when
        ``n_counterfactuals > 1``), each CE's bounds under the diversity clauses before it.

    Statuses: ``found`` (converged within ε); ``infeasible`` (z3 proved that no plausible CE
    exists); ``timeout`` (time ran out or z3 answered unknown: the certificate carries the
    bounds reached so far, and the best CE found, if any, is returned); ``error``.

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
        "delta_max", "delta_min", "epsilon", "sat_calls", "solver_time",
        "diverse_delta_max", "diverse_delta_min")

    def __init__(self, model: Model, data: Any = None, *, norm: str | Mapping[str, float] = "l1",
                 epsilon: float = 1e-3, backend: str = "auto", n_counterfactuals: int = 1,
                 actionability: Mapping[str, str] | None = None, tau: float | None = None,
                 sat_timeout: float | None = None, hint: str | None = None,
                 fixed_costs: Mapping[str, float] | None = None, **kwargs: Any):
        self.norm = norm
        self.fixed_costs = fixed_costs
        self.epsilon = epsilon
        self.backend = backend
        self.n_counterfactuals = n_counterfactuals
        self.actionability = actionability
        self.tau = tau
        self.sat_timeout = sat_timeout
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
        self._kind, self._parts = _model_parts(self.model)
        self._tau = (float(self.tau) if self.tau is not None
                     else (1e-6 if self._kind in ("network", "boosted") else 0.0))
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

    def _auto_backend(self) -> str:
        """The faster backend where both apply (measured: see ``backend``): the MILP for a
        tree, and for logistic regression and ReLU MLPs with one norm and the schema's
        actionability, when one CE per query is asked and no hint; z3 otherwise."""
        if self._n_cf != 1 or self.hint is not None:
            return "smt"
        if self._kind == "tree":
            return "milp"
        if self._kind == "network" and len(self._norm) == 1 and not self._user_acts and (
                self._fixed is None or set(self._norm) == {"l1"}):
            return "milp"
        return "smt"

    def _milp_backend(self, one_ce: bool = True) -> MILPNearest | _TreeMILP:
        """The MILP formulation of the same problem: for trees and forests
        :class:`_TreeMILP` (:mod:`robustce.solvers.tree_encoding`); for LR and MLPs
        MILPNearest with MACE's raw-space distance, no tie-break term and the same margin
        ``tau``."""
        if one_ce and self._n_cf != 1:
            raise ValidationError("backend='milp' returns one CE per query; use backend='smt' "
                                  "for diverse CEs")
        if self._kind in ("tree", "forest", "boosted"):
            return _TreeMILP(self, hint=not one_ce)
        if self._kind != "network":
            raise UnsupportedModelError(
                "backend='milp' covers decision trees, random forests, boosted trees, logistic "
                f"regression and ReLU MLPs; use backend='smt' for {self._kind} models")
        if len(self._norm) != 1:
            raise ValidationError("backend='milp' takes one norm ('l0', 'l1' or 'linf'), not a "
                                  "weighted combination; use backend='smt'")
        if self._user_acts:
            raise ValidationError("backend='milp' uses the schema's actionability; set "
                                  "`actionability` overrides in the schema or use backend='smt'")
        if self._fixed is not None and set(self._norm) != {"l1"}:
            raise ValidationError("backend='milp' takes fixed_costs with norm='l1' only "
                                  "(MILPNearest's); use backend='smt'")
        # MILPNearest prices a causal child at 0 and frees its box, as MACE does
        return MILPNearest(self.model, norm=next(iter(self._norm)), tau=max(self._tau, 1e-9),
                           tie_break=0.0, mip_gap=1e-9, time_limit=self.time_limit,
                           relax_first=False,  # its 1e-9 gap: the relaxation never decides
                           constraints=self._constraints_obj, fixed_costs=self.fixed_costs)

    def _explain_milp(self, x: np.ndarray, target: int) -> QueryResult:
        """One MILP solve: its incumbent is the CE (δ_max), its proven bound / J is δ_min."""
        assert self._milp is not None
        r = self._milp._nearest(x, target, self._milp.tau, self.time_limit)
        J = len(self.encoder.blocks_)
        low = max(0.0, float(r.bound) / J) if math.isfinite(r.bound) else 0.0
        cert: dict[str, Any] = {"delta_max": math.nan, "delta_min": low, "epsilon": self._eps,
                                "sat_calls": 0, "solver_time": r.time,
                                "diverse_delta_max": None, "diverse_delta_min": None}
        if r.status == "infeasible":
            cert["delta_min"] = 1.0
            return QueryResult("infeasible", None, cert, message="proved: no plausible CE exists")
        if r.cf is None:
            return QueryResult(r.status, None, cert, message=r.message)
        cf = self._snap(x, target, r.cf)
        tau = self._milp.tau
        for _ in range(2):  # the solver's tolerances can eat a tiny margin: widen it and resolve
            if self.model.predict(cf[None])[0] == target:
                break
            tau *= 100.0
            again = self._milp._nearest(x, target, tau, self.time_limit)
            cert["solver_time"] += again.time
            if again.cf is None:
                break
            cf = self._snap(x, target, again.cf)  # feasible for the first margin: low holds
        high = self._distance(x, cf)
        cert["delta_max"] = high
        status = "found" if high - low <= self._eps else "timeout"
        return QueryResult(status, cf[None], cert, message="" if status == "found" else
                           f"MILP stopped at bounds [{low:.6g}, {high:.6g}] ({r.solver_status})")

    def _snap(self, x: np.ndarray, target: int, cf: np.ndarray) -> np.ndarray:
        """A MILP solution with the float noise of unchanged columns (≈1e-16 after presolve,
        which the exact MACE distance would count as changes) snapped back to ``x`` when the
        forward pass still gives the target."""
        snapped = np.where(np.abs(cf - x) <= L0_TOL, x, cf)
        return snapped if self.model.predict(snapped[None])[0] == target else cf

    def _milp_hint(self, x: np.ndarray, target: int, deadline: float) -> np.ndarray | None:
        """The MILP incumbent for ``x`` if a plain forward pass puts it in ``target`` (the
        ``hint="milp"`` witness for δ_max), else None."""
        assert self._hint is not None
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        r = self._hint._nearest(x, target, self._hint.tau, left)
        if r.cf is None:
            return None
        cf = self._snap(x, target, r.cf)
        return cf if self.model.predict(cf[None])[0] == target else None

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
        deadline = time.perf_counter() + self.time_limit
        stats = {"calls": 0, "time": 0.0}
        cfs: list[np.ndarray] = []
        highs: list[float] = []
        lows: list[float] = []
        diversity: list[z3.BoolRef] = []
        status, message, low = "found", "", 0.0
        for k in range(self._n_cf):
            st, cf, hi, low, message = self._search(x, target, low, cfs, diversity, deadline,
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
            "diverse_delta_max": highs if self._n_cf > 1 else None,
            "diverse_delta_min": lows if self._n_cf > 1 else None,
        }
        return QueryResult(status, np.array(cfs) if cfs else None, cert, message=message)

    def _search(self, x: np.ndarray, target: int, low: float, previous: list[np.ndarray],
                diversity: list[z3.BoolRef], deadline: float, stats: dict[str, Any]
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
            left = deadline - time.perf_counter()
            limit = left if self._sat_timeout is None else min(left, self._sat_timeout)
            t0 = time.perf_counter()
            want = math.inf if delta is None else delta
            if base is None or want > built or want * rebuild <= built:
                base = self._solver(x, target, delta, diversity)
                built = want
            solver, inp, D = base
            extra = [] if delta is None or delta == built else [D <= smt.rational(delta)]
            r = smt.check(solver, inp, extra, timeout=limit - (time.perf_counter() - t0))
            stats["calls"] += 1
            stats["time"] += time.perf_counter() - t0
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
            cf = self._milp_hint(x, target, deadline)
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


def _model_parts(model: Model) -> tuple[str, Any]:
    """("tree" | "forest", [TreeView, ...]), ("boosted", AdditiveTrees) or ("network",
    [(W, b), ...]); else
    :class:`UnsupportedModelError` naming the model."""
    parts = tree_parts(model)
    if parts is not None:
        return parts
    try:
        net = model.network()
    except UnsupportedModelError as exc:
        raise UnsupportedModelError(
            f"MACE cannot encode {model_name(model)}: supported are decision trees, random forests "
            f"(rc.models.wrap), logistic regression and ReLU MLPs ({exc})") from None
    return "network", [(np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64))
                       for W, b in net.weights]


#: with ``hint="milp"``, the MILP's share of the query's remaining time (z3 proves with the
#: rest), and the most a stage below the last may take: one that cannot decide within it is
#: skipped (no CE found, nothing proven; z3 is often faster at the proofs just below the
#: optimum — adult forest, ℓ∞, a stage at 0.82× the optimum: z3 8 s, HiGHS > 55 s)
_HINT_SHARE = 0.5
_HINT_STAGE_SHARE = 0.1
#: a hint's stage with more node variables than this is not solved (z3 takes over): HiGHS
#: 1.16 overran a 20 s limit by 90 s in its root cut separation on a 33 000-node ℓ0 stage
#: (adult forest); the largest stages that paid off had about 6 000
_HINT_MAX_NODES = 15000


@dataclass
class _Stage:
    """One MILP of :class:`_TreeMILP` over the CEs within ``delta``: ``cut`` — proven that
    there is none (within ``delta``); else a solver result and the decoded point;
    ``too_big``: not solved (a hint's MILP above ``_HINT_MAX_NODES``)."""

    cut: bool
    result: Any = None
    cf: np.ndarray | None = None
    too_big: bool = False


class _TreeMILP:
    """MACE's MILP backend for a decision tree or a soft-voting forest: the nearest plausible
    CE under MACE's distance by MILP (:func:`robustce.solvers.tree_encoding.
    encode_tree_ensemble` over :func:`robustce.solvers.encodings.encode_input_domain`, the
    distance from :func:`robustce.solvers.encodings.encode_distance`, α/β/γ-weighted and
    tightened by the split literals).

    Like the SMT backend's galloping, the MILPs are asked for CEs within a radius δ that grows:
    each is built only over the distance ball of radius δ around the query (every column
    bounded, tree nodes whose box lies beyond δ dropped — :meth:`MACE._pruner` — so most
    trees shrink to a few leaves) and cut off at δ. A cut-off MILP proves that no CE lies
    within δ (δ_min = δ); the first one with a solution holds the optimum, since every
    nearer CE lies in its ball. A seed bounds the search — the nearer of the MO point (MACE's
    seed, with training data) and the nearest valid tree candidate (:meth:`_seed`): the radii
    are its distance d₀ times 1/32, 1/16, … and last d₀ − ε/2 (ℓ0 alone: 1, 2, … changed
    features) — when nothing beats it by ε/2, the seed is returned. Without a seed the radii
    run up to 1, then the whole actionable box (:meth:`_radii`). Each stage
    gets the bound proven by the ones before as a row; the absolute MIP gap is ε·J/2 (the
    objective is J·d), so the answer is within ε/2 of the optimum.

    A forest's target must beat the rivals that win ties (those listed before it) by
    ``tau`` (default 1e-6) on the summed vote and the others by MACE's ``tau`` (0): the bound
    is proven for CEs with that margin (near-ties with a smaller positive margin are not
    considered; the SMT backend's δ_min is exact). Same interface as
    ``MILPNearest._nearest``."""

    def __init__(self, mace: MACE, hint: bool = False):
        self.mace = mace
        self.hint = hint
        forest = mace._kind in ("forest", "boosted")
        self.tau = max(mace._tau, _TREE_VOTE_MARGIN) if forest else mace._tau
        self._weak = mace._tau
        self._ensemble: TreeEnsemble | None = None
        self._tweaker: PlausibleFeatureTweaking | None = None

    def ensemble(self) -> TreeEnsemble:
        """The trees with their splits resolved against the encoder's column kinds (once)."""
        if self._ensemble is None:
            self._ensemble = ensemble_of(self.mace._kind, self.mace._parts, self.mace.encoder)
        return self._ensemble

    def _seed(self, x: np.ndarray, target: int, box: tuple[np.ndarray, np.ndarray]
              ) -> np.ndarray | None:
        """The nearer of MACE's seed (the MO training point, :meth:`MACE._seed`) and the
        nearest tree candidate (:func:`~robustce.methods.milp_nearest.tree_candidates`:
        one-feature moves to split bounds, feature tweaking, pulled back towards ``x``) that
        the model puts in ``target``, MACE's actionability allows (``box``, ``reachable``),
        the constraints accept and whose raw row, decoded and scored again, keeps the class.
        A nearer seed gives smaller balls (the diabetes forest: see benchmarks/README.md)."""
        mc = self.mace
        seed = mc._seed(x, target, [])
        enc = mc.encoder

        def valid(C: np.ndarray) -> np.ndarray:
            ok = reachable(enc, x, C, mc._acts) & (mc.model.predict(C) == target)
            if mc.constraints_ is not None and ok.any():
                ok[ok] = mc.constraints_.satisfied(x, C[ok])
            return ok

        if self._tweaker is None:
            self._tweaker = PlausibleFeatureTweaking(mc.model, actionability=mc.actionability)
        cost = partial(mc._distances, x)  # MACE's own distance
        C = tree_candidates(self.ensemble(), enc, self._tweaker, x, target, *box, valid=valid,
                            cost=cost)[:_N_ROUND_TRIP]
        if len(C):
            C = C[mc._round_trip(C, np.full(len(C), int(target)))[1]]
        if len(C) and (seed is None or cost(C[:1])[0] < mc._distance(x, seed)):
            return C[0]
        return seed

    def _objective(self, m: MILP, dom: Any, x: np.ndarray, trees: Any) -> DistanceObjective:
        """J·d(x', x) (eq. 3 times J) over the domain's variables, each norm's distance
        variables tightened by the split literals (:meth:`TreeEncoding.tighten`)."""
        mc = self.mace
        enc = mc.encoder
        parts = [(w, encode_distance(m, dom, x, Distance(key, weights=mc._omega, space="raw"),
                                     enc))
                 for key, w in mc._norm.items()]
        for _, p in parts:
            trees.tighten(m, p, x)
        obj = DistanceObjective(np.concatenate([p.cols for _, p in parts]),
                                np.concatenate([w * p.coefs for w, p in parts]),
                                float(sum(w * p.constant for w, p in parts)))
        if mc._fixed is None:
            return obj
        return add_fixed_costs(m, dom, x, mc._fixed, enc.feature_of_column_, obj)

    def _radii(self, seed_distance: float | None) -> list[float | None]:
        """The stages' radii δ. With a seed at distance d₀: d₀/32, d₀/16, … below d₀, then
        d₀ − ε/2 (is anything better than the seed by ε/2?); ℓ0 alone: 1, 2, …, k − 1
        changed features (distances are multiples of 1/J, so nothing within (k − 1)/J means
        the seed, k features, is optimal). Without a seed the same up to d = 1 (no distance
        exceeds it), then the whole box (None)."""
        mc = self.mace
        J = len(mc.encoder.blocks_)
        if seed_distance is None:
            top, last = mc._top, None
        else:
            top, last = seed_distance, seed_distance - 0.5 * mc._eps
        if set(mc._norm) == {"l0"} and mc._fixed is None:  # distances: multiples of 1/J
            out: list[float | None] = [c / J for c in range(1, round(top * J))]
            return out if seed_distance is not None else [*out, None]
        out = []
        r = top * _TREE_FIRST_RADIUS
        while last is None or r < last:
            if r >= top:
                break
            out.append(r)
            r *= 2.0
        if last is None or last > 0:
            out.append(last)
        return out

    def _stage(self, x: np.ndarray, target: int, tau: float, delta: float | None,
               box: tuple[np.ndarray, np.ndarray], time_limit: float,
               floor: float = 0.0) -> _Stage:
        """The MILP for the nearest CE within ``delta`` (None: anywhere in ``box``), cut off
        just above J·δ (a cut-off proves that no CE lies within δ), with the row
        ``objective >= floor`` (a bound proven by earlier stages)."""
        mc = self.mace
        enc = mc.encoder
        J = len(enc.blocks_)
        t0 = time.perf_counter()
        # no presolve: HiGHS 1.16's presolve reported a feasible stage MILP "infeasible"
        # (a 30-tree forest, α = β = 1/2; tests/methods/test_mace.py::
        # test_milp_backend_survives_the_highs_presolve_bug), as it did for MILPNearest
        m = MILP(time_limit=max(time_limit, 1e-3), mip_gap=0.0, abs_gap=0.5 * mc._eps * J,
                 feasibility_tol=1e-9, presolve=False)
        # grid columns stay continuous: splits compare them with grid points only, and the
        # decoded point is the query clipped to the range its splits leave (a grid point);
        # with relations the CE is the MILP's own point, grid columns integral (milp_point)
        cc = mc.constraints_
        relations = cc is not None and cc.has_rows
        dom = encode_input_domain(m, enc, x, lower=box[0], upper=box[1], actionability=False,
                                  integer_grid=relations)
        if cc is not None:
            encode_constraints(m, dom, x, cc)
        prune = cutoff = None
        if delta is not None:
            blo, bhi = incumbent_box(x, dom.lower, dom.upper, mc._omega, mc._radius(delta),
                                     dom.column_kind, dom.grid_steps)
            dom = restrict_domain(m, dom, blo, bhi)
            prune = mc._pruner(x, delta)
            cutoff = J * delta + 1e-7 * (1.0 + J * delta)  # strictly above (tolerances)
        weak = self._weak if tau <= self.tau else tau
        trees = encode_tree_ensemble(m, self.ensemble(), dom, target, margin_strict=tau,
                                     margin_weak=weak, prune=prune)
        if trees.infeasible:
            return _Stage(True)
        if self.hint and trees.n_nodes > _HINT_MAX_NODES:
            return _Stage(False, too_big=True)
        obj = self._objective(m, dom, x, trees)
        # the floor row is valid (the stages before proved that nothing is nearer) and lifts
        # the LP bound at once (adult forest, ℓ1: 8 vs 22 s on the slowest stage of a query)
        cut, res, cf = solve_tree_stage(m, trees, obj, dom, x, enc, floor=floor, cutoff=cutoff,
                                        time_left=time_limit - (time.perf_counter() - t0))
        if relations and cf is not None:
            cf = milp_point(res, dom, enc)
        return _Stage(cut, res, cf)

    def _nearest(self, x: np.ndarray, target: int, tau: float, time_limit: float) -> _Nearest:
        mc = self.mace
        J = len(mc.encoder.blocks_)
        t0 = time.perf_counter()
        box = mc._smt_input().box(x, mc._acts)
        seed = self._seed(x, target, box)
        d_seed = None if seed is None else mc._distance(x, seed)
        low = 0.0  # proven: no CE with J·d <= low
        spent = 0.0
        slack = 0.5 * mc._eps * J  # the seed is returned once nothing beats it by this
        radii = self._radii(d_seed)
        # stages one changed feature apart: none is skipped
        l0 = set(mc._norm) == {"l0"} and mc._fixed is None
        if self.hint:  # leave z3 the rest of the budget for its proof
            time_limit *= _HINT_SHARE
        for k, delta in enumerate(radii):
            left = time_limit - (time.perf_counter() - t0)
            if left <= 0:
                break
            last = k == len(radii) - 1
            cap = left if (last or not self.hint or l0) else min(left, _HINT_STAGE_SHARE
                                                                  * time_limit)
            st = self._stage(x, target, tau, delta, box, cap, floor=low)
            if st.too_big:
                break  # z3 takes over from the bounds so far
            r = st.result
            spent += 0.0 if r is None else r.time
            if (self.hint and not last and not st.cut and st.cf is None
                    and r.status in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT)):
                continue  # undecided within the cap: a larger ball may find a CE fast
            if st.cut:
                if delta is None:  # the whole box
                    return _Nearest("infeasible", None, time=spent, bound=math.inf, message=(
                        "proven infeasible: no plausible point is in the target class"))
                low = J * delta
                continue
            status = r.status
            base = {"objective": r.objective, "gap": r.gap, "solver_status": status.value,
                    "time": spent, "message": r.message}
            bound = max(low, r.bound) if math.isfinite(r.bound) else low
            if status is SolveStatus.INFEASIBLE:
                return _Nearest("infeasible", None, bound=bound, **{**base, "message": (
                    "proven infeasible: no plausible point is in the target class")})
            if st.cf is not None and status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT,
                                                SolveStatus.LIMIT):
                return _Nearest("found", st.cf, bound=bound,
                                optimal=status is SolveStatus.OPTIMAL, **base)
            if status in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
                low = bound
                break
            return _Nearest("error", None, bound=bound,
                            **{**base, "message": f"solver: {status.value} {r.message}"})
        else:  # the last stage (never skipped) cut off: nothing beats the seed by ε/2
            if seed is not None:  # (for ℓ0 alone by integrality, see _radii)
                low = max(low, J * d_seed - slack)
        if seed is None:
            return _Nearest("timeout", None, bound=low, time=spent,
                            message="time limit before a CE was found")
        proven = low >= J * d_seed - slack
        return _Nearest("found", seed.copy(), objective=J * d_seed, bound=low,
                        gap=0.0 if proven else math.nan, optimal=proven,
                        solver_status="cutoff" if proven else "time_limit",
                        time=spent, message="the nearest training point is optimal" if proven
                        else "time limit: the nearest training point")
