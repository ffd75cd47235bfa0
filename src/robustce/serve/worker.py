"""The solver work, as it runs inside a worker process of the :class:`~robustce.serve.pool.SolverPool`.

Each worker loads every served model once (:func:`init_worker`, from the model directories:
no model object crosses a process boundary) and keeps the explainers it built in a small LRU
cache, so a method's index (a KD-tree, a MILP encoding) is built once per worker. Tasks and
results are plain dicts and lists of JSON values.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections import OrderedDict
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["certify_task", "explain_task", "init_worker", "plain"]

_MODELS: dict[str, Any] = {}
_EXPLAINERS: OrderedDict[tuple, Any] = OrderedDict()
_CACHE_SIZE = 16


def init_worker(specs: list[Any]) -> None:
    """Process initialiser: load the served models; one torch thread (the pool is the
    parallelism); Ctrl-C is the server's to handle."""
    import torch

    from robustce.serve.registry import load_served_model

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    for spec in specs:
        _MODELS[spec.id] = load_served_model(spec, with_methods=False)


def worker_pid() -> int:
    """This worker's process id (the pool asks once at start)."""
    return os.getpid()


def plain(value: Any) -> Any:
    """JSON values: numpy scalars → Python, NaN/inf → None, containers recursively."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _explainer(served: Any, method: str, params: dict[str, Any], time_limit: float, seed: int) -> Any:
    import json

    from robustce.methods.registry import build_explainer

    key = (served.id, method, json.dumps(params, sort_keys=True), float(time_limit), int(seed))
    if key in _EXPLAINERS:
        _EXPLAINERS.move_to_end(key)
        return _EXPLAINERS[key]
    explainer = build_explainer(method, served.model, served.data, seed=seed,
                                **{**params, "time_limit": time_limit})
    _EXPLAINERS[key] = explainer
    while len(_EXPLAINERS) > _CACHE_SIZE:
        _EXPLAINERS.popitem(last=False)
    return explainer


def _changed(schema: Any, query: pd.Series, cfs: pd.DataFrame) -> list[list[str]]:
    """Per CE, the features whose raw value differs from the query's."""
    out = []
    for _, row in cfs.iterrows():  # at most a handful of CEs per query
        names = []
        for f in schema:
            a, b = query[f.name], row[f.name]
            if f.kind.is_numeric:
                scale = max(abs(float(f.upper) - float(f.lower)), 1.0)
                if abs(float(a) - float(b)) > 1e-9 * scale:
                    names.append(f.name)
            elif str(a) != str(b):
                names.append(f.name)
        out.append(names)
    return out


def _certify(model: Any, X: np.ndarray, targets: np.ndarray, spec: dict[str, Any] | None,
             seed: int) -> dict[str, list[dict[str, Any]]]:
    """Certificates of encoded CEs ``X``: the exact Δ-test (``spec["delta"]``) with its
    worst-case margin, and APΔS's δ_max at (α, R) (``spec["apas"]``)."""
    from robustce.robustness import ParameterShift, apas_max_delta, exact_worst_case

    out: dict[str, list[dict[str, Any]]] = {}
    if not spec or len(X) == 0:
        return out
    if spec.get("delta") is not None:
        res = exact_worst_case(model, X, ParameterShift(float(spec["delta"])), targets,
                               time_limit=float(spec.get("time_limit_s", 5.0)))
        out["delta"] = [plain(c) for c in res.certificates()]
    if spec.get("apas"):
        a = spec["apas"]
        res_a = apas_max_delta(model, X, alpha=float(a.get("alpha", 0.999)), R=float(a.get("R", 0.995)),
                               random_state=seed, target_class=targets)
        out["apas"] = [plain(r) for r in res_a.to_frame().to_dict("records")]
    return out


def explain_task(task: dict[str, Any]) -> list[dict[str, Any]]:
    """Explain a batch: one result dict per record, in order (status, CEs as raw records,
    changed features per CE, the decision, certificates, time)."""
    from robustce.serve.records import records_frame

    served = _MODELS[task["model_id"]]
    model, schema = served.model, served.schema
    frame = records_frame(schema, task["records"])
    target = int(task["target_class"])
    seed = int(task.get("seed", 0))
    explainer = _explainer(served, task["method"], task.get("params") or {},
                           float(task["time_limit_s"]), seed)
    proba = model.predict_proba(frame)
    expl = explainer.explain(frame, target_class=target)
    cert_cols = expl.certificates
    out = []
    for i in range(len(frame)):
        pos = expl.cf_positions(i)
        cfs = expl.counterfactuals.iloc[pos][schema.names]
        X = expl.counterfactuals_encoded[pos]
        t0 = time.perf_counter()
        certs = {"method": plain(cert_cols.iloc[i].to_dict()) if len(cert_cols.columns) else {}}
        certs.update(_certify(model, X, np.full(len(X), target), task.get("certify"), seed))
        valid = model.predict(X) == target if len(X) else np.zeros(0, dtype=bool)
        out.append({
            "status": str(expl.status.iloc[i]),
            "message": str(expl.messages.iloc[i] or ""),
            "decision": {"class": int(np.argmax(proba[i])), "probability": plain(proba[i].tolist())},
            "counterfactuals": [plain(r) for r in cfs.to_dict("records")],
            "changed": _changed(schema, frame.iloc[i], cfs),
            "valid": plain(valid.tolist()),
            "certificates": certs,
            "time_s": float(expl.timings.iloc[i]) + (time.perf_counter() - t0),
        })
    return out


def certify_task(task: dict[str, Any]) -> list[dict[str, Any]]:
    """Certificates of caller-supplied CEs (raw records): validity on the model, then the exact
    Δ-test and/or APΔS (see :func:`_certify`)."""
    from robustce.serve.records import records_frame

    served = _MODELS[task["model_id"]]
    model = served.model
    frame = records_frame(served.schema, task["records"])
    X = model.encoder.transform(frame)
    target = np.full(len(X), int(task["target_class"]))
    t0 = time.perf_counter()
    pred = model.predict(X)
    certs = _certify(model, X, target, task.get("certify"), int(task.get("seed", 0)))
    per = (time.perf_counter() - t0) / max(len(X), 1)
    return [{"valid": bool(pred[i] == target[i]), "prediction": int(pred[i]),
             "certificates": {k: v[i] for k, v in certs.items()}, "time_s": per}
            for i in range(len(X))]
