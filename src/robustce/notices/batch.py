"""Batch notices: one notice (JSON + HTML) per declined applicant of an Explanations object,
each written atomically; a rerun skips the applicants whose files already exist (resume)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from robustce.notices.notice import notice
from robustce.notices.render import write_notice

__all__ = ["write_notices"]


def write_notices(model: Any, explanations: Any, directory: str | os.PathLike, **kwargs: Any
                  ) -> list[Path]:
    """Write ``notice_<id>.json`` / ``.html`` for every query the model declines.

    Parameters
    ----------
    model, explanations : as :func:`~robustce.notices.notice.notice` (``explanations`` one
        object or a list; the first one's queries are the applicants).
    directory : output folder (created).
    **kwargs : passed to :func:`~robustce.notices.notice.notice`.

    Returns
    -------
    The JSON paths, one per declined applicant (existing ones are kept, not recomputed).
    """
    expls = explanations if isinstance(explanations, list | tuple) else [explanations]
    first = expls[0]
    declined = first.status != "already_target"
    out = Path(directory)
    paths = []
    for qid in first.query_ids[declined.to_numpy()]:
        path = out / f"notice_{qid}.json"
        if not (path.exists() and path.with_suffix(".html").exists()):
            write_notice(notice(model, qid, expls, **kwargs), out)
        paths.append(path)
    return paths
