"""The error answer of the service's routes (a status and a detail), shared by the app and the
job store."""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError"]


class ApiError(Exception):
    """An error answer: ``status`` and a ``detail`` (text or FastAPI-style field errors);
    ``loc``: where in the request the problem is, for a refusal of the request as a whole
    (``["body"]``: a body over its limit)."""

    def __init__(self, status: int, detail: Any, headers: dict[str, str] | None = None,
                 loc: list[Any] | None = None):
        super().__init__(str(detail))
        self.status, self.detail, self.headers, self.loc = status, detail, headers, loc

    def body(self) -> dict[str, Any]:
        """The JSON body of the answer."""
        return {"detail": self.detail} if self.loc is None else {"detail": self.detail, "loc": self.loc}
