"""``robustce serve`` started as a process on a free loopback port, waited for and stopped: the
one launcher of the service tests (tests/serve/conftest.py), the docs' exchange
(tools/serve_exchange.py) and the load test (benchmarks/bench_serve.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["ServeProcess", "free_port"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _this_src() -> Path:
    """The ``src`` folder this module was imported from."""
    return Path(__file__).resolve().parents[2]


class ServeProcess:
    """``python -m robustce.cli serve --port PORT *args`` on a free port, its output in
    ``log`` (None: discarded), running the robustce in ``src`` (first on its PYTHONPATH;
    default: the one this process imported, so a test runs the code under test).

    Parameters
    ----------
    args : the command line after ``serve`` (``--port`` is added).
    log : file for the server's stdout and stderr, or None.
    src : the ``src`` folder the server imports robustce from.
    """

    def __init__(self, args: list[str], log: Path | None = None, src: Path | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        src = src or _this_src()
        env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        cmd = [sys.executable, "-m", "robustce.cli", "serve", "--port", str(self.port), *args]
        if log is None:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        else:
            with open(log, "wb") as fh:
                self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log and self.log.exists() else ""

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Return once ``/ready`` answers 200; :class:`RuntimeError` (with the log's tail) if
        the server exits or is not ready within ``timeout`` seconds."""
        import httpx

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"robustce serve exited ({self.proc.returncode}): {self._log_tail()}")
            try:
                if httpx.get(self.url + "/ready", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"robustce serve not ready after {timeout:.0f} s: {self._log_tail()}")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (a graceful stop), then SIGKILL after ``timeout`` seconds."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
