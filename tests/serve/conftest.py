"""Live servers for the service tests: ``robustce serve`` started as a real process on a free
loopback port; the tests talk HTTP to it (httpx)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.pg import postgres_url  # noqa: F401 - the shared PostgreSQL fixture

import robustce
from robustce.serve.launcher import ServeProcess, free_port

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

#: the ``src`` folder of the robustce these tests import (this checkout's, or the mutated copy
#: ``tools/mutants.py`` puts first on PYTHONPATH): the servers run the code under test
SRC = Path(robustce.__file__).resolve().parents[1]
TOKEN = "test-token-0123456789abcdef"

#: the served demo model's id (its directory's name)
MODEL_ID = "loan"

__all__ = ["SRC", "TOKEN", "Server", "free_port", "launch", "wait_ready"]


@dataclass
class Server:
    """A started ``robustce serve`` (:class:`~robustce.serve.launcher.ServeProcess`) and the
    files the tests read: its audit log, the served model, its output."""

    process: ServeProcess
    audit_log: Path
    model_dir: Path
    log: Path
    token: str = TOKEN

    @property
    def url(self) -> str:
        return self.process.url

    @property
    def proc(self) -> subprocess.Popen:
        return self.process.proc

    def client(self, token: str | None = TOKEN, timeout: float = 60.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def stop(self) -> None:
        self.process.stop()


#: the audit log of every server the tests started (verified at the session's end)
SERVED_AUDIT_LOGS: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _every_audit_log_verifies():
    """At the end of the service tests, every audit log a test server wrote is an intact hash
    chain (``robustce audit-log verify`` passes on it): whatever the tests did to the servers
    (kill -9, SIGTERM, a full disk, refusals), no record was torn, glued or lost from the
    chain. Logs are checked where the servers left them, before anyone could edit them."""
    yield
    from robustce.serve.audit_log import verify_log

    broken = {}
    for path in SERVED_AUDIT_LOGS:
        if path.exists():
            check = verify_log(path)
            if not check.ok:
                broken[str(path)] = [str(p) for p in check.problems][:5]
    assert not broken, f"audit logs that do not verify: {broken}"


def launch(tmp: Path, model_dir: Path, name: str, *extra: str) -> Server:
    """Start ``robustce serve`` (not waiting for it to be ready)."""
    token_file = tmp / f"{name}.token"
    token_file.write_text(TOKEN + "\n")
    audit = tmp / f"{name}-audit.jsonl"
    SERVED_AUDIT_LOGS.append(audit)
    log = tmp / f"{name}.log"
    process = ServeProcess(["--model", f"loan={model_dir}", "--token-file", str(token_file),
                            "--audit-log", str(audit), *extra], log=log, src=SRC)
    return Server(process, audit, model_dir, log)


def wait_ready(server: Server, timeout: float = 120.0) -> None:
    server.process.wait_ready(timeout)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from robustce.serve.registry import build_demo_model

    return build_demo_model(tmp_path_factory.mktemp("served") / MODEL_ID)


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory, model_dir: Path):
    """Two servers started together: ``main`` (2 workers, roomy limits, small batch/body
    limits for the limit tests; nearest-neighbour requests on its in-process lane) and
    ``faults`` (1 worker, a queue of 1, a 3 s request budget; every request on the worker)."""
    tmp = tmp_path_factory.mktemp("servers")
    main = launch(tmp, model_dir, "main", "--workers", "2", "--max-items", "20",
                  "--max-body", str(256 * 1024), "--in-process", "nearest_neighbour")
    faults = launch(tmp, model_dir, "faults", "--workers", "1", "--max-queue", "1",
                    "--max-request-s", "3")
    try:
        wait_ready(main)
        wait_ready(faults)
        yield {"main": main, "faults": faults}
    finally:
        main.stop()
        faults.stop()


@pytest.fixture(scope="session")
def server(servers) -> Server:
    return servers["main"]


@pytest.fixture(scope="session")
def model(model_dir: Path):
    from robustce.models import load

    return load(model_dir / "model")


@pytest.fixture(scope="session")
def applicants(server: Server) -> list[dict]:
    with server.client() as c:
        rows = c.get("/v1/models/loan/applicants").json()["applicants"]
    return [{"id": f"a{i}", "features": r["features"]} for i, r in enumerate(rows)]


@dataclass
class LedgerServers:
    """``v1`` serves the demo model and ``v2`` a retrained demo model (another seed) under the
    same id ``loan``; both write and read one SQLite ledger (two versions of a deployment)."""

    v1: Server
    v2: Server
    ledger: Path
    v2_dir: Path
    applicants: list[dict]


@pytest.fixture(scope="session")
def ledger_servers(tmp_path_factory: pytest.TempPathFactory, model_dir: Path):
    from robustce.serve.registry import build_demo_model

    tmp = tmp_path_factory.mktemp("ledger")
    ledger = tmp / "ledger.sqlite3"
    v2_dir = build_demo_model(tmp / "v2" / MODEL_ID, seed=1, n_family=1, n_applicants=5)
    v1 = launch(tmp, model_dir, "ledger-v1", "--workers", "1", "--ledger", str(ledger))
    v2 = launch(tmp, v2_dir, "ledger-v2", "--workers", "1", "--ledger", str(ledger))
    try:
        wait_ready(v1)
        wait_ready(v2)
        with v1.client() as c:
            rows = c.get("/v1/models/loan/applicants").json()["applicants"]
        yield LedgerServers(v1, v2, ledger, v2_dir, [r["features"] for r in rows])
    finally:
        v1.stop()
        v2.stop()
