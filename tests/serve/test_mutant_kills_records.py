"""A record with an unknown key is refused *naming that key* (issue 47, mutant
``records_unknown_keys_not_counted``): the older tests only asked the fast checker, or gave a
bad value beside the right keys, so a 422 that no longer said which key was unknown (a
misspelt feature) passed them."""

from __future__ import annotations

import pytest

from robustce.serve.records import RecordChecker, RecordError, validate_records

from .test_records import GOOD, SCHEMA


@pytest.mark.parametrize("checker", [None, RecordChecker(SCHEMA)], ids=["schema", "checker"])
def test_an_unknown_key_is_named_beside_the_right_ones_and_with_a_misspelt_one(checker):
    misspelt = {("agee" if k == "age" else k): v for k, v in GOOD.items()}
    with pytest.raises(RecordError) as info:
        validate_records(SCHEMA, [GOOD, {**GOOD, "colour": "red"}, misspelt], checker=checker)
    got = {(tuple(e["loc"]), e["type"]) for e in info.value.errors}
    assert got == {(("body", "items", 1, "features", "colour"), "value_error.unknown_feature"),
                   (("body", "items", 2, "features", "agee"), "value_error.unknown_feature"),
                   (("body", "items", 2, "features", "age"), "missing")}
