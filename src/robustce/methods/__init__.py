"""Counterfactual explainers. All share :class:`Explainer` and return :class:`Explanations`."""

from robustce.methods.base import Explainer, QueryResult
from robustce.methods.milp_nearest import MILPNearest
from robustce.methods.milp_robust import MILPRobust
from robustce.methods.nearest_neighbour import NearestNeighbour
from robustce.methods.proplace import PROPLACE
from robustce.methods.registry import available_methods, build_explainer, get_method, register_method
from robustce.methods.robust_nearest_neighbour import RobustNearestNeighbour
from robustce.methods.wachter import Wachter

__all__ = ["Explainer", "MILPNearest", "MILPRobust", "NearestNeighbour", "PROPLACE", "QueryResult",
           "RobustNearestNeighbour", "Wachter", "available_methods", "build_explainer", "get_method",
           "register_method"]
