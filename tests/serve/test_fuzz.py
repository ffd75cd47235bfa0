"""Fuzzing the API with hostile bodies: every one gets a 4xx with a message, never a 500 (nor a
traceback)."""

from __future__ import annotations

import json

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PATHS = ("/v1/models/loan/explain", "/v1/models/loan/certify", "/v1/models/loan/jobs")


def _record(applicants, **change):
    return json.dumps({"items": [{"id": "x", "features": {**applicants[0]["features"], **change}}]})


def hostile_bodies(applicants) -> dict[str, bytes | str]:
    rec = applicants[0]["features"]
    return {
        "empty": "",
        "not json": "items: [1, 2",
        "truncated": _record(applicants)[:-7],
        "trailing garbage": _record(applicants) + "}}",
        "bare string": '"hello"',
        "null": "null",
        "array": "[1, 2, 3]",
        "invalid utf-8": b'{"items": [\xff\xfe]}',
        "huge exponent": _record(applicants).replace(str(rec["income"]), "1e999999"),
        "huge integer": _record(applicants).replace(str(rec["income"]), "9" * 4000),
        "negative huge": _record(applicants).replace(str(rec["income"]), "-1e308"),
        "Infinity literal": _record(applicants).replace(str(rec["income"]), "Infinity"),
        "NaN literal": _record(applicants).replace(str(rec["income"]), "NaN"),
        "deep nesting": "[" * 100_000 + "]" * 100_000,
        "deep object": '{"a":' * 50_000 + "1" + "}" * 50_000,
        "deep in features": json.dumps({"items": [{"features": {"income": 1}}]}).replace(
            '"income": 1', '"income": ' + "[" * 5000 + "]" * 5000),
        "items wrong type": json.dumps({"items": "everyone"}),
        "features list": json.dumps({"items": [{"features": [1, 2, 3]}]}),
        "feature object": _record(applicants, income={"$gt": 0}),
        "feature bool": _record(applicants, income=True),
        "id object": json.dumps({"items": [{"id": {"a": 1}, "features": rec}]}),
        "time limit negative": json.dumps({"items": [{"features": rec}], "time_limit_s": -1}),
        "time limit huge": json.dumps({"items": [{"features": rec}], "time_limit_s": 1e300}),
        "seed huge": json.dumps({"items": [{"features": rec}], "seed": 10**40}),
        "params not object": json.dumps({"items": [{"features": rec}], "params": [1]}),
        **{f"params {k}": json.dumps({"items": [{"features": rec}], "method": m, "params": {k: v}})
           for m, k, v in [("nearest_neighbour", "n_neighbours", 1e308),
                           ("nearest_neighbour", "n_neighbours", 10**40),
                           ("nearest_neighbour", "norm", {"a": [1]}),
                           ("nearest_neighbour", "time_limit", -1),
                           ("nearest_neighbour", "no_such_param", 1),
                           ("milp_robust", "shift", "wide"),
                           ("milp_robust", "shift", {"delta": -1}),
                           ("milp_robust", "certifier", "exact")]},
        "unicode category (emoji)": _record(applicants, housing="🏠"),
        "unicode category (RTL)": _record(applicants, housing="\u202eown"),
        "unicode category (combining)": _record(applicants, housing="own\u0301"),
        "unicode category (zero width)": _record(applicants, housing="own\u200b"),
        "unicode category (lone surrogate)": _record(applicants, housing="\ud800"),
        "unicode category (NUL)": _record(applicants, housing="\u0000"),
        "unicode feature name": _record(applicants, **{"ïncome": 3}),
        "lone surrogate feature name": _record(applicants, **{"\ud800": 3}),
        "lone surrogate id": json.dumps({"items": [{"id": "\ud800x", "features": rec}]}),
        "lone surrogate in params": json.dumps({"items": [{"features": rec}],
                                                "params": {"a": ["\udfff"]}}),
        "unicode target": json.dumps({"items": [{"features": rec}], "target_class": "\U0001F600"}),
        "method unicode": json.dumps({"items": [{"features": rec}], "method": "ᵐⁱˡᵖ"}),
        "10 MB body": json.dumps({"items": [{"features": rec}], "pad": "x" * (10 * 1024 * 1024)}),
    }


def _check(resp, what: str) -> None:
    assert 400 <= resp.status_code < 500, f"{what}: {resp.status_code} {resp.text[:300]}"
    detail = resp.json()["detail"]
    assert detail, f"{what}: no message"
    assert "Traceback" not in resp.text


def test_hostile_bodies_get_a_4xx_with_a_message(server, applicants):
    bodies = hostile_bodies(applicants)
    with server.client() as c:
        for what, body in bodies.items():
            for path in PATHS:
                r = c.post(path, content=body, headers={"content-type": "application/json"})
                _check(r, f"{what} -> {path}")
        r = c.post(PATHS[0], content=_record(applicants), headers={"content-type": "text/plain"})
        _check(r, "wrong content type")
        assert c.get("/ready").status_code == 200  # still serving


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_random_records_never_500(server, applicants, data):
    rec = dict(applicants[0]["features"])
    keys = data.draw(st.lists(st.sampled_from([*rec, "extra", "ünï"]), min_size=1, max_size=3, unique=True))
    for key in keys:
        rec[key] = data.draw(json_values)
    body = json.dumps({"items": [{"id": "f", "features": rec}], "method": "nearest_neighbour"},
                      allow_nan=True)
    with server.client() as c:
        r = c.post(PATHS[0], content=body, headers={"content-type": "application/json"})
    assert r.status_code != 500 and "Traceback" not in r.text
    if r.status_code >= 400:
        _check(r, body[:200])
