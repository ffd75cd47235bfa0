"""Shared test setup.

* ``ROBUSTCE_DATA`` points at the offline dataset copy ``<repo>/../shared/datasets`` (CI runs on
  a fresh clone with ``../shared`` beside it); ``ROBUSTCE_CACHE`` at a temporary folder, so no
  test writes into the user's cache.
* The network is off: ``robustce.data.download.fetch_url`` raises unless a test patches it.
"""

from __future__ import annotations

import os
import urllib.error
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = (REPO_ROOT / ".." / "shared" / "datasets").resolve()


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


@pytest.fixture
def shared_datasets() -> Path:
    """The offline dataset folder; skips the test when it is absent."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"offline datasets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


def pytest_report_header(config):
    present = "present" if SHARED_DATASETS.is_dir() else "MISSING"
    return f"robustce datasets: {SHARED_DATASETS} ({present}); ROBUSTCE_DATA was " \
           f"{os.environ.get('ROBUSTCE_DATA', 'unset')}"
