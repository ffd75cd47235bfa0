"""benchmarks/bench_serve.py's hostile mode (``--hostile RATE``): a tiny run against a real
``robustce serve`` on loopback gives a quiet and a hostile phase of normal clients, and every
hostile request gets its refusal (no timing is asserted: the host is shared)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("httptools")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_serve.py"

#: the status each hostile request must get
EXPECTED = {"unknown_keys_100000": 413, "job_unknown_keys_100000": 422, "explain_101_items": 422,
            "job_10001_items": 422, "body_over_max_body": 413, "wrong_token": 401}


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_serve", PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_serve"] = mod
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop("bench_serve", None)


@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_hostile_mode_measures_both_phases_and_every_hostile_request_is_refused(bench):
    rows = bench.run_hostile(rate=5, duration=2.0, clients=4, workers=1)
    quiet, hostile = rows
    assert [quiet["phase"], hostile["phase"]] == ["quiet", "hostile"]
    # the normal clients were answered in both phases, with their own ids
    for row in rows:
        assert row["ok"] > 0 and row["lost"] == 0 and row["wrong_id"] == 0 and row["duplicated"] == 0
        assert row["other_errors"] == 0
        assert row["health_probes"] > 0
    assert "hostile_answers" not in quiet  # the quiet phase sent none
    assert math.isfinite(hostile["p99_ratio"]) and hostile["p99_ratio"] > 0
    # every kind was sent, and each answer is that kind's refusal: none accepted, none 5xx
    answers = hostile["hostile_answers"]
    assert set(answers) == set(EXPECTED)
    for kind, counts in answers.items():
        assert counts and set(counts) == {str(EXPECTED[kind])}, (kind, counts)
    assert hostile["hostile_accepted"] == 0 and hostile["hostile_5xx"] == 0
    assert hostile["hostile_4xx"] == hostile["hostile_sent"] >= len(EXPECTED)
    # the hostile bodies are the sizes they claim: over the limits they test
    sizes = hostile["hostile_request_bytes"]
    assert sizes["unknown_keys_100000"] > 1_500_000
    assert sizes["body_over_max_body"] > bench.MAX_BODY
    table = bench.hostile_table(rows)
    assert "p99 under the hostile stream / quiet p99" in table and "| wrong_token |" in table
