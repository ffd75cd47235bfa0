"""MACE's MILP backend (``backend="milp"``, ``hint="milp"``): the same nearest-CE problem as
the SMT search of :mod:`robustce.methods.mace`, solved by one MILP per query on HiGHS — for
logistic regression and ReLU MLPs :class:`~robustce.methods.MILPNearest` with MACE's margin,
for trees, forests and boosted trees :class:`_TreeMILP`, the tree MILP of the nearest-CE
engine (:mod:`robustce.nearest`) under MACE's α/β/γ-weighted distance in growing balls.
:class:`MILPBackend` is the part of :class:`~robustce.methods.MACE` that chooses, builds and
reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from robustce.distance import L0_TOL, Distance
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.explanations import QueryResult
from robustce.methods.feature_tweaking import PlausibleFeatureTweaking
from robustce.methods.milp_nearest import MILPNearest
from robustce.methods.minimum_observable import reachable
from robustce.nearest import incumbent_box, milp_point, tree_candidates
from robustce.nearest.core import _Nearest
from robustce.nearest.incumbents import _N_ROUND_TRIP
from robustce.nearest.trees import _TREE_FIRST_RADIUS, _TREE_VOTE_MARGIN
from robustce.solvers.clock import Budget
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
    encode_tree_ensemble,
    ensemble_of,
    solve_tree_stage,
)

__all__ = ["MILPBackend"]


class MILPBackend:
    """Mixin of :class:`~robustce.methods.MACE`: its MILP backend (module docstring). Reads
    MACE's checked parameters (``_kind``, ``_norm``, ``_tau``, ``_fixed``, ``_n_cf``,
    ``_user_acts``, ``_milp``, ``_hint``) and its distance (``_distance``)."""

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
                                "sat_calls": 0, "solver_time": r.time, "solver_work": None,
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

    def _milp_hint(self, x: np.ndarray, target: int, budget: Budget) -> np.ndarray | None:
        """The MILP incumbent for ``x`` if a plain forward pass puts it in ``target`` (the
        ``hint="milp"`` witness for δ_max) within what is left of the query's CPU ``budget``,
        else None."""
        assert self._hint is not None
        left = budget.remaining()
        if left <= 0:
            return None
        r = self._hint._nearest(x, target, self._hint.tau, left)
        if r.cf is None:
            return None
        cf = self._snap(x, target, r.cf)
        return cf if self.model.predict(cf[None])[0] == target else None


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

    def __init__(self, mace: Any, hint: bool = False):  # mace: the MACE explainer
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
        nearest tree candidate (:func:`~robustce.nearest.tree_candidates`:
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
        budget = Budget(time_limit)
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
                                        time_left=budget.remaining())
        if relations and cf is not None:
            cf = milp_point(res, dom, enc)
        return _Stage(cut, res, cf)

    def _nearest(self, x: np.ndarray, target: int, tau: float, time_limit: float) -> _Nearest:
        mc = self.mace
        J = len(mc.encoder.blocks_)
        if self.hint:  # leave z3 the rest of the budget for its proof
            time_limit *= _HINT_SHARE
        budget = Budget(time_limit)
        box = mc._smt_input().box(x, mc._acts)
        seed = self._seed(x, target, box)
        d_seed = None if seed is None else mc._distance(x, seed)
        low = 0.0  # proven: no CE with J·d <= low
        spent = 0.0
        slack = 0.5 * mc._eps * J  # the seed is returned once nothing beats it by this
        radii = self._radii(d_seed)
        # stages one changed feature apart: none is skipped
        l0 = set(mc._norm) == {"l0"} and mc._fixed is None
        why = ""
        for k, delta in enumerate(radii):
            left = budget.remaining()
            if left <= 0:
                why = budget.stop_text()
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
                low, why = bound, r.message
                break
            return _Nearest("error", None, bound=bound,
                            **{**base, "message": f"solver: {status.value} {r.message}"})
        else:  # the last stage (never skipped) cut off: nothing beats the seed by ε/2
            if seed is not None:  # (for ℓ0 alone by integrality, see _radii)
                low = max(low, J * d_seed - slack)
        note = f" ({why})" if why else ""
        if seed is None:
            return _Nearest("timeout", None, bound=low, time=spent,
                            message="time limit before a CE was found" + note)
        proven = low >= J * d_seed - slack
        return _Nearest("found", seed.copy(), objective=J * d_seed, bound=low,
                        gap=0.0 if proven else math.nan, optimal=proven,
                        solver_status="cutoff" if proven else "time_limit",
                        time=spent, message="the nearest training point is optimal" if proven
                        else "time limit: the nearest training point" + note)
