"""The service's append-only audit log: one JSON object per line.

The file is opened with ``O_APPEND`` and every record is written by a single ``os.write`` of
the whole line (the kernel appends it at the end of the file in one piece), so concurrent
writers never interleave and a line is never half-written by a partial write: a short write
(full disk) is reported as an error instead of being continued.
"""

from __future__ import annotations

import json
import os
import platform
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from robustce.errors import RobustCEError

__all__ = ["AuditLog", "library_versions"]


def library_versions() -> dict[str, str]:
    """Versions of robustce, its solvers and the runtime, for each audit record."""
    from robustce.utils import package_version

    out = {"robustce": package_version(), "python": platform.python_version()}
    for name in ("highspy", "z3-solver", "torch", "numpy", "scikit-learn"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


class AuditLog:
    """Append JSON records to ``path`` (created with mode 0600 if missing; parents too)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one line in one ``os.write``; raises :class:`RobustCEError`
        if the system wrote less than the whole line."""
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
                + "\n").encode("utf-8")
        with self._lock:
            written = os.write(self._fd, line)
        if written != len(line):
            raise RobustCEError(f"audit log {self.path}: wrote {written} of {len(line)} bytes")

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
