"""Evaluation: metrics (``metrics``: the registry and the per-CE metrics; ``plausibility``:
LOF; ``set_metrics``: sets of CEs) and, alongside, the benchmark runner, configs, results and
reports."""

from robustce.evaluation.metrics import (
    METRICS,
    LOFScorer,
    MetricInputs,
    MetricSpec,
    available_metrics,
    check_metrics,
    default_metrics,
    evaluate,
    register_metric,
    summarise,
)

__all__ = [
    "METRICS",
    "LOFScorer",
    "MetricInputs",
    "MetricSpec",
    "available_metrics",
    "check_metrics",
    "default_metrics",
    "evaluate",
    "register_metric",
    "summarise",
]

# benchmark runner, configs, method registry and reports
from robustce.evaluation.config import BenchmarkConfig, load_config, parse_config  # noqa: E402
from robustce.evaluation.report import format_table, markdown_table, write_report  # noqa: E402
from robustce.evaluation.results import BenchmarkResult, load_results  # noqa: E402
from robustce.evaluation.runner import run_benchmark  # noqa: E402
from robustce.methods.registry import available_methods, get_method, register_method  # noqa: E402

__all__ += [
    "BenchmarkConfig",
    "BenchmarkResult",
    "available_methods",
    "format_table",
    "get_method",
    "load_config",
    "load_results",
    "markdown_table",
    "parse_config",
    "register_method",
    "run_benchmark",
    "write_report",
]
