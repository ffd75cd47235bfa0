"""``robustce audit --backend dask --scheduler tcp://…`` and ``robustce notice --scheduler``
against a cluster as users run one: a ``dask scheduler`` and a ``dask worker`` started as
separate processes on loopback, the command line started as a third (issue 54: both command
lines' cluster paths ended in a traceback — ``No clients found`` / ``To use Joblib with Dask
first create a Dask Client`` — because the client they open is not Dask's default one).
The cluster's partitions must equal a serial run's row for row; the processes are stopped at
the end, whatever happens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
AUDIT = ["audit", "--dataset", "synthetic_loan", "--hidden", "8", "--epochs", "20",
         "--groups", "housing", "--partition-rows", "200", "--bootstrap", "20", "--seed", "0"]


NOTICE = ["--dataset", "synthetic_loan", "--hidden", "8", "--epochs", "20", "--method",
          "nearest_neighbour", "--applicants", "3", "--seed", "0"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
            "MPLBACKEND": "Agg", "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=20)


def _cli(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robustce.cli", *AUDIT, "--out", str(out), *extra],
                          capture_output=True, text=True, env=_env(), timeout=600, check=False)


def _parts(folder: Path) -> pd.DataFrame:
    files = sorted((folder / "parts").glob("part-*.parquet"))
    assert files, f"no partitions in {folder}"
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


@pytest.mark.slow  # ~45 s: two Dask processes and four command-line runs, each training its MLP
def test_the_command_line_audits_on_a_cluster_of_separate_processes(tmp_path):
    pytest.importorskip("distributed")
    file = tmp_path / "scheduler.json"
    procs: list[subprocess.Popen] = []
    logs = [open(tmp_path / name, "w") for name in ("scheduler.log", "worker.log")]  # noqa: SIM115
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(file)],
            stdout=logs[0], stderr=subprocess.STDOUT, env=_env()))
        for _ in range(600):  # the scheduler writes its address once it listens
            if file.exists() and file.stat().st_size:
                break
            assert procs[0].poll() is None, (tmp_path / "scheduler.log").read_text()
            time.sleep(0.1)
        address = json.loads(file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", address, "--nworkers", "1", "--nthreads", "1",
             "--no-dashboard", "--memory-limit", "0", "--local-directory", str(tmp_path / "w")],
            stdout=logs[1], stderr=subprocess.STDOUT, env=_env()))
        from distributed import Client

        with Client(address, timeout="30s", set_as_default=False) as client:
            client.wait_for_workers(1, timeout=120)

        cluster = _cli(tmp_path / "cluster", "--backend", "dask", "--scheduler", address)
        assert cluster.returncode == 0, cluster.stderr[-3000:]
        assert "No clients found" not in cluster.stderr
        notices = subprocess.run(
            [sys.executable, "-m", "robustce.cli", "notice", *NOTICE, "--scheduler", address,
             "--out", str(tmp_path / "notices-cluster")],
            capture_output=True, text=True, env=_env(), timeout=600, check=False)
        assert notices.returncode == 0, notices.stderr[-3000:]
    finally:
        _stop(procs)
        for log in logs:
            log.close()
    notices = subprocess.run(
        [sys.executable, "-m", "robustce.cli", "notice", *NOTICE, "--out", str(tmp_path / "notices")],
        capture_output=True, text=True, env=_env(), timeout=600, check=False)
    assert notices.returncode == 0, notices.stderr[-3000:]
    here = sorted(p.name for p in (tmp_path / "notices").glob("*.json"))
    there = sorted(p.name for p in (tmp_path / "notices-cluster").glob("*.json"))
    assert here == there and len(here) == 3
    for name in here:
        a, b = (json.loads((tmp_path / d / name).read_text()) for d in ("notices", "notices-cluster"))
        assert a["options"] == b["options"] and a["reasons"] == b["reasons"]
    serial = _cli(tmp_path / "serial")
    assert serial.returncode == 0, serial.stderr[-3000:]
    pd.testing.assert_frame_equal(_parts(tmp_path / "serial"), _parts(tmp_path / "cluster"))
    for name in ("group_metrics.csv", "global_actions.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "serial" / name),
                                      pd.read_csv(tmp_path / "cluster" / name))
