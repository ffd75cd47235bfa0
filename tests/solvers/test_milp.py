"""The MILP interface: building, solving, statuses, backends."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from robustce.errors import SolverError, UnknownSolverError, ValidationError
from robustce.solvers import MILP, SolveStatus, available_solvers, check_solver
from robustce.solvers.milp import common as milp_common

SOLVERS = ["highs"] + (["gurobi"] if "gurobi" in available_solvers() else [])


def _knapsack(solver: str, n: int = 8, seed: int = 0, **kw) -> tuple[MILP, np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 20, size=n).astype(float)
    v = rng.integers(1, 30, size=n).astype(float)
    cap = float(w.sum() // 2)
    m = MILP(solver, time_limit=10, **kw)
    x = m.add_vars(n, 0, 1, "B")
    m.add_constrs(w[None, :], ub=cap, cols=x)
    m.set_objective(x, v, sense="max")
    return m, w, v, cap


def _brute_knapsack(w, v, cap):
    n = len(w)
    best = 0.0
    for mask in range(1 << n):
        sel = np.array([(mask >> i) & 1 for i in range(n)], dtype=bool)
        if w[sel].sum() <= cap:
            best = max(best, v[sel].sum())
    return best


@pytest.mark.parametrize("solver", SOLVERS)
def test_knapsack_matches_brute_force(solver):
    for seed in range(3):
        m, w, v, cap = _knapsack(solver, seed=seed)
        r = m.solve()
        if r.status is SolveStatus.ERROR and "licence" in r.message.lower():
            pytest.skip(f"gurobi licence: {r.message}")
        assert r.status is SolveStatus.OPTIMAL
        assert r.objective == pytest.approx(_brute_knapsack(w, v, cap))
        assert r.bound == pytest.approx(r.objective, abs=1e-6)
        sel = r.values > 0.5
        assert w[sel].sum() <= cap + 1e-9
        assert r.solver == solver and r.time >= 0


@pytest.mark.parametrize("solver", SOLVERS)
def test_dense_sparse_and_coo_rows_agree(solver):
    A = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]])
    results = []
    for form in ("dense", "sparse", "coo"):
        m = MILP(solver, time_limit=5)
        x = m.add_vars(3, lb=[0, 0, -2], ub=[4, 4, 2], vtype=["I", "C", "C"])
        if form == "dense":
            m.add_constrs(A, lb=[1.5, -np.inf], ub=[np.inf, 0.5])
        elif form == "sparse":
            m.add_constrs(sp.csr_matrix(A), lb=[1.5, -np.inf], ub=[np.inf, 0.5], cols=x)
        else:
            r, c = np.nonzero(A)
            m.add_constrs_coo(r, x[c], A[r, c], 2, lb=[1.5, -np.inf], ub=[np.inf, 0.5])
        m.set_objective(x, [1.0, 1.0, 1.0])
        res = m.solve()
        assert res.status is SolveStatus.OPTIMAL
        results.append(res.objective)
    assert results[0] == pytest.approx(results[1]) == pytest.approx(results[2])


def test_min_max_bounds_and_incremental_changes():
    m = MILP(time_limit=5)
    x = m.add_vars(2, 0, 3, "I")
    m.add_constrs([[1, 2]], lb=1.5)
    m.set_objective(x, [1, 1])
    assert m.solve().objective == pytest.approx(1.0)
    m.set_var_bounds([1], [0], [0])  # forwarded without a reload
    r = m.solve()
    assert r.objective == pytest.approx(2.0) and r.values[1] == pytest.approx(0.0)
    m.set_objective(x, [1, 1], sense="max")
    assert m.solve().objective == pytest.approx(3.0)
    m.set_constr_bounds([0], 1.5, 2.5)
    m.set_objective(x, [1, 0], sense="max")
    assert m.solve().objective == pytest.approx(2.0)
    # a structural change after solving reloads the model
    y = m.add_vars(1, 0, 1, "B")
    m.add_constrs(np.array([[1.0, 0.0, -1.0]]), ub=0.0)
    m.set_objective(y, [1.0], sense="max")
    assert m.solve().status is SolveStatus.INFEASIBLE
    assert m.n_vars == 3 and m.n_constrs == 2 and m.n_integer == 3


def test_lp_without_integers_reports_bound():
    m = MILP(time_limit=5)
    x = m.add_vars(2, 0, 10)
    m.add_constrs([[1.0, 1.0]], lb=3.0)
    m.set_objective(x, [2.0, 1.0], constant=0.5)
    r = m.solve()
    assert r.status is SolveStatus.OPTIMAL
    assert r.objective == pytest.approx(3.5) and r.bound == pytest.approx(3.5)


@pytest.mark.parametrize("solver", SOLVERS)
def test_cutoff_and_target(solver):
    for sense, sign in (("min", 1.0), ("max", -1.0)):
        m = MILP(solver, time_limit=5)
        x = m.add_vars(3, 0, 3, "I")
        m.add_constrs([[1, 1, 1]], lb=1, ub=7.5)
        m.set_objective(x, [1, 1, 1], sense=sense)
        opt = m.solve().objective
        assert opt == pytest.approx(1.0 if sense == "min" else 7.0)
        r = m.solve(cutoff=opt - sign * 0.5)  # nothing beats a cutoff past the optimum
        assert r.status is SolveStatus.CUTOFF and r.bound == pytest.approx(opt - sign * 0.5)
        assert not r.has_solution
        r = m.solve(cutoff=opt + sign * 3)
        assert r.status is SolveStatus.OPTIMAL and r.objective == pytest.approx(opt)
        r = m.solve()
        assert r.status is SolveStatus.OPTIMAL and r.objective == pytest.approx(opt)


def test_unbounded_model_with_cutoff_is_not_a_cutoff_proof():
    # HiGHS's presolve says "infeasible or unbounded" here; the model is unbounded below, so
    # reading that as "nothing beats the cutoff" would be a false proof
    m = MILP(time_limit=5)
    x = m.add_vars(2, -np.inf, np.inf, "I")
    m.add_constrs([[1, 1]], ub=3)
    m.set_objective(x, [1, 1])
    r = m.solve(cutoff=0.0)
    assert r.status is not SolveStatus.CUTOFF
    assert r.status in (SolveStatus.UNBOUNDED, SolveStatus.INFEASIBLE_OR_UNBOUNDED)
    assert math.isnan(r.bound)


def test_time_limit_gives_time_limit_status():
    # a hard-ish random integer program cannot be solved in a millisecond
    rng = np.random.default_rng(0)
    n, k = 60, 40
    m = MILP(time_limit=10)
    x = m.add_vars(n, 0, 5, "I")
    m.add_constrs(rng.integers(1, 30, size=(k, n)).astype(float), ub=rng.integers(100, 300, size=k) + 0.5)
    m.set_objective(x, rng.integers(1, 40, size=n).astype(float), sense="max")
    r = m.solve(time_limit=1e-3)
    assert r.status in (SolveStatus.TIME_LIMIT, SolveStatus.OPTIMAL)
    assert r.status is SolveStatus.TIME_LIMIT  # the point of the test
    assert not r.is_optimal


def test_warm_start_is_accepted():
    m, w, v, cap = _knapsack("highs", n=10, seed=4)
    m.set_start(np.zeros(10))
    r = m.solve()
    assert r.status is SolveStatus.OPTIMAL
    assert r.objective == pytest.approx(_brute_knapsack(w, v, cap))


def test_unknown_and_missing_backends(monkeypatch):
    with pytest.raises(SolverError, match="unknown MILP solver"):
        MILP("cplex")
    with pytest.raises(SolverError):
        check_solver(3)
    # a bad name is a bad argument: a ValueError (and ValidationError) as well
    for bad in ("cplex", 3):
        with pytest.raises(UnknownSolverError) as info:
            check_solver(bad)
        assert isinstance(info.value, ValueError) and isinstance(info.value, ValidationError)
    monkeypatch.setattr(milp_common, "_gurobi_module", lambda: None)
    with pytest.raises(SolverError, match="gurobipy is not installed"):
        MILP("gurobi")
    assert available_solvers() == ["highs"]
    assert check_solver("HiGHS") == "highs"


def test_bad_arguments():
    with pytest.raises(ValidationError):
        MILP(time_limit=0)
    with pytest.raises(ValidationError):
        MILP(time_limit=math.inf)
    m = MILP()
    with pytest.raises(ValidationError):
        m.add_vars(2, lb=[0, 1], ub=[1, 0])
    with pytest.raises(ValidationError):
        m.add_vars(2, vtype="Q")
    m.add_vars(2)
    with pytest.raises(ValidationError):
        m.add_constrs(np.ones((1, 3)))
    with pytest.raises(ValidationError):
        m.add_constrs_coo([0], [5], [1.0], 1)
    with pytest.raises(ValidationError):
        m.set_objective([0], [1.0], sense="up")
    with pytest.raises(ValidationError):
        m.solve(time_limit=-1)


def test_batch_build_materialises_every_row():
    """50 000 coefficients in a handful of batch calls (its speed: benchmarks/bench_exact.py)."""
    rng = np.random.default_rng(0)
    m = MILP()
    x = m.add_vars(500, 0, 1)
    b = m.add_vars(100, 0, 1, "B")
    m.add_constrs(rng.normal(size=(100, 500)), ub=1.0, cols=x)
    m.add_constrs(np.hstack([np.eye(100), -np.eye(100)]), ub=0.0, cols=np.concatenate([x[:100], b]))
    m.set_objective(x, rng.normal(size=500))
    m._materialise()
    assert m.n_constrs == 200 and m.n_vars == 600


@pytest.mark.skipif("gurobi" not in available_solvers(), reason="gurobipy is not installed")
def test_gurobi_quiet_and_agrees_on_lp(capfd):
    vals = []
    for solver in ("highs", "gurobi"):
        m = MILP(solver, time_limit=5)
        x = m.add_vars(3, 0, 4)
        m.add_constrs([[1, 1, 0], [0, 1, 1]], lb=[2, 3])
        m.set_objective(x, [1, 2, 1])
        r = m.solve()
        if r.status is SolveStatus.ERROR and "licence" in r.message.lower():
            pytest.skip(f"gurobi licence: {r.message}")
        vals.append(r.objective)
        m.close()
    assert vals[0] == pytest.approx(vals[1])
    out = capfd.readouterr()
    assert "Gurobi" not in out.out and "HiGHS" not in out.out


def test_highs_prints_nothing_on_stdout_in_a_fresh_process():
    """HiGHS ≥ 1.16 prints a banner when a process builds its first instance; robustce's
    output (CLI tables, users' logs) must not contain it. A fresh interpreter, so this is
    really the first instance."""
    import subprocess
    import sys

    code = ("from robustce.solvers import MILP\n"
            "m = MILP('highs')\n"
            "x = m.add_vars(2, 0, 1, 'B')\n"
            "m.add_constrs([[1.0, 1.0]], lb=1.0, cols=x)\n"
            "m.set_objective(x, [1.0, 2.0])\n"
            "print('status', m.solve().status.value)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "status optimal", out.stdout
    assert "HiGHS" not in out.stderr


@pytest.mark.parametrize("solver", SOLVERS)
def test_relaxation_bounds_the_milp_and_leaves_it_unchanged(solver):
    m, w, v, cap = _knapsack(solver, n=10, seed=3)
    full = m.solve()
    lp = m.solve_relaxation()
    assert lp.status is SolveStatus.OPTIMAL
    assert lp.objective >= full.objective - 1e-9  # maximising: the relaxation bounds it above
    assert np.any(np.abs(lp.values - np.round(lp.values)) > 1e-6)  # a knapsack LP is fractional
    again = m.solve()  # the MILP again, integral
    assert again.objective == pytest.approx(_brute_knapsack(w, v, cap))
    assert np.allclose(again.values, np.round(again.values))
    # relaxing only some variables: a bound between the two
    part = m.solve_relaxation(cols=[0, 1, 2])
    assert full.objective - 1e-9 <= part.bound <= lp.objective + 1e-9
    assert np.allclose(part.values[3:], np.round(part.values[3:]))


def test_add_model_copies_a_part_built_once():
    part = MILP(time_limit=5)
    x = part.add_vars(3, 0, 4, "I")
    part.add_constrs([[1.0, 2.0, 1.0]], lb=3.5, cols=x)
    part.set_objective(x, [9.0, 9.0, 9.0])  # not copied
    for _ in range(2):  # the same part in two models, each extended differently
        m = MILP(time_limit=5)
        m.add_model(part)
        y = m.add_vars(1, 0, 10)
        m.add_constrs([[1.0, -1.0]], lb=0.0, cols=[0, 3])  # y <= x0
        m.set_objective(np.r_[x, y], [1.0, 1.0, 1.0, -0.5])
        direct = MILP(time_limit=5)
        xd = direct.add_vars(3, 0, 4, "I")
        direct.add_constrs([[1.0, 2.0, 1.0]], lb=3.5, cols=xd)
        yd = direct.add_vars(1, 0, 10)
        direct.add_constrs([[1.0, -1.0]], lb=0.0, cols=[0, 3])
        direct.set_objective(np.r_[xd, yd], [1.0, 1.0, 1.0, -0.5])
        assert m.solve().objective == pytest.approx(direct.solve().objective)
        assert m.n_vars == 4 and m.n_constrs == 2
    assert part.n_vars == 3 and part.n_constrs == 1  # the part itself is untouched
    with pytest.raises(ValidationError, match="needs a MILP"):
        MILP().add_model("not a model")


def test_bounds_changed_while_building_reach_the_solver():
    m = MILP(time_limit=5)
    x = m.add_vars(3, 0, 10)
    m.set_var_bounds([1], [2.0], [2.0])  # before any row: no matrix is built yet
    m.add_constrs([[1.0, 1.0, 1.0]], lb=5.0, cols=x)
    m.set_var_bounds([0, 2], [1.0, 0.0], [1.0, 10.0])
    m.set_objective(x, [1.0, 1.0, 1.0])
    r = m.solve()
    assert r.values[0] == pytest.approx(1.0) and r.values[1] == pytest.approx(2.0)
    assert r.values[2] == pytest.approx(2.0)
    with pytest.raises(ValidationError, match="lb > ub"):
        m.set_var_bounds([0], [3.0], [1.0])
    with pytest.raises(ValidationError, match="NaN"):
        m.add_vars(1, float("nan"), 1.0)


def test_time_limit_holds_after_many_solves_in_one_process():
    """Every model's time limit counts its own solve: HiGHS's run clock adds up over all runs
    of one instance (no reset call clears it), so an instance reused across models answered
    TIME_LIMIT at once after ≈ time_limit seconds of earlier solves."""
    import time as _time

    t0 = _time.process_time()
    while _time.process_time() - t0 < 1.5:  # 1.5 s of solving, far more than the limit below
        m, w, v, cap = _knapsack("highs", n=30, seed=3)
        m.solve()
    del m  # the busy instance is free again: a pool would hand it to the next model
    lp = MILP(time_limit=0.2)  # min x₁ + 2x₂ + 3x₃, x₁ + x₂ ≥ 1, x₂ + x₃ ≥ 2: x₂ = 2
    x = lp.add_vars(3, 0, 5)
    lp.add_constrs([[1, 1, 0], [0, 1, 1]], lb=[1, 2], cols=x)
    lp.set_objective(x, [1, 2, 3])
    r = lp.solve()
    assert r.status is SolveStatus.OPTIMAL
    assert r.objective == pytest.approx(4.0)
