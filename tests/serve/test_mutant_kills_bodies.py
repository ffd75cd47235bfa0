"""The job body's item limit is inclusive: a job of exactly ``max_items`` items is parsed (all
of them, in order), one more is refused with the item-count 422 (mutant
``bodies_job_item_limit_off_by_one``)."""

from __future__ import annotations

import json

import pytest

from robustce.serve.api_error import ApiError
from robustce.serve.bodies import parse_job_body
from robustce.serve.records import RecordChecker

from .test_records import GOOD, SCHEMA

CHECKER = RecordChecker(SCHEMA)


def _body(n: int) -> bytes:
    items = [{"id": f"i{k}", "features": {**GOOD, "age": 18 + k}} for k in range(n)]
    return json.dumps({"items": items}).encode()


@pytest.mark.parametrize("limit", [1, 10])
def test_exactly_the_item_limit_is_parsed_and_one_more_refused(limit):
    request, records = parse_job_body(_body(limit), SCHEMA, CHECKER, limit)
    assert [it.id for it in request.items] == [f"i{k}" for k in range(limit)]
    assert [r["age"] for r in records] == [18 + k for k in range(limit)]
    with pytest.raises(ApiError) as caught:
        parse_job_body(_body(limit + 1), SCHEMA, CHECKER, limit)
    (error,) = caught.value.detail
    assert caught.value.status == 422 and error["type"] == "value_error.too_many"
    assert f"{limit + 1} items; at most {limit}" in error["msg"]
