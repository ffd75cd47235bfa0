"""A real PostgreSQL server for the tests of the SQL stores (the service's job store, the
ledger): the ``postgres_url`` fixture starts one with Debian's server binaries (``initdb`` into
a temporary folder, a loopback port, trust auth) and stops it afterwards. Without psycopg 3 or
the binaries, or when the server cannot start, the tests that use it skip with a one-line
reason. Import the fixture into a ``conftest.py`` to use it."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

__all__ = ["postgres_url"]


def _initdb() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return found[-1] if found else shutil.which("initdb")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def postgres_url():
    """A PostgreSQL server of its own (initdb into a temporary folder, loopback port, trust
    auth), run as the ``postgres`` user when the tests run as root; stopped afterwards."""
    pytest.importorskip("psycopg", reason="PostgreSQL tests need psycopg 3 (the postgres extra)")
    initdb = _initdb()
    if initdb is None:
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    bindir = Path(initdb).parent
    as_user: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: PostgreSQL refuses to run as root")
        as_user = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="robustce-pg-"))
    data = root / "data"
    if as_user:
        shutil.chown(root, "postgres")
    port = _free_port()
    run = lambda *cmd: subprocess.run([*as_user, *cmd], check=True, capture_output=True,  # noqa: E731
                                      timeout=120)
    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(root, ignore_errors=True)
        reason = (getattr(exc, "stderr", b"") or b"").decode(errors="replace").strip() or str(exc)
        pytest.skip(f"could not start PostgreSQL: {reason.splitlines()[-1]}")
    try:
        run(str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "robustce")
        yield f"postgresql://postgres@127.0.0.1:{port}/robustce"
    finally:
        run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
