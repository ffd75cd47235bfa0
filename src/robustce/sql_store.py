"""One SQL database through SQLAlchemy, as the service's job store and the ledger open it.

:func:`store_url` reads a user's value (a path for an SQLite file, or a URL; ``postgresql://``
uses the psycopg 3 driver); :func:`open_engine` makes the engine: an SQLite file is created
with mode 0600 (it holds applicants' data) and used with the WAL journal and
``synchronous=FULL`` (a committed transaction survives a crash of the process and of the
machine; several processes write to one file); any other URL gets a pooled engine with
pre-ping. Every way a database cannot be opened is one :class:`~robustce.errors.ConfigError`
line naming the URL (passwords hidden).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from robustce.errors import ConfigError

__all__ = ["import_sqlalchemy", "make_engine", "open_engine", "store_url"]

T = TypeVar("T")


def store_url(value: str) -> str:
    """A ``--store`` / ``--ledger`` value as an SQLAlchemy URL: a URL as given
    (``postgresql://`` and ``postgres://`` use the psycopg 3 driver), or a path for an
    SQLite file."""
    if "://" not in value:
        return f"sqlite:///{Path(value).expanduser().resolve()}"
    scheme, rest = value.split("://", 1)
    if scheme in ("postgresql", "postgres"):
        return f"postgresql+psycopg://{rest}"
    return value


def import_sqlalchemy(what: str, extra: str) -> Any:
    """The ``sqlalchemy`` module, or a ConfigError saying which extra installs it."""
    try:
        import sqlalchemy as sa
    except ImportError as exc:
        raise ConfigError(f"{what} needs SQLAlchemy 2 ({exc.name} is missing): "
                          f"pip install 'robustce[{extra}]'") from None
    return sa


def make_engine(sa: Any, url: Any) -> Any:
    """The engine of a parsed SQLAlchemy ``url`` (see the module docstring)."""
    if url.get_backend_name() != "sqlite":
        return sa.create_engine(url, pool_pre_ping=True)
    from sqlalchemy.pool import StaticPool

    if url.database in (None, "", ":memory:"):  # one connection shared by the threads
        engine = sa.create_engine(url, poolclass=StaticPool,
                                  connect_args={"check_same_thread": False})
    else:
        path = Path(url.database)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))  # applicants' data: owner only
        engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @sa.event.listens_for(engine, "connect")
    def _pragmas(conn: Any, _record: Any) -> None:
        cur = conn.cursor()
        if url.database not in (None, "", ":memory:"):
            cur.execute("PRAGMA journal_mode=WAL")  # readers beside one writer, several processes
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    return engine


def open_engine(url: str, *, what: str, flag: str, extra: str,
                prepare: Callable[[Any, Any, str], T],
                error: type[ConfigError] = ConfigError) -> tuple[Any, str, Any, T]:
    """(sqlalchemy, the URL shown to users, engine, ``prepare(sa, engine, shown URL)``) of
    ``url``.

    ``what`` names the database in messages ("job store"), ``flag`` the option that gave
    the URL, ``extra`` the pip extra that installs SQLAlchemy; ``prepare`` creates or checks
    the tables. A ConfigError raised by ``prepare`` passes through; any other failure
    (a bad URL, a missing driver, a file that is not a database, a server that refuses) is
    one ``error`` line (a ConfigError class) naming the URL."""
    sa = import_sqlalchemy(what, extra)
    try:
        parsed = sa.engine.make_url(url)
    except Exception as exc:  # noqa: BLE001 - any parse failure is a bad URL
        raise error(f"{flag} {url!r} is not a database URL or path ({exc})") from None
    shown = parsed.render_as_string(hide_password=True)
    engine = None
    try:
        engine = make_engine(sa, parsed)
        return sa, shown, engine, prepare(sa, engine, shown)
    except ConfigError:
        _dispose(engine)
        raise
    except ImportError as exc:
        _dispose(engine)
        raise error(f"{what} {shown}: its database driver is missing ({exc.name}); "
                          "for PostgreSQL: pip install 'robustce[postgres]'") from None
    except Exception as exc:  # noqa: BLE001 - a database that cannot be opened: one line
        _dispose(engine)
        raise error(f"{what} {shown}: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else ''}") from None


def _dispose(engine: Any) -> None:
    if engine is not None:
        engine.dispose()
