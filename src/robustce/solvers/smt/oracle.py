"""The oracle: one satisfiability call (:func:`check`) and its :class:`SMTResult`, the model
decoded to a model-space row."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import z3

from robustce.solvers.smt.domain import SMTInput

#: the z3 statistic that counts resource units (rlimit), cumulative per z3 context
_RLIMIT_COUNT = "rlimit count"


@dataclass
class SMTResult:
    """Outcome of one satisfiability call."""

    status: str  # "sat", "unsat" or "unknown"
    x: np.ndarray | None  # the model-space row of the satisfying assignment (sat only)
    reason: str = ""
    time: float = 0.0
    #: z3 resource units (``rlimit`` units) the call spent — deterministic, unlike ``time``
    work: int = 0


def _rlimit_count(solver: z3.Solver) -> int:
    """z3's resource counter (cumulative over the solver's context)."""
    st = solver.statistics()
    for k in st.keys():
        if k == _RLIMIT_COUNT:
            return int(st.get_key_value(k))
    return 0


def check(solver: z3.Solver, inp: SMTInput, extra: Sequence[z3.BoolRef] = (),
          timeout: float | None = None, rlimit: int | None = None,
          seed: int = 0) -> SMTResult:
    """One SAT call: is ``solver``'s formula ∧ ``extra`` satisfiable?

    ``rlimit``: z3's deterministic resource limit for this call (z3 ``rlimit`` units, counted
    from the call's start; None = unlimited); ``unknown`` with reason ``"work limit
    reached"`` when spent — the same answer on every host and under any load. ``timeout``:
    a wall-clock limit in seconds, a safety net only (its expiry depends on the host's load;
    ``unknown`` too). ``seed``: z3's ``random_seed``, fixed so that equal inputs give equal
    answers."""
    import time

    if timeout is not None:
        if not timeout > 0:
            return SMTResult("unknown", None, "no time left")
        solver.set("timeout", max(1, int(math.ceil(timeout * 1000))))
    if rlimit is not None and rlimit < 1:
        return SMTResult("unknown", None, "work limit reached")
    solver.set("rlimit", 0 if rlimit is None else int(rlimit))  # 0: no limit
    solver.set("random_seed", int(seed))
    t0 = time.perf_counter()
    if extra:
        solver.push()
        solver.add(*extra)
    w0 = _rlimit_count(solver)
    try:
        r = solver.check()
        work = _rlimit_count(solver) - w0
        if r == z3.sat:
            return SMTResult("sat", inp.decode(solver.model()), time=time.perf_counter() - t0,
                             work=work)
        if r == z3.unsat:
            return SMTResult("unsat", None, time=time.perf_counter() - t0, work=work)
        reason = solver.reason_unknown()
        if rlimit is not None and "resource limit" in reason:  # z3: "max. resource limit exceeded"
            reason = "work limit reached"
        return SMTResult("unknown", None, reason, time.perf_counter() - t0, work)
    finally:
        if extra:
            solver.pop()
