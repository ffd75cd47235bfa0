"""The audit record of a notice or an audit: what made it, so anyone can reproduce it —
model and schema hashes, method and parameters, seed, library and solver versions, time."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

import numpy as np

from robustce.errors import UnsupportedModelError
from robustce.utils import package_version

__all__ = ["audit_record", "library_versions", "model_hash", "schema_hash"]

_LIBRARIES = ("numpy", "pandas", "scipy", "scikit-learn", "torch", "highspy", "z3-solver",
              "joblib", "dask", "distributed")


def library_versions() -> dict[str, str | None]:
    """Installed versions of robustce and the libraries and solvers it uses (None: absent)."""
    out: dict[str, str | None] = {"robustce": package_version()}
    for name in _LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def model_hash(model: Any) -> str:
    """SHA-256 of the function the model computes: its ReLU-network weights, or its trees'
    split features, thresholds and leaf values, plus its schema and class names. Other
    models: ``joblib.hash`` of the object."""
    extra = json.dumps({"schema": model.encoder.schema.to_dict(),
                        "classes": [str(c) for c in model.class_names]},
                       sort_keys=True, default=str).encode()
    try:
        net = model.network()
        arrays = [a for W, b in net.weights for a in (W, b)]
    except UnsupportedModelError:
        if callable(getattr(model, "trees", None)):
            arrays = [np.asarray(a) for t in model.trees()
                      for a in (t.feature, t.threshold, t.left, t.right, t.value)]
        else:
            import joblib

            return "joblib:" + joblib.hash(model)
    return "sha256:" + _digest(arrays + [np.frombuffer(extra, dtype=np.uint8)])


def schema_hash(schema: Any) -> str:
    """SHA-256 of the schema's canonical JSON (kinds, bounds, actionability, protected)."""
    text = json.dumps(schema.to_dict(), sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def audit_record(model: Any, *, methods: list[dict[str, Any]], seed: int | None,
                 started_at: datetime | None = None) -> dict[str, Any]:
    """The record: hashes, ``methods`` (name, parameters), seed, versions and timestamps."""
    now = datetime.now(UTC)
    return {
        "model_hash": model_hash(model),
        "model_class": type(model).__name__,
        "schema_hash": schema_hash(model.encoder.schema),
        "methods": methods,
        "seed": seed,
        "versions": library_versions(),
        "started_at": (started_at or now).isoformat(timespec="seconds"),
        "created_at": now.isoformat(timespec="seconds"),
    }
