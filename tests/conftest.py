"""Shared test setup.

* The dataset tests read the offline dataset copy named by ``ROBUSTCE_DATA`` when it is set (as
  the README tells users to), else ``<repo>/../shared/datasets`` (CI runs on a fresh clone with
  ``../shared`` beside it); tests that need a dataset skip with its path when it is absent.
  ``ROBUSTCE_CACHE`` points at a temporary folder, so no test writes into the user's cache.
* The network is off: ``robustce.data.download.fetch_url`` raises unless a test patches it.
"""

from __future__ import annotations

import functools
import os
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
