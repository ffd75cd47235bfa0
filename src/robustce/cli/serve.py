"""``robustce serve``: the recourse service (HTTP API + page) with uvicorn; see docs/serve.md."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from robustce.cli._common import EXIT_OK, _user_error
from robustce.errors import RobustCEError


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
                   help="solver worker processes (default 2)")
    p.add_argument("--token-file", metavar="F", default=None,
                   help="require `Authorization: Bearer <token>` on /v1 with the token in F")
    p.add_argument("--audit-log", metavar="JSONL", default=None,
                   help="append one JSON line per request here (default: none)")
    p.add_argument("--max-queue", type=int, default=64, metavar="N",
                   help="requests that may wait for a worker before 429 (default 64)")
    p.add_argument("--max-items", type=int, default=100, metavar="N",
                   help="items per synchronous request; larger batches use jobs (default 100)")
    p.add_argument("--max-body", type=int, default=2 * 1024 * 1024, metavar="BYTES",
                   help="largest request body (default 2 MiB)")
    p.add_argument("--max-request-s", type=float, default=120.0, metavar="S",
                   help="time budget of one request; items past it get status timeout (default 120)")
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


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from robustce.serve.app import create_app
    except ImportError as exc:
        raise _user_error(f"robustce serve needs the 'serve' extra ({exc.name} is missing): "
                          "pip install 'robustce[serve]'") from None
    from robustce.serve.settings import ServeSettings, read_token

    if not 0 < args.port < 65536:
        raise _user_error(f"--port must be in 1..65535, got {args.port}")
    token = read_token(args.token_file) if args.token_file else None
    settings = ServeSettings(workers=args.workers, max_queue=args.max_queue, max_items=args.max_items,
                             max_body_bytes=args.max_body, max_request_s=args.max_request_s,
                             token=token, audit_log=args.audit_log,
                             in_process=_in_process(args.in_process))
    specs, tmp = _specs(args)
    app = create_app(specs, settings)
    print(f"serving {', '.join(s.id for s in specs)} on http://{args.host}:{args.port}/ "
          f"(API /v1, OpenAPI /docs; {settings.workers} workers)", file=sys.stderr)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                    timeout_graceful_shutdown=30)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return EXIT_OK
