"""The one launcher (:class:`robustce.serve.launcher.ServeProcess`) serves the robustce the
caller imported — its ``src`` first on the server's PYTHONPATH whatever the caller's
PYTHONPATH says (mutants ``launcher_serves_the_checkout``, ``launcher_pythonpath_appended``) —
and a server that exits at start is reported as exited, with its log, not waited for until
the timeout (``launcher_exit_not_noticed``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import robustce
from robustce.serve import launcher

#: the src folder of the robustce this test imports (the mutated copy under tools/mutants.py)
IMPORTED_SRC = Path(robustce.__file__).resolve().parents[1]


@pytest.mark.parametrize("caller_path", [None, "/elsewhere/src"])
def test_the_server_imports_the_callers_robustce_first(monkeypatch, tmp_path, caller_path):
    seen: list[dict] = []

    class Recorder:
        def __init__(self, cmd, **kwargs):
            seen.append({"cmd": cmd, **kwargs})

    if caller_path is None:
        monkeypatch.delenv("PYTHONPATH", raising=False)
    else:
        monkeypatch.setenv("PYTHONPATH", caller_path)
    monkeypatch.chdir(tmp_path)  # not the checkout: a path built from the cwd is wrong here
    monkeypatch.setattr(launcher.subprocess, "Popen", Recorder)
    launcher.ServeProcess(["--model", "m"])
    (call,) = seen
    first = call["env"]["PYTHONPATH"].split(os.pathsep)[0]
    assert Path(first).resolve() == IMPORTED_SRC
    assert call["cmd"][:4] == [sys.executable, "-m", "robustce.cli", "serve"]


def test_a_server_that_exits_at_start_is_reported_with_its_log(tmp_path):
    proc = launcher.ServeProcess(["--workers", "0"], log=tmp_path / "serve.log")
    try:
        with pytest.raises(RuntimeError) as caught:
            proc.wait_ready(timeout=45)
    finally:
        proc.stop(timeout=5)
    assert "exited (2)" in str(caught.value) and "workers" in str(caught.value)
    assert isinstance(proc.proc, subprocess.Popen)
