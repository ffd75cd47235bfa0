"""The solver work, as it runs inside a worker process of the :class:`~robustce.serve.pool.SolverPool`.

Each worker loads every served model once (:func:`init_worker`, from the model directories:
no model object crosses a process boundary) and keeps the explainers it built in a small LRU
cache, so a method's index (a KD-tree, a MILP encoding) is built once per worker. Tasks and
results are plain dicts and lists of JSON values.
"""

from __future__ import annotations

import gc
import math
import os
import signal
import time
from collections import OrderedDict
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["certify_task", "explain_task", "init_worker", "plain", "register_models"]

_MODELS: dict[str, Any] = {}
_EXPLAINERS: OrderedDict[tuple, Any] = OrderedDict()
_CACHE_SIZE = 16


def init_worker(specs: list[Any]) -> None:
    """Process initialiser: die with the forkserver (so with the server; Linux), load the
    served models; one torch thread (the pool is the parallelism); Ctrl-C is the server's to
    handle."""
    import torch

    from robustce.serve.lifeline import die_with_parent, forkserver_pid
    from robustce.serve.registry import load_served_model

    die_with_parent(forkserver_pid())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    for spec in specs:
        _MODELS[spec.id] = load_served_model(spec, with_methods=False)
    gc.freeze()  # the loaded libraries and models: out of the cyclic GC's full passes


def register_models(served: list[Any]) -> None:
    """Make already loaded :class:`~robustce.serve.registry.ServedModel`\\ s the ones the
    tasks of this process use (the server process, for its in-process lane)."""
    for m in served:
        _MODELS[m.id] = m


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


def changed_matrix(schema: Any, queries: pd.DataFrame, owner: np.ndarray, cfs: pd.DataFrame
                   ) -> np.ndarray:
    """(n_cfs, n_features) booleans: which raw features of each CE differ from its query's
    (``owner[k]``: the position in ``queries`` of CE row ``k``); numeric features beyond 1e-9
    of their range."""
    out = np.zeros((len(cfs), len(schema)), dtype=bool)
    for j, f in enumerate(schema):  # one vectorised comparison per feature
        a, b = queries[f.name].to_numpy()[owner], cfs[f.name].to_numpy()
        if f.kind.is_numeric:
            scale = max(abs(float(f.upper) - float(f.lower)), 1.0)
            out[:, j] = np.abs(a.astype(float) - b.astype(float)) > 1e-9 * scale
        else:
            out[:, j] = a.astype(str) != b.astype(str)
    return out


def column_values(col: pd.Series) -> list[Any]:
    """A column as JSON values (what :func:`plain` makes of each): numbers as Python numbers,
    NaN/inf as None; one ``tolist`` for numeric columns, :func:`plain` per value otherwise."""
    if not isinstance(col.dtype, np.dtype):  # pandas extension dtypes: pd.NA → None
        return [plain(v) for v in col.to_numpy(dtype=object, na_value=None).tolist()]
    if col.dtype.kind in "iub":
        return col.tolist()
    if col.dtype.kind == "f":
        v = col.to_numpy()
        values = v.tolist()
        bad = ~np.isfinite(v)
        for k in np.flatnonzero(bad):
            values[k] = None
        return values
    return [plain(v) for v in col.tolist()]


def frame_records(frame: pd.DataFrame, names: list[str]) -> list[dict[str, Any]]:
    """The rows of ``frame[names]`` as JSON records, read column by column (the same values
    as ``plain`` over ``to_dict("records")``, without a pandas call per row)."""
    columns = [column_values(frame[name]) for name in names]
    keys = [str(name) for name in names]
    return [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)]


def _certify(served: Any, X: np.ndarray, targets: np.ndarray, spec: dict[str, Any] | None,
             seed: int) -> dict[str, list[dict[str, Any]]]:
    """Certificates of encoded CEs ``X``: the exact Δ-test (``spec["delta"]``) with its
    worst-case margin, APΔS's δ_max at (α, R) (``spec["apas"]``) and, where the served model
    has a family of retrained models, ``vr``: the share of them that give the target class."""
    from robustce.robustness import FamilyCertifier, ParameterShift, apas_max_delta, exact_worst_case

    model = served.model
    out: dict[str, list[dict[str, Any]]] = {}
    if not spec or len(X) == 0:
        return out
    if served.family:
        fam = FamilyCertifier(served.family, include_model=False).certify(model, X, targets)
        out["family"] = [{"vr": float(v), "status": str(getattr(st, "value", st)), "lowest_margin": plain(lo),
                          "n_models": len(served.family)}
                         for v, st, lo in zip(fam.columns["valid_fraction"], fam.status, fam.lower,
                                              strict=True)]
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


def work_limits(task: dict[str, Any]) -> Any:
    """The context of a task's solver work: HiGHS's ``mip_max_nodes`` at the task's
    ``solver_nodes`` (:attr:`ServeSettings.solver_nodes`) for every MILP solved in it."""
    from contextlib import nullcontext

    from robustce.solvers.milp import highs_work_limits

    nodes = task.get("solver_nodes")
    return nullcontext() if nodes is None else highs_work_limits(mip_max_nodes=int(nodes))


def explain_task(task: dict[str, Any]) -> list[dict[str, Any]]:
    """Explain a batch: one result dict per record, in order (status, CEs as raw records,
    changed features per CE, the decision, certificates, time). Every step runs once for the
    whole batch; only the packing into per-item dicts loops. Every MILP is solved under the
    task's work limit (:func:`work_limits`)."""
    with work_limits(task):
        return _explain(task)


def _explain(task: dict[str, Any]) -> list[dict[str, Any]]:
    from robustce.serve.records import records_frame

    served = _MODELS[task["model_id"]]
    model, schema = served.model, served.schema
    frame = records_frame(schema, task["records"])
    target = int(task["target_class"])
    seed = int(task.get("seed", 0))
    explainer = _explainer(served, task["method"], task.get("params") or {},
                           float(task["time_limit_s"]), seed)
    expl = explainer.explain(frame, target_class=target)
    proba = model.predict_proba(expl.queries_encoded)
    owner = expl.counterfactuals["query_id"].to_numpy(dtype=np.int64)  # query ids are 0..n-1
    cf_records = frame_records(expl.counterfactuals, schema.names)
    changed = changed_matrix(schema, frame, owner, expl.counterfactuals)
    X = expl.counterfactuals_encoded
    valid = model.predict(X) == target if len(X) else np.zeros(0, dtype=bool)
    t0 = time.perf_counter()
    certs = _certify(served, X, np.full(len(X), target), task.get("certify"), seed)
    cert_time = np.zeros(len(frame))
    if len(X):  # the certification time, shared out over the items by their CEs
        np.add.at(cert_time, owner, (time.perf_counter() - t0) / len(X))
    method_certs = (frame_records(expl.certificates, list(expl.certificates.columns))
                    if len(expl.certificates.columns) else [{} for _ in range(len(frame))])
    status = expl.status.to_numpy()
    messages = expl.messages.to_numpy()
    timings = expl.timings.to_numpy()
    names = np.array(schema.names)
    by_item: list[list[int]] = [[] for _ in range(len(frame))]
    for k, i in enumerate(owner):
        by_item[i].append(k)
    out = []
    for i, rows in enumerate(by_item):
        item_certs: dict[str, Any] = {"method": method_certs[i]}
        for kind, values in certs.items():
            item_certs[kind] = [values[k] for k in rows]
        out.append({
            "status": str(status[i]),
            "message": str(messages[i] or ""),
            "decision": {"class": int(np.argmax(proba[i])), "probability": plain(proba[i].tolist())},
            "counterfactuals": [cf_records[k] for k in rows],
            "changed": [names[changed[k]].tolist() for k in rows],
            "valid": [bool(valid[k]) for k in rows],
            "certificates": item_certs,
            "time_s": float(timings[i] + cert_time[i]),
        })
    return out


def certify_task(task: dict[str, Any]) -> list[dict[str, Any]]:
    """Certificates of caller-supplied CEs (raw records): validity on the model, then the exact
    Δ-test and/or APΔS (see :func:`_certify`), under the task's work limit."""
    with work_limits(task):
        return _certify_records(task)


def _certify_records(task: dict[str, Any]) -> list[dict[str, Any]]:
    from robustce.serve.records import records_frame

    served = _MODELS[task["model_id"]]
    model = served.model
    frame = records_frame(served.schema, task["records"])
    X = model.encoder.transform(frame)
    target = np.full(len(X), int(task["target_class"]))
    t0 = time.perf_counter()
    pred = model.predict(X)
    certs = _certify(served, X, target, task.get("certify"), int(task.get("seed", 0)))
    per = (time.perf_counter() - t0) / max(len(X), 1)
    return [{"valid": bool(pred[i] == target[i]), "prediction": int(pred[i]),
             "certificates": {k: v[i] for k, v in certs.items()}, "time_s": per}
            for i in range(len(X))]
