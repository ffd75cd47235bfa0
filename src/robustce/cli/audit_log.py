"""``robustce audit-log verify FILE``: check the service's hash-chained audit log
(:func:`robustce.serve.audit_log.verify_log`); one line per problem and exit 1, or a one-line
summary and exit 0."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from robustce.cli._common import EXIT_OK, EXIT_USER_ERROR, _user_error

#: the exit status of a log with problems
EXIT_DAMAGED = 1


def _add_audit_log(sub: Any) -> None:
    p = sub.add_parser("audit-log", help="check the service's audit log (hash chain)",
                       description="Tools for the audit log `robustce serve --audit-log` writes.")

    def usage(args: argparse.Namespace) -> int:
        p.print_help(sys.stderr)
        return EXIT_USER_ERROR

    p.set_defaults(func=usage)
    asub = p.add_subparsers(dest="audit_log_command", metavar="ACTION")
    pv = asub.add_parser(
        "verify", help="check every line and the hash chain; exit 1 on any problem",
        description="Read an audit log line by line: every line must be whole JSON carrying the "
                    "hash of the line before it. Prints one line per problem (line number and "
                    "what: bad JSON, torn line, edited, deleted or inserted line) and exits 1; "
                    "prints the record count and the head hash and exits 0 when intact. Keep "
                    "the head hash elsewhere and pass it later with --head to detect records "
                    "rewritten or cut off since.")
    pv.add_argument("file", metavar="FILE")
    pv.add_argument("--head", metavar="SHA256", default=None,
                    help="a head hash printed by an earlier verify: that line must still be in the log")
    pv.set_defaults(func=_cmd_audit_log_verify)


def _cmd_audit_log_verify(args: argparse.Namespace) -> int:
    from robustce.serve.audit_log import verify_log

    head = args.head.strip().lower() if args.head else None
    if head is not None and not re.fullmatch(r"[0-9a-f]{64}", head):
        raise _user_error(f"--head must be a SHA-256 in hex (64 characters), got {args.head!r}")
    if not Path(args.file).is_file():
        raise _user_error(f"{args.file}: no such file")
    check = verify_log(args.file, head=head)
    if not check.ok:
        for problem in check.problems:
            print(f"{args.file}: {problem}")
        print(f"{args.file}: {len(check.problems)} problem{'s' if len(check.problems) > 1 else ''} "
              f"in {check.lines} lines", file=sys.stderr)
        return EXIT_DAMAGED
    print(f"{args.file}: OK, {check.lines} records, chain intact; head {check.head}")
    return EXIT_OK
