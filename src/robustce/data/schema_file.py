"""A dataset's schema as a TOML file a user can edit: ``robustce datasets describe ...
--write-schema schema.toml`` writes one, ``robustce explain --schema schema.toml`` reads it.

Layout (top-level keys optional; one ``[[features]]`` table per raw feature, in column order,
with the keys of :meth:`Feature.to_dict <robustce.data.schema.Feature.to_dict>`)::

    target = "decision"          # the label column of the CSV
    favourable = "approved"      # the outcome people ask recourse for

    [[features]]
    name = "age"
    kind = "integer"             # continuous, integer, binary, ordinal, categorical
    lower = 21                   # declared bounds of a numeric feature
    upper = 70
    actionability = "immutable"  # free, immutable, increase, decrease, protected
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from pathlib import Path
from typing import Any

from robustce.data.dataset import Dataset
from robustce.data.schema import Schema
from robustce.errors import SchemaError, ValidationError
from robustce.utils import atomic_write

__all__ = ["SchemaFile", "read_schema_file", "schema_toml", "write_schema_file"]

_TOP_KEYS = ("target", "favourable")


class SchemaFile:
    """What a schema file holds: the :class:`Schema`, and optionally the target column and
    the favourable label."""

    def __init__(self, schema: Schema, target: str | None = None, favourable: Any = None):
        self.schema = schema
        self.target = target
        self.favourable = favourable


def _value(v: Any) -> str:
    """One TOML value (strings JSON-quoted: a JSON string is a TOML basic string)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else json.dumps(str(v))
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return json.dumps(str(v))


def schema_toml(data: Dataset, target: str | None = None) -> str:
    """The TOML text of ``data``'s schema (plus ``target`` and the favourable label)."""
    lines = [f"# robustce schema for {data.name}: edit kinds, bounds and actionability, then "
             "pass it to `robustce explain --schema`",
             f"# classes: {data.class_mapping()}"]
    if target is not None:
        lines.append(f"target = {_value(target)}")
    if data.favourable is not None:
        lines.append(f"favourable = {_value(data.favourable_label)}")
    else:
        lines.append(f"# favourable = {_value(data.class_names[-1])}  "
                     "# the outcome people ask recourse for")
    for spec in data.schema.to_dict()["features"]:
        lines.append("")
        lines.append("[[features]]")
        lines.extend(f"{k} = {_value(v)}" for k, v in spec.items())
    return "\n".join(lines) + "\n"


def write_schema_file(data: Dataset, path: str | os.PathLike, target: str | None = None) -> Path:
    """Write :func:`schema_toml` to ``path`` atomically; returns the path."""
    path = Path(path)
    with atomic_write(path) as fh:
        fh.write(schema_toml(data, target))
    return path


def read_schema_file(path: str | os.PathLike) -> SchemaFile:
    """Read a schema file; a missing, unparsable or inconsistent one raises
    :class:`~robustce.errors.ValidationError` naming the file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ValidationError(f"schema file not found: {path}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValidationError(f"schema file {path} cannot be read: {exc}") from None
    unknown = sorted(set(raw) - {*_TOP_KEYS, "features"})
    if unknown:
        raise ValidationError(f"schema file {path}: unknown keys {unknown}; expected "
                              f"{[*_TOP_KEYS, 'features']}")
    features = raw.get("features")
    if not isinstance(features, list) or not features:
        raise ValidationError(f"schema file {path} has no [[features]] tables")
    try:
        schema = Schema.from_dict({"features": features})
    except (SchemaError, TypeError, ValueError) as exc:
        raise ValidationError(f"schema file {path}: {exc}") from None
    target = raw.get("target")
    if target is not None and not isinstance(target, str):
        raise ValidationError(f"schema file {path}: target must be a column name")
    return SchemaFile(schema, target, raw.get("favourable"))
