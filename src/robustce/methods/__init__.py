"""Counterfactual explainers. All share :class:`Explainer` and return :class:`Explanations`."""

from robustce.methods.base import Explainer, QueryResult

__all__ = ["Explainer", "QueryResult"]
