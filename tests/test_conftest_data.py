"""The test suite reads datasets from ``ROBUSTCE_DATA`` when a user sets it (README)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _header(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ROBUSTCE_DATA"}
    if env_value is not None:
        env["ROBUSTCE_DATA"] = env_value
    code = ("import sys; sys.path.insert(0, 'tests'); import conftest; "
            "print(conftest.SHARED_DATASETS)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def test_robustce_data_is_honoured(tmp_path):
    assert _header(str(tmp_path)) == str(tmp_path.resolve())


def test_default_is_shared_datasets_beside_the_repo():
    assert _header(None) == str((REPO / ".." / "shared" / "datasets").resolve())
