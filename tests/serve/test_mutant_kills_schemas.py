"""Request bounds the OpenAPI document states (issue 47's mutants): an explain request's
``time_limit_s`` per item is positive and at most 600 s, so no request holds a worker for
longer than that per item."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from robustce.serve.schemas import ExplainRequest

ITEM = {"id": "a", "features": {"income": 1.0}}


@pytest.mark.parametrize("limit", [0.001, 10, 600])
def test_a_time_limit_up_to_600_s_is_accepted(limit):
    assert ExplainRequest.model_validate({"items": [ITEM], "time_limit_s": limit}).time_limit_s == limit


@pytest.mark.parametrize("limit", [0, -1, 600.5, 3600, 1e9])
def test_a_time_limit_outside_0_to_600_s_is_refused(limit):
    with pytest.raises(ValidationError, match="time_limit_s"):
        ExplainRequest.model_validate({"items": [ITEM], "time_limit_s": limit})


def test_the_schema_states_the_bound():
    prop = ExplainRequest.model_json_schema()["properties"]["time_limit_s"]
    assert prop["maximum"] == 600 and prop["exclusiveMinimum"] == 0
