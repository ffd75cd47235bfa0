"""Load test of ``robustce serve`` on loopback: N concurrent clients for a fixed time on the
demo model, then a 1 000-applicant batch through the job resource.

Scenarios (each stops by itself: a duration and a request cap):

* ``nearest_neighbour``, one applicant per request, 50 concurrent clients (target: p99 < 50 ms);
* ``milp_robust`` (δ = 0.03), one applicant per request, 8 concurrent clients (reported);
* a 1 000-applicant ``nearest_neighbour`` batch via ``POST /v1/models/{id}/jobs``.

Every request carries a unique item id; a response must echo exactly that id, so lost
(no answer) and duplicated (an id answered twice) responses are counted. 429s (queue full) are
counted apart, not as errors; the client then waits ``Retry-After``. The baseline of the
latency rows is the same explanation by the library in this process (``explainer.explain``
of one applicant), so the ratio is the service's overhead factor, measured in the same run.

``--processes N`` serves with N front processes (``robustce serve --processes N``, each with
``--workers`` solver processes, one SQLite job store); the server's CPU then counts every
process of the server's tree. ``--compare-processes N`` measures the ``nearest_neighbour``
clients against a server of 1 and of N front processes, alternately, ``--rounds`` times (the
same minutes on the same host), and prints throughput, p99 and CPU per request side by side.

``--hostile RATE`` measures the normal ``nearest_neighbour`` clients twice on one server (started
with a bearer token): a quiet phase, then a phase with a concurrent open-loop stream of RATE
hostile requests a second, each on a fresh connection, cycling through a 100 000-unknown-key
explain body (~1.8 MB, over ``--max-sync-body``: 413 unread), the same body as a job (parsed
off the event loop: 422), an explain of ``--max-items`` + 1 applicants (422), a job of
``max_job_items`` + 1 applicants (~1.9 MB, 422), a body over ``--max-body`` (413) and a wrong
token (401). It reports the ratio of the normal requests' p99 under the stream to the quiet
p99 (target: at most 2), the hostile answers counted by kind and status (all must be 4xx),
and ``/health`` latency (probed 10 times a second) in both phases.

Usage: python benchmarks/bench_serve.py [--quick] [--duration S] [--clients N] [--workers W]
       [--processes N] [--max-body BYTES] [--max-sync-body BYTES]
       [--hostile RATE [--hostile-kinds KINDS]] [--compare-processes N [--rounds R]]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MAX_REQUESTS = 200_000
MAX_ITEMS = 100  # the server's --max-items
MAX_JOB_ITEMS = 10_000  # ServeSettings.max_job_items (no flag)
MAX_BODY = 2 * 1024 * 1024  # ServeSettings.max_body_bytes (robustce serve --max-body's default)
MAX_SYNC_BODY = 256 * 1024  # ServeSettings.max_sync_body_bytes (--max-sync-body's default)
HOSTILE_IN_FLIGHT = 32  # hostile requests open at once at most; more are counted as skipped


def _start(demo_dir: str, workers: int, in_process: str, processes: int = 1,
           token: str | None = None, max_body: int = MAX_BODY, max_sync_body: int = MAX_SYNC_BODY
           ) -> tuple[subprocess.Popen, str]:
    """``robustce serve`` on the demo model (:class:`~robustce.serve.launcher.ServeProcess`,
    this checkout's src), ready: (its process, its URL)."""
    sys.path.insert(0, str(ROOT / "src"))
    from robustce.serve.launcher import ServeProcess

    auth = []
    if token is not None:
        token_file = Path(demo_dir) / "token"
        token_file.write_text(token)
        auth = ["--token-file", str(token_file)]
    server = ServeProcess(["--workers", str(workers), "--demo-dir", demo_dir, "--max-items", "100",
                           "--max-body", str(max_body), "--max-sync-body", str(max_sync_body),
                           "--in-process", in_process, "--processes", str(processes),
                           "--store", str(Path(demo_dir) / "jobs.sqlite3"), *auth], src=ROOT / "src")
    try:
        server.wait_ready(300)
    except RuntimeError:
        server.stop(10)
        raise
    return server.proc, server.url


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection of the load client: requests are written as bytes,
    responses parsed by httptools (the C parser uvicorn uses), so that the client spends little
    of the CPU the server needs (httpx's async client costs several ms of CPU a request)."""

    def __init__(self) -> None:
        import httptools

        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future | None = None
        self.transport: asyncio.Transport | None = None
        self.headers: dict[bytes, bytes] = {}
        self.body: list[bytes] = []

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except Exception as exc:  # noqa: BLE001 - a malformed response fails its request
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("connection closed"))

    def _fail(self, exc: BaseException) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result((self.parser.get_status_code(), self.headers, b"".join(self.body)))

    async def post(self, head: bytes, body: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
        """(status, headers, body) of one POST (``head``: its request line and headers)."""
        self.waiter = asyncio.get_running_loop().create_future()
        self.headers, self.body = {}, []
        self.transport.write(head + body)
        return await self.waiter


async def _load(url: str, applicants: list[dict], body: dict[str, Any], clients: int,
                duration: float, token: str | None = None, hostile: list[tuple[str, bytes]] | None = None,
                hostile_rate: float = 0.0, probe_health: bool = False) -> dict[str, Any]:
    """``clients`` closed-loop clients for ``duration`` seconds, each on its own keep-alive
    connection; latencies of the 200s, the client's own CPU time and the load average.

    With ``hostile`` (``(kind, request bytes)`` pairs) and ``hostile_rate`` > 0, the hostile
    requests are sent meanwhile, in turn, ``hostile_rate`` a second (open loop, each on a fresh
    connection); their answers are counted by kind and status. ``probe_health``: ``GET /health``
    10 times a second on a connection of its own, latencies reported."""
    host, port = url.removeprefix("http://").split(":")
    auth = b"Authorization: Bearer %s\r\n" % token.encode() if token else b""
    hostile_codes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    hostile_skipped = 0
    health_lat: list[float] = []
    path = b"/v1/models/synthetic_loan/explain"
    lat: list[float] = []
    codes: collections.Counter = collections.Counter()
    seen: collections.Counter = collections.Counter()
    sent = 0
    lost = 0
    wrong = 0
    end = time.monotonic() + duration
    loop = asyncio.get_running_loop()

    async def connect() -> _Connection:
        return (await loop.create_connection(_Connection, host, int(port)))[1]

    async def client(k: int) -> None:
        nonlocal sent, lost, wrong
        conn = await connect()
        seq = 0
        while time.monotonic() < end and sent < MAX_REQUESTS:
            rid = f"c{k}-{seq}"
            seq += 1
            item = {"id": rid, "features": applicants[(k + seq) % len(applicants)]["features"]}
            payload = json.dumps({**body, "items": [item]}).encode()
            head = (b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s"
                    b"Content-Length: %d\r\n\r\n" % (path, host.encode(), auth, len(payload)))
            sent += 1
            t0 = time.perf_counter()
            try:
                status, headers, raw = await asyncio.wait_for(conn.post(head, payload), 60)
            except Exception:  # noqa: BLE001 - no answer (closed, reset, timed out): lost
                lost += 1
                conn.transport.close()
                conn = await connect()
                continue
            dt = time.perf_counter() - t0
            codes[status] += 1
            if headers.get(b"connection") == b"close":
                conn.transport.close()
                conn = await connect()
            if status == 429:
                await asyncio.sleep(float(headers.get(b"retry-after", b"1")))
                continue
            if status != 200:
                continue
            ids = [it["id"] for it in json.loads(raw)["items"]]
            for i in ids:
                seen[i] += 1
            wrong += ids != [rid]
            lat.append(dt)
        conn.transport.close()

    async def hostile_one(kind: str, request: bytes) -> None:
        try:
            conn = await connect()
        except OSError:
            hostile_codes[kind]["connect failed"] += 1
            return
        try:
            status, _, _ = await asyncio.wait_for(conn.post(request, b""), 60)
            hostile_codes[kind][status] += 1
        except Exception:  # noqa: BLE001 - closed or reset before an answer was read
            hostile_codes[kind]["no answer"] += 1
        finally:
            conn.transport.close()

    async def hostile_stream() -> None:
        nonlocal hostile_skipped
        tasks: set[asyncio.Task] = set()
        k, due = 0, time.monotonic()
        while time.monotonic() < end:
            kind, request = hostile[k % len(hostile)]
            k += 1
            if len(tasks) < HOSTILE_IN_FLIGHT:
                task = asyncio.create_task(hostile_one(kind, request))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            else:
                hostile_skipped += 1
            due += 1 / hostile_rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
        await asyncio.gather(*tasks)

    async def health() -> None:
        conn = await connect()
        request = b"GET /health HTTP/1.1\r\nHost: %s\r\n\r\n" % host.encode()
        while time.monotonic() < end:
            t0 = time.perf_counter()
            status, _, _ = await asyncio.wait_for(conn.post(request, b""), 60)
            if status == 200:
                health_lat.append(time.perf_counter() - t0)
            await asyncio.sleep(0.1)
        conn.transport.close()

    extra = []
    if hostile and hostile_rate > 0:
        extra.append(hostile_stream())
    if probe_health:
        extra.append(health())
    load0 = os.getloadavg()[0]
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    await asyncio.gather(*(client(k) for k in range(clients)), *extra)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    a = np.array(lat) if lat else np.array([np.nan])
    more: dict[str, Any] = {}
    if probe_health:
        h = np.array(health_lat) if health_lat else np.array([np.nan])
        more.update(health_probes=len(health_lat), health_p50_ms=round(float(np.percentile(h, 50)) * 1e3, 1),
                    health_p99_ms=round(float(np.percentile(h, 99)) * 1e3, 1),
                    health_max_ms=round(float(np.max(h)) * 1e3, 1))
    if hostile and hostile_rate > 0:
        answers = {kind: {str(k): v for k, v in sorted(c.items(), key=str)}
                   for kind, c in hostile_codes.items()}
        statuses = [k for c in hostile_codes.values() for k in c.elements()]
        more.update(hostile_rate=hostile_rate, hostile_sent=len(statuses), hostile_skipped=hostile_skipped,
                    hostile_answers=answers,
                    hostile_4xx=sum(1 for k in statuses if isinstance(k, int) and 400 <= k < 500),
                    hostile_accepted=sum(1 for k in statuses if isinstance(k, int) and k < 300),
                    hostile_5xx=sum(1 for k in statuses if isinstance(k, int) and k >= 500),
                    hostile_no_answer=sum(1 for k in statuses if not isinstance(k, int)))
    return {"clients": clients, "duration_s": round(wall, 1), "sent": sent, "ok": len(lat),
            "req_per_s": round(len(lat) / wall, 1), "p50_ms": round(float(np.percentile(a, 50)) * 1e3, 1),
            "p99_ms": round(float(np.percentile(a, 99)) * 1e3, 1), "status_429": codes.get(429, 0),
            "other_errors": sum(v for c, v in codes.items() if c not in (200, 429)),
            "lost": lost, "duplicated": sum(1 for v in seen.values() if v > 1), "wrong_id": wrong,
            "client_cpu_share": round(cpu / wall, 2),
            "loadavg_1min": [round(load0, 2), round(os.getloadavg()[0], 2)], **more}


def _batch(url: str, applicants: list[dict], n: int) -> dict[str, Any]:
    import httpx

    items = [{"id": f"b{i}", "features": applicants[i % len(applicants)]["features"]} for i in range(n)]
    t0 = time.perf_counter()
    with httpx.Client(base_url=url, timeout=60) as http:
        job = http.post("/v1/models/synthetic_loan/jobs",
                        json={"items": items, "method": "nearest_neighbour"}).json()
        end = time.monotonic() + 600
        while job["status"] in ("queued", "running") and time.monotonic() < end:
            time.sleep(0.2)
            job = http.get(f"/v1/jobs/{job['job_id']}").json()
    wall = time.perf_counter() - t0
    got = [it["id"] for it in (job.get("result") or {}).get("items", [])]
    statuses = collections.Counter(it["status"] for it in (job.get("result") or {}).get("items", []))
    return {"n": n, "status": job["status"], "seconds": round(wall, 2),
            "applicants_per_s": round(n / wall, 1), "in_order": got == [it["id"] for it in items],
            "lost": n - len(set(got)), "duplicated": len(got) - len(set(got)), "statuses": dict(statuses)}


def _server_cpu_s(proc: subprocess.Popen, url: str) -> float | None:
    """CPU seconds (user + system) used so far by the server process and every process under
    it (front processes, forkservers, solver workers); None where ``/proc`` is not readable
    (not Linux)."""
    stats: dict[int, list[str]] = {}
    try:
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    stats[int(name)] = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
    except OSError:
        return None
    tree, frontier = {proc.pid}, {proc.pid}
    while frontier:
        frontier = {pid for pid, f in stats.items() if int(f[1]) in frontier} - tree
        tree |= frontier
    total = 0.0
    for pid in tree:
        if pid in stats:
            total += (int(stats[pid][11]) + int(stats[pid][12])) / os.sysconf("SC_CLK_TCK")
    return total


def _measured_load(proc: subprocess.Popen, url: str, applicants: list[dict], body: dict[str, Any],
                   clients: int, duration: float, **load: Any) -> dict[str, Any]:
    """:func:`_load` (``load``: its keyword arguments), plus the server's CPU (process +
    workers) per answered request and as a share of the wall time (1.0 = one core busy)."""
    cpu0 = _server_cpu_s(proc, url)
    res = asyncio.run(_load(url, applicants, body, clients, duration, **load))
    cpu1 = _server_cpu_s(proc, url)
    if cpu0 is not None and cpu1 is not None:
        res["server_cpu_ms_per_req"] = round((cpu1 - cpu0) * 1e3 / max(res["ok"], 1), 2)
        res["server_cpu_share"] = round((cpu1 - cpu0) / res["duration_s"], 2)
    return res


def _baseline(demo_dir: str, applicants: list[dict], method: str, params: dict, reps: int) -> float:
    """Median seconds of the library's own ``explain`` of one applicant (warm explainer)."""
    import pandas as pd

    from robustce.methods.registry import build_explainer
    from robustce.serve.registry import load_served_model, model_spec

    served = load_served_model(model_spec(Path(demo_dir) / "synthetic_loan"), with_methods=False)
    explainer = build_explainer(method, served.model, served.data, seed=0, **params)
    times = []
    for k in range(reps):
        row = pd.DataFrame([applicants[k % len(applicants)]["features"]])[served.schema.names]
        t0 = time.perf_counter()
        explainer.explain(row, target_class=1)
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:] if len(times) > 1 else times))


def _hostile_requests(host: str, token: str, applicants: list[dict], max_body: int = MAX_BODY
                      ) -> list[tuple[str, bytes]]:
    """The hostile requests, built once (``(kind, request bytes)``): each must be refused with
    a 4xx. The bodies are those of tests/serve/test_hygiene.py's hostile records, and the
    limits' edges (one item over, one byte over)."""
    explain, jobs = b"/v1/models/synthetic_loan/explain", b"/v1/models/synthetic_loan/jobs"
    features = applicants[0]["features"]

    def post(path: bytes, body: bytes, bearer: str = token) -> bytes:
        return (b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % (path, host.encode(), bearer.encode(), len(body)) + body)

    def items(n: int) -> list[dict]:
        return [{"id": f"h{i}", "features": features} for i in range(n)]

    unknown = {**features, **{f"k{i:06d}": i for i in range(100_000)}}
    def dumps(obj: Any) -> bytes:
        return json.dumps(obj).encode()

    return [
        ("unknown_keys_100000", post(explain, dumps({"items": [{"id": "x", "features": unknown}]}))),
        ("job_unknown_keys_100000", post(jobs, dumps({"items": [{"id": "x", "features": unknown}]}))),
        (f"explain_{MAX_ITEMS + 1}_items", post(explain, dumps({"items": items(MAX_ITEMS + 1)}))),
        (f"job_{MAX_JOB_ITEMS + 1}_items", post(jobs, dumps({"items": items(MAX_JOB_ITEMS + 1)}))),
        ("body_over_max_body", post(explain, dumps({"items": items(1), "pad": "x" * max_body}))),
        ("wrong_token", post(explain, dumps({"items": items(1)}), "wrong-" + token)),
    ]


def run_hostile(rate: float, duration: float, clients: int, workers: int = 2, in_process: str = "none",
                processes: int = 1, kinds: list[str] | None = None, max_body: int = MAX_BODY,
                max_sync_body: int = MAX_SYNC_BODY) -> list[dict[str, Any]]:
    """Normal ``nearest_neighbour`` clients on one server (with a token): a quiet phase, then
    the same under a stream of ``rate`` hostile requests a second (of ``kinds``; default every
    kind); the second row carries ``p99_ratio`` (hostile / quiet p99) and the hostile answers
    by kind and status."""

    token = "bench-token-" + os.urandom(12).hex()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as demo_dir:
        proc, url = _start(demo_dir, workers, in_process, processes, token=token, max_body=max_body,
                           max_sync_body=max_sync_body)
        try:
            applicants = _warm(url, workers * processes, token)
            nn = {"method": "nearest_neighbour", "time_limit_s": 10}
            hostile = _hostile_requests(url.removeprefix("http://"), token, applicants, max_body)
            if kinds:
                unknown = set(kinds) - {kind for kind, _ in hostile}
                if unknown:
                    raise ValueError(f"no hostile request kind {sorted(unknown)}; "
                                     f"the kinds: {[kind for kind, _ in hostile]}")
                hostile = [(kind, request) for kind, request in hostile if kind in kinds]
            sizes = {kind: len(request) for kind, request in hostile}
            for phase, r in (("quiet", 0.0), ("hostile", rate)):
                res = _measured_load(proc, url, applicants, nn, clients, duration, token=token,
                                     hostile=hostile, hostile_rate=r, probe_health=True)
                rows.append({"name": f"nearest_neighbour over HTTP, {clients} clients, {phase} phase",
                             "phase": phase, **res, "workers": workers, "processes": processes,
                             "in_process": in_process, "max_body": max_body,
                             "max_sync_body": max_sync_body, "cpu_count": os.cpu_count()})
            rows[1]["p99_ratio"] = round(rows[1]["p99_ms"] / rows[0]["p99_ms"], 2)
            rows[1]["hostile_request_bytes"] = sizes
        finally:
            proc.terminate()
            proc.wait(60)
    return rows


def _warm(url: str, workers: int, token: str | None = None) -> list[dict]:
    """The demo model's applicants, after warming each worker's explainer cache (a KD-tree
    per worker)."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    applicants = httpx.get(url + "/v1/models/synthetic_loan/applicants", headers=headers).json()["applicants"]
    for _ in range(2 * workers):
        httpx.post(url + "/v1/models/synthetic_loan/explain", timeout=60, headers=headers,
                   json={"method": "nearest_neighbour", "items": [{"features": applicants[0]["features"]}]})
    return applicants


def run(quick: bool = False, duration: float | None = None, clients: int | None = None,
        workers: int = 2, in_process: str = "none", processes: int = 1, max_body: int = MAX_BODY,
        max_sync_body: int = MAX_SYNC_BODY) -> list[dict[str, Any]]:

    duration = duration or (10.0 if quick else 60.0)
    nn_clients = clients or 50
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as demo_dir:
        proc, url = _start(demo_dir, workers, in_process, processes, max_body=max_body,
                           max_sync_body=max_sync_body)
        try:
            applicants = _warm(url, workers * processes)
            nn = {"method": "nearest_neighbour", "time_limit_s": 10}
            res = _measured_load(proc, url, applicants, nn, nn_clients, duration)
            base = _baseline(demo_dir, applicants, "nearest_neighbour", {}, 50)
            rows.append({"name": f"nearest_neighbour over HTTP, {nn_clients} clients, p50 (vs library "
                                 "explain in-process)", "seconds": res["p50_ms"] / 1e3,
                         "baseline_seconds": base, "ratio": base / (res["p50_ms"] / 1e3), **res,
                         "target_p99_ms": 50, "workers": workers, "in_process": in_process,
                         "processes": processes,
                         "cpu_count": os.cpu_count()})
            mr = {"method": "milp_robust", "params": {"shift": 0.03}, "time_limit_s": 10}
            res = _measured_load(proc, url, applicants, mr, 4 if quick else 8, duration)
            base = _baseline(demo_dir, applicants, "milp_robust", {"shift": 0.03}, 6 if quick else 12)
            rows.append({"name": f"milp_robust over HTTP, {res['clients']} clients, p50 (vs library "
                                 "explain in-process)", "seconds": res["p50_ms"] / 1e3,
                         "baseline_seconds": base, "ratio": base / (res["p50_ms"] / 1e3), **res,
                         "workers": workers, "processes": processes})
            load0 = os.getloadavg()[0]
            res = _batch(url, applicants, 200 if quick else 1000)
            rows.append({"name": f"{res['n']}-applicant nearest_neighbour batch via jobs",
                         "seconds": res["seconds"], **res, "workers": workers, "processes": processes,
                         "loadavg_1min": [round(load0, 2), round(os.getloadavg()[0], 2)]})
        finally:
            proc.terminate()
            proc.wait(60)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description="Load test of robustce serve (loopback).")
    ap.add_argument("--quick", action="store_true",
                    help="10 s per scenario, 4 milp_robust clients, a 200-applicant batch")
    ap.add_argument("--duration", type=float, default=None, help="seconds per scenario (default 60)")
    ap.add_argument("--clients", type=int, default=None, help="nearest_neighbour clients (default 50)")
    ap.add_argument("--workers", type=int, default=2, help="solver worker processes (default 2)")
    ap.add_argument("--processes", type=int, default=1,
                    help="front processes (robustce serve --processes; default 1)")
    ap.add_argument("--in-process", default="none", metavar="METHODS",
                    help="passed to robustce serve --in-process (default none)")
    ap.add_argument("--hostile", type=float, default=None, metavar="RATE",
                    help="instead of the scenarios: nearest_neighbour clients in a quiet phase, then "
                         "under RATE hostile requests a second (--duration each, default 30 s; "
                         "--quick: 5 s)")
    ap.add_argument("--max-body", type=int, default=MAX_BODY, metavar="BYTES",
                    help="passed to robustce serve --max-body (default 2 MiB); the hostile "
                         "body_over_max_body is a few hundred bytes over it")
    ap.add_argument("--max-sync-body", type=int, default=MAX_SYNC_BODY, metavar="BYTES",
                    help="passed to robustce serve --max-sync-body (default 256 KiB)")
    ap.add_argument("--compare-processes", type=int, default=None, metavar="N",
                    help="instead of the scenarios: the nearest_neighbour clients against 1 and N "
                         "front processes, alternately, --rounds times (--duration each, default 20 s)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of --compare-processes (default 2)")
    ap.add_argument("--hostile-kinds", default=None, metavar="KINDS",
                    help="comma-separated hostile request kinds to send (default all: unknown_keys_100000, "
                         "job_unknown_keys_100000, explain_101_items, job_10001_items, "
                         "body_over_max_body, wrong_token)")
    args = ap.parse_args()
    if args.duration is not None and not 0 < args.duration <= 600:
        raise SystemExit("--duration must be in (0, 600]")
    if args.hostile is not None:
        if not 0 < args.hostile <= 1000:
            raise SystemExit("--hostile RATE must be in (0, 1000] requests a second")
        rows = run_hostile(args.hostile, args.duration or (5.0 if args.quick else 30.0), args.clients or 50,
                           args.workers, args.in_process, args.processes,
                           args.hostile_kinds.split(",") if args.hostile_kinds else None, args.max_body,
                           args.max_sync_body)
        for row in rows:
            print(json.dumps(row))
        print()
        print(hostile_table(rows))
        return 0
    if args.compare_processes is not None:
        if args.compare_processes < 2 or args.rounds < 1:
            raise SystemExit("--compare-processes N needs N >= 2 and --rounds >= 1")
        rows = run_fronts(args.compare_processes, args.rounds, args.duration or 20.0,
                          args.clients or 50, args.workers, args.in_process)
        for row in rows:
            print(json.dumps(row))
        print()
        print(fronts_table(rows))
        return 0
    rows = run(args.quick, args.duration, args.clients, args.workers, args.in_process, args.processes,
               args.max_body, args.max_sync_body)
    for row in rows:
        print(json.dumps(row))
    print()
    print(table(rows))
    return 0


def run_fronts(n: int, rounds: int, duration: float, clients: int, workers: int = 2,
               in_process: str = "none") -> list[dict[str, Any]]:
    """The ``nearest_neighbour`` clients against a server of 1 and of ``n`` front processes
    (``--workers`` each), alternately (1, n, 1, n, ...), ``rounds`` times: throughput, p99 and
    the server's CPU (every process of its tree) per request, with the load average."""
    rows: list[dict[str, Any]] = []
    nn = {"method": "nearest_neighbour", "time_limit_s": 10}
    for k in range(rounds):
        for processes in (1, n):
            with tempfile.TemporaryDirectory() as demo_dir:
                proc, url = _start(demo_dir, workers, in_process, processes)
                try:
                    applicants = _warm(url, workers * processes)
                    res = _measured_load(proc, url, applicants, nn, clients, duration)
                finally:
                    proc.terminate()
                    proc.wait(60)
            rows.append({"name": f"nearest_neighbour, {processes} front process(es), round {k + 1}",
                         "round": k + 1, "processes": processes, "workers": workers, **res,
                         "cpu_count": os.cpu_count()})
    return rows


def fronts_table(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`run_fronts` as a Markdown table."""
    out = ["| round | front processes | clients | requests/s | p50 | p99 | lost | server CPU / request | "
           "server CPU share | client CPU share | load average (start, end) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        load = " → ".join(f"{v:g}" for v in r["loadavg_1min"])
        out.append(f"| {r['round']} | {r['processes']} | {r['clients']} | {r['req_per_s']:g} | "
                   f"{r['p50_ms']:g} ms | {r['p99_ms']:g} ms | {r['lost']} | "
                   f"{r.get('server_cpu_ms_per_req', '–')} ms | {r.get('server_cpu_share', '–')} | "
                   f"{r['client_cpu_share']:g} | {load} |")
    return "\n".join(out)


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as the Markdown table of benchmarks/README.md."""
    out = ["| scenario | clients | requests/s | p50 | p99 | 429s | lost | duplicated | "
           "server CPU / request | client CPU share | library call alone | load average (start, end) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        load = " → ".join(f"{v:g}" for v in r.get("loadavg_1min", []))
        if "req_per_s" in r:
            fronts = f", {r['processes']} front processes" if r.get("processes", 1) > 1 else ""
            out.append(f"| {r['name'].split(' over ')[0]}, 1 applicant/request{fronts} | {r['clients']} | "
                       f"{r['req_per_s']:g} | {r['p50_ms']:g} ms | {r['p99_ms']:g} ms | "
                       f"{r['status_429']} | {r['lost']} | {r['duplicated']} | "
                       f"{r.get('server_cpu_ms_per_req', '–')} ms | {r['client_cpu_share']:g} | "
                       f"{r['baseline_seconds'] * 1e3:.1f} ms | {load} |")
        else:
            out.append(f"| {r['n']}-applicant batch via `POST /jobs` ({r['status']}, in order: "
                       f"{r['in_order']}) | 1 | {r['applicants_per_s']:g} applicants/s "
                       f"({r['seconds']:g} s) | – | – | – | {r['lost']} | {r['duplicated']} | – | – | – "
                       f"| {load} |")
    return "\n".join(out)


def hostile_table(rows: list[dict[str, Any]]) -> str:
    """The quiet and hostile phases as a Markdown table, and the hostile answers by kind."""
    out = ["| phase | front processes | clients | hostile/s | requests/s | p50 | p99 | /health p99 (max) | "
           "lost | server CPU share | client CPU share | load average (start, end) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        load = " → ".join(f"{v:g}" for v in r["loadavg_1min"])
        out.append(f"| {r['phase']} | {r['processes']} | {r['clients']} | {r.get('hostile_rate', 0):g} | "
                   f"{r['req_per_s']:g} | "
                   f"{r['p50_ms']:g} ms | {r['p99_ms']:g} ms | {r['health_p99_ms']:g} ms "
                   f"({r['health_max_ms']:g} ms) | {r['lost']} | {r.get('server_cpu_share', '–')} | "
                   f"{r['client_cpu_share']:g} | {load} |")
    h = rows[-1]
    out += ["", f"p99 under the hostile stream / quiet p99: **{h['p99_ratio']:g}** (target ≤ 2)", "",
            f"hostile requests: {h['hostile_sent']} answered or failed ({h['hostile_skipped']} not sent: "
            f"{HOSTILE_IN_FLIGHT} already open); 4xx {h['hostile_4xx']}, accepted (2xx) "
            f"{h['hostile_accepted']}, 5xx {h['hostile_5xx']}, no answer read {h['hostile_no_answer']}", "",
            "| hostile request | bytes | answers |", "|---|---|---|"]
    for kind, answers in h["hostile_answers"].items():
        counts = ", ".join(f"{k}: {v}" for k, v in answers.items())
        out.append(f"| {kind} | {h['hostile_request_bytes'][kind]:,} | {counts} |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
