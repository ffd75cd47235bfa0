"""``robustce ledger check``: re-score the ledger's outstanding promises with a new model
version, print the honour rates (``--json``: the report's JSON), and with
``--min-honour-rate R`` exit 1 with one line when the rate overall or of any ``--group``
falls below R (docs/ledger.md). Also the ``--ledger`` option of ``explain`` and ``notice``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from robustce.cli._common import EXIT_OK, _user_error

__all__ = ["add_ledger_option", "open_ledger", "promise_expiry"]

EXIT_GATE_FAILED = 1


def add_ledger_option(p: argparse.ArgumentParser) -> None:
    """``--ledger URL`` and ``--promise-days D`` of ``explain`` and ``notice``."""
    p.add_argument("--ledger", metavar="URL", default=None,
                   help="record every option given as a promise in this ledger (an SQLite "
                        "path or a database URL; docs/ledger.md)")
    p.add_argument("--promise-days", type=float, default=None, metavar="D",
                   help="with --ledger: the promises expire D days after they are issued "
                        "(default: no expiry)")


def open_ledger(args: argparse.Namespace) -> Any:
    """The ``--ledger`` of ``explain``/``notice`` opened (before any work), or None."""
    if args.promise_days is not None and (args.ledger is None or not args.promise_days > 0):
        raise _user_error("--promise-days needs --ledger and a positive number of days")
    if args.ledger is None:
        return None
    from robustce.ledger import Ledger

    return Ledger(args.ledger)


def promise_expiry(args: argparse.Namespace) -> Any:
    """When promises issued now expire (``--promise-days``), or None."""
    if args.promise_days is None:
        return None
    from datetime import UTC, datetime, timedelta

    return datetime.now(UTC) + timedelta(days=args.promise_days)


def _add_ledger(sub: Any) -> None:
    p = sub.add_parser("ledger", help="check the recourse issued so far against a new model",
                       description="The recourse ledger (docs/ledger.md).")
    lsub = p.add_subparsers(dest="ledger_command", metavar="ACTION", required=True)
    c = lsub.add_parser(
        "check", help="honour rate of the outstanding promises under a new model; the gate",
        description="Re-score every outstanding promise's target row with --model and report "
                    "the honour rate overall, by method, certificate, group and age, with the "
                    "repairs of the broken ones. With --min-honour-rate R: exit 1 when the "
                    "rate overall or of any group is below R.")
    c.add_argument("--ledger", metavar="URL", required=True, help="the ledger (path or URL)")
    c.add_argument("--model", metavar="DIR", required=True, help="the new model (model.save)")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.add_argument("--min-honour-rate", type=float, default=None, metavar="R",
                   help="the deployment gate: exit 1 when a rate is below R (0 to 1)")
    c.add_argument("--group", metavar="COL", action="append", default=[],
                   help="a column of the applicants' rows to report (and gate) by; repeatable")
    c.add_argument("--policy", choices=["report", "reissue", "grandfather"], default="report",
                   help="report only (default); reissue repairs as new promises; grandfather: "
                        "the issuing version decides until a promise expires")
    c.add_argument("--no-repair", action="store_true", help="do not compute repairs")
    c.add_argument("--repair-method", metavar="NAME", default="milp_nearest",
                   help="nearest-CE method of the repairs (default milp_nearest)")
    c.add_argument("--n-boot", type=int, default=200, metavar="N",
                   help="bootstrap replicates of the intervals (default 200)")
    c.add_argument("--seed", type=int, default=0, help="bootstrap and repair seed (default 0)")
    c.add_argument("--partition-size", type=int, default=10_000, metavar="N",
                   help="promises scored at a time (default 10000)")
    c.add_argument("--max-broken", type=int, default=None, metavar="N",
                   help="list and repair at most N broken promises (default: all)")
    c.add_argument("--as-of", metavar="TIME", default=None,
                   help="take the promises outstanding at this ISO 8601 time (default now)")
    c.set_defaults(func=_cmd_ledger_check)


def _sqlite_path(url: str) -> Path | None:
    if "://" not in url:
        return Path(url).expanduser()
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return Path(url[len("sqlite:///"):])
    return None


def _cmd_ledger_check(args: argparse.Namespace) -> int:
    from robustce.ledger import Ledger, check
    from robustce.ledger.promises import as_micros
    from robustce.methods.registry import get_method
    from robustce.models import load as load_model

    r = args.min_honour_rate
    if r is not None and not 0 <= r <= 1:
        raise _user_error(f"--min-honour-rate must be in [0, 1], got {r}")
    if args.n_boot < 0 or args.partition_size < 1 or (args.max_broken or 0) < 0:
        raise _user_error("--n-boot and --max-broken must be >= 0 and --partition-size >= 1")
    if args.as_of is not None:
        as_micros(args.as_of)
    if not args.no_repair:
        get_method(args.repair_method)
    path = _sqlite_path(args.ledger)
    if path is not None and not path.is_file():
        raise _user_error(f"--ledger {args.ledger}: no such ledger file")
    book = Ledger(args.ledger)
    try:
        model = load_model(args.model)
        report = check(book, model, groups=args.group, policy=args.policy,
                       repair=not args.no_repair, repair_method=args.repair_method,
                       n_boot=args.n_boot, seed=args.seed, partition_size=args.partition_size,
                       as_of=args.as_of, max_broken=args.max_broken)
    finally:
        book.close()
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=1, allow_nan=False))
    else:
        print(report.format())
    failures = report.gate(r) if r is not None else []
    if failures:
        print(f"robustce: ledger gate failed: {'; '.join(failures)}", file=sys.stderr)
        return EXIT_GATE_FAILED
    return EXIT_OK
