"""Limits that mean the same on every host (issue 51): ``time_limit`` is CPU seconds of the solving
thread, with the wall clock only as a safety net of ``WALL_SLACK ×``.

No test here depends on the host's load: the wall clock the code sees is patched (a fake that
runs 5× faster than this thread's CPU time), or the CPU clock is made to stand still; the one
real-time bound left is the safety net itself (``WALL_SLACK`` × the budget), which only a host
loaded more than tenfold reaches.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.methods import MILPRobust, mace_work
from robustce.solvers import MILP, SolveStatus, clock
from robustce.solvers.clock import WALL_SLACK, Budget


def _market_split(m: int, n: int, seed: int) -> tuple[MILP, np.ndarray, np.ndarray]:
    """Cornuéjols–Dawande market split: ``n`` binaries, ``m`` rows ``A x + s⁺ − s⁻ = d`` with
    ``d = ⌊A·1 / 2⌋``, minimise the total slack (hard for branch and bound at m = 4, n = 40)."""
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 100, size=(m, n)).astype(float)
    d = np.floor(A.sum(axis=1) / 2)
    milp = MILP(time_limit=60)
    x = milp.add_vars(n, lb=0, ub=1, vtype="B")
    plus = milp.add_vars(m, lb=0, ub=np.inf)
    minus = milp.add_vars(m, lb=0, ub=np.inf)
    milp.add_constrs(np.hstack([A, np.eye(m), -np.eye(m)]), lb=d, ub=d, cols=np.r_[x, plus, minus])
    milp.set_objective(np.r_[plus, minus], np.ones(2 * m), sense="min")
    return milp, A, d


def _brute_force_slack(A: np.ndarray, d: np.ndarray) -> float:
    """The least total slack over all 2ⁿ subsets (meet in the middle)."""
    n = A.shape[1]
    h = n // 2

    def sums(cols: np.ndarray) -> np.ndarray:
        k = len(cols)
        bits = (np.arange(2 ** k)[:, None] >> np.arange(k)) & 1
        return bits @ A[:, cols].T

    left, right = sums(np.arange(h)), sums(np.arange(h, n))
    return float(np.abs(left[:, None, :] + right[None, :, :] - d).sum(axis=2).min())


def _fast_wall(monkeypatch: pytest.MonkeyPatch, factor: float = 5.0) -> None:
    """The wall clock the code sees runs ``factor`` × faster than this thread's CPU time (a
    host loaded ``factor``-fold, without loading it)."""
    c0, w0 = time.thread_time(), time.perf_counter()
    monkeypatch.setattr(clock, "wall_clock", lambda: w0 + factor * (time.thread_time() - c0))


def test_budget_measures_cpu_and_the_wall_net(monkeypatch):
    now = {"cpu": 100.0, "wall": 500.0}
    monkeypatch.setattr(clock, "cpu_clock", lambda threads=1: now["cpu"])
    monkeypatch.setattr(clock, "wall_clock", lambda: now["wall"])
    b = Budget(5.0)
    now.update(cpu=103.0, wall=520.0)  # 3 s of CPU in 20 s of wall: 2 s left, CPU binds
    assert b.remaining() == pytest.approx(2.0) and b.stopped_by() == "cpu" and not b.expired()
    now.update(cpu=104.0, wall=500.0 + 10 * 5.0 - 3.0)  # 3 s before the 50 s net: 0.3 s left
    assert b.remaining() == pytest.approx(0.3) and b.stopped_by() == "wall"
    now["wall"] = 551.0
    assert b.expired() and b.stopped_by() == "wall"
    assert b.stop_text() == "wall-clock safety net (50 s)"
    now.update(cpu=105.5, wall=510.0)
    assert b.expired() and b.stop_text() == "CPU time limit (5 s)"


def test_one_wall_slack_for_mace_and_the_solvers():
    assert mace_work.WALL_SLACK is WALL_SLACK == 10.0


def test_cpu_budget_stops_a_hard_milp_at_its_cpu_time():
    milp, _, _ = _market_split(4, 40, seed=0)
    budget = 0.6
    for _ in range(2):  # a second run of the same instance gets its whole budget again
        c0 = time.thread_time()
        res = milp.solve(time_limit=budget)
        cpu = time.thread_time() - c0
        assert res.status is SolveStatus.TIME_LIMIT and res.stopped_by == "cpu"
        assert "CPU time limit" in res.message
        assert budget <= cpu <= budget + 0.4, cpu


def test_a_stretched_wall_clock_does_not_end_a_solve_early(monkeypatch):
    milp, A, d = _market_split(3, 20, seed=0)
    c0 = time.thread_time()
    free = milp.solve(time_limit=60)
    need = time.thread_time() - c0
    assert free.is_optimal and free.objective == pytest.approx(_brute_force_slack(A, d))
    _fast_wall(monkeypatch)
    milp2, _, _ = _market_split(3, 20, seed=0)
    budget = 2.0 * need + 0.05
    w0, c0 = clock.wall_clock(), time.thread_time()
    res = milp2.solve(time_limit=budget)
    # the (fake) wall clock ran well past the budget, the CPU did not
    assert clock.wall_clock() - w0 > 1.5 * budget > time.thread_time() - c0
    assert res.is_optimal and res.objective == pytest.approx(free.objective)


def test_the_wall_net_stops_a_solve_whose_cpu_clock_stands_still(monkeypatch):
    monkeypatch.setattr(clock, "cpu_clock", lambda threads=1: 0.0)
    milp, _, _ = _market_split(4, 40, seed=1)
    budget = 0.05
    w0 = time.perf_counter()
    res = milp.solve(time_limit=budget)
    wall = time.perf_counter() - w0
    assert res.status is SolveStatus.TIME_LIMIT and res.stopped_by == "wall"
    assert "wall-clock safety net" in res.message
    assert wall >= WALL_SLACK * budget * 0.95


def _tiny_net_problem():
    rng = np.random.default_rng(3)
    n, d = 600, 6
    X = rng.uniform(size=(n, d))
    score = X @ rng.normal(size=d) + 0.8 * np.sin(4 * X[:, 0]) + rng.normal(0, 0.2, size=n)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(d)])
    frame["y"] = (score > np.median(score)).astype(int)
    schema = Schema([Feature(f"x{i}", "continuous", lower=0.0, upper=1.0) for i in range(d)])
    data = from_frame(frame, "y", schema)
    model = rc.models.MLP((16, 16), epochs=40, random_state=0).fit(data)
    queries = data.frame[model.predict(data.frame) == 0].iloc[:2]
    return data, model, queries


def test_milp_robust_gets_the_same_status_with_a_5x_faster_wall_clock(monkeypatch):
    """MILP-R's margin loop, its nearest-CE MILPs and Δ-tests, all on one CPU budget: a query
    given twice the CPU it needs ends the same way when the wall clock runs 5× fast (the old
    wall-clock budget would have run out at 1/5 of the CPU)."""
    data, model, queries = _tiny_net_problem()

    def explain():
        ex = MILPRobust(model, data, shift=0.1, growth=1.25, max_rounds=30, time_limit=limit)
        c0 = time.thread_time()
        r = ex.explain(queries.iloc[[0]])
        return r, time.thread_time() - c0

    limit = 60.0
    free, need = explain()
    assert free.status.iloc[0] in ("found", "no_robust_point")
    limit = 2.0 * need + 0.1
    _fast_wall(monkeypatch)
    w0 = clock.wall_clock()
    loaded, _ = explain()
    assert clock.wall_clock() - w0 > limit  # the fake wall clock passed the budget
    assert loaded.status.iloc[0] == free.status.iloc[0]
    assert loaded.certificates.iloc[0]["rounds"] == free.certificates.iloc[0]["rounds"]
    if free.status.iloc[0] == "found":
        assert np.allclose(loaded.counterfactuals_encoded, free.counterfactuals_encoded, atol=1e-9)


def test_milp_robust_times_out_on_cpu_and_says_so():
    data, model, queries = _tiny_net_problem()
    ex = MILPRobust(model, data, shift=0.1, growth=1.25, max_rounds=30, time_limit=1e-3)
    r = ex.explain(queries.iloc[[0]])
    assert r.status.iloc[0] == "timeout"
    assert "CPU time limit" in r.messages.iloc[0]
