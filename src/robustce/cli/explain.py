"""``robustce explain``: one method on a dataset's test rows (or a CSV of queries), with an
MLP trained here or a saved model; the Explanations directory (and the trained model) written
to ``--out`` at once."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from robustce.cli._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    _load_dataset,
    _read_csv,
    _user_error,
    _with_flags,
    hidden_layers,
)
from robustce.cli.ledger import add_ledger_option, open_ledger, promise_expiry
from robustce.errors import RobustCEError


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
                        "dataset's declared one, else read from the labels. A model trained "
                        "here is saved with it (robustce serve aims recourse at it)")
    p.add_argument("--target-class", metavar="LABEL", default=None,
                   help="the class the CEs should reach (label or index; default: the "
                        "favourable class; without one declared, a model trained here is "
                        "saved with this class as its favourable one)")
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
    add_ledger_option(p)
    p.set_defaults(func=_cmd_explain)


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
                  "Choose with --favourable LABEL (a model trained here records no favourable "
                  "class until then)", file=sys.stderr)
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
    from robustce.evaluation.config_values import method_params
    from robustce.methods.registry import get_method

    if not 0 < args.test_size < 1:
        raise _user_error(f"--test-size must be in (0, 1), got {args.test_size}")
    hidden = hidden_layers(args)
    if args.queries is not None and args.queries < 1:
        raise _user_error(f"--queries must be a positive integer, got {args.queries}")
    out_path = _check_explanations_out(args.out)
    cls = get_method(args.method)
    try:
        params = method_params(cls, _parse_params(args.param), "--param")
    except RobustCEError as exc:
        raise _user_error(str(exc).replace("--param.", "--param ", 1)) from None
    ledger = open_ledger(args)  # a ledger that cannot be opened stops here, before any work
    try:
        return _explain(args, cls, params, hidden, out_path, ledger)
    finally:
        if ledger is not None:
            ledger.close()


def _explain(args: argparse.Namespace, cls: Any, params: dict[str, Any], hidden: Any,
             out_path: Any, ledger: Any) -> int:
    from pathlib import Path

    from robustce.methods.registry import build_explainer
    from robustce.models import MLP
    from robustce.models import load as load_model

    data = _load_dataset(args)
    target, source = _classes(args, data)  # before any training: an unknown class stops here
    train, test = data.split(test_size=args.test_size, random_state=args.seed)
    model = None if args.model is None else load_model(args.model)
    if model is not None:
        try:
            model.encoder.transform(train.frame.iloc[:1])
        except RobustCEError as exc:
            raise _user_error(f"--model {args.model} does not fit the data: {exc}") from None
        model = _with_flags(model, args, data)  # --immutable & co. over the saved schema
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
        if model.favourable is None and args.target_class is not None:
            model.set_favourable(target)  # the class the user chose to explain toward
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
    if ledger is not None:
        ids = ledger.record_explanations(model, expl, expires_at=promise_expiry(args))
        print(f"ledger:       {len(ids)} promises recorded in {ledger.url}")
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
