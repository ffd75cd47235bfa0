"""``robustce serve --ledger``: real servers on loopback record every option they give as a
promise (read back with the ledger API and compared field by field with the HTTP answer),
a job's items too; the promises route says whether the model served now honours each one,
checked against that model's own ``predict`` on the promised rows (v2: a retrained model under
the same id); refusals, a ledger that cannot be written (503, kept for a retry) or opened."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid

import pandas as pd

from robustce.cli import main
from robustce.ledger import Ledger

from .conftest import TOKEN, free_port

HOSTILE = '<img src=x onerror="window.__pwned=1">'


def _promises_of(ledger_path, keys: set[str]) -> pd.DataFrame:
    with Ledger(str(ledger_path)) as book:
        parts = list(book.promises(outstanding=False))
    if not parts:
        return pd.DataFrame(columns=["id", "applicant_key", "target_row"])
    frame = pd.concat(parts, ignore_index=True)
    return frame[frame["applicant_key"].isin(keys)].sort_values("id").reset_index(drop=True)


def _explain(server, items, method, params, **extra):
    body = {"items": items, "method": method, "params": params, "time_limit_s": 20, **extra}
    with server.client() as c:
        r = c.post("/v1/models/loan/explain", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_explain_answers_are_recorded_field_by_field(ledger_servers):
    s = ledger_servers
    tag = uuid.uuid4().hex[:6]
    items = [{"id": f"{tag}-a", "features": s.applicants[0]},
             {"features": s.applicants[1]},  # no id: kept as REQUEST_ID:1
             {"id": f"{tag}-c", "features": s.applicants[2]}]
    answer = _explain(s.v1, items, "milp_robust", {"shift": 0.03},
                      certify={"delta": 0.02, "time_limit_s": 5})
    rid = answer["request_id"]
    keys = [f"{tag}-a", f"{rid}:1", f"{tag}-c"]
    expected = []  # (key, item, k) of every CE the model puts in the target class
    for key, item, out in zip(keys, items, answer["items"], strict=True):
        if out["status"] == "found":
            expected += [(key, item, out, k) for k, ok in enumerate(out["valid"]) if ok]
    assert len(expected) >= 2
    got = _promises_of(s.ledger, set(keys))
    assert len(got) == len(expected)
    for (key, item, out, k), p in zip(expected, got.to_dict("records"), strict=True):
        assert p["applicant_key"] == key and not p["applicant_hashed"]
        assert p["applicant_row"] == item["features"]
        assert p["target_row"] == out["counterfactuals"][k]
        assert sorted(p["changed"]) == sorted(out["changed"][k])
        assert p["model_hash"] == answer["model"]["hash"]
        assert p["method"] == answer["method"] == "milp_robust"
        assert p["target_class"] == answer["target_class"]
        assert p["origin"] == "serve"
        method_cert = out["certificates"]["method"]
        assert p["certificate"]["kind"] == "delta" == p["certificate_kind"]
        assert p["certificate"]["delta"] == method_cert["delta"]
        assert p["certificate"]["verdict"] == method_cert["delta_status"]
        assert p["certificate"]["vr"] == out["certificates"]["family"][k]["vr"]


def test_job_items_are_recorded(ledger_servers):
    s = ledger_servers
    tag = uuid.uuid4().hex[:6]
    items = [{"id": f"{tag}-j{i}", "features": s.applicants[i]} for i in range(3)]
    with s.v1.client() as c:
        r = c.post("/v1/models/loan/jobs", json={"items": items, "method": "milp_nearest"})
        assert r.status_code == 202, r.text
        job = r.json()["job_id"]
        for _ in range(600):
            view = c.get(f"/v1/jobs/{job}").json()
            if view["status"] not in ("queued", "running"):
                break
            time.sleep(0.1)
    assert view["status"] == "done", view
    result = view["result"]
    want = [(it["id"], ce) for it in result["items"] if it["status"] == "found"
            for ce, ok in zip(it["counterfactuals"], it["valid"], strict=True) if ok]
    assert len(want) == 3
    got = _promises_of(s.ledger, {it["id"] for it in items})
    assert [(p["applicant_key"], p["target_row"]) for p in got.to_dict("records")] == want
    assert set(got["model_hash"]) == {result["model"]["hash"]}
    assert set(got["method"]) == {"milp_nearest"}


def test_promises_route_says_whether_todays_model_honours_them(ledger_servers):
    """Promises issued by v1 (minimal-distance CEs, on v1's boundary), read through v2: the
    route's verdict is v2's own ``predict`` on the promised rows of v1's HTTP answer."""
    from robustce.models import load

    s = ledger_servers
    tag = uuid.uuid4().hex[:6]
    items = [{"id": f"{tag}-{i}", "features": s.applicants[i]} for i in range(6)]
    answer = _explain(s.v1, items, "milp_nearest", {})
    v2 = load(s.v2_dir / "model")
    verdicts = {}
    with s.v2.client() as c:
        v2_hash = c.get("/v1/models/loan").json()["hash"]
        for item, out in zip(items, answer["items"], strict=True):
            r = c.get("/v1/models/loan/promises", params={"applicant": item["id"]})
            assert r.status_code == 200, r.text
            view = r.json()
            assert view["model"] == {"id": "loan", "hash": v2_hash}
            promised = [ce for ce, ok in zip(out["counterfactuals"], out["valid"], strict=True) if ok]
            assert [p["promised_row"] for p in view["promises"]] == promised
            if not promised:
                continue
            kept = v2.predict(pd.DataFrame(promised)[v2.encoder.schema.names]) == answer["target_class"]
            for p, ok in zip(view["promises"], kept, strict=True):
                assert p["honoured_by_served_model"] is bool(ok)
                assert p["issued_by"] == answer["model"]["hash"] != v2_hash
                assert p["issued_by_served_model"] is False and p["outstanding"] is True
                verdicts[item["id"]] = bool(ok)
            assert view["honoured"] == int(kept.sum()) and view["broken"] == int((~kept).sum())
        # v1 itself honours every promise it just made
        with s.v1.client() as c1:
            first = c1.get("/v1/models/loan/promises", params={"applicant": items[0]["id"]}).json()
        assert [p["honoured_by_served_model"] for p in first["promises"]] == [True] * len(first["promises"])
    assert set(verdicts.values()) == {True, False}  # the retrained model breaks some, keeps some


def test_promises_route_refusals_and_a_hostile_id_as_text(ledger_servers, server):
    s = ledger_servers
    with s.v1.client(token=None) as anon:
        r = anon.get("/v1/models/loan/promises", params={"applicant": "x"})
        assert r.status_code == 401
    with s.v1.client() as c:
        r = c.get("/v1/models/loan/promises")
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "applicant"]
        r = c.get("/v1/models/loan/promises", params={"applicant": "x" * 201})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "applicant"]
        assert c.get("/v1/models/nope/promises", params={"applicant": "x"}).status_code == 404
        empty = c.get("/v1/models/loan/promises", params={"applicant": uuid.uuid4().hex}).json()
        assert empty["promises"] == [] and empty["honoured"] == empty["broken"] == 0
    records = [json.loads(line) for line in s.v1.audit_log.read_text().splitlines()]
    refused = [r for r in records if r.get("path") == "/v1/models/loan/promises"
               and r.get("status") == 422]
    assert refused and refused[-1]["reason"][0]["loc"] == ["query", "applicant"]
    # a hostile id comes back as the same text, in JSON
    answer = _explain(s.v1, [{"id": HOSTILE, "features": s.applicants[3]}], "milp_nearest", {})
    with s.v1.client() as c:
        r = c.get("/v1/models/loan/promises", params={"applicant": HOSTILE})
    assert r.headers["content-type"] == "application/json"
    assert r.json()["applicant"] == HOSTILE
    assert len(r.json()["promises"]) >= sum(answer["items"][0]["valid"]) >= 1
    with server.client() as c:  # a service without a ledger
        r = c.get("/v1/models/loan/promises", params={"applicant": "x"})
        assert r.status_code == 404 and "--ledger" in r.json()["detail"]


def test_a_ledger_that_cannot_be_written_withholds_the_answer_until_a_retry(ledger_servers):
    """A write the database refuses (an SQLite trigger aborts every insert): 503 with
    ``Retry-After`` and an ``Idempotency-Key``, the audit record says ``ledger_error``, nothing is
    recorded; once the ledger takes writes again, the retry gets the kept answer and its
    promises are recorded once. A job then fails rather than deliver unrecorded results."""
    s = ledger_servers
    tag = uuid.uuid4().hex[:6]
    item = {"id": f"{tag}-full", "features": s.applicants[4]}
    body = {"items": [item], "method": "milp_nearest", "time_limit_s": 20}
    db = sqlite3.connect(s.ledger)
    db.execute("CREATE TRIGGER refuse BEFORE INSERT ON robustce_ledger_promises "
               "BEGIN SELECT RAISE(ABORT, 'disk full (test)'); END")
    db.commit()
    try:
        with s.v1.client() as c:
            r = c.post("/v1/models/loan/explain", json=body)
            assert r.status_code == 503, r.text
            assert r.headers["retry-after"] and "ledger could not be written" in r.json()["detail"]
            key = r.headers["idempotency-key"]
            job = c.post("/v1/models/loan/jobs", json={"items": [{**item, "id": f"{tag}-job"}],
                                                       "method": "milp_nearest"}).json()["job_id"]
            for _ in range(600):
                view = c.get(f"/v1/jobs/{job}").json()
                if view["status"] not in ("queued", "running"):
                    break
                time.sleep(0.1)
        assert view["status"] == "failed" and view["result"] is None
        assert "ledger could not be written" in view["error"]
        assert _promises_of(s.ledger, {item["id"], f"{tag}-job"}).empty
        records = [json.loads(line) for line in s.v1.audit_log.read_text().splitlines()]
        mine = [r for r in records if r.get("request_id") == key]  # sent without a key
        assert mine and mine[-1]["status"] == 503 and "disk full (test)" in mine[-1]["ledger_error"]
        finished = [r for r in records if r.get("request_id") == job and r.get("event") == "finished"]
        assert finished and "disk full (test)" in finished[-1]["ledger_error"]
    finally:
        db.execute("DROP TRIGGER refuse")
        db.commit()
        db.close()
    with s.v1.client() as c:
        r = c.post("/v1/models/loan/explain", json=body, headers={"Idempotency-Key": key})
        assert r.status_code == 200, r.text
        again = c.post("/v1/models/loan/explain", json=body, headers={"Idempotency-Key": key})
    answer = r.json()
    assert answer["request_id"] == key  # the kept answer, not a new one
    assert again.json()["request_id"] != key  # given once: a second retry is a new request
    got = _promises_of(s.ledger, {item["id"]})

    def valid(out):
        return [ce for ce, ok in zip(out["counterfactuals"], out["valid"], strict=True) if ok]

    # the kept answer's promises once, then the new request's
    assert got["target_row"].tolist() == valid(answer["items"][0]) + valid(again.json()["items"][0])


def test_a_ledger_that_cannot_be_opened_stops_the_start(tmp_path, model_dir, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("not a database" * 100)
    token = tmp_path / "token"
    token.write_text(TOKEN)
    code = main(["serve", "--model", f"loan={model_dir}", "--port", str(free_port()),
                 "--token-file", str(token), "--ledger", str(bad)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("robustce: error: ledger sqlite:///"), err
    assert "not a database" in err[0]
    assert main(["serve", "--ledger-hash-ids"]) == 2
    assert "--ledger-hash-ids needs --ledger" in capsys.readouterr().err


def test_hashed_ids_are_kept_as_salted_hashes_and_still_found(tmp_path, model, model_dir):
    """``--ledger-hash-ids``: the ledger holds a salted SHA-256, not the id; the promises route's
    lookup by the id still finds the promise, re-scored by the model's own ``predict``."""
    import argparse
    from types import SimpleNamespace

    from robustce.cli.serve import _add_serve, _settings
    from robustce.methods.registry import build_explainer
    from robustce.serve.promises import ServiceLedger

    parser = argparse.ArgumentParser()
    _add_serve(parser.add_subparsers())
    settings = _settings(parser.parse_args(["serve", "--ledger", str(tmp_path / "l.sqlite3"),
                                            "--ledger-hash-ids"]))
    assert (settings.ledger, settings.ledger_hash_ids) == (str(tmp_path / "l.sqlite3"), True)
    schema = model.encoder.schema
    m = SimpleNamespace(id="loan", hash="h1", class_names=[str(c) for c in model.class_names],
                        schema=schema, model=model)
    from robustce.explanations import Explanations

    query = Explanations.load(model_dir).queries[schema.names].head(1)  # a declined applicant
    declined = query.iloc[0].to_dict()
    assert model.predict(query).tolist() == [0]
    expl = build_explainer("milp_nearest", model, None).explain(query, target_class=1)
    ce = expl.counterfactuals[schema.names].iloc[0].to_dict()
    result = {"status": "found", "counterfactuals": [ce], "valid": [True], "certificates": {}}
    book = ServiceLedger(settings.ledger, settings.ledger_hash_ids)
    try:
        rows = book.rows_of(m, "milp_nearest", 1, ["alice"], [declined], [result], "r")
        asyncio_run(book.record(rows))
        stored = next(book.book.promises(outstanding=False))
        assert stored["applicant_key"].tolist() == [book.book.applicant_key("alice")]
        assert "alice" not in stored["applicant_key"].iloc[0] and stored["applicant_hashed"].all()
        view = book.view(m, "alice", 10)
        assert [p["promised_row"] for p in view["promises"]] == [ce]
        assert view["promises"][0]["honoured_by_served_model"] is bool(
            model.predict(pd.DataFrame([ce])[schema.names])[0] == 1)
        assert book.view(m, "bob", 10)["promises"] == []
    finally:
        book.close()


def asyncio_run(coro):
    import asyncio

    return asyncio.run(coro)
