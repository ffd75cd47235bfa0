"""The per-item work limit of the service (``--solver-nodes``): every MILP a request's items
solve gets HiGHS's ``mip_max_nodes``, a limit counted in branch-and-bound nodes rather than
seconds, so what an item gets does not depend on the host's load. Asserted on node counts and
statuses, never on times."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from robustce.solvers.milp import MILP, SolveStatus, highs_work_limits

#: the module of the HiGHS backend, which reads the limits (the one defining highs_work_limits)
milp_module = sys.modules[highs_work_limits.__module__]


def _market_split(n: int = 12, m: int = 2, seed: int = 0) -> MILP:
    """A small market-split MILP: binary x with ``A x = b`` softened by slacks, slack total
    minimised; HiGHS needs ~150 nodes to prove its optimum (measured), none of them to stop
    at one."""
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 100, size=(m, n)).astype(float)
    b = np.floor(A.sum(1) / 2)
    model = MILP(time_limit=120)
    x = model.add_vars(n, lb=0, ub=1, vtype="B")
    s = model.add_vars(2 * m, lb=0, ub=1e4, vtype="C")
    for i in range(m):
        model.add_constrs(np.concatenate([A[i], [1.0, -1.0]])[None], lb=b[i], ub=b[i],
                          cols=np.concatenate([x, s[2 * i:2 * i + 2]]))
    model.set_objective(s, np.ones(2 * m), sense="min")
    return model


def test_a_node_limit_stops_the_solve_by_nodes_with_status_limit():
    free = _market_split().solve()
    assert free.status is SolveStatus.OPTIMAL and free.node_count > 1
    with highs_work_limits(mip_max_nodes=1):
        limited = _market_split().solve()
    assert limited.status is SolveStatus.LIMIT and not limited.is_optimal
    assert limited.node_count <= 1


def test_the_limit_holds_only_inside_its_context_and_a_models_own_option_wins():
    with highs_work_limits(mip_max_nodes=1):
        pass
    assert _market_split().solve().status is SolveStatus.OPTIMAL  # the context is over
    own = _market_split()
    own._options.extra["mip_max_nodes"] = 100_000
    with highs_work_limits(mip_max_nodes=1):
        assert own.solve().status is SolveStatus.OPTIMAL


@pytest.mark.parametrize("task_fn, extra", [
    ("explain_task", {"method": "milp_robust", "params": {"shift": 0.03}, "time_limit_s": 30,
                      "certify": {"delta": 0.03, "time_limit_s": 30}}),
    ("certify_task", {"certify": {"delta": 0.03, "time_limit_s": 30}}),
])
def test_every_milp_of_a_task_is_made_with_the_services_node_limit(monkeypatch, model_dir, task_fn,
                                                                    extra):
    """The worker's tasks (explain, certify) build their HiGHS solvers under the task's
    ``solver_nodes``: each HiGHS instance made during the task has ``mip_max_nodes`` set."""
    from robustce.serve import worker
    from robustce.serve.registry import load_served_model, model_spec

    served = load_served_model(model_spec(model_dir, "loan"), with_methods=False)
    worker.register_models([served])
    seen: list[dict] = []
    init = milp_module._HighsBackend.__init__

    def recording(self, options):
        init(self, options)
        seen.append({"mip_max_nodes": self.h.getOptionValue("mip_max_nodes")[1]})

    monkeypatch.setattr(milp_module._HighsBackend, "__init__", recording)
    records = served.applicants.iloc[:2].to_dict("records")
    task = {"model_id": "loan", "records": records, "target_class": served.favourable, "seed": 0,
            "solver_nodes": 777, **extra}
    results = getattr(worker, task_fn)(task)
    assert len(results) == 2
    assert seen and all(s["mip_max_nodes"] == 777 for s in seen), seen
