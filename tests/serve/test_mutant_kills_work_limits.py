"""The app hands ``--solver-nodes`` to every task it runs: explain (with a certificate, so it
goes to a worker; jobs run through the same call) and certify — the task a worker receives
carries the node limit of the server's settings (mutants
``serve_explain_task_without_solver_nodes``, ``serve_certify_task_without_solver_nodes``).
In-process app, the demo model loaded, the worker pool replaced by a recorder."""

from __future__ import annotations

import asyncio

import pytest

NODES = 321


def test_explain_and_certify_tasks_carry_the_servers_node_limit(model_dir):
    httpx = pytest.importorskip("httpx")
    from robustce.serve import app as app_module
    from robustce.serve.registry import load_served_model, model_spec
    from robustce.serve.settings import ServeSettings

    spec = model_spec(model_dir, "loan")
    app = app_module.create_app([spec], ServeSettings(solver_nodes=NODES))
    service = app.state.service
    served = load_served_model(spec)
    service.models["loan"] = served
    tasks: list[dict] = []

    async def run(fn, task, deadline, wait=False):
        tasks.append(task)
        if "certify" in task and "method" not in task:  # a certify task
            return [{"valid": True, "prediction": 1, "certificates": {}, "time_s": 0.0}
                    for _ in task["records"]]
        return [{"status": "not_found", "message": "", "counterfactuals": [], "time_s": 0.0}
                for _ in task["records"]]

    service.run = run
    record = served.applicants.iloc[0].to_dict()
    features = {k: (v.item() if hasattr(v, "item") else v) for k, v in record.items()}

    async def post() -> list:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.post("/v1/models/loan/explain", json={
                        "items": [{"features": features}], "method": "milp_robust",
                        "certify": {"delta": 0.01}}),
                    await client.post("/v1/models/loan/certify", json={
                        "counterfactuals": [{"features": features}], "delta": 0.01})]

    replies = asyncio.run(post())
    assert [r.status_code for r in replies] == [200, 200], [r.text for r in replies]
    assert len(tasks) == 2
    assert [t.get("solver_nodes") for t in tasks] == [NODES, NODES]
