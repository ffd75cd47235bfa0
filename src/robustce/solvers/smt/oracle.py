"""The oracle: one satisfiability call (:func:`check`) and its :class:`SMTResult`, the model
decoded to a model-space row."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import z3

from robustce.solvers.smt.domain import SMTInput


@dataclass
class SMTResult:
    """Outcome of one satisfiability call."""

    status: str  # "sat", "unsat" or "unknown"
    x: np.ndarray | None  # the model-space row of the satisfying assignment (sat only)
    reason: str = ""
    time: float = 0.0


def check(solver: z3.Solver, inp: SMTInput, extra: Sequence[z3.BoolRef] = (),
          timeout: float | None = None) -> SMTResult:
    """One SAT call: is ``solver``'s formula ∧ ``extra`` satisfiable? ``timeout`` in seconds
    (z3's own per-call limit; ``unknown`` on expiry)."""
    import time

    if timeout is not None:
        if not timeout > 0:
            return SMTResult("unknown", None, "no time left")
        solver.set("timeout", max(1, int(math.ceil(timeout * 1000))))
    t0 = time.perf_counter()
    if extra:
        solver.push()
        solver.add(*extra)
    try:
        r = solver.check()
        if r == z3.sat:
            return SMTResult("sat", inp.decode(solver.model()), time=time.perf_counter() - t0)
        if r == z3.unsat:
            return SMTResult("unsat", None, time=time.perf_counter() - t0)
        return SMTResult("unknown", None, solver.reason_unknown(), time.perf_counter() - t0)
    finally:
        if extra:
            solver.pop()
