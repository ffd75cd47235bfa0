"""Robustness: shift sets, interval bounds, exact Δ-test, probabilistic certificates."""

from robustce.robustness.enumeration import EnumerationResult, enumerate_delta
from robustce.robustness.exact import (
    DeltaStatus,
    ExactResult,
    exact_worst_case,
    is_delta_robust,
)
from robustce.robustness.maxdelta import MaxDeltaResult, max_provable_delta
from robustce.robustness.shift import (
    IntervalNetwork,
    ParameterShift,
    SampledNetworks,
    empirical_delta,
)

__all__ = [
    "DeltaStatus",
    "EnumerationResult",
    "ExactResult",
    "IntervalNetwork",
    "MaxDeltaResult",
    "ParameterShift",
    "SampledNetworks",
    "empirical_delta",
    "enumerate_delta",
    "exact_worst_case",
    "is_delta_robust",
    "max_provable_delta",
]
