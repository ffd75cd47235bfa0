"""Raw applicant records (JSON objects) → a validated DataFrame, with field-level errors.

A request's records are first tested by a :class:`RecordChecker`: plain Python comparisons
per value (microseconds a record, no DataFrame), which accept only records that
:meth:`Schema.validate` certainly accepts. Anything it does not accept is checked by
:meth:`Schema.validate` on the whole batch, and when that fails each (item, feature) pair is
checked on its own, so that the error list names every offending field
(``items[3].features.income``) rather than the first column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from robustce.errors import RobustCEError

__all__ = ["RecordChecker", "RecordError", "check_record_keys", "records_frame", "validate_records"]

_FLOAT_MAX = 1.7976931348623157e308  # the largest float64

#: at most this many field errors are listed for a batch (then one "and N more" entry)
MAX_ERRORS = 20


class RecordError(Exception):
    """Field-level problems of a batch: ``errors`` is a list of ``{"loc": [...], "msg": ...,
    "type": ...}`` entries in FastAPI's 422 format."""

    def __init__(self, errors: list[dict[str, Any]]):
        super().__init__(f"{len(errors)} invalid field(s)")
        self.errors = errors


class RecordChecker:
    """A fast acceptance test of raw records against a schema (see the module docstring).

    :meth:`accepts` is True only when the record has exactly the schema's features and each
    value passes the same rules as :meth:`Schema.validate`: a numeric feature takes an int or a
    finite float (never a bool), whole for ``integer``, within declared (not observed) bounds; a
    feature with levels takes one of its categories, of the categories' own type (strings for
    string levels, numbers for numeric levels). A False is no verdict: the caller then runs
    :meth:`Schema.validate`, which names the problem (or accepts a rarer form, e.g. a bool
    level).

    Parameters
    ----------
    schema : the model's :class:`~robustce.data.schema.Schema`.
    """

    def __init__(self, schema: Any):
        self.names = frozenset(schema.names)
        self._checks = [(f.name, self._check(f)) for f in schema]

    @staticmethod
    def _check(f: Any) -> Any:
        if f.kind.is_numeric:
            integer = str(f.kind) == "integer"
            lo, hi = (-math.inf, math.inf) if f.observed else (f.lower, f.upper)

            def numeric(v: Any) -> bool:
                if type(v) is int:  # JSON integers are unbounded: beyond float64 is not ours
                    return lo <= v <= hi and abs(v) <= _FLOAT_MAX
                if type(v) is float:
                    return math.isfinite(v) and lo <= v <= hi and (not integer or v.is_integer())
                return False

            return numeric
        cats = tuple(f.categories or ())
        if all(type(c) is str for c in cats):
            levels, kinds = frozenset(cats), (str,)
        elif all(type(c) in (int, float) for c in cats):
            levels, kinds = frozenset(cats), (int, float)
        else:  # mixed or bool levels: leave them to Schema.validate
            return lambda v: False
        return lambda v: type(v) in kinds and v in levels

    def accepts(self, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` certainly passes :meth:`Schema.validate` (see the class)."""
        if len(record) != len(self.names) or not self.names.issuperset(record):
            return False
        return all(check(record[name]) for name, check in self._checks)


def records_frame(schema: Any, records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The records as a DataFrame with the schema's columns in order (index 0..n-1); unknown
    keys are kept as extra columns so that validation names them."""
    names = schema.names
    if records and all(len(r) == len(names) and all(n in r for n in names) for r in records):
        # the usual batch (the schema's keys exactly): column lists, no per-record pandas work
        return pd.DataFrame({n: [r[n] for r in records] for n in names},
                            index=pd.RangeIndex(len(records)))
    frame = pd.DataFrame.from_records(list(records))
    frame.index = pd.RangeIndex(len(frame))
    extra = [c for c in frame.columns if c not in schema]
    return frame.reindex(columns=[*schema.names, *extra])


def _field_errors(schema: Any, record: Mapping[str, Any], loc: list[Any],
                  skip: frozenset[str] | set[str] = frozenset()) -> list[dict[str, Any]]:
    """The invalid values of the schema's features present in ``record`` (but those in
    ``skip``, already reported)."""
    out = []
    for f in schema:
        if f.name not in record or f.name in skip:
            continue
        value = record[f.name]
        if isinstance(value, float) and math.isnan(value):
            out.append({"loc": [*loc, f.name], "msg": "missing value (NaN)", "type": "value_error.nan"})
            continue
        try:
            schema.select([f.name]).validate(pd.DataFrame({f.name: [value]}))
        except RobustCEError as exc:
            out.append({"loc": [*loc, f.name], "msg": _short(exc, 300), "type": "value_error.record"})
        except (TypeError, ValueError, OverflowError) as exc:
            out.append({"loc": [*loc, f.name], "msg": _short(f"invalid value {value!r}: {exc}", 300),
                        "type": "value_error.record"})
    return out


def _short(text: Any, limit: int = 100) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


def _key_errors(schema: Any, record: Mapping[str, Any], loc: list[Any], room: int
                ) -> tuple[list[dict[str, Any]], int]:
    """The unknown and missing keys of ``record``: at most ``room`` errors, and how many more
    there were. Work is O(number of features + room), whatever the number of keys: the
    unknown keys are counted from the known ones present, and only the first ``room`` are
    looked up by name."""
    names = schema.names
    present = sum(1 for n in names if n in record)
    n_unknown = len(record) - present
    errors: list[dict[str, Any]] = []
    if n_unknown:
        for key in record:
            if len(errors) >= min(room, n_unknown):
                break
            if key not in schema:
                errors.append({"loc": [*loc, _short(key)], "type": "value_error.unknown_feature",
                               "msg": f"unknown feature {_short(key)!r}; the features are {names}"})
    missing = [n for n in names if n not in record] if present < len(names) else []
    for name in missing[:max(room - len(errors), 0)]:
        errors.append({"loc": [*loc, name], "msg": "field required", "type": "missing"})
    return errors, n_unknown + len(missing) - len(errors)


def _no_bool_features(schema: Any) -> list[str]:
    """The features a JSON ``true``/``false`` is refused for: numeric ones and those whose
    levels are numbers (``True == 1`` in Python; the service does not read a bool as 1)."""
    out = []
    for f in schema:
        cats = tuple(f.categories or ())
        if f.kind.is_numeric or (cats and all(type(c) in (int, float) for c in cats)):
            out.append(f.name)
    return out


def _capped(errors: list[dict[str, Any]], more: int, loc: Sequence[Any]) -> list[dict[str, Any]]:
    """``errors`` with one closing entry saying how many more problems were not listed."""
    if more > 0:
        errors = [*errors, {"loc": list(loc), "type": "value_error.truncated",
                            "msg": f"and {more} more invalid field(s) not listed"}]
    return errors


def check_record_keys(schema: Any, records: Sequence[Any], loc: Sequence[Any] = ("body", "items")
                      ) -> None:
    """The key check of :func:`validate_records` alone, on raw JSON values (an entry that is
    not a mapping is skipped: its type is for the request model to refuse): raises
    :class:`RecordError` naming unknown and missing features, at most :data:`MAX_ERRORS`
    then how many more. O(number of features + listed errors) a record, whatever its number
    of keys: run before a record's values are parsed into a model."""
    names = schema.names
    n = len(names)
    errors: list[dict[str, Any]] = []
    more = 0
    for i, record in enumerate(records):
        if not isinstance(record, Mapping) or (len(record) == n and all(k in record for k in names)):
            continue
        found, skipped = _key_errors(schema, record, [*loc, i, "features"], MAX_ERRORS - len(errors))
        errors.extend(found)
        more += skipped
    if errors or more:
        raise RecordError(_capped(errors, more, loc))


def validate_records(schema: Any, records: Sequence[Mapping[str, Any]],
                     loc: Sequence[Any] = ("body", "items"),
                     checker: RecordChecker | None = None) -> None:
    """Check ``records`` against ``schema`` (``checker``: its :class:`RecordChecker`, tried
    first); raises :class:`RecordError` naming the invalid fields (unknown or missing
    feature, NaN, unknown category, value outside the declared bounds, wrong type) with their
    location ``[*loc, i, "features", name]``.

    The list is bounded: at most :data:`MAX_ERRORS` entries, then one saying how many more
    (a record with 100 000 unknown keys is refused after looking at a few of them). Keys are
    checked first, without building a table: a record's keys must be exactly the schema's
    features, and a numeric feature (or one with numeric levels) never takes a bool."""
    if checker is not None and all(map(checker.accepts, records)):
        return
    errors: list[dict[str, Any]] = []
    more = 0
    wrong_keys: dict[int, set[str]] = {}  # records refused on their keys or a bool for a number
    no_bool = _no_bool_features(schema)
    for i, record in enumerate(records):  # O(features + listed errors) a record
        room = MAX_ERRORS - len(errors)
        found, skipped = _key_errors(schema, record, [*loc, i, "features"], room)
        bools = [name for name in no_bool if name in record and type(record[name]) is bool]
        listed = bools[:max(room - len(found), 0)]
        found += [{"loc": [*loc, i, "features", name], "type": "value_error.record",
                   "msg": f"expected a number for {name}, got a boolean"} for name in listed]
        skipped += len(bools) - len(listed)
        if found or skipped:
            wrong_keys[i] = set(bools)
            errors.extend(found)
            more += skipped
    if not wrong_keys:
        try:
            frame = records_frame(schema, records)
            schema.validate(frame)
            return
        except (RobustCEError, TypeError, ValueError, OverflowError):
            pass
    unchecked = 0
    for i, record in enumerate(records):  # the values of the known features present, too
        if i not in wrong_keys and checker is not None and checker.accepts(record):
            continue
        room = MAX_ERRORS - len(errors)
        if room <= 0:
            unchecked = sum(1 for k in range(i, len(records)) if k not in wrong_keys)
            break
        found = _field_errors(schema, record, [*loc, i, "features"], wrong_keys.get(i, set()))
        errors.extend(found[:room])
        more += max(len(found) - room, 0)
    if unchecked:
        errors.append({"loc": list(loc), "type": "value_error.truncated",
                       "msg": f"{unchecked} more item(s) not checked"})
    if not errors:  # the batch fails only as a whole (mixed types across rows)
        errors.append({"loc": list(loc), "msg": "the records do not form a consistent table "
                       "(a feature has values of different types across items)",
                       "type": "value_error.record"})
    raise RecordError(_capped(errors, more, loc))
