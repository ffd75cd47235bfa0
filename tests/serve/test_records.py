"""The fast record check of the service (:class:`RecordChecker`): it accepts only what
:meth:`Schema.validate` accepts, and it does accept ordinary valid records (so the fast path is
the one taken)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from robustce.data.schema import Feature, Schema
from robustce.errors import RobustCEError
from robustce.serve.records import RecordChecker, RecordError, records_frame, validate_records

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SCHEMA = Schema([
    Feature("age", "integer", lower=18, upper=75),
    Feature("income", "continuous", lower=8000.0, upper=250000.0),
    Feature("spend", "continuous", lower=0.0, upper=10.0, observed=True),
    Feature("education", "ordinal", categories=("none", "high_school", "bachelor")),
    Feature("housing", "categorical", categories=("own", "rent")),
    Feature("has_guarantor", "binary", categories=(0, 1)),
    Feature("prior_default", "binary", categories=("no", "yes")),
])
GOOD = {"age": 34, "income": 22875.77, "spend": 3.5, "education": "high_school",
        "housing": "rent", "has_guarantor": 0, "prior_default": "no"}


def schema_accepts(record: dict) -> bool:
    try:
        SCHEMA.validate(records_frame(SCHEMA, [record]))
    except (RobustCEError, TypeError, ValueError, OverflowError):
        return False
    return True


def test_ordinary_records_take_the_fast_path():
    checker = RecordChecker(SCHEMA)
    assert checker.accepts(GOOD)
    assert checker.accepts({**GOOD, "age": 34.0, "income": 8000, "has_guarantor": 1.0,
                            "spend": 99.0})  # observed bounds are not a domain


@pytest.mark.parametrize("change", [
    {"age": 34.5}, {"age": 17}, {"age": True}, {"age": "34"}, {"income": math.nan},
    {"income": math.inf}, {"income": 250000.01}, {"income": 10**400}, {"spend": 10**400},
    {"spend": -10**309}, {"education": "phd"},
    {"housing": 1}, {"has_guarantor": "0"}, {"has_guarantor": True}, {"prior_default": None},
])
def test_bad_values_are_not_accepted(change):
    assert not RecordChecker(SCHEMA).accepts({**GOOD, **change})


def test_missing_and_extra_keys_are_not_accepted():
    checker = RecordChecker(SCHEMA)
    assert not checker.accepts({k: v for k, v in GOOD.items() if k != "age"})
    assert not checker.accepts({**GOOD, "colour": "red"})


VALUES = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                   st.floats(0, 300000), st.sampled_from([17.0, 18.0, 34.5, 75.0, 75.5, 0.0, 1.0]),
                   st.booleans(), st.none(), st.sampled_from(["own", "rent", "no", "yes", "none",
                                                              "bachelor", "0", "1", ""]))


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.sampled_from([*SCHEMA.names, "other"]), VALUES, min_size=1, max_size=2),
       st.sets(st.sampled_from(SCHEMA.names), max_size=1))
def test_what_the_checker_accepts_the_schema_accepts(changes, dropped):
    """One or two values of a valid record changed (or a key added or dropped)."""
    record = {k: v for k, v in {**GOOD, **changes}.items() if k not in dropped}
    if RecordChecker(SCHEMA).accepts(record):
        assert schema_accepts(record), record


def test_validate_records_still_names_every_bad_field():
    with pytest.raises(RecordError) as info:
        validate_records(SCHEMA, [GOOD, {**GOOD, "age": 17, "housing": "tent"}],
                         checker=RecordChecker(SCHEMA))
    locs = {tuple(e["loc"]) for e in info.value.errors}
    assert locs == {("body", "items", 1, "features", "age"), ("body", "items", 1, "features", "housing")}


def test_level_codes_match_pandas_indexer():
    from robustce.data.schema import level_codes

    feature = SCHEMA["housing"]
    col = pd.Series(["rent", "own", "tent", "rent", "", "own"], dtype="str")
    expected = pd.Index(list(feature.categories), dtype=object).get_indexer(col.to_numpy())
    assert level_codes(col, feature).tolist() == expected.tolist() == [1, 0, -1, 1, -1, 0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(SCHEMA.names), VALUES, max_size=2), min_size=1,
                max_size=4))
def test_records_frame_builds_the_frame_pandas_builds(changes):
    """The column-list path (records with exactly the schema's keys) gives the frame, dtypes
    included, that ``DataFrame.from_records`` gives for the same records."""
    records = [{**GOOD, **c} for c in changes]
    expected = pd.DataFrame.from_records(records).reindex(columns=SCHEMA.names)
    pd.testing.assert_frame_equal(records_frame(SCHEMA, records), expected)
