"""Shared test setup.

* The dataset tests read the offline dataset copy named by ``ROBUSTCE_DATA`` when it is set (as
  the README tells users to), else ``<repo>/../shared/datasets`` (CI runs on a fresh clone with
  ``../shared`` beside it); tests that need a dataset skip with its path when it is absent.
  ``ROBUSTCE_CACHE`` points at a temporary folder, so no test writes into the user's cache.
* The network is off: ``robustce.data.download.fetch_url`` raises unless a test patches it.
* No test leaves a process behind: at the end of the run, every process the suite started
  (descendants of the pytest process; on Linux pytest is made their subreaper, so orphans of a
  killed server count too) must have ended, or the run fails naming their command lines.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
import urllib.error
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATASETS = (REPO_ROOT / ".." / "shared" / "datasets").resolve()
USER_DATASETS = os.environ.get("ROBUSTCE_DATA")


def datasets_dir() -> Path:
    """``ROBUSTCE_DATA`` if the user set it, else the ``../shared/datasets`` beside the repo."""
    return Path(USER_DATASETS).expanduser().resolve() if USER_DATASETS else DEFAULT_DATASETS


SHARED_DATASETS = datasets_dir()


def _no_network(url: str, timeout: float = 60.0) -> bytes:
    raise urllib.error.URLError(f"network access is disabled in tests (asked for {url})")


@pytest.fixture(scope="session", autouse=True)
def _robustce_offline_data(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROBUSTCE_DATA", str(SHARED_DATASETS))
        mp.setenv("ROBUSTCE_CACHE", str(tmp_path_factory.mktemp("robustce_cache")))
        import robustce.data.download as download

        mp.setattr(download, "fetch_url", _no_network)
        yield SHARED_DATASETS


@functools.cache
def missing_files(folder: Path) -> tuple[str, ...]:
    """The offline copy's files (every path with a recorded checksum) absent from ``folder``;
    a missing folder lacks them all, an empty one (a fresh clone's) too."""
    from robustce.data.download import checksums

    return tuple(rel for rel in sorted(checksums()) if not (folder / rel).is_file())


@pytest.fixture
def shared_datasets() -> Path:
    """The offline dataset folder; skips the test, naming the path, unless it holds the whole
    offline copy."""
    missing = missing_files(SHARED_DATASETS)
    if missing:
        pytest.skip(f"offline datasets not found at {SHARED_DATASETS} ({len(missing)} files "
                    f"missing, e.g. {missing[0]})")
    return SHARED_DATASETS


def pytest_report_header(config):
    if not SHARED_DATASETS.is_dir():
        present = "MISSING"
    else:
        present = "present" if not missing_files(SHARED_DATASETS) else "INCOMPLETE"
    source = "from ROBUSTCE_DATA" if USER_DATASETS else "default; set ROBUSTCE_DATA to change"
    return f"robustce datasets: {SHARED_DATASETS} ({present}, {source})"


def _processes() -> dict[int, tuple[int, str]]:
    """Every process visible in /proc: pid → (parent pid, state letter)."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            out[int(name)] = (int(fields[1]), fields[0])
    return out


def live_descendants(root: int, exclude: frozenset[int] = frozenset()) -> list[int]:
    """Live (not zombie) descendants of ``root``, from /proc; those in ``exclude`` are not
    listed, but their descendants are."""
    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        if pid not in exclude and procs[pid][1] not in ("Z", "X"):
            out.append(pid)
    return sorted(out)


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()[:300]
    except OSError:
        return "?"


def _interpreter_helpers() -> frozenset[int]:
    """The pytest process's own multiprocessing helpers (forkserver, resource trackers): they
    live as long as the interpreter; their children still count. Joblib's reusable worker pool
    is stopped here (its idle workers would otherwise wait 5 minutes)."""
    loky = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(loky, "_executor", None) if loky else None
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)
    pids = set()
    for module, path in (("multiprocessing.forkserver", ("_forkserver", "_forkserver_pid")),
                         ("multiprocessing.resource_tracker", ("_resource_tracker", "_pid")),
                         ("joblib.externals.loky.backend.resource_tracker", ("_resource_tracker", "_pid"))):
        obj = sys.modules.get(module)
        for attr in path:
            obj = getattr(obj, attr, None)
        if isinstance(obj, int):
            pids.add(obj)
    return frozenset(pids)


def _become_subreaper() -> None:
    """Orphans of the suite's processes are re-parented to pytest (Linux), not to init."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


@pytest.fixture(scope="session", autouse=True)
def _no_process_left_behind():
    """Fail the run if a process the suite started is still alive at its end (after a grace
    of 20 s for processes that are stopping); the leftovers are killed."""
    if not sys.platform.startswith("linux"):
        yield
        return
    _become_subreaper()
    yield
    helpers = _interpreter_helpers()
    end = time.monotonic() + 20
    while (left := live_descendants(os.getpid(), helpers)) and time.monotonic() < end:
        time.sleep(0.2)
    if left:
        lines = [f"  {pid}: {command_line(pid)}" for pid in left]
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pytest.fail("the test run left processes behind:\n" + "\n".join(lines), pytrace=False)
