"""The nearest-CE MILP of a ReLU network (Mohammadi et al. 2021): the query's actionable
domain, the network encoded exactly (big-M from bounds over the box that an incumbent leaves,
exact first-layer bounds over the weighted L1 ball, back-substituted or LP-tightened bounds
for the rest), the margin row and the distance objective; a relaxation of the wide integer
grids first, whose rounded solution may already meet its bound; then the MILP, cut off at the
incumbent's objective."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from robustce.errors import ValidationError
from robustce.models.network import IntervalNetwork, class_margin
from robustce.nearest.core import Incumbent, NearestCore, _jacobian, _Nearest
from robustce.nearest.domains import incumbent_box
from robustce.robustness.bounds import box_bounds
from robustce.solvers.clock import Budget
from robustce.solvers.encodings import (
    InputDomain,
    encode_constraints,
    encode_distance,
    encode_network,
    restrict_domain,
)
from robustce.solvers.milp import MILP, SolveStatus
from robustce.solvers.tightening import TightenedBounds, l1_ball_layer_bounds, lp_tighten_bounds

__all__ = ["BOUND_TIGHTENING", "NetworkSearch"]

#: HiGHS primal heuristics (effort 0) and symmetry detection switched off when the solve starts
#: with an incumbent (measured in benchmarks/bench_milp.py: on these small models they cost more
#: than they find once a near-optimal cutoff is known; none changes the optimum). Presolve is
#: switched off for these solves: with HiGHS 1.16, presolve + the incumbent box + the cutoff
#: reported CUTOFF ("nothing beats the incumbent") on an adult query where a better point exists
#: (capital-gain 1320 vs the incumbent's 1333; found with presolve off or without the box;
#: tests/methods/test_milp_cutoff_regression.py). A wrong optimality claim costs more than the
#: 2-3x presolve saved per solve. (Presolve with the box is wrong without the cutoff too: that
#: model, cutoff dropped, gives 0.013538 as "optimal" with HiGHS 1.16 and 0.013410 with scipy
#: 1.17's HiGHS, against 0.013200 without presolve; its grid columns span up to 1.5 M steps, e.g.
#: fnlwgt, so ``x − z / steps = 0`` has coefficients near 7e-7.)
_WARM_OPTIONS = {"mip_heuristic_effort": 0.0, "mip_heuristic_run_rins": False,
                 "mip_heuristic_run_rens": False, "mip_heuristic_run_root_reduced_cost": False,
                 "mip_heuristic_run_zi_round": False, "mip_heuristic_run_feasibility_jump": False,
                 "mip_detect_symmetry": False}
#: the same without seeds (MILPNearest, MILP-R's first round). RINS and RENS used to stay on
#: here: an incumbent 6× farther than the optimum (an adult MILP-R query) took 373 ms without
#: them, 29 ms with. The incumbent's segment search (:meth:`IncumbentSearch._segment`) now
#: brings such incumbents within ~1.3× (that query: 8.9× → 1.3×), and with the sub-MIPs off the first
#: solves got faster (HiGHS CPU time on the captured first-round models, 20–40 queries:
#: HELOC 490 → 351 ms, GMC 246 → 186, COMPAS 67 → 61, adult 165 → 158; the adult 20-10
#: MILPNearest row 110 → 99, worst 11 → 7 ms; same optima).
_UNSEEDED_OPTIONS = dict(_WARM_OPTIONS)



#: share of a solve's time limit that LP bound tightening may use (``bound_tightening="lp"``)
_TIGHTEN_SHARE = 0.25
#: integer-grid columns with more lattice points than this are relaxed in a first solve
_RELAX_GRID_STEPS = 64
#: ... and one lattice step costs at most this share of the MIP gap at the incumbent's objective
_RELAX_STEP_SHARE = 1.0
#: with ``bound_tightening="auto"``, LP tightening runs when the interval encoding needs at least
#: this many binaries (measured on the PROPLACE Table 1 nets: below it the LPs cost more than
#: they save)
_TIGHTEN_MIN_BINARIES = 12
BOUND_TIGHTENING = ("auto", "crown", "interval", "lp")


class NetworkSearch(NearestCore):
    """The network MILP of :class:`~robustce.nearest.search.NearestSearch` (module
    docstring)."""

    #: under ``l1`` with an incumbent, exact first-layer bounds over the weighted L1 ball
    _ball_bounds: ClassVar[bool] = True

    def _new_milp(self, time_limit: float, warm: bool, seeded: bool = False) -> MILP:
        highs_warm = warm and self.solver_ == "highs"
        options = (_WARM_OPTIONS if seeded else _UNSEEDED_OPTIONS) if highs_warm else None
        return MILP(self.solver_, time_limit=max(time_limit, 1e-3), mip_gap=self.mip_gap,
                    threads=self.threads, options=options, presolve=not highs_warm)

    def _domain_template(self, m: MILP, q: np.ndarray) -> tuple[InputDomain, Any]:
        """Encode the query's actionable input domain and the distance objective's variables
        and rows into the empty model ``m``: copied from a model built once for the last
        query (MILP-R's rounds encode the same query again). Returns the domain and the
        distance objective. Raises ValidationError when the actionable box is empty."""
        if m.n_vars:
            raise ValidationError("_domain_template needs an empty model")
        key = q.tobytes()
        cached = self._template_
        if cached is None or cached[0] != key:
            t = MILP(self.solver_)
            dom = self._input_domain(t, q)
            obj = encode_distance(t, dom, q, self.distance_, self.encoder,
                                  tie_break=self.tie_break)
            obj = self._with_fixed_costs(t, dom, q, obj)
            if self.constraints_ is not None:
                encode_constraints(t, dom, q, self.constraints_)
            cached = self._template_ = (key, t, dom, obj)
        _, t, dom, obj = cached
        m.add_model(t)
        return dom, obj

    def _encode_nearest(self, m: MILP, q: np.ndarray, target: int, tau: float,
                        inc: Incumbent | None, cutoff: float | None,
                        bounds: list[tuple[np.ndarray, np.ndarray]] | None = None,
                        distance_row: bool = False) -> tuple[InputDomain, Any]:
        """Encode the nearest-CE problem into ``m``: the actionable domain (intersected with
        the incumbent box under l1/linf), the network (``bounds``: per-layer pre-activation
        bounds; interval bounds over the box if None), the margin row(s) and the distance
        objective; ``distance_row`` adds ``objective ≤ cutoff`` (for the LP relaxation of
        bound tightening: every point that can beat the cutoff satisfies it). Raises
        ValidationError when the actionable box is empty."""
        dom, obj = self._domain_template(m, q)
        derived = bounds is None  # bounds computed here (not handed in by LP tightening)
        ball = None
        if cutoff is not None and self.box_from_incumbent and self.norm in ("l1", "linf"):
            lo, hi = incumbent_box(q, dom.lower, dom.upper, self._weights(), cutoff,
                                   dom.column_kind, dom.grid_steps)
            dom = restrict_domain(m, dom, lo, hi)
            if bounds is None and self.norm == "l1" and self._ball_bounds:
                # every point that can beat the cutoff lies in the weighted L1 ball of radius
                # cutoff: exact first-layer bounds over ball ∩ box; the distance row below
                # keeps every other point out of the MILP, so they are sound for all it admits
                # the objective counts movable columns only (encode_distance)
                w = np.where(hi > lo, self._weights(), 0.0)
                bounds = l1_ball_layer_bounds(self._network, q, lo, hi, w, cutoff)
                distance_row = True
                ball = (q, w, cutoff)
        if derived and self.bound_tightening != "interval" and self._network.plain:
            # back-substituted bounds over box ∩ ball (every point the MILP admits lies in
            # both): tighter big-M, fewer binaries (robustness/bounds.py)
            bounds = box_bounds(self._network, dom.lower, dom.upper, bounds, ball)
        ne = encode_network(m, self._network, dom.vars, bounds=bounds)
        y = ne.outputs
        k = self._network.n_outputs
        if k == 1:
            if target == 1:
                m.add_constrs_coo([0], [y[0]], [1.0], 1, tau, np.inf)
            else:
                m.add_constrs_coo([0], [y[0]], [1.0], 1, -np.inf, -tau)
        else:
            others = np.array([j for j in range(k) if j != target])
            r = np.arange(len(others))
            m.add_constrs_coo(np.concatenate([r, r]), np.concatenate([np.full(len(r), y[target]), y[others]]),
                              np.concatenate([np.ones(len(r)), -np.ones(len(r))]), len(r), tau, np.inf)
        if distance_row and cutoff is not None:
            m.add_constrs_coo(np.zeros(len(obj.cols), dtype=np.int64), obj.cols, obj.coefs, 1,
                              -np.inf, cutoff - obj.constant)
        obj.set_as_objective(m)
        return dom, ne

    def _tightened_bounds(self, q: np.ndarray, target: int, tau: float, inc: Incumbent | None,
                          cutoff: float | None, dom: InputDomain, time_limit: float
                          ) -> TightenedBounds:
        """LP-tightened pre-activation bounds of this query's problem
        (:func:`robustce.solvers.tightening.lp_tighten_bounds`) over the relaxation with the
        margin row and, with an incumbent, ``objective ≤ cutoff``."""
        inn = IntervalNetwork.point(self._network)
        start = (box_bounds(self._network, dom.lower, dom.upper) if self._network.plain
                 else [(lo[0], hi[0]) for lo, hi in inn.layer_bounds(dom.lower, dom.upper)])

        def build(bounds, _upper_min):
            # LPs re-solved from the previous basis: no presolve
            m = MILP(self.solver_, time_limit=max(time_limit, 1e-3), threads=self.threads,
                     presolve=False)
            _, ne = self._encode_nearest(m, q, target, tau, inc, cutoff, bounds=bounds,
                                         distance_row=True)
            return m, ne

        return lp_tighten_bounds(build, inn, start, plain=True, time_limit=time_limit)

    def _from_relaxation(self, m: MILP, dom: InputDomain, q: np.ndarray, target: int,
                         tau: float, inc: Incumbent | None, cutoff: float | None,
                         time_limit: float) -> tuple[_Nearest | None, Incumbent | None]:
        """The optimum from a relaxation, where it proves one. Integer-grid columns with more
        than ``_RELAX_GRID_STEPS`` lattice points in the box, one step of which costs at most
        the MIP gap at the incumbent's objective, are made continuous (HiGHS spends most of a
        solve on such wide integer domains, e.g. adult's fnlwgt and capital-gain; coarser
        grids, e.g. HELOC's, cannot be rounded within the gap); the relaxed MILP's dual
        bound ``L`` bounds every point the full MILP admits. Its solution,
        with the grid columns rounded to their lattice (to the nearest point, and the way
        the margin rises in the solution's linear region), is a CE when it is actionable and
        its forward-pass margin reaches ``tau``; when the best of those and the incumbent has
        objective ``z`` with ``z − L ≤ max(mip_gap·z, 1e-9)`` it is optimal within the MIP
        gap — the test the solver applies to its own bounds. Returns (the result, or None
        when the relaxation proves nothing; a rounded CE that beats the incumbent, or None)."""
        if inc is None:
            return None, None
        g = np.flatnonzero(dom.grid_vars >= 0)
        zv = dom.grid_vars[g]
        data = m._materialise()
        # fine grids only: one lattice step must cost less than the gap allows at the
        # incumbent's objective, else rounding a moved column cannot meet the bound
        step_cost = self._weights()[g] / dom.grid_steps[g]
        fine = step_cost <= _RELAX_STEP_SHARE * self.mip_gap * abs(inc.objective)
        wide = zv[((data.ub[zv] - data.lb[zv]) > _RELAX_GRID_STEPS) & fine]
        if wide.size == 0:
            return None, None
        res = m.solve_relaxation(time_limit=max(time_limit, 1e-3), cols=wide, cutoff=cutoff)
        if res.status is SolveStatus.CUTOFF and inc is not None:
            return _Nearest("found", inc.x.copy(), objective=inc.objective, bound=inc.objective,
                            gap=0.0, optimal=True, solver_status=res.status.value,
                            time=res.time, message="the nearest valid training point is "
                            "optimal (relaxation)"), None
        if res.status is not SolveStatus.OPTIMAL or not res.has_solution:
            return None, None
        lower = float(res.bound)
        xs = np.clip(res.values[dom.index], dom.lower, dom.upper)
        near = self.encoder.project(xs[None], dom.lower, dom.upper)[0]
        J, y = _jacobian(self._network, near)
        if J.shape[0] == 1:
            grad = J[0] * (1.0 if target == 1 else -1.0)
        else:
            others = np.delete(np.arange(J.shape[0]), target)
            grad = J[target] - J[others[np.argmax(y[others])]]
        gc = np.flatnonzero(dom.column_kind == "grid")
        st = dom.grid_steps[gc].astype(np.float64)
        up = np.ceil(xs[gc] * st - 1e-9) / st
        down = np.floor(xs[gc] * st + 1e-9) / st
        rise = near.copy()
        rise[gc] = np.clip(np.where(grad[gc] > 0, up, down), dom.lower[gc], dom.upper[gc])
        P = np.vstack([near, rise] + ([inc.x] if inc is not None else []))
        ok = self.actionable(q, P, tol=0.0) & (
            class_margin(self._network.forward(P), int(target)) >= tau)
        if self.constraints_ is not None:
            ok &= self.constraints_.satisfied(q, P)
        if not ok.any():
            return None, None
        z = np.where(ok, self._objective_values(q, P), np.inf)
        i = int(np.argmin(z))
        best = float(z[i])
        if best - lower > max(self.mip_gap * abs(best), 1e-9):
            better = inc is None or best < inc.objective
            return None, Incumbent(P[i].copy(), best) if better else None
        gap = max(best - lower, 0.0) / max(abs(best), 1e-12)
        return _Nearest("found", P[i].copy(), objective=best, bound=min(lower, best), gap=gap,
                        optimal=True, solver_status=res.status.value, time=res.time,
                        message="wide integer grids relaxed: the relaxation's bound is met by "
                        "its rounded solution"), None

    def _nearest_network(self, q: np.ndarray, target: int, tau: float, time_limit: float,
                         seeds: np.ndarray | None = None) -> _Nearest:
        """:meth:`_nearest` for a network: the incumbent, the encoding (LP-tightened bounds
        with ``bound_tightening``), the relaxation first (``relax_first``), then the MILP."""
        inc = self.incumbent(q, target, tau, seeds)
        seeded = seeds is not None
        m = self._new_milp(time_limit, warm=inc is not None, seeded=seeded)
        cutoff = None
        if inc is not None:
            # strictly above z₀ (solver tolerances): "nothing beats the cutoff" proves z₀ optimal
            cutoff = inc.objective + 1e-7 * (1.0 + abs(inc.objective))
        try:
            dom, ne = self._encode_nearest(m, q, target, tau, inc, cutoff)
        except ValidationError as exc:
            return _Nearest("infeasible", None, message=f"no actionable point: {exc}")
        if inc is not None and not (np.all(inc.x >= dom.lower - self._action_tol)
                                    and np.all(inc.x <= dom.upper + self._action_tol)):
            # outside the encoded domain (cannot happen for encoded training rows): drop it
            inc, cutoff = None, None
            m = self._new_milp(time_limit, warm=False)
            dom, ne = self._encode_nearest(m, q, target, tau, None, None)
        need = {"lp": 1, "auto": _TIGHTEN_MIN_BINARIES}.get(self.bound_tightening)
        if need is not None and ne.n_binaries >= need:
            budget = Budget(time_limit, self.threads)
            tb = self._tightened_bounds(q, target, tau, inc, cutoff, dom,
                                        _TIGHTEN_SHARE * time_limit)
            time_limit = max(budget.remaining(), 1e-3)
            m = self._new_milp(time_limit, warm=inc is not None, seeded=seeded)
            dom, ne = self._encode_nearest(m, q, target, tau, inc, cutoff, bounds=tb.bounds)
        x = dom.index
        if self.relax_first:
            budget = Budget(time_limit, self.threads)
            fast, better = self._from_relaxation(m, dom, q, target, tau, inc, cutoff, time_limit)
            if fast is not None:
                return fast
            if better is not None and inc is not None:
                # a better incumbent: a lower cutoff (the encoding's ball and box hold every
                # point beating the old one, so also every point beating this one)
                inc = better
                cutoff = inc.objective + 1e-7 * (1.0 + abs(inc.objective))
            time_limit = max(budget.remaining(), 1e-3)
        res = m.solve(time_limit=max(time_limit, 1e-3), cutoff=cutoff)
        st = res.status
        base = {"objective": res.objective, "bound": res.bound, "gap": res.gap,
                "solver_status": st.value, "time": res.time, "message": res.message}
        if inc is not None and (st is SolveStatus.CUTOFF or (
                not res.has_solution and st in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT))):
            # CUTOFF: proven that no point beats the incumbent, so it is optimal; a time limit
            # without a better point leaves the incumbent as the best known CE
            proven = st is SolveStatus.CUTOFF
            bound = inc.objective if proven else res.bound
            return _Nearest("found", inc.x.copy(), objective=inc.objective, bound=bound,
                            gap=0.0 if proven else res.gap, optimal=proven,
                            solver_status=st.value, time=res.time,
                            message="the nearest valid training point is optimal" if proven
                            else res.message)
        if st is SolveStatus.INFEASIBLE:
            return _Nearest("infeasible", None, **{**base, "message": (
                f"proven infeasible: no actionable point{self._under_constraints()} has "
                f"target-class margin >= {tau:g}")})
        if res.has_solution and st in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
            xs = np.clip(res.values[x], dom.lower, dom.upper)
            xs = self.encoder.project(xs[None], dom.lower, dom.upper)[0]
            return _Nearest("found", xs, optimal=st is SolveStatus.OPTIMAL, **base)
        if st in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
            return _Nearest("timeout", None, **base)
        return _Nearest("error", None, **{**base, "message": f"solver: {st.value} {res.message}"})

