"""Processes that die with their parent: the solver pool's forkserver and workers end when the
server does, ``kill -9`` included, so a crashed server leaves no process behind.

On Linux each of them asks the kernel for ``SIGKILL`` when its parent ends
(``prctl(PR_SET_PDEATHSIG)``): the forkserver, whose parent is the server, when it starts
(:mod:`robustce.serve.forkserver_init`, the first module it preloads); each worker, whose
parent is the forkserver, in its initialiser. With those two gone, multiprocessing's resource
tracker (which exits once every process holding its pipe has ended) follows. A process whose
parent ended before the signal was armed exits at once. Elsewhere nothing is armed (a graceful
stop still ends every worker).
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["PARENT_ENV", "die_with_parent", "forkserver_pid", "mark_server"]

#: the environment variable naming the server process to the forkserver it starts
PARENT_ENV = "ROBUSTCE_SERVE_PARENT_PID"
_PR_SET_PDEATHSIG = 1

#: in the forkserver (and the workers forked from it): the forkserver's pid, once armed
_FORKSERVER_PID: int | None = None


def die_with_parent(expected_parent: int | None = None) -> bool:
    """Ask for ``SIGKILL`` when this process's parent ends (Linux); whether it was armed.
    Exits at once when ``expected_parent`` is given and is no longer the parent (it ended
    before the signal was armed)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        armed = libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if armed and expected_parent is not None and os.getppid() != expected_parent:
        os._exit(1)
    return armed


def mark_server() -> None:
    """Name this process (the server) as the parent of the forkserver it is about to start."""
    os.environ[PARENT_ENV] = str(os.getpid())


def arm_forkserver() -> None:
    """In the forkserver started by a server that called :func:`mark_server`: die with it.
    Anywhere else (the variable names another parent) nothing happens."""
    global _FORKSERVER_PID
    parent = os.environ.get(PARENT_ENV, "")
    if parent.isdigit() and int(parent) == os.getppid() and die_with_parent(int(parent)):
        _FORKSERVER_PID = os.getpid()


def forkserver_pid() -> int | None:
    """The armed forkserver's pid, as inherited by a worker forked from it (None otherwise)."""
    return _FORKSERVER_PID
