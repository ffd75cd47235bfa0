"""What MACE's z3 backend encodes and how much work it may spend: the model's kind and parts
(trees, a forest, boosted trees or a ReLU network), and the deterministic z3 work budget
(``rlimit`` units) that replaces the wall clock, per model kind."""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.errors import UnsupportedModelError
from robustce.models.base import Model, model_name
from robustce.solvers.clock import WALL_SLACK
from robustce.solvers.tree_encoding import tree_parts

__all__ = ["WALL_SLACK", "WORK_PER_SECOND", "default_work_limit"]

#: z3 resource units (``rlimit``) per nominal second of ``time_limit`` when ``work_limit`` is
#: None, per encoding: z3 spends them at very different paces on the different formulas.
#: Measured on the reference machine (2 cores, load ~2; ``z3-solver`` 5.4.1; MACE SMT, ε =
#: 1e-3, ℓ1 and ℓ∞, 2–4 queries per model of compas, adult and credit, units / seconds inside
#: ``check`` summed per family): trees 2.4e6/s (35 calls), forests 4.4e6/s (36 calls, per
#: call 3.2e6–4.4e6 on the calls over 0.5 s), logistic regression 6.8e5/s (109 calls, down to
#: 3.6e5 on its slowest), ReLU MLP (10, 10) 5.4e4/s (30 calls, 4.1e4–1e5); rounded down so
#: that a budget takes about ``time_limit`` or less there. Boosted trees (not measured) get
#: the forests' figure.
WORK_PER_SECOND = {"tree": 2_000_000, "forest": 3_000_000, "boosted": 3_000_000,
                   "logistic": 500_000, "network": 50_000}
# WALL_SLACK (re-exported): the wall-clock safety net of the SMT backend, ``WALL_SLACK ×
# time_limit`` seconds — the same net as every CPU budget (robustce.solvers.clock)


def default_work_limit(kind: str, parts: Any, time_limit: float) -> int:
    """The z3 units a query may spend when ``work_limit`` is None: ``time_limit`` nominal
    seconds at the kind's :data:`WORK_PER_SECOND` (a one-layer network is logistic
    regression)."""
    rate = WORK_PER_SECOND["logistic" if kind == "network" and len(parts) == 1 else kind]
    return max(1, round(time_limit * rate))


def _model_parts(model: Model) -> tuple[str, Any]:
    """("tree" | "forest", [TreeView, ...]), ("boosted", AdditiveTrees) or ("network",
    [(W, b), ...]); else
    :class:`UnsupportedModelError` naming the model."""
    parts = tree_parts(model)
    if parts is not None:
        return parts
    try:
        net = model.network()
    except UnsupportedModelError as exc:
        raise UnsupportedModelError(
            f"MACE cannot encode {model_name(model)}: supported are decision trees, random forests "
            f"(rc.models.wrap), logistic regression and ReLU MLPs ({exc})") from None
    return "network", [(np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64))
                       for W, b in net.weights]
