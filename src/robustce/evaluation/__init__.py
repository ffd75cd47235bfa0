"""Evaluation: metrics (and, alongside, the benchmark runner, configs and reports)."""

from robustce.evaluation.metrics import (
    METRICS,
    LOFScorer,
    MetricSpec,
    available_metrics,
    check_metrics,
    default_metrics,
    evaluate,
    summarise,
)

__all__ = [
    "METRICS",
    "LOFScorer",
    "MetricSpec",
    "available_metrics",
    "check_metrics",
    "default_metrics",
    "evaluate",
    "summarise",
]
