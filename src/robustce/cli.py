"""Command-line interface: ``robustce <command> ...``.

Layout: :func:`build_parser` creates the top-level parser and one sub-parser per command;
each command is a function ``_cmd_<name>(args) -> int`` attached with
``set_defaults(func=...)``. To add a command, write ``_add_<name>(subparsers)`` that builds
its parser and call it from :func:`build_parser`.

Exit codes: 0 success, 2 user error (any :class:`~robustce.errors.RobustCEError`, printed as
one line on stderr without a traceback, and argparse usage errors), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from robustce.errors import RobustCEError

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


def _version() -> str:
    from robustce import __version__

    return __version__


# ----------------------------------------------------------------------------------------
# datasets
# ----------------------------------------------------------------------------------------


def _add_datasets(sub: Any) -> None:
    p = sub.add_parser("datasets", help="list and describe the registered datasets",
                       description="List and describe the registered datasets.")
    p.set_defaults(func=_help_of(p))
    dsub = p.add_subparsers(dest="datasets_command", metavar="ACTION")

    pl = dsub.add_parser("list", help="names, type (builtin/file) and descriptions")
    pl.set_defaults(func=_cmd_datasets_list)

    pd_ = dsub.add_parser("describe", help="rows, columns, feature kinds, class balance",
                          description="Load a dataset and describe it.")
    pd_.add_argument("name", help="dataset name (see `robustce datasets list`)")
    pd_.add_argument("--data-home", metavar="DIR", default=None,
                     help="folder holding the dataset files (default: $ROBUSTCE_DATA, "
                          "then the download cache)")
    pd_.set_defaults(func=_cmd_datasets_describe)


def _cmd_datasets_list(args: argparse.Namespace) -> int:
    from robustce.data.registry import list_datasets

    specs = list_datasets()
    width = max(len(s.name) for s in specs)
    print(f"{'name':<{width}}  {'type':<7}  description")
    for s in specs:
        print(f"{s.name:<{width}}  {'builtin' if s.builtin else 'file':<7}  {s.description}")
    return EXIT_OK


def _cmd_datasets_describe(args: argparse.Namespace) -> int:
    from robustce.data.registry import load

    data = load(args.name, data_home=args.data_home)
    info = data.describe()
    kinds = info["kinds"]
    print(f"{info['name']}: {info['description']}" if info["description"] else info["name"])
    print()
    print(f"rows:     {info['rows']}")
    print(f"columns:  {info['columns']} raw features")
    counts = kinds["kind"].value_counts()
    print("kinds:    " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    immutable = data.schema.immutable
    print(f"immutable: {', '.join(immutable) if immutable else '(none)'}")
    print()
    print("class balance:")
    total = max(info["rows"], 1)
    for k, (label, n) in enumerate(info["class_balance"].items()):
        print(f"  {k}  {label:<16} {n:>8}  ({100 * n / total:5.1f}%)")
    if data.groups is not None:
        print()
        print(f"groups ({data.groups.name}):")
        for g, n in data.groups.value_counts(sort=False).sort_index().items():
            print(f"  {g!s:<18} {n:>8}")
    print()
    print(kinds.to_string(index=False))
    return EXIT_OK


# ----------------------------------------------------------------------------------------
# parser and entry point
# ----------------------------------------------------------------------------------------


def _help_of(parser: argparse.ArgumentParser):
    def show_help(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_USER_ERROR

    return show_help


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robustce",
        description="Robust counterfactual explanations with checkable guarantees.",
    )
    parser.add_argument("--version", action="version", version=f"robustce {_version()}")
    parser.set_defaults(func=_help_of(parser))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_datasets(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        code = exc.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_USER_ERROR)
    try:
        return int(args.func(args) or EXIT_OK)
    except RobustCEError as exc:
        print(f"robustce: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("robustce: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
