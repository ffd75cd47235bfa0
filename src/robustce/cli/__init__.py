"""Command-line interface: ``robustce <command> ...``.

Layout: :func:`build_parser` creates the top-level parser and one sub-parser per command;
each command is a function ``_cmd_<name>(args) -> int`` attached with
``set_defaults(func=...)``. To add a command, write ``_add_<name>(subparsers)`` that builds
its parser and call it from :func:`build_parser`. ``explain`` lives in
:mod:`robustce.cli.explain`, ``notice`` and ``audit`` in :mod:`robustce.cli.notice` and
:mod:`robustce.cli.audit`, ``audit-log`` in :mod:`robustce.cli.audit_log`, ``ledger`` in
:mod:`robustce.cli.ledger`; what commands
share (exit codes, user errors, the dataset of
``--dataset`` / ``--data``) in :mod:`robustce.cli._common`.

Exit codes: 0 success, 2 user error (any :class:`~robustce.errors.RobustCEError`, printed as
one line on stderr without a traceback, and argparse usage errors), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from robustce.cli._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USER_ERROR,
    _load_dataset,
    _user_error,
)
from robustce.cli.audit import _add_audit
from robustce.cli.audit_log import _add_audit_log
from robustce.cli.explain import _add_explain
from robustce.cli.ledger import _add_ledger
from robustce.cli.notice import _add_notice
from robustce.cli.serve import _add_serve
from robustce.errors import RobustCEError

__all__ = ["build_parser", "main"]


def _version() -> str:
    from robustce.utils import package_version

    return package_version()


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
                          description="Load a dataset (a registered one, or your CSV with "
                                      "--data and --target) and describe it; --write-schema "
                                      "writes its schema as an editable TOML file for "
                                      "`robustce explain --schema`.")
    pd_.add_argument("name", nargs="?", default=None,
                     help="dataset name (see `robustce datasets list`)")
    pd_.add_argument("--data", metavar="CSV", default=None, help="your own data as CSV (needs --target)")
    pd_.add_argument("--target", metavar="COL", default=None, help="target column of --data")
    pd_.add_argument("--favourable", metavar="LABEL", default=None,
                     help="the label of the favourable outcome (e.g. approved)")
    pd_.add_argument("--write-schema", metavar="TOML", default=None,
                     help="write the schema (kinds, bounds, actionability, favourable class) here")
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
    from robustce.data.schema_file import write_schema_file
    from robustce.utils import check_destination

    if (args.name is None) == (args.data is None):
        raise _user_error("give a dataset NAME or --data CSV --target COL")
    schema_out = None
    if args.write_schema is not None:
        schema_out = check_destination(args.write_schema, "--write-schema", directory=False)
    args.dataset, args.schema = args.name, None
    data = _load_dataset(args)
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
        fav = "  favourable" if k == data.favourable else ""
        print(f"  {k}  {label:<16} {n:>8}  ({100 * n / total:5.1f}%){fav}")
    _print_shipped_constraints(info["constraints"])
    if data.groups is not None:
        print()
        print(f"groups ({data.groups.name}):")
        for g, n in data.groups.value_counts(sort=False).sort_index().items():
            print(f"  {g!s:<18} {n:>8}")
    print()
    print(kinds.to_string(index=False))
    if schema_out is not None:
        write_schema_file(data, schema_out, target=args.target)
        print(f"schema: {schema_out}")
    return EXIT_OK


def _print_shipped_constraints(spec: dict[str, Any] | None) -> None:
    """The constraints a dataset ships, which every method applies unless told otherwise."""
    print()
    if spec is None:
        print("constraints: (none shipped)")
        return
    print("constraints (every method applies them by default; constraints=None switches "
          "them off):")
    for text in spec.get("relations", []):
        print(f"  relation     {text}")
    for text in spec.get("conditionals", []):
        print(f"  conditional  {text}")
    for group in spec.get("groups", []):
        print(f"  group        {', '.join(group)}")
    for child, parents in (spec.get("causal") or {}).items():
        print(f"  causal       {child} := " + " + ".join(f"{b:g}·{p}" for p, b in parents.items())
              + " + U")
    if spec.get("max_changes") is not None:
        print(f"  max_changes  {spec['max_changes']}")


# ----------------------------------------------------------------------------------------
# demo, certify, benchmark (explain: robustce.cli.explain)
# ----------------------------------------------------------------------------------------


def _add_demo(sub: Any) -> None:
    p = sub.add_parser(
        "demo", help="train, explain, evaluate and report on built-in data (no download)",
        description="Train an MLP on the built-in synthetic loan data, explain rejected "
                    "applicants with every available method, evaluate validity, proximity, "
                    "plausibility and robustness, print the table and write an HTML + Markdown "
                    "report and the explanations.")
    p.add_argument("--out", metavar="DIR", default="robustce-demo",
                   help="output directory (default: ./robustce-demo)")
    p.add_argument("--quick", action="store_true",
                   help="smaller data, fewer models and queries (about half a minute)")
    p.add_argument("--delta", type=float, default=None, metavar="D",
                   help="parameter-shift δ for the robust methods and Δ-validity (default 0.03)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from robustce.evaluation.demo import DEFAULT_DELTA, run_demo

    delta = DEFAULT_DELTA if args.delta is None else args.delta
    if not delta > 0:
        raise _user_error(f"--delta must be positive, got {args.delta}")
    run_demo(args.out, quick=args.quick, delta=delta, progress=not args.no_progress)
    return EXIT_OK


def _add_certify(sub: Any) -> None:
    p = sub.add_parser(
        "certify", help="exact Δ-robustness certificates for saved explanations",
        description="Check every counterfactual of an Explanations directory for Δ-robustness "
                    "under a parameter shift of size δ (exact MILP test); print the "
                    "certificates and write them as CSV.")
    p.add_argument("explanations", metavar="EXPLANATIONS_DIR")
    p.add_argument("--model", metavar="DIR", default=None,
                   help="the saved model the CEs are for (default: EXPLANATIONS_DIR/model)")
    p.add_argument("--delta", type=float, required=True, metavar="D",
                   help="every weight and bias may move by ±D")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="S",
                   help="MILP seconds per counterfactual (default 10)")
    p.add_argument("--exact-value", action="store_true",
                   help="solve every MILP to get the worst-case margin (no interval/attack shortcut)")
    p.add_argument("--out", metavar="CSV", default=None,
                   help="certificates file (default: EXPLANATIONS_DIR/certificates_delta<D>.csv)")
    p.set_defaults(func=_cmd_certify)


def _cmd_certify(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    import pandas as pd

    from robustce.explanations import Explanations
    from robustce.models import load as load_model
    from robustce.robustness import ParameterShift, exact_worst_case
    from robustce.utils import atomic_write, check_destination
    from robustce.validation import check_number

    shift = ParameterShift(delta=args.delta)
    check_number(args.time_limit, "--time-limit", low=0, low_open=True)
    if args.out:
        args.out = str(check_destination(args.out, "--out", directory=False))
    expl = Explanations.load(args.explanations)
    model_dir = Path(args.model) if args.model else Path(args.explanations) / "model"
    if args.model is None and not model_dir.exists():
        raise _user_error(f"no model given and {model_dir} does not exist; pass --model DIR")
    model = load_model(model_dir)
    cfs = expl.counterfactuals_encoded
    if cfs.shape[1] != model.encoder.n_features_out_:
        raise _user_error(f"the explanations have {cfs.shape[1]} model-space columns but the model "
                          f"expects {model.encoder.n_features_out_}; wrong --model?")
    rows = expl.counterfactuals[["query_id", "cf_rank"]].reset_index(drop=True)
    if len(cfs) == 0:
        print("no counterfactuals to certify")
        return EXIT_OK
    targets = expl.target_class.loc[rows["query_id"]].to_numpy()
    res = exact_worst_case(model, cfs, shift, targets, time_limit=args.time_limit,
                           precheck=not args.exact_value)
    table = pd.concat([rows, res.to_frame().drop(columns=["p", "biases"], errors="ignore")], axis=1)
    table.insert(2, "valid", model.predict(cfs) == targets)
    for col in ("value", "lower", "upper", "time"):
        if col in table.columns:
            table[col] = pd.to_numeric(table[col], errors="coerce")
    out = (Path(args.out) if args.out
           else Path(os.path.normpath(Path(args.explanations) / f"certificates_delta{args.delta:g}.csv")))
    with atomic_write(out) as fh:
        table.to_csv(fh, index=False)
    show = table[["query_id", "cf_rank", "valid", "status", "decided_by", "lower", "upper", "value",
                  "time"]]
    with pd.option_context("display.max_rows", 200, "display.width", 120):
        print(show.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    counts = table["status"].value_counts()
    print()
    print(f"δ = {args.delta:g}: {len(table)} counterfactuals — "
          + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"certificates: {out}")
    return EXIT_OK


def _add_benchmark(sub: Any) -> None:
    p = sub.add_parser(
        "benchmark", help="run a benchmark (methods × datasets × seeds): a named one or a TOML file",
        description="Run or resume a benchmark: NAME is a configuration shipped with robustce "
                    "(`robustce benchmark --list`), or give the path of a TOML file (see "
                    "docs/benchmark.md). Finished cells are skipped; the table is printed and an "
                    "HTML + Markdown report written to the output directory. Exit code 1 if some "
                    "cells failed.")
    p.add_argument("config", metavar="NAME|CONFIG.toml", nargs="?", default=None)
    p.add_argument("--list", action="store_true", help="list the named configurations and exit")
    p.add_argument("--quick", action="store_true",
                   help="the configuration's [quick] scale: the same protocol on fewer seeds, "
                        "queries and retrained models (output to DIR-quick by default)")
    p.add_argument("--variant", metavar="NAME", default=None,
                   help="a protocol variant of the configuration, its [variants.NAME] table "
                        "(e.g. `authors`: the construction of the paper's own code; output to "
                        "DIR-NAME by default)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default: the config's out_dir, else results/NAME)")
    p.add_argument("--n-jobs", type=int, default=None, metavar="N", help="parallel workers (-1 = all cores)")
    p.add_argument("--backend", default=None, metavar="NAME",
                   help="joblib backend: loky (default), threading, dask, ...")
    p.add_argument("--retry-errors", action="store_true", help="recompute cells that failed before")
    p.add_argument("--fresh", action="store_true", help="recompute every cell")
    p.add_argument("--no-report", action="store_true", help="skip the HTML/Markdown report")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_benchmark)


def _cmd_benchmark(args: argparse.Namespace) -> int:
    from pathlib import Path

    from robustce.errors import ConfigError
    from robustce.evaluation.config import parse_config, read_toml
    from robustce.evaluation.config_named import config_path, named_configs
    from robustce.evaluation.report import write_report
    from robustce.evaluation.runner import run_benchmark
    from robustce.utils import check_destination

    if args.list:
        names = named_configs()
        width = max((len(n) for n in names), default=4)
        for name, description in names.items():
            print(f"{name:<{width}}  {description}")
        return EXIT_OK
    if args.config is None:
        raise ConfigError("give a configuration: a name (robustce benchmark --list) or a .toml file")
    path = config_path(args.config)
    raw = read_toml(path)
    if raw.get("protocol") == "parts":
        return _run_part_shift(args, path, raw)
    config = parse_config(raw, base_dir=path.parent, quick=args.quick, variant=args.variant)
    if args.out:
        out = Path(args.out)
    else:
        out = config.out_dir or Path("results") / Path(args.config).stem
        if args.variant:
            out = out.with_name(f"{out.name}-{args.variant}")
        if args.quick:
            out = out.with_name(out.name + "-quick")
    if args.n_jobs == 0:
        raise ConfigError("--n-jobs must be non-zero (-1 = all cores)")
    out = check_destination(out, "--out" if args.out else "output directory")  # normalised
    result = run_benchmark(config, out, n_jobs=args.n_jobs, backend=args.backend,
                           progress=not args.no_progress, retry_errors=args.retry_errors,
                           resume=not args.fresh)
    print(result.format())
    extra = [*result.class_notes(), *result.notes()]  # notes() reads every cell: once
    for line in extra:
        print(f"note: {line}", file=sys.stderr)
    _report_failures(result.errors, lambda err: err["cell"])
    for reason, cells in result.skip_reasons().items():
        print(f"note: skipped {len(cells)} cell{'s' if len(cells) > 1 else ''} "
              f"({', '.join(cells[:3])}{', ...' if len(cells) > 3 else ''}): {reason}",
              file=sys.stderr)
    if not args.no_report:
        paths = write_report(result.table(), out, title=f"robustce benchmark — {config.name}",
                             notes=[f"seeds: {config.seeds}",
                                    "mean ± std over seeds and queries with a CE; coverage per seed",
                                    *extra])
        print(f"report: {paths['html']}")
    print(f"results: {out}")
    return 1 if result.errors else EXIT_OK


def _report_failures(errors: list[dict[str, Any]], name: Any) -> None:
    """One warning per distinct failure (naming up to three of its cells), and what to do:
    failures for missing data heal by themselves once the data is in place; the others are
    recomputed with ``--retry-errors``."""
    from robustce.evaluation.runner import failed_for_missing_data

    by_error: dict[str, list[str]] = {}
    for err in errors:
        by_error.setdefault(str(err.get("error", "?")), []).append(name(err))
    for text, cells in by_error.items():
        shown = ", ".join(cells[:3]) + (f" and {len(cells) - 3} more" if len(cells) > 3 else "")
        print(f"warning: {len(cells)} cell{'s' if len(cells) > 1 else ''} failed ({shown}): "
              f"{one_line(text)[:300]}", file=sys.stderr)
    if not errors:
        return
    if any(not failed_for_missing_data(e) for e in errors):
        print("note: rerun with --retry-errors to recompute the failed cells (finished cells "
              "are kept)", file=sys.stderr)
    else:
        print("note: the failed cells lacked data; a rerun once the data is in place retries "
              "them by itself", file=sys.stderr)


def _run_part_shift(args: argparse.Namespace, path: Any, raw: dict[str, Any]) -> int:
    """``robustce benchmark`` for a ``protocol = "parts"`` configuration (RoCourseNet's shift
    protocol, :mod:`robustce.evaluation.part_shift`)."""
    from pathlib import Path

    from robustce.errors import ConfigError
    from robustce.evaluation.part_shift import parse_part_shift, run_part_shift
    from robustce.evaluation.report import write_report
    from robustce.evaluation.runner import check_data
    from robustce.utils import check_destination

    if args.n_jobs is not None or args.backend is not None:
        raise ConfigError("--n-jobs / --backend: a parts-protocol benchmark runs its cells one "
                          "after another (training uses torch's threads)")
    config = parse_part_shift(raw, base_dir=path.parent, quick=args.quick, variant=args.variant)
    check_data(config)  # before any work: one line naming the missing files
    out = Path(args.out) if args.out else (config.out_dir or Path("results") / path.stem)
    if args.variant and not args.out:
        out = out.with_name(f"{out.name}-{args.variant}")
    if args.quick and not args.out:
        out = out.with_name(out.name + "-quick")
    out = check_destination(out, "--out" if args.out else "output directory")  # normalised
    result = run_part_shift(config, out, progress=not args.no_progress,
                            retry_errors=args.retry_errors, resume=not args.fresh)
    print(result.format())
    _report_failures(result.errors, lambda err: f"{err['dataset']} seed {err['seed']} "
                                                f"{err['method']}")
    if not args.no_report:
        seeds = sorted({c["seed"] for c in result.cells})
        paths = write_report(result.table(), out, title=f"robustce benchmark — {config.name}",
                             notes=[f"seeds: {seeds}", "per cell, the average over the "
                                    "dataset's parts; mean ± std over seeds"])
        print(f"report: {paths['html']}")
    print(f"results: {out}")
    return 1 if result.errors else EXIT_OK


# ----------------------------------------------------------------------------------------
# parser and entry point
# ----------------------------------------------------------------------------------------


def _help_of(parser: argparse.ArgumentParser):
    def show_help(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_USER_ERROR

    return show_help


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (``robustce explain: error: ...; see --help``)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_USER_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="robustce",
        description="Robust counterfactual explanations with checkable guarantees.",
    )
    parser.add_argument("--version", action="version", version=f"robustce {_version()}")
    parser.set_defaults(func=_help_of(parser))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_datasets(sub)
    _add_demo(sub)
    _add_explain(sub)
    _add_notice(sub)
    _add_audit(sub)
    _add_audit_log(sub)
    _add_certify(sub)
    _add_benchmark(sub)
    _add_serve(sub)
    _add_ledger(sub)
    return parser


def one_line(text: str) -> str:
    """A message on one line (e.g. torch's two-line shape-mismatch text): lines joined by "; "."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


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
        print(f"robustce: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("robustce: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

