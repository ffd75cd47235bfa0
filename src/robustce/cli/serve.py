"""``robustce serve``: the recourse service (HTTP API + page) with uvicorn; see docs/serve.md."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from robustce.cli._common import EXIT_OK, _user_error
from robustce.errors import RobustCEError

#: the exit status when the app did not start (its models or worker pool failed to load)
EXIT_STARTUP_FAILED = 3


def _add_serve(sub: Any) -> None:
    p = sub.add_parser(
        "serve", help="serve recourse over HTTP: a JSON API (/v1, OpenAPI at /docs) and a page at /",
        description="Serve saved models (directories of Model.save or `robustce explain --out`) "
                    "over HTTP. With no --model, trains and serves the built-in synthetic_loan "
                    "demo model. Needs the extra: pip install 'robustce[serve]'.")
    p.add_argument("--model", metavar="[ID=]DIR", action="append", default=[],
                   help="a served model directory (repeatable); ID defaults to the directory name")
    p.add_argument("--favourable", metavar="[ID=]LABEL", action="append", default=[],
                   help="the favourable class (the outcome recourse aims at) by label or index: "
                        "ID=LABEL for the model ID, a bare LABEL for every served model (one "
                        "ID=LABEL wins over it); overrides the class saved with the model, "
                        "without writing to its files. A model with neither is not served")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--workers", type=int, default=2, metavar="N",
                   help="solver worker processes (default 2; per front process)")
    p.add_argument("--processes", type=int, default=1, metavar="N",
                   help="front processes (HTTP and event loop) on the one port, each with its "
                        "own --workers, sharing the job store (default 1)")
    p.add_argument("--token-file", metavar="F", default=None,
                   help="require `Authorization: Bearer <token>` on /v1 with the token in F")
    p.add_argument("--audit-log", metavar="JSONL", default=None,
                   help="append one JSON line per request here (default: none)")
    p.add_argument("--store", metavar="URL", default=None,
                   help="the job store: an SQLAlchemy URL (postgresql://user@host/db for several "
                        "service processes sharing it) or an SQLite file path (default: an SQLite "
                        "file beside --audit-log, AUDIT-jobs.sqlite3; in memory without one)")
    p.add_argument("--ledger", metavar="URL", default=None,
                   help="record every option the service gives as a promise in this ledger (an "
                        "SQLite path or a database URL; docs/serve.md, 'Keeping a ledger'); the "
                        "page then shows an applicant's earlier promises")
    p.add_argument("--ledger-hash-ids", action="store_true",
                   help="with --ledger: keep salted hashes of the applicant ids, not the ids "
                        "(salt: $ROBUSTCE_LEDGER_SALT, else the ledger's own)")
    p.add_argument("--max-queue", type=int, default=64, metavar="N",
                   help="requests that may wait for a worker before 429 (default 64)")
    p.add_argument("--max-items", type=int, default=100, metavar="N",
                   help="items per synchronous request; larger batches use jobs (default 100)")
    p.add_argument("--max-jobs", type=int, default=4, metavar="N",
                   help="jobs queued or running at once in the store before 429 (default 4)")
    p.add_argument("--job-chunk", type=int, default=100, metavar="N",
                   help="items per worker task of a job; each chunk's results are committed to "
                        "the store as it finishes (default 100)")
    p.add_argument("--max-body", type=int, default=2 * 1024 * 1024, metavar="BYTES",
                   help="largest request body: a job submission's (default 2 MiB); its JSON is "
                        "parsed and checked off the event loop")
    p.add_argument("--max-sync-body", type=int, default=256 * 1024, metavar="BYTES",
                   help="largest body of every other route (explain, certify), refused by its "
                        "Content-Length before it is read (default 256 KiB; at most --max-body)")
    p.add_argument("--max-request-s", type=float, default=120.0, metavar="S",
                   help="time budget of one request; items past it get status timeout (default 120)")
    p.add_argument("--solver-nodes", type=int, default=10_000, metavar="N",
                   help="work limit of each MILP solve of a request (HiGHS branch-and-bound "
                        "nodes; default 10000): results do not depend on the host's load, the "
                        "request's time_limit_s stays as a wall-clock cap")
    p.add_argument("--in-process", metavar="METHODS", default="none",
                   help="comma-separated cheap methods (e.g. nearest_neighbour) whose explain "
                        "requests run on a thread of the server instead of a worker process "
                        "(for one-core hosts; default none)")
    p.add_argument("--demo-dir", metavar="DIR", default=None,
                   help="where the demo model is written (default: a temporary directory)")
    p.set_defaults(func=_cmd_serve)


def _specs(args: argparse.Namespace) -> tuple[list[Any], Any]:
    """The served models' specs, each with its favourable class checked (a one-line error
    naming the model before anything starts), and the demo's temporary directory or None."""
    import tempfile

    from robustce.serve.registry import build_demo_model, model_spec, served_favourable

    tmp = None
    if args.model:
        specs = []
        for item in args.model:
            mid, sep, path = item.partition("=")
            specs.append(model_spec(path, mid) if sep else model_spec(item))
        ids = [s.id for s in specs]
        if len(set(ids)) != len(ids):
            raise _user_error(f"--model: model ids must be unique, got {ids}")
        chosen = _favourables(args.favourable, ids)  # before the demo's training
    else:
        chosen = _favourables(args.favourable, ["synthetic_loan"])
        if args.demo_dir is None:
            tmp = tempfile.TemporaryDirectory(prefix="robustce-serve-")
            args.demo_dir = tmp.name
        print("training the synthetic_loan demo model ...", file=sys.stderr)
        specs = [model_spec(build_demo_model(f"{args.demo_dir}/synthetic_loan"), "synthetic_loan")]
    specs = [replace(s, favourable=chosen.get(s.id)) for s in specs]
    try:
        for spec in specs:
            served_favourable(spec)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise
    return specs, tmp


def _favourables(values: list[str], ids: list[str]) -> dict[str, str]:
    """Per served model id, the label ``--favourable`` gives it: ``ID=LABEL`` (ID a served
    model's id) for that model, a bare ``LABEL`` (at most one) for every other."""
    every: str | None = None
    per: dict[str, str] = {}
    for value in values:
        mid, sep, label = value.partition("=")
        if sep and mid in ids:
            if mid in per:
                raise _user_error(f"--favourable: model {mid!r} is given twice")
            per[mid] = label
        elif every is not None:
            raise _user_error(f"--favourable: two labels for every model ({every!r}, {value!r}); "
                              f"name the model of each as ID=LABEL (the models: {', '.join(ids)})")
        else:
            every = value
    return {mid: per.get(mid, every) for mid in ids if per.get(mid, every) is not None}


def _in_process(value: str) -> tuple[str, ...]:
    """The methods of ``--in-process`` (registry names), checked."""
    from robustce.methods.registry import method_name
    from robustce.serve.registry import SERVED_METHODS

    names = [] if value.strip().lower() in ("", "none") else [v.strip() for v in value.split(",")]
    out = []
    for name in names:
        try:
            canonical = method_name(name)
        except RobustCEError:  # reported below with the served methods
            canonical = name
        if canonical not in SERVED_METHODS:
            raise _user_error(f"--in-process: {name!r} is not a served method; "
                              f"they are {', '.join(SERVED_METHODS)}")
        out.append(canonical)
    return tuple(out)


def _listen(host: str, port: int) -> Any:
    """A socket bound to ``host:port`` for the server (before any training or loading), or a
    one-line error when the address is taken or not this host's."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise _user_error(f"--host {host}: {exc.strerror or exc}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise _user_error(f"--port {port}: cannot listen on {host}:{port}: "
                          f"{exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def _settings(args: argparse.Namespace) -> Any:
    from robustce.serve.settings import ServeSettings, read_token
    from robustce.serve.store import store_url

    if not 0 < args.port < 65536:
        raise _user_error(f"--port must be in 1..65535, got {args.port}")
    if args.processes < 1:
        raise _user_error(f"--processes must be at least 1, got {args.processes}")
    token = read_token(args.token_file) if args.token_file else None
    settings = ServeSettings(workers=args.workers, max_queue=args.max_queue, max_items=args.max_items,
                             max_jobs=args.max_jobs, job_chunk=args.job_chunk,
                             max_body_bytes=args.max_body, max_sync_body_bytes=args.max_sync_body,
                             solver_nodes=args.solver_nodes, max_request_s=args.max_request_s,
                             token=token, audit_log=args.audit_log,
                             store=store_url(args.store) if args.store else None,
                             ledger=args.ledger, ledger_hash_ids=args.ledger_hash_ids,
                             in_process=_in_process(args.in_process))
    if args.ledger_hash_ids and args.ledger is None:
        raise _user_error("--ledger-hash-ids needs --ledger")
    if args.processes > 1 and settings.store is None and settings.audit_log is None:
        raise _user_error("--processes: the processes share their jobs through the job store; "
                          "give --store or --audit-log (an SQLite store beside it)")
    return settings


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from robustce.serve.app import create_app
    except ImportError as exc:
        raise _user_error(f"robustce serve needs the 'serve' extra ({exc.name} is missing): "
                          "pip install 'robustce[serve]'") from None
    from robustce.serve.store import JobStore, default_store_url

    settings = _settings(args)
    sock = _listen(args.host, args.port)
    try:
        specs, tmp = _specs(args)
        try:
            if args.processes == 1:
                app = create_app(specs, settings)
                store = app.state.service.store.url
            else:  # the store checked (its tables made) once, before the processes start
                store_db = JobStore(settings.store or default_store_url(settings.audit_log))
                store = store_db.url
                store_db.close()
                if settings.ledger:  # opened (its tables made) once, too: errors stop here
                    from robustce.serve.promises import ServiceLedger

                    ServiceLedger(settings.ledger).close()
            note = ("; jobs in memory: give --audit-log or --store to keep them"
                    if store == "sqlite://" else "")
            fronts = f"{args.processes} processes × " if args.processes > 1 else ""
            print(f"serving {', '.join(s.id for s in specs)} on http://{args.host}:{args.port}/ "
                  f"(API /v1, OpenAPI /docs; {fronts}{settings.workers} workers; job store {store}{note})",
                  file=sys.stderr)
            if args.processes > 1:
                return _serve_processes(args, specs, settings, sock)
            # proxy_headers off: X-Forwarded-For from any peer (loopback included) never becomes
            # the audit record's client address (a proxy's own address is what is recorded)
            server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=30,
                                                   proxy_headers=False))
            server.run(sockets=[sock])
        finally:
            if tmp is not None:
                tmp.cleanup()
    finally:
        sock.close()
    return EXIT_OK if server.started else EXIT_STARTUP_FAILED


#: the environment variable that gives the front processes of ``--processes`` their configuration
_CONFIG_ENV = "ROBUSTCE_SERVE_CONFIG"


def _serve_processes(args: argparse.Namespace, specs: list[Any], settings: Any, sock: Any) -> int:
    """``--processes N``: uvicorn's supervisor runs N front processes on the one bound socket;
    each builds the app (:func:`app_from_environment`) with its own worker pool, over the
    shared job store."""
    import dataclasses
    import json
    import os

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    os.environ[_CONFIG_ENV] = json.dumps({
        "specs": [dataclasses.asdict(s) for s in specs],
        "settings": {**dataclasses.asdict(settings), "token": None},  # each reads the token file
        "token_file": args.token_file, "parent": os.getpid()})
    config = uvicorn.Config("robustce.cli.serve:app_from_environment", factory=True,
                            workers=args.processes, log_level="warning", timeout_graceful_shutdown=30,
                            proxy_headers=False)
    Multiprocess(config, sockets=[sock]).run()
    return EXIT_OK


def app_from_environment() -> Any:
    """The app of one front process of ``--processes`` (uvicorn's factory): the served models
    and settings from :data:`_CONFIG_ENV`; the process dies with the supervisor (Linux)."""
    import json
    import os

    from robustce.serve.app import create_app
    from robustce.serve.lifeline import die_with_parent
    from robustce.serve.registry import ModelSpec
    from robustce.serve.settings import ServeSettings, read_token

    config = json.loads(os.environ[_CONFIG_ENV])
    die_with_parent(int(config["parent"]))
    token = read_token(config["token_file"]) if config["token_file"] else None
    settings = ServeSettings(**{**config["settings"], "token": token,
                                "in_process": tuple(config["settings"]["in_process"])})
    specs = [ModelSpec(**{**s, "family_dirs": tuple(s["family_dirs"])}) for s in config["specs"]]
    return create_app(specs, settings)
