"""Raw applicant records (JSON objects) → a validated DataFrame, with field-level errors.

The whole batch is checked at once with the model's :meth:`Schema.validate`; only when that
fails is each (item, feature) pair checked on its own, so that the error list names every
offending field (``items[3].features.income``) rather than the first column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from robustce.errors import RobustCEError

__all__ = ["RecordError", "records_frame", "validate_records"]


class RecordError(Exception):
    """Field-level problems of a batch: ``errors`` is a list of ``{"loc": [...], "msg": ...,
    "type": ...}`` entries in FastAPI's 422 format."""

    def __init__(self, errors: list[dict[str, Any]]):
        super().__init__(f"{len(errors)} invalid field(s)")
        self.errors = errors


def records_frame(schema: Any, records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The records as a DataFrame with the schema's columns in order (index 0..n-1); unknown
    keys are kept as extra columns so that validation names them."""
    frame = pd.DataFrame.from_records(list(records))
    frame.index = pd.RangeIndex(len(frame))
    extra = [c for c in frame.columns if c not in schema]
    return frame.reindex(columns=[*schema.names, *extra])


def _field_errors(schema: Any, record: Mapping[str, Any], loc: list[Any]) -> list[dict[str, Any]]:
    out = []
    for key in record:
        if key not in schema:
            out.append({"loc": [*loc, key], "msg": f"unknown feature {key!r}; the features are "
                        f"{schema.names}", "type": "value_error.unknown_feature"})
    for f in schema:
        if f.name not in record:
            out.append({"loc": [*loc, f.name], "msg": "field required", "type": "missing"})
            continue
        value = record[f.name]
        if isinstance(value, float) and math.isnan(value):
            out.append({"loc": [*loc, f.name], "msg": "missing value (NaN)", "type": "value_error.nan"})
            continue
        try:
            schema.select([f.name]).validate(pd.DataFrame({f.name: [value]}))
        except RobustCEError as exc:
            out.append({"loc": [*loc, f.name], "msg": str(exc), "type": "value_error.record"})
        except (TypeError, ValueError, OverflowError) as exc:
            out.append({"loc": [*loc, f.name], "msg": f"invalid value {value!r}: {exc}",
                        "type": "value_error.record"})
    return out


def validate_records(schema: Any, records: Sequence[Mapping[str, Any]],
                     loc: Sequence[Any] = ("body", "items")) -> pd.DataFrame:
    """The validated DataFrame of ``records``; raises :class:`RecordError` listing every
    invalid field (wrong or missing column, NaN, unknown category, value outside the declared
    bounds, wrong type) with its location ``[*loc, i, "features", name]``."""
    try:
        frame = records_frame(schema, records)
        schema.validate(frame)
        return frame
    except (RobustCEError, TypeError, ValueError, OverflowError):
        pass
    errors: list[dict[str, Any]] = []
    for i, record in enumerate(records):
        errors.extend(_field_errors(schema, record, [*loc, i, "features"]))
    if not errors:  # the batch fails only as a whole (mixed types across rows)
        errors.append({"loc": list(loc), "msg": "the records do not form a consistent table "
                       "(a feature has values of different types across items)",
                       "type": "value_error.record"})
    raise RecordError(errors)
