"""No orphans: the server's forkserver, workers and resource tracker end with it, ``kill -9``
included; a port already in use is one line before anything claims to serve."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

import pytest
from tests.conftest import command_line, live_descendants
from tests.serve.conftest import launch, wait_ready

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads the process tree from /proc (Linux)")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.parametrize("fronts", [[], pytest.param(["--processes", "2"], marks=pytest.mark.slow)],
                         ids=["one-process", "two-processes"])
def test_kill_9_of_the_server_leaves_no_process(tmp_path, model_dir, fronts):
    server = launch(tmp_path, model_dir, "orphans", "--workers", "2", *fronts)
    try:
        wait_ready(server)
        with server.client() as c:
            workers = [w["pid"] for w in c.get("/v1/status").json()["workers"]]
        tree = live_descendants(server.proc.pid)
        # the forkserver, the resource tracker and both workers (of each front process)
        assert set(workers) <= set(tree) and len(tree) >= 4, [command_line(p) for p in tree]
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=30)
        end = time.monotonic() + 10
        while (left := [p for p in tree if _alive(p)]) and time.monotonic() < end:
            time.sleep(0.1)
        assert left == [], "alive 10 s after kill -9 of the server: " + "; ".join(
            f"{p}: {command_line(p)}" for p in left)
    finally:
        server.stop()
        for pid in live_descendants(server.proc.pid):  # what a failure left: not past the test
            os.kill(pid, signal.SIGKILL)


def test_a_port_in_use_is_one_line_before_serving(model_dir, capsys):
    from robustce.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["serve", "--model", f"loan={model_dir}", "--port", str(port)])
    err = capsys.readouterr().err
    assert code != 0
    assert "serving" not in err
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in err and "in use" in err
    assert len(err.strip().splitlines()) == 1, err
