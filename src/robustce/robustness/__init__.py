"""Robustness: shift sets, interval bounds, exact Δ-test, probabilistic certificates."""

from robustce.robustness.shift import (
    IntervalNetwork,
    ParameterShift,
    SampledNetworks,
    empirical_delta,
)

__all__ = ["IntervalNetwork", "ParameterShift", "SampledNetworks", "empirical_delta"]
