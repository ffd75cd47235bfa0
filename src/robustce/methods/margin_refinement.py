"""The bracket of the margin loop's refinement to the nearest Δ-robust CE (``minimal``; see
:mod:`robustce.methods.margin_loop`): between ``lo``, the largest margin whose CE was not shown
Δ-robust, and ``hi``, the smallest whose CE is, the next margin is where the worst-case margin,
linear between the two CEs, crosses zero (regula falsi with the Illinois rule)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["REFINE_ROUNDS", "Refinement"]

#: the most rounds the margin refinement adds after the first Δ-robust CE
REFINE_ROUNDS = 8


@dataclass
class Refinement:
    """The bracket of the margin refinement: ``lo`` (largest margin whose CE was not shown
    Δ-robust, its worst-case margin ``g_lo`` ≤ 0, its CE's cost ``c_lo``) and ``hi`` (smallest
    margin with a Δ-robust CE, worst-case margin ``w_hi`` > 0); ``best``: the nearest Δ-robust
    CE tried so far, as (cost, cf, certificate, message)."""

    lo: float
    g_lo: float
    c_lo: float
    hi: float
    w_hi: float
    best: tuple[float, np.ndarray, dict[str, Any], str]
    rounds: int = 0
    moved: str = ""  # the end the last round moved ("lo" / "hi")
    lo_seen: list[tuple[float, float]] = field(default_factory=list)  # (margin, worst) as found

    def narrow(self, tol: float) -> bool:
        gain = self.best[0] - self.c_lo  # the most a smaller margin could still save
        if ((self.hi - self.lo) / self.hi < tol or self.rounds >= REFINE_ROUNDS
                or gain <= tol * abs(self.best[0])):
            return True
        if len(self.lo_seen) >= 2:  # are the not-robust CEs approaching robustness below hi?
            (t0, g0), (t1, g1) = self.lo_seen[-2:]
            slope = (g1 - g0) / (t1 - t0) if t1 != t0 else 0.0
            return slope <= 0 or t1 - g1 / slope >= self.hi
        return False

    def move(self, end: str, tau: float, value: float) -> None:
        """The CE at ``tau`` was Δ-robust (``end="hi"``, worst-case margin ``value`` > 0) or
        not (``"lo"``, ``value`` ≤ 0). Illinois rule: when the same end moves twice in a row,
        the other end's value is halved, so the interpolation stops creeping from one side."""
        if end == self.moved:
            if end == "hi":
                self.g_lo *= 0.5
            else:
                self.w_hi *= 0.5
        if end == "hi":
            self.hi, self.w_hi = tau, value
        else:
            self.lo, self.g_lo = tau, value
            self.lo_seen.append((tau, value))
        self.moved, self.rounds = end, self.rounds + 1

    def next_tau(self) -> float:
        """Where the worst-case margin, linear between the two ends, crosses zero (kept in
        the middle 80 % of the bracket, so the bracket shrinks every round)."""
        span = self.hi - self.lo
        share = -self.g_lo / (self.w_hi - self.g_lo) if self.w_hi > self.g_lo else 0.5
        return self.lo + span * min(max(share, 0.1), 0.9)
