"""The /v1 contract against a live server: models, explain, certify, jobs, auth, limits, audit."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd


def _frame(model, records):
    schema = model.encoder.schema
    return pd.DataFrame.from_records(records)[schema.names]


def test_models_list_and_detail(server, model_dir):
    with server.client() as c:
        r = c.get("/v1/models")
        assert r.status_code == 200
        models = r.json()["models"]
        assert [m["id"] for m in models] == [model_dir.name]  # the directory names the model
        info = c.get("/v1/models/loan").json()
        assert len(info["hash"]) == 64 and info["hash"] == models[0]["hash"]
        feats = {f["name"]: f for f in info["features"]}
        assert feats["age"]["actionability"] == "immutable"
        assert feats["income"]["lower"] == 8000 and feats["income"]["upper"] == 250000
        assert feats["housing"]["categories"] == ["mortgage", "own", "rent"]
        assert {"milp_robust", "nearest_neighbour"} <= set(info["methods"])
        assert info["default_method"] == "milp_robust"
        assert info["family_size"] == 3 and info["has_training_data"]
        assert c.get("/v1/models/nope").status_code == 404
        assert "paths" in c.get("/openapi.json").json()


def test_explain_keeps_order_echoes_ids_and_returns_accepted_ces(server, model, model_dir,
                                                                applicants):
    items = applicants[:5][::-1]  # not in the applicants' order
    body = {"items": items, "method": "nearest_neighbour", "params": {"n_neighbours": 2},
            "target_class": "approved", "time_limit_s": 5}
    with server.client() as c:
        r = c.post("/v1/models/loan/explain", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["model"]["id"] == model_dir.name and len(out["model"]["hash"]) == 64
    assert [it["id"] for it in out["items"]] == [it["id"] for it in items]
    assert out["target_class"] == 1
    schema = model.encoder.schema
    found = 0
    for req, it in zip(items, out["items"], strict=True):
        assert it["status"] in ("found", "infeasible")
        if it["status"] != "found":
            continue
        found += 1
        cfs = _frame(model, it["counterfactuals"])
        assert (model.predict(cfs) == 1).all()  # the model accepts every CE (forward pass here)
        for cf, changed in zip(it["counterfactuals"], it["changed"], strict=True):
            differs = [f.name for f in schema
                       if (not np.isclose(float(cf[f.name]), float(req["features"][f.name]),
                                          rtol=1e-9, atol=1e-6) if f.kind.is_numeric
                           else str(cf[f.name]) != str(req["features"][f.name]))]
            assert changed == differs
            assert "age" not in changed and "prior_default" not in changed  # immutable
        assert it["decision"]["class"] == 0
    assert found >= 3


def test_milp_robust_certificate_is_checked_exactly(server, model, applicants):
    from robustce.robustness import ParameterShift, is_delta_robust

    body = {"items": applicants[:1], "method": "milp_robust", "params": {"shift": 0.03},
            "certify": {"delta": 0.03, "apas": {"alpha": 0.99, "R": 0.99}}, "time_limit_s": 20}
    with server.client() as c:
        r = c.post("/v1/models/loan/explain", json=body)
    assert r.status_code == 200, r.text
    it = r.json()["items"][0]
    assert it["status"] == "found", it
    certs = it["certificates"]
    assert certs["method"]["delta_status"] == "robust"
    assert certs["delta"][0]["status"] == "robust" and certs["delta"][0]["lower"] > 0
    assert certs["apas"][0]["delta_max"] >= 0.03 and certs["apas"][0]["alpha"] == 0.99
    X = model.encoder.transform(_frame(model, it["counterfactuals"]))
    assert is_delta_robust(model, X, ParameterShift(0.03), 1).all()  # re-checked independently
    from robustce.models import load

    family = [load(d) for d in sorted((server.model_dir / "family").iterdir())]
    vr = np.mean([m.predict(X)[0] == 1 for m in family])
    assert certs["family"][0]["vr"] == vr and certs["family"][0]["n_models"] == 3


def test_certify_supplied_counterfactuals(server, model, applicants):
    with server.client() as c:
        ce = c.post("/v1/models/loan/explain", json={
            "items": applicants[:1], "method": "nearest_neighbour"}).json()["items"][0]
        body = {"counterfactuals": [{"id": "ce", "features": ce["counterfactuals"][0]},
                                    {"id": "applicant", "features": applicants[0]["features"]}],
                "target_class": 1, "delta": 0.01, "apas": {"alpha": 0.9, "R": 0.9}}
        r = c.post("/v1/models/loan/certify", json=body)
    assert r.status_code == 200, r.text
    a, b = r.json()["items"]
    assert (a["id"], a["valid"], b["id"], b["valid"]) == ("ce", True, "applicant", False)
    assert b["certificates"]["delta"]["status"] == "not_robust"  # not even valid
    assert a["certificates"]["delta"]["delta"] == 0.01


def test_auth(server):
    with server.client(token=None) as c:
        assert c.get("/health").status_code == 200
        assert c.get("/ready").status_code == 200
        r = c.get("/v1/models")
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert "token" in r.json()["detail"]
    with server.client(token=server.token[:-1] + "x") as c:
        assert c.get("/v1/models").status_code == 401
    with server.client(token=server.token) as c:
        assert c.get("/v1/models").status_code == 200


def test_field_errors_are_422_naming_the_field(server, applicants):
    good = applicants[0]["features"]
    bad = [dict(good, salary=1), {k: v for k, v in good.items() if k != "debt"},
           dict(good, housing="castle"), dict(good, income=1e7), dict(good, age="old")]
    with server.client() as c:
        r = c.post("/v1/models/loan/explain",
                   content=json.dumps({"items": [{"features": b} for b in bad]
                                       + [{"features": dict(good, debt=float("nan"))}]}),
                   headers={"content-type": "application/json"})
    assert r.status_code == 422
    locs = {tuple(e["loc"]): e["msg"] for e in r.json()["detail"]}
    assert ("body", "items", 0, "features", "salary") in locs
    assert locs[("body", "items", 1, "features", "debt")] == "field required"
    assert "castle" in locs[("body", "items", 2, "features", "housing")]
    assert "bounds" in locs[("body", "items", 3, "features", "income")]
    assert ("body", "items", 4, "features", "age") in locs
    assert "NaN" in locs[("body", "items", 5, "features", "debt")]


def test_other_422s(server, applicants):
    item = applicants[:1]
    with server.client() as c:
        too_many = c.post("/v1/models/loan/explain", json={"items": item * 21})
        assert too_many.status_code == 422 and "jobs" in too_many.json()["detail"][0]["msg"]
        unknown = c.post("/v1/models/loan/explain", json={"items": item, "method": "magic"})
        assert unknown.status_code == 422 and "available" in unknown.json()["detail"][0]["msg"]
        params = c.post("/v1/models/loan/explain", json={"items": item, "method": "nearest_neighbour",
                                                          "params": {"n_neighbours": -1}})
        assert params.status_code == 422
        assert params.json()["detail"][0]["loc"] == ["body", "params", "n_neighbours"]
        target = c.post("/v1/models/loan/explain", json={"items": item, "target_class": "maybe"})
        assert target.status_code == 422 and "rejected" in target.json()["detail"][0]["msg"]
        empty = c.post("/v1/models/loan/explain", json={"items": []})
        assert empty.status_code == 422
        extra = c.post("/v1/models/loan/explain", json={"items": item, "colour": "red"})
        assert extra.status_code == 422 and extra.json()["detail"][0]["loc"] == ["body", "colour"]


def test_body_over_the_limit_is_413(server, applicants):
    with server.client() as c:
        big = {"items": applicants[:1], "params": {"pad": "x" * (300 * 1024)}}
        r = c.post("/v1/models/loan/explain", json=big)
        assert r.status_code == 413 and "larger than" in r.json()["detail"]

        def chunks():  # no Content-Length: counted while read
            for _ in range(40):
                yield b" " * 8192
            yield json.dumps({"items": applicants[:1]}).encode()

        r = c.post("/v1/models/loan/explain", content=chunks(),
                   headers={"content-type": "application/json"})
        assert r.status_code == 413


def test_job_resource_runs_a_batch_in_order(server, model, applicants):
    items = [{"id": f"j{i}", "features": applicants[i % len(applicants)]["features"]} for i in range(30)]
    with server.client() as c:
        r = c.post("/v1/models/loan/jobs", json={"items": items, "method": "nearest_neighbour"})
        assert r.status_code == 202, r.text
        job = r.json()
        assert job["progress"]["total"] == 30
        end = time.monotonic() + 60
        while job["status"] in ("queued", "running") and time.monotonic() < end:
            time.sleep(0.2)
            job = c.get(f"/v1/jobs/{job['job_id']}").json()
        assert job["status"] == "done", job
        assert job["progress"] == {"done": 30, "total": 30}
        got = job["result"]["items"]
        assert [it["id"] for it in got] == [it["id"] for it in items]
        first = [it["counterfactuals"][0] for it in got if it["status"] == "found"]
        assert len(first) >= 20 and (model.predict(_frame(model, first)) == 1).all()
        assert c.get("/v1/jobs/unknown").status_code == 404


def test_audit_log_has_one_whole_line_per_request(server, applicants):
    with server.client() as c:
        ids = [c.post("/v1/models/loan/explain", json={"items": applicants[:2], "method": "nearest_neighbour",
                                                       "seed": 7}).json()["request_id"] for _ in range(3)]
    lines = server.audit_log.read_bytes().split(b"\n")
    assert lines[-1] == b""  # ends with a newline: no partial line
    records = [json.loads(line) for line in lines[:-1]]
    by_id = {r["request_id"]: r for r in records}
    for rid in ids:
        rec = by_id[rid]
        assert rec["method"] == "nearest_neighbour" and rec["seed"] == 7
        assert len(rec["model_hash"]) == 64 and rec["versions"]["highspy"]
        assert [it["id"] for it in rec["items"]] == ["a0", "a1"]
        assert all(it["status"] == "found" and it["time_s"] >= 0 for it in rec["items"])


def test_concurrent_requests_each_get_their_own_answers(server, model, applicants):
    """Concurrent nearest-neighbour requests are merged into worker batches while the workers
    are busy; each response must still hold exactly its own items, in its order."""
    import concurrent.futures

    def one(k: int) -> tuple[list[str], dict]:
        items = [{"id": f"r{k}-{j}", "features": applicants[(k + j) % len(applicants)]["features"]}
                 for j in range(1 + k % 3)]
        with server.client() as c:
            r = c.post("/v1/models/loan/explain", json={"items": items, "method": "nearest_neighbour"})
        assert r.status_code == 200, r.text
        return [it["id"] for it in items], r.json()

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        results = list(ex.map(one, range(48)))
    for sent, out in results:
        assert [it["id"] for it in out["items"]] == sent
        for it in out["items"]:
            k, j = (int(x) for x in it["id"][1:].split("-"))
            query = applicants[(k + j) % len(applicants)]["features"]
            if it["status"] == "found":
                cf = it["counterfactuals"][0]
                assert model.predict(_frame(model, [cf]))[0] == 1
                # its own query: every unchanged feature equals this item's query value
                assert all(cf[f] == query[f] for f in query if f not in it["changed"][0])
    with server.client() as c:
        assert c.get("/v1/status").json()["merged_requests"] > 0


def test_explain_follows_its_openapi_contract(server, applicants):
    """The explain route parses its body and writes its response itself (the service's hot
    path): the OpenAPI document still declares both, and real responses validate against it."""
    import jsonschema

    with server.client() as c:
        doc = c.get("/openapi.json").json()
        body = {"items": applicants[:3], "method": "nearest_neighbour", "time_limit_s": 5}
        found = c.post("/v1/models/loan/explain", json=body)
        # a time limit too short for the MILP: items with status timeout (or found)
        short = c.post("/v1/models/loan/explain", json={**body, "method": "milp_robust",
                                                        "time_limit_s": 1e-4})
        wrong_type = c.post("/v1/models/loan/explain", content=json.dumps(body),
                            headers={"content-type": "text/plain"})
    op = doc["paths"]["/v1/models/{model_id}/explain"]["post"]
    jobs = doc["paths"]["/v1/models/{model_id}/jobs"]["post"]
    assert (op["requestBody"]["content"]["application/json"]["schema"]
            == jobs["requestBody"]["content"]["application/json"]["schema"]
            == {"$ref": "#/components/schemas/ExplainRequest"})
    assert [p["name"] for p in op["parameters"]] == ["model_id"]
    declared = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert declared == {"$ref": "#/components/schemas/ExplainResponse"}
    validator = jsonschema.Draft202012Validator({**declared, "components": doc["components"]})
    for r in (found, short):
        assert r.status_code == 200, r.text
        validator.validate(r.json())
        fields = set(doc["components"]["schemas"]["ExplainItemOut"]["properties"])
        assert all(set(it) == fields for it in r.json()["items"])
    assert wrong_type.status_code == 422
    assert "application/json" in wrong_type.json()["detail"][0]["msg"]


def test_explain_items_have_every_contract_field():
    """A result the worker could not fill (timeout, error) is written with the contract's
    defaults, as pydantic's response model wrote it before."""
    from types import SimpleNamespace

    from robustce.serve.app import _explain_items_out
    from robustce.serve.schemas import ExplainItemOut

    items = [SimpleNamespace(id="a"), SimpleNamespace(id="7")]
    results = [{"status": "timeout", "message": "the request's time budget ran out"},
               {"status": "found", "counterfactuals": [{"income": 1.0}], "changed": [["income"]],
                "valid": [True], "certificates": {"method": {}}, "time_s": 0.5,
                "decision": {"class": 0}, "not_in_contract": 1}]
    out = _explain_items_out(items, results)
    assert out == [ExplainItemOut.model_validate({"id": it.id, **res}).model_dump()
                   for it, res in zip(items, results, strict=True)]
    assert out[0]["counterfactuals"] == [] and out[0]["decision"] is None
    assert "not_in_contract" not in out[1]
