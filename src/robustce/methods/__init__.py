"""Counterfactual explainers. All share :class:`Explainer` and return :class:`Explanations`.

``DiCE`` wraps the optional ``dice-ml`` (extra ``robustce[dice]``); it imports dice-ml only
when built, so importing robustce never needs the extra."""

from robustce.methods.actionable_recourse import ActionableRecourse
from robustce.methods.apas import APAS
from robustce.methods.base import Explainer, QueryResult
from robustce.methods.counternet import CounterNet
from robustce.methods.dice import DiCE
from robustce.methods.diverse_robust import DiverseRobust
from robustce.methods.ensemble_robust import EnsembleRobust
from robustce.methods.feature_tweaking import PlausibleFeatureTweaking
from robustce.methods.mace import MACE
from robustce.methods.milp_nearest import MILPNearest
from robustce.methods.milp_robust import MILPRobust
from robustce.methods.minimum_observable import MinimumObservable
from robustce.methods.nearest_neighbour import NearestNeighbour
from robustce.methods.proplace import PROPLACE
from robustce.methods.proto_robust import ProtoRobust
from robustce.methods.rbr import RBR
from robustce.methods.registry import available_methods, build_explainer, get_method, register_method
from robustce.methods.retrain_robust import RetrainRobust
from robustce.methods.roar import ROAR
from robustce.methods.robust_nearest_neighbour import RobustNearestNeighbour
from robustce.methods.robx import RobX
from robustce.methods.rocoursenet import RoCourseNet
from robustce.methods.wachter import Wachter
from robustce.methods.wachter_robust import WachterRobust

__all__ = ["APAS", "MACE", "PROPLACE", "RBR", "ROAR", "ActionableRecourse", "CounterNet", "DiCE",
           "DiverseRobust", "EnsembleRobust",
           "Explainer", "MILPNearest", "MILPRobust", "MinimumObservable",
           "NearestNeighbour", "PlausibleFeatureTweaking", "ProtoRobust",
           "QueryResult", "RetrainRobust", "RoCourseNet", "RobX", "RobustNearestNeighbour", "Wachter",
           "WachterRobust", "available_methods", "build_explainer", "get_method",
           "register_method"]
