"""The nearest-CE MILP of a tree model (decision tree, random forest / extra trees, boosted
trees): the one tree MILP that MACE's MILP backend uses too
(:func:`robustce.solvers.tree_encoding.encode_tree_ensemble` over the query's actionable
domain, the distance objective tightened by the split literals), built below the incumbent's
objective (the box it leaves, tree nodes beyond it dropped) and cut off there: a cut-off
proves the incumbent optimal within the MIP gap. Optionally in growing balls first
(:attr:`TreeSearch._tree_gallop`)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from robustce.errors import ValidationError
from robustce.nearest.core import NearestCore, _Nearest
from robustce.nearest.domains import incumbent_box, milp_point
from robustce.nearest.network import _WARM_OPTIONS
from robustce.solvers.clock import Budget
from robustce.solvers.encodings import (
    InputDomain,
    encode_constraints,
    encode_distance,
    restrict_domain,
)
from robustce.solvers.milp import MILP, SolveStatus
from robustce.solvers.tree_encoding import (
    TreeEncoding,
    TreeEnsemble,
    distance_pruner,
    encode_tree_ensemble,
    ensemble_of,
    solve_tree_stage,
)

__all__ = ["TreeSearch"]

#: summed-vote margin by which a tree model's target must beat the rivals that win ties: HiGHS's
#: tolerances cannot express a strict inequality (the tree solves run at feasibility 1e-9)
_TREE_VOTE_MARGIN = 1e-6
#: the first tree MILP below an incumbent asks for a CE within this share of its objective,
#: then the radius doubles (MACE's MILP backend: for ℓ0 alone, one more changed feature per
#: stage)
_TREE_FIRST_RADIUS = 1.0 / 32


class TreeSearch(NearestCore):
    """The tree MILP of :class:`~robustce.nearest.search.NearestSearch` (module docstring)."""

    #: tree models: solve below the incumbent in growing balls (:meth:`_tree_radii`) before
    #: the last stage. Off here: the single-feature moves make the incumbent mostly optimal,
    #: and the small balls cost more than they save (adult booster, 20 queries: median 90 →
    #: 57–68 ms without them)
    _tree_gallop: ClassVar[bool] = False

    def _tree_margins(self, target: int) -> tuple[float, float]:
        """The summed-vote margins a tree model's CE must reach against the rivals listed
        before / after ``target`` (those before win ties): 1e-6 / 0 for trees and forests,
        1e-6 / 1e-6 for boosters (logits summed in float32 by the booster itself; MACE's
        MILP backend asks the same)."""
        strict = _TREE_VOTE_MARGIN
        return strict, (strict if self._tree_kind_ == "boosted" else 0.0)

    def _tree_ensemble(self, kind: str, parts: Any) -> TreeEnsemble:
        """The tree model's :class:`TreeEnsemble`, built once in ``_check_params``
        (:func:`ensemble_of`; the robust ensemble CE builds it with its ε)."""
        return ensemble_of(kind, parts, self.encoder)

    def _encode_trees(self, m: MILP, dom: InputDomain, target: int,
                      prune: Any) -> TreeEncoding:
        """The tree model's prediction of ``target`` over ``dom`` (:func:`encode_tree_ensemble`
        with :meth:`_tree_margins`; the robust ensemble CE encodes its worst case instead)."""
        strict, weak = self._tree_margins(target)
        return encode_tree_ensemble(m, self._ensemble_, dom, target, margin_strict=strict,
                                    margin_weak=weak, prune=prune)

    def _tree_stage(self, q: np.ndarray, target: int, cutoff: float | None, floor: float,
                    time_limit: float) -> tuple[str, Any, np.ndarray | None]:
        """One tree MILP for ``q``: the actionable input domain (grid columns continuous:
        splits compare them with grid points only, and the decoded point is the query clipped
        to the range its splits leave, a grid point), the distance objective tightened by the
        split literals (:meth:`TreeEncoding.tighten`), the ensemble
        (:func:`encode_tree_ensemble`). With a ``cutoff`` the solve is cut off there, under
        ``l1`` / ``linf`` every column is bounded by its box (:func:`incumbent_box`), and
        tree nodes all of whose points are farther than it are dropped
        (:func:`distance_pruner`) — every point whose objective beats it is kept; ``floor``
        (> 0): the row ``objective >= floor``, a bound proven before. Returns ``("cut", res,
        None)`` — proven: no point's objective is below ``cutoff`` —, ``("empty", None,
        None)`` — no actionable point at all —, or ``("solved", res, cf)`` with the decoded
        point (None when the solver has none)."""
        budget = Budget(time_limit, self.threads)
        # below an incumbent HiGHS's primal heuristics look for points the cutoff already
        # bounds (as _WARM_OPTIONS says for networks; adult booster, 20 queries: median 59 →
        # 45 ms with the last stage's cutoff below)
        m = MILP(self.solver_, time_limit=max(time_limit, 1e-3), mip_gap=self.mip_gap,
                 threads=self.threads, feasibility_tol=1e-9, presolve=False,
                 options=None if cutoff is None or self.solver_ != "highs" else _WARM_OPTIONS)
        cc = self.constraints_
        relations = cc is not None and cc.has_rows
        try:
            # with relations the CE is the MILP's own point: grid columns integral
            dom = self._input_domain(m, q, integer_grid=relations)
        except ValidationError:
            return "empty", None, None
        if cc is not None:
            encode_constraints(m, dom, q, cc)
        prune = None
        if cutoff is not None:
            if self.norm in ("l1", "linf"):
                lo, hi = incumbent_box(q, dom.lower, dom.upper, self._weights(), cutoff,
                                       dom.column_kind, dom.grid_steps)
                dom = restrict_domain(m, dom, lo, hi)
            enc = self.encoder
            prune = distance_pruner(q, self._weights(), enc.feature_of_column_,
                                    len(enc.blocks_), {self.norm: 1.0}, cutoff)
        trees = self._encode_trees(m, dom, int(target), prune)
        if trees.infeasible:  # no leaf of interest within the box (or nearer than the cutoff)
            return ("cut", None, None) if cutoff is not None else ("empty", None, None)
        obj = encode_distance(m, dom, q, self.distance_, self.encoder, tie_break=self.tie_break)
        trees.tighten(m, obj, q)
        obj = self._with_fixed_costs(m, dom, q, obj)
        cut, res, cf = solve_tree_stage(m, trees, obj, dom, q, self.encoder, floor=floor,
                                        cutoff=cutoff,
                                        time_left=budget.remaining())
        if relations and cf is not None:
            cf = milp_point(res, dom, self.encoder)
        return ("cut", res, None) if cut else ("solved", res, cf)

    def _tree_radii(self, z0: float) -> list[float]:
        """Under ``l1`` with :attr:`_tree_gallop`, the radii of the solves below an incumbent
        of objective ``z0``: ``z0/32, z0/16, …`` while below ``z0`` (as MACE's MILP backend
        gallops: in a small ball most trees shrink to a few leaves). ``l0`` / ``linf``
        (whose objective adds a tie-break term, so a cut-off below ``z0`` proves nothing
        about the distance): none."""
        if not self._tree_gallop or self.norm != "l1" or not z0 > 0:
            return []
        out, r = [], z0 * _TREE_FIRST_RADIUS
        while r < z0 * (1.0 - 1e-9):
            out.append(r)
            r *= 2.0
        return out

    def _nearest_trees(self, q: np.ndarray, target: int, time_limit: float) -> _Nearest:
        """The nearest CE of a tree model. With an incumbent (:meth:`incumbent`: the best
        valid, actionable point among the nearest training points, their segments to the
        query, training points moved into the query's box and the single-feature moves at
        the ensemble's split bounds, its raw row checked; objective ``z₀``) the last MILP of
        :meth:`_tree_stage` is built over the ball of radius ``z₀`` and cut off at
        ``z₀ (1 − mip_gap)``: its cut-off proves the incumbent optimal within the MIP gap
        (the certificate's bound is that cutoff), and a solution there is the optimum.
        With :attr:`_tree_gallop`, MILPs over balls of growing radii come first
        (:meth:`_tree_radii`), each cut off at its radius: a cut-off proves that nothing lies
        within it (the next stage gets that bound as a row); the first stage with a solution
        holds the optimum, since every nearer point lies in its ball. Without an incumbent,
        one MILP over the whole actionable box."""
        strict, weak = self._tree_margins(target)
        inc = self.incumbent(q, target, max(strict, weak))
        budget = Budget(time_limit, self.threads)
        spent, low, why = 0.0, 0.0, ""
        stages: list[float | None] = [None]
        if inc is not None:
            # the last stage asks for a point better than the incumbent by the relative MIP
            # gap: its cut-off proves the incumbent optimal within the gap (HiGHS's own
            # "optimal"), and the solver need not find the incumbent again to prove it
            stages = [*self._tree_radii(inc.objective), inc.objective * (1.0 - self.mip_gap)]
        for k, cutoff in enumerate(stages):
            left = budget.remaining()
            if left <= 0:
                why = budget.stop_text()
                break
            kind, res, cf = self._tree_stage(q, target, cutoff, low, left)
            spent += 0.0 if res is None else res.time
            last = k == len(stages) - 1
            if kind == "empty":
                return _Nearest("infeasible", None, bound=math.inf, time=spent,
                                solver_status=SolveStatus.INFEASIBLE.value,
                                message="no actionable point: the actionable box is empty")
            if kind == "cut":
                if last:  # nothing beats the incumbent by the gap
                    assert inc is not None and cutoff is not None
                    return _Nearest("found", inc.x.copy(), objective=inc.objective,
                                    bound=cutoff, gap=self.mip_gap, optimal=True,
                                    solver_status=SolveStatus.CUTOFF.value, time=spent,
                                    message="the incumbent is optimal within the MIP gap")
                low = float(cutoff)
                continue
            st = res.status
            bound = max(low, res.bound) if math.isfinite(res.bound) else low
            base = {"objective": res.objective, "bound": bound, "gap": res.gap,
                    "solver_status": st.value, "time": spent, "message": res.message}
            if st is SolveStatus.INFEASIBLE:  # no cutoff: the whole box
                return _Nearest("infeasible", None, **{**base, "message": (
                    f"proven infeasible: no actionable point{self._under_constraints()} is "
                    "in the target class")})
            if cf is not None and st in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT,
                                         SolveStatus.LIMIT):
                return _Nearest("found", cf, optimal=st is SolveStatus.OPTIMAL, **base)
            if st in (SolveStatus.TIME_LIMIT, SolveStatus.LIMIT):
                low, why = bound, res.message
                break
            return _Nearest("error", None, **{**base, "message": f"solver: {st.value} "
                                                                  f"{res.message}"})
        if inc is None:
            return _Nearest("timeout", None, bound=low, time=spent,
                            solver_status=SolveStatus.TIME_LIMIT.value,
                            message="time limit before a CE was found" + (f" ({why})" if why else ""))
        gap = max(inc.objective - low, 0.0) / max(abs(inc.objective), 1e-12)
        return _Nearest("found", inc.x.copy(), objective=inc.objective, bound=low, gap=gap,
                        optimal=False, solver_status=SolveStatus.TIME_LIMIT.value, time=spent,
                        message="time limit: the best incumbent" + (f" ({why})" if why else ""))

