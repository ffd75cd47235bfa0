"""Per-CE shift-size metrics of APΔS §7.2: how large a model shift each CE withstands.

* ``apas_delta_max`` — δ_max by sampling (APΔS Algorithm 1, :func:`robustce.robustness.apas_max_delta`):
  the largest δ at which all n = ⌈ln(1−α)/ln R⌉ fresh draws from Δ_δ keep the CE's target class
  (average-case: with confidence α a fraction ≥ R of Δ_δ does).
* ``max_provable_delta`` — the largest δ at which the exact MILP Δ-test proves the CE robust
  (APΔS Algorithm 4, :func:`robustce.robustness.max_provable_delta`; worst case).

Both are computed for all CEs in one vectorised call, with the same ``delta_init`` (bisection
resolution) and cap, so sampled ≥ provable CE by CE. A method's summary is the mean over its CEs
(Fig. 4 of the paper). A CE the model does not classify as its target gets 0; an unusable (NaN)
row gets NaN.

Both need only the model, the CEs and their target classes; higher is better.
:func:`register_apas_metrics` adds them to :data:`robustce.evaluation.metrics.METRICS` (so
``evaluate`` and configs can name them). They are not registered on import: the registry's
``default_metrics`` takes every metric whose inputs are available, and these two run a search
(and MILPs) per CE — they should be opt-in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.evaluation.metrics import METRICS, MetricInputs, MetricSpec, register_metric
from robustce.robustness.apas import apas_max_delta
from robustce.robustness.maxdelta import max_provable_delta

__all__ = ["SPECS", "apas_delta_max", "provable_delta_max", "register_apas_metrics"]

#: metric name -> (description, higher is better)
SPECS: dict[str, tuple[str, bool]] = {
    "apas_delta_max": ("APΔS δ_max by sampling (Algorithm 1, α=0.999, R=0.995): the largest δ "
                       "whose n fresh model draws all keep the CE's class", True),
    "max_provable_delta": ("largest δ at which the exact MILP Δ-test proves the CE robust "
                           "(APΔS Algorithm 4)", True),
}


def _targets(target_class: Any, n: int) -> np.ndarray:
    t = np.asarray(target_class, dtype=np.int64)
    return np.full(n, int(t)) if t.ndim == 0 else t.reshape(-1)


def apas_delta_max(model: Any, C: np.ndarray, target_class: Any, *, alpha: float = 0.999,
                   R: float = 0.995, delta_init: float = 1e-4, delta_max: float = 10.0,
                   random_state: int | np.random.Generator | None = 0) -> np.ndarray:
    """δ_max by sampling per CE (rows of ``C`` in model space); 0 for a CE not valid on the
    model, NaN for an unusable row."""
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    res = apas_max_delta(model, C, alpha, R, delta_init, random_state,
                         target_class=_targets(target_class, len(C)), delta_max=delta_max)
    return np.where(res.status == "error", np.nan, res.delta)


def provable_delta_max(model: Any, C: np.ndarray, target_class: Any, *, delta_init: float = 1e-4,
                       delta_max: float = 10.0, time_limit: float = 10.0) -> np.ndarray:
    """The exact max provable δ per CE (a MILP timeout leaves the proven lower end); 0 for a
    CE not valid on the model, NaN for an unusable row."""
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    t = _targets(target_class, len(C))
    res = max_provable_delta(model, C, t, delta_init=delta_init, delta_max=delta_max,
                             time_limit=time_limit)
    return np.where(res.status == "error", np.nan, res.delta)


def _sampled_metric(m: MetricInputs) -> np.ndarray:
    return apas_delta_max(m.model, m.C, m.targets)


def _provable_metric(m: MetricInputs) -> np.ndarray:
    return provable_delta_max(m.model, m.C, m.targets)


def register_apas_metrics() -> None:
    """Register ``apas_delta_max`` and ``max_provable_delta`` (idempotent)."""
    for name, compute in (("apas_delta_max", _sampled_metric),
                          ("max_provable_delta", _provable_metric)):
        if name not in METRICS:
            description, higher = SPECS[name]
            register_metric(MetricSpec(name, description, frozenset(), higher, True, compute))

