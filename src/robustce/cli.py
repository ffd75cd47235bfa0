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
from typing import Any, NoReturn

from robustce.errors import RobustCEError, ValidationError

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


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


# ----------------------------------------------------------------------------------------
# demo, explain, certify, benchmark
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
    p.add_argument("--quick", action="store_true", help="smaller data, model and query set (seconds)")
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


def _add_explain(sub: Any) -> None:
    p = sub.add_parser(
        "explain", help="explain queries with one method and save the Explanations",
        description="Explain queries with one method; the Explanations directory goes to --out "
                    "(a model trained here is saved to OUT/model).")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", metavar="NAME", help="a registered dataset (robustce datasets list)")
    src.add_argument("--data", metavar="CSV", help="your own data as CSV (needs --target)")
    p.add_argument("--target", metavar="COL", help="target column of --data")
    p.add_argument("--data-home", metavar="DIR", default=None, help="folder holding dataset files")
    p.add_argument("--model", metavar="DIR", default=None,
                   help="a saved model (model.save); default: train an MLP on the training split")
    p.add_argument("--method", metavar="NAME", required=True,
                   help="method name, e.g. nearest_neighbour, wachter, milp_nearest, milp_robust")
    p.add_argument("--param", metavar="K=V", action="append", default=[],
                   help="method parameter (repeatable); V is read as TOML (0.1, [1,2], true), "
                        "else as a string; a parameter typed ParameterShift takes D "
                        "(shift=0.03) or a table (shift={delta=0.03,biases=false})")
    q = p.add_mutually_exclusive_group()
    q.add_argument("--queries", metavar="N", type=int, default=None,
                   help="explain the first N test rows predicted as --from-class (default 10)")
    q.add_argument("--queries-file", metavar="CSV", default=None,
                   help="raw rows to explain (the dataset's feature columns)")
    p.add_argument("--favourable", metavar="LABEL", default=None,
                   help="the label of the favourable outcome (e.g. approved); default: the "
                        "dataset's declared one, else read from the labels")
    p.add_argument("--target-class", metavar="LABEL", default=None,
                   help="the class the CEs should reach (label or index; default: the "
                        "favourable class)")
    p.add_argument("--from-class", metavar="LABEL", default=None,
                   help="with --queries: pick rows the model predicts as this class (label or "
                        "index; default: binary, the other class than --target-class; "
                        "multi-class, any other class)")
    act = p.add_argument_group("actionability (override the schema)")
    act.add_argument("--immutable", metavar="F1,F2", default=None,
                     help="features a CE must not change (e.g. age,sex)")
    act.add_argument("--increase-only", metavar="F1,F2", default=None,
                     help="features a CE may only increase (e.g. education)")
    act.add_argument("--decrease-only", metavar="F1,F2", default=None,
                     help="features a CE may only decrease (e.g. debt)")
    act.add_argument("--free", metavar="F1,F2", default=None,
                     help="features a CE may change either way")
    act.add_argument("--schema", metavar="TOML", default=None,
                     help="the schema to use (kinds, bounds, actionability, favourable class); "
                          "write a starting point with `robustce datasets describe "
                          "--write-schema`")
    p.add_argument("--hidden", default="20,10", metavar="H1,H2",
                   help="hidden layer sizes of the MLP trained without --model (default 20,10)")
    p.add_argument("--epochs", type=int, default=None, metavar="N",
                   help="training epochs of the MLP trained without --model (default: until "
                        "the training loss stops improving, at most 1000)")
    p.add_argument("--seed", type=int, default=0, help="split, training and method seed (default 0)")
    p.add_argument("--test-size", type=float, default=0.2, help="test share of the split (default 0.2)")
    p.add_argument("--out", metavar="DIR", required=True, help="Explanations directory to write")
    p.add_argument("--show", type=int, default=3, metavar="K", help="print the CEs of K queries")
    p.add_argument("--quiet", action="store_true", help="no progress bar or notes on stderr")
    p.set_defaults(func=_cmd_explain)


def _user_error(message: str) -> Exception:
    return ValidationError(message)


def _read_csv(path: str, what: str) -> Any:
    import pandas as pd

    try:
        return pd.read_csv(path)
    except FileNotFoundError:
        raise _user_error(f"{what} file not found: {path}") from None
    except (OSError, ValueError, pd.errors.ParserError) as exc:  # EmptyDataError is a ValueError
        raise _user_error(f"{what} file {path} cannot be read as CSV: {exc}") from None


def _parse_params(items: Sequence[str]) -> dict[str, Any]:
    import tomllib

    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise _user_error(f"--param {item!r}: expected KEY=VALUE")
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        out[key] = value
    return out


def _load_dataset(args: argparse.Namespace) -> Any:
    """The dataset of ``--dataset`` / ``--data``, with ``--schema``, ``--favourable`` and the
    actionability flags applied."""
    from dataclasses import replace

    from robustce.data.dataset import from_frame
    from robustce.data.registry import load
    from robustce.data.schema_file import read_schema_file

    sf = read_schema_file(args.schema) if getattr(args, "schema", None) else None
    favourable = args.favourable if args.favourable is not None else (sf and sf.favourable)
    if args.dataset is not None:
        if args.target is not None:
            raise _user_error("--target goes with --data (a registered dataset knows its target)")
        data = load(args.dataset, data_home=args.data_home)
        if sf is not None:
            if sorted(sf.schema.names) != sorted(data.schema.names):
                raise _user_error(f"--schema {args.schema} describes {sf.schema.names}, but "
                                  f"{data.name} has the features {data.schema.names}")
            sf.schema.validate(data.frame[sf.schema.names])
            data = replace(data, frame=data.frame[sf.schema.names], schema=sf.schema)
    else:
        target = args.target or (sf and sf.target)
        if not target:
            raise _user_error("--data needs --target COL (the label column)")
        frame = _read_csv(args.data, "--data")
        data = from_frame(frame, target, None if sf is None else sf.schema, name=args.data)
    if favourable:
        data = data.with_favourable(favourable)
    actions = {}
    for flag, action in (("free", "free"), ("immutable", "immutable"),
                         ("increase_only", "increase"), ("decrease_only", "decrease")):
        for name in _names(getattr(args, flag, None)):
            if name not in data.schema.names:
                raise _user_error(f"--{flag.replace('_', '-')}: no feature named {name!r}; "
                                  f"features: {', '.join(data.schema.names)}")
            if actions.get(name, action) != action:
                raise _user_error(f"feature {name!r} is given two actionabilities "
                                  f"({actions[name]}, {action})")
            actions[name] = action
    if actions:
        data = replace(data, schema=data.schema.with_actionability(**actions))
    return data


def _names(text: str | None) -> list[str]:
    return [] if not text else [n.strip() for n in text.split(",") if n.strip()]


def _classes(args: argparse.Namespace, data: Any) -> tuple[int, int | None]:
    """(target class, from class or None = any other) of ``explain``, checked before any
    training; prints the class mapping and warns where the favourable class is a guess."""
    k = data.n_classes
    if args.target_class is not None:
        target = data.class_index(args.target_class)
    elif data.favourable is not None:
        target = data.favourable
    elif k == 2:
        target = 1
        if not args.quiet:
            print(f"warning: the labels {list(map(str, data.class_names))} do not say which "
                  f"outcome is favourable; explaining toward {data.class_names[1]!s} (class 1). "
                  "Choose with --favourable LABEL", file=sys.stderr)
    else:
        raise _user_error(f"{data.name} has {k} classes ({data.class_mapping()}) and no "
                          "favourable one: give --target-class LABEL")
    if args.from_class is not None:
        source: int | None = data.class_index(args.from_class)
        if source == target:
            raise _user_error(f"--from-class and the target class are both "
                              f"{data.class_names[target]!s}; nothing to explain")
    else:
        source = 1 - target if k == 2 else None
    where = "any other class" if source is None else str(data.class_names[source])
    rows = (f"the rows of {args.queries_file}" if getattr(args, "queries_file", None)
            else f"rows predicted {where}")
    print(f"classes: {data.class_mapping()}; explaining {rows} toward {data.class_names[target]!s}")
    return target, source


def _read_queries(path: str, schema: Any, target: str | None) -> Any:
    frame = _read_csv(path, "--queries-file")
    if len(frame) == 0:
        raise _user_error(f"--queries-file {path} has no rows")
    if "query_id" in frame.columns:
        if not frame["query_id"].is_unique:
            raise _user_error(f"--queries-file {path}: query_id values are not unique")
        frame = frame.set_index("query_id")
    if target is not None and target in frame.columns:
        frame = frame.drop(columns=[target])
    try:
        schema.validate(frame)
    except RobustCEError as exc:
        raise _user_error(f"--queries-file {path}: {exc}") from None
    return frame[schema.names]


def _cmd_explain(args: argparse.Namespace) -> int:
    from pathlib import Path

    from robustce.evaluation.config import method_params
    from robustce.methods.registry import build_explainer, get_method
    from robustce.models import MLP
    from robustce.models import load as load_model

    if not 0 < args.test_size < 1:
        raise _user_error(f"--test-size must be in (0, 1), got {args.test_size}")
    try:
        hidden = tuple(int(h) for h in args.hidden.split(",") if h.strip())
    except ValueError:
        raise _user_error(f"--hidden must be comma-separated integers, got {args.hidden!r}") from None
    if not hidden or min(hidden) < 1 or (args.epochs is not None and args.epochs < 1):
        raise _user_error("--hidden needs positive layer sizes and --epochs a positive integer")
    if args.queries is not None and args.queries < 1:
        raise _user_error(f"--queries must be a positive integer, got {args.queries}")
    out_path = _check_explanations_out(args.out)
    cls = get_method(args.method)
    try:
        params = method_params(cls, _parse_params(args.param), "--param")
    except RobustCEError as exc:
        raise _user_error(str(exc).replace("--param.", "--param ", 1)) from None

    data = _load_dataset(args)
    target, source = _classes(args, data)  # before any training: an unknown class stops here
    train, test = data.split(test_size=args.test_size, random_state=args.seed)
    model = None if args.model is None else load_model(args.model)
    if model is not None:
        try:
            model.encoder.transform(train.frame.iloc[:1])
        except RobustCEError as exc:
            raise _user_error(f"--model {args.model} does not fit the data: {exc}") from None
    queries = None
    if args.queries_file is not None:  # checked before any training
        label = args.target or getattr(data.target, "name", None)
        schema = model.encoder.schema if model is not None else data.schema
        queries = _read_queries(args.queries_file, schema, label)
    trained = model is None
    if trained:  # the method's parameters are checked before the (possibly long) training
        build_explainer(cls, _stand_in_model(train, hidden), train, seed=args.seed, **params)
        if not args.quiet:
            print(f"training an MLP on {len(train)} rows of {data.name} ...", file=sys.stderr)
        model = MLP(hidden, epochs=args.epochs, lr=5e-3, random_state=args.seed).fit(train)
    if queries is None:
        queries = _pick_queries(model, test, args.queries or 10, target, source, data)
    explainer = build_explainer(cls, model, train, seed=args.seed, **params)
    expl, done = _explain_chunks(explainer, queries, target, progress=not args.quiet)
    if done < len(queries):  # Ctrl-C: keep what was explained, beside --out
        partial = out_path.with_name(out_path.name + ".partial")
        if expl is not None:
            expl.meta["partial"] = f"{done} of {len(queries)} queries (interrupted)"
            _save_explain_output(expl, model if trained else None, partial)
            print(f"robustce: interrupted after {done} of {len(queries)} queries; partial "
                  f"results: {partial}", file=sys.stderr)
            return EXIT_INTERRUPTED
        raise KeyboardInterrupt
    out = _save_explain_output(expl, model if trained else None, out_path)
    counts = {k: v for k, v in expl.status_counts().items() if v}
    print(f"{expl.method}: {len(expl)} queries — " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for qid in list(expl.query_ids[: max(args.show, 0)]):
        expl.show(qid)
    print(f"explanations: {out}")
    if trained:
        print(f"model:        {Path(out) / 'model'}")
    return EXIT_OK


def _pick_queries(model: Any, test: Any, n: int, target: int, source: int | None,
                  data: Any) -> Any:
    """The first ``n`` test rows the model predicts as ``source`` (``None``: as any class
    but ``target``); one line naming the class by its label when there are none."""
    pred = model.predict(test.frame)
    keep = pred != target if source is None else pred == source
    if not keep.any():
        what = ("any class but " + str(data.class_names[target]) if source is None
                else str(data.class_names[source]))
        raise _user_error(f"the model predicts no test row as {what}; nothing to explain "
                          "(choose --from-class or --target-class)")
    return test.frame[keep].iloc[: int(n)]


def _explain_chunks(explainer: Any, queries: Any, target: int, *, progress: bool
                    ) -> tuple[Any, int]:
    """Explain ``queries`` in about 20 batches with a progress bar (stderr, only on a
    terminal). Returns (the explanations, queries done): on Ctrl-C, those of the batches
    finished so far (``None`` if none)."""
    import math

    from tqdm.auto import tqdm

    from robustce.explanations import Explanations

    n = len(queries)
    size = max(1, math.ceil(n / 20))
    parts: list[Any] = []
    done = 0
    show = progress and sys.stderr.isatty()
    with tqdm(total=n, desc="explain", unit="query", disable=not show, file=sys.stderr) as bar:
        try:
            for start in range(0, n, size):
                parts.append(explainer.explain(queries.iloc[start:start + size],
                                               target_class=target))
                done = min(n, start + size)
                bar.update(len(parts[-1]))
        except KeyboardInterrupt:
            pass
    return (Explanations.concat(parts) if parts else None), done


def _stand_in_model(train: Any, hidden: tuple[int, ...]) -> Any:
    """A throwaway one-epoch MLP of the same shape on a few rows of each class: building the
    explainer on it validates the method's parameters before the real training."""
    import warnings

    import numpy as np

    from robustce.errors import ConstantModelWarning
    from robustce.models import MLP

    rows = np.concatenate([np.flatnonzero(train.y == k)[:10] for k in np.unique(train.y)])
    with warnings.catch_warnings():  # a throwaway model: what it learned does not matter
        warnings.simplefilter("ignore", ConstantModelWarning)
        return MLP(hidden, epochs=1, random_state=0).fit(train.subset(np.sort(rows)))


def _check_explanations_out(out: str) -> Any:
    """``explain --out``: writable, and not a non-empty directory that is not a saved
    Explanations directory (checked before any work; nothing is created)."""

    from robustce.utils import check_destination

    path = check_destination(out, "--out")
    if path.is_dir() and any(path.iterdir()) and not (path / "meta.json").exists():
        raise _user_error(f"--out {path} is a non-empty directory that is not a saved "
                          "Explanations directory; choose a new or empty path")
    return path


def _save_explain_output(expl: Any, model: Any, out: Any) -> Any:
    """Write the explanations (and the trained ``model``, if any, under ``model/``) into one
    temporary sibling of ``out`` and rename it into place once: all of it appears, or none."""
    import shutil

    from robustce.utils import replace_dir, temp_dir_beside

    staging = temp_dir_beside(out, "explain")
    try:
        expl.save(staging / "explanations")
        if model is not None:
            model.save(staging / "explanations" / "model")
        replace_dir(staging / "explanations", out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


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
    from robustce.evaluation.config import config_path, named_configs, parse_config, read_toml
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
    if args.variant:
        from robustce.evaluation.config import apply_variant

        raw = apply_variant(raw, args.variant)
    config = parse_part_shift(raw, base_dir=path.parent, quick=args.quick)
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
    _add_certify(sub)
    _add_benchmark(sub)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
