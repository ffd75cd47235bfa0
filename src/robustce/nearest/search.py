"""The nearest-CE search as one mixin: :class:`NearestSearch` joins the incumbents
(:mod:`robustce.nearest.incumbents`), the network MILP (:mod:`robustce.nearest.network`) and
the tree MILP (:mod:`robustce.nearest.trees`) over their shared core
(:mod:`robustce.nearest.core`, which says what the host explainer provides)."""

from __future__ import annotations

from robustce.nearest.incumbents import IncumbentSearch
from robustce.nearest.network import NetworkSearch
from robustce.nearest.trees import TreeSearch

__all__ = ["NearestSearch"]


class NearestSearch(IncumbentSearch, NetworkSearch, TreeSearch):
    """The nearest CE of one query by MILP, certified by the solver: ``_nearest(q, target,
    tau, time_limit, seeds)`` — for a network the exact MILP below the best incumbent, for a
    tree model the tree MILP below it. A mixin: put it before the explainer base
    (``class MILPNearest(NearestSearch, Explainer)``)."""
