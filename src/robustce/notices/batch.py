"""Batch notices: one notice (JSON + HTML) per declined applicant of an Explanations object,
each written atomically; a rerun skips the applicants whose files already exist (resume).
With ``n_jobs`` the applicants are shared out in chunks over joblib workers — local
processes, or a Dask cluster with ``backend="dask"`` (a ``dask.distributed.Client`` must be
active: joblib's Dask backend uses it), or Ray with ``backend="ray"`` after
``ray.util.joblib.register_ray()``."""

from __future__ import annotations

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


def write_notices(model: Any, explanations: Any, directory: str | os.PathLike, *,
                  n_jobs: int | None = None, backend: str | None = None, **kwargs: Any
                  ) -> list[Path]:
    """Write ``notice_<id>.json`` / ``.html`` for every query the model declines.

    Parameters
    ----------
    model, explanations : as :func:`~robustce.notices.notice.notice` (``explanations`` one
        object or a list; the first one's queries are the applicants).
    directory : output folder (created).
    n_jobs : joblib workers (None or 1: in this process).
    backend : joblib backend (``"loky"`` processes by default; ``"dask"``, ``"ray"``).
    **kwargs : passed to :func:`~robustce.notices.notice.notice`.

    Returns
    -------
    The JSON paths, one per declined applicant (existing ones are kept, not recomputed).

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
    todo = [q for q, p in zip(qids, paths, strict=True)
            if not (p.exists() and p.with_suffix(".html").exists())]
    if not todo:
        return paths
    if not n_jobs or n_jobs == 1:
        _write_chunk(model, expls, todo, out, kwargs)
        return paths
    from joblib import Parallel, delayed, parallel_config

    size = max(1, -(-len(todo) // (4 * n_jobs)))
    chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
    # parallel_config (not Parallel(backend=)) registers joblib's external backends (dask)
    with parallel_config(backend=backend or "loky", n_jobs=n_jobs):
        Parallel()(delayed(_write_chunk)(model, expls, c, out, kwargs) for c in chunks)
    return paths
