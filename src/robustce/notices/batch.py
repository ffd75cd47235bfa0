"""Batch notices: one notice (JSON + HTML) per declined applicant of an Explanations object,
each written atomically; a rerun with the same settings skips the applicants whose files
already exist (resume), one with other settings (model, actionability, methods, parameters,
δ, family) is refused.
With ``n_jobs`` the applicants are shared out in chunks over joblib workers — local
processes, or a Dask cluster with ``backend="dask"`` (a ``dask.distributed.Client`` must be
active: joblib's Dask backend uses it), or Ray with ``backend="ray"`` after
``ray.util.joblib.register_ray()``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from robustce.errors import ValidationError
from robustce.notices.notice import notice
from robustce.notices.render import write_notice

__all__ = ["write_notices"]


def _write_chunk(model: Any, expls: list[Any], qids: list[Any], out: Path,
                 kwargs: dict[str, Any]) -> int:
    for qid in qids:
        write_notice(notice(model, qid, expls, **kwargs), out)
    return len(qids)


def _settings(record: dict[str, Any]) -> dict[str, Any]:
    """What makes a notice: the model (its hash covers the schema, so the actionability), the
    methods and their parameters, the exact test's δ and the retraining family."""
    return {"model_hash": record.get("model_hash"),
            "methods": [{"method": m.get("method"), "params": m.get("params")}
                        for m in record.get("methods", [])],
            "shift_delta": record.get("shift_delta"), "family": record.get("family")}


def _check_same_settings(paths: list[Path], model: Any, expls: list[Any],
                         kwargs: dict[str, Any]) -> None:
    """A resume keeps the finished notices only if they were made with the same settings;
    otherwise a ValidationError naming what differs (the folder holds another run)."""
    from robustce.explanations import _jsonable
    from robustce.notices.record import model_hash

    shift, family = kwargs.get("shift"), kwargs.get("family")
    now = json.loads(json.dumps(_jsonable(_settings({
        "model_hash": model_hash(model),
        "methods": [{"method": e.method, "params": e.meta.get("params", {})} for e in expls],
        "shift_delta": None if shift is None else float(getattr(shift, "delta", shift)),
        "family": None if family is None else {"protocol": family.protocol,
                                               "n_models": len(family)}}))),
        parse_constant=lambda _: None)
    for path in paths:
        try:
            before = _settings(json.loads(path.read_text())["record"])
        except (OSError, ValueError, KeyError, TypeError):
            raise ValidationError(f"{path} is not a notice this folder can resume from; use a "
                                  "new output folder") from None
        differs = sorted(k for k in now if before.get(k) != now[k])
        if differs:
            raise ValidationError(
                f"{path.parent} holds notices made with other settings (differs in "
                f"{', '.join(differs)}: model_hash covers the model and its actionability); "
                "use a new output folder or the same settings")


def write_notices(model: Any, explanations: Any, directory: str | os.PathLike, *,
                  n_jobs: int | None = None, backend: str | None = None, client: Any = None,
                  **kwargs: Any) -> list[Path]:
    """Write ``notice_<id>.json`` / ``.html`` for every query the model declines.

    Parameters
    ----------
    model, explanations : as :func:`~robustce.notices.notice.notice` (``explanations`` one
        object or a list; the first one's queries are the applicants).
    directory : output folder (created).
    n_jobs : joblib workers (None or 1: in this process).
    backend : joblib backend (``"loky"`` processes by default; ``"dask"``, ``"ray"``).
    client : with ``backend="dask"``, the ``dask.distributed.Client`` to run on (default: Dask's
        default client; a client made with ``set_as_default=False``, as
        :func:`robustce.audits.connect` makes, must be passed here).
    **kwargs : passed to :func:`~robustce.notices.notice.notice`.

    Returns
    -------
    The JSON paths, one per declined applicant (existing ones are kept, not recomputed).

    Raises
    ------
    ValidationError
        When the folder holds notices made with other settings (another model or
        actionability, other methods or parameters, δ or family).

    Examples
    --------
    >>> import tempfile
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> with tempfile.TemporaryDirectory() as out:
    ...     paths = rc.notices.write_notices(model, expl, out)
    ...     print([p.name for p in paths], all(p.with_suffix(".html").exists() for p in paths))
    ['notice_1.json', 'notice_8.json', 'notice_13.json'] True
    """
    expls = list(explanations) if isinstance(explanations, list | tuple) else [explanations]
    if n_jobs is not None and n_jobs < 1:
        raise ValidationError(f"n_jobs must be >= 1, got {n_jobs}")
    first = expls[0]
    declined = first.status != "already_target"
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    qids = list(first.query_ids[declined.to_numpy()])
    paths = [out / f"notice_{q}.json" for q in qids]
    done = [p.exists() and p.with_suffix(".html").exists() for p in paths]
    if any(done):
        _check_same_settings([p for p, d in zip(paths, done, strict=True) if d], model, expls,
                             kwargs)
    todo = [q for q, d in zip(qids, done, strict=True) if not d]
    if not todo:
        return paths
    if not n_jobs or n_jobs == 1:
        _write_chunk(model, expls, todo, out, kwargs)
        return paths
    from joblib import Parallel, delayed, parallel_config

    size = max(1, -(-len(todo) // (4 * n_jobs)))
    chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
    # parallel_config (not Parallel(backend=)) registers joblib's external backends (dask)
    extra = {"client": client} if client is not None and backend == "dask" else {}
    with parallel_config(backend=backend or "loky", n_jobs=n_jobs, **extra):
        Parallel()(delayed(_write_chunk)(model, expls, c, out, kwargs) for c in chunks)
    return paths
