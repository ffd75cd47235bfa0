"""The error answer of the service's routes (a status and a detail), shared by the app and the
job store."""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError"]


class ApiError(Exception):
    """An error answer: ``status`` and a ``detail`` (text or FastAPI-style field errors)."""

    def __init__(self, status: int, detail: Any, headers: dict[str, str] | None = None):
        super().__init__(str(detail))
        self.status, self.detail, self.headers = status, detail, headers
