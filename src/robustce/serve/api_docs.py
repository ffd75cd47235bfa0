"""The API's browsable documentation at ``/docs``, served from local files only.

FastAPI's own ``/docs`` loads Swagger UI from a CDN and starts it with an inline script, which
the service's Content-Security-Policy (:mod:`robustce.serve.headers`) forbids. Here Swagger UI's
files (``swagger-ui-bundle.js``, ``swagger-ui.css``: Swagger UI 5, which reads the OpenAPI 3.1
that FastAPI writes) come from the ``fastapi-offline`` package (in the ``serve`` extra; only its
files are used), mounted at ``/docs/assets``, and its initialiser is the same-origin
``/static/docs.js``. Without that package ``/docs`` is a plain page listing the routes of
``/openapi.json`` as text. ReDoc (``/redoc``) is not served: it too loads from a CDN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["add_api_docs", "swagger_ui_dir"]

STATIC = Path(__file__).parent / "static"


#: the files of Swagger UI that /docs loads
SWAGGER_FILES = ("swagger-ui-bundle.js", "swagger-ui.css")


def swagger_ui_dir() -> Path | None:
    """The folder holding Swagger UI's :data:`SWAGGER_FILES`, or None without ``fastapi-offline``
    (or a version of it that keeps them elsewhere)."""
    try:
        import fastapi_offline
    except ImportError:
        return None
    path = Path(fastapi_offline.__file__).parent / "static"
    return path if all((path / name).is_file() for name in SWAGGER_FILES) else None


def add_api_docs(app: Any) -> None:
    """Add ``/docs`` (GET and HEAD) and, where Swagger UI is installed, ``/docs/assets``."""
    assets = swagger_ui_dir()
    page = STATIC / ("docs.html" if assets is not None else "docs-routes.html")

    @app.api_route("/docs", methods=["GET", "HEAD"], include_in_schema=False)
    async def api_docs() -> FileResponse:
        return FileResponse(page)

    if assets is not None:
        app.mount("/docs/assets", StaticFiles(directory=assets), name="swagger-ui")
