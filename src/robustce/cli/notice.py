"""``robustce notice``: adverse-action notices (JSON + HTML) for the declined applicants of
a dataset's test split (or a CSV of applicants), one pair of files per applicant, written
atomically; a rerun with the same arguments resumes (finished notices are kept)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from robustce.cli._common import EXIT_OK, _load_dataset, _user_error, _with_flags, hidden_layers
from robustce.cli.ledger import add_ledger_option, open_ledger, promise_expiry
from robustce.errors import RobustCEError


def _add_source_args(p: argparse.ArgumentParser) -> None:
    """Data, model, method and actionability arguments shared by ``notice`` and ``audit``."""
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", metavar="NAME", help="a registered dataset (robustce datasets list)")
    src.add_argument("--data", metavar="CSV", help="your own data as CSV (needs --target)")
    p.add_argument("--target", metavar="COL", help="target column of --data")
    p.add_argument("--data-home", metavar="DIR", default=None, help="folder holding dataset files")
    p.add_argument("--favourable", metavar="LABEL", default=None,
                   help="the label of the favourable outcome (default: the dataset's)")
    p.add_argument("--model", metavar="DIR", default=None,
                   help="a saved model (model.save); default: train an MLP on the training split")
    p.add_argument("--hidden", default="20,10", metavar="H1,H2",
                   help="hidden layers of the MLP trained without --model (default 20,10)")
    p.add_argument("--epochs", type=int, default=None, metavar="N",
                   help="epochs of the MLP trained without --model (default: until it converges)")
    p.add_argument("--param", metavar="K=V", action="append", default=[],
                   help="method parameter (repeatable; as in `robustce explain`): it goes to "
                        "each --method that takes it")
    p.add_argument("--family-size", type=int, default=0, metavar="N",
                   help="retrain N MLPs with other seeds and report robust validity vr over them "
                        "(default 0: not measured)")
    p.add_argument("--delta", type=float, default=None, metavar="D",
                   help="certify each CE's Δ-robustness with the exact test at δ = D")
    act = p.add_argument_group("actionability (override the schema)")
    act.add_argument("--protected", metavar="F1,F2", default=None,
                     help="protected features (sex, race, age...): immutable, never a reason")
    act.add_argument("--immutable", metavar="F1,F2", default=None)
    act.add_argument("--increase-only", metavar="F1,F2", default=None)
    act.add_argument("--decrease-only", metavar="F1,F2", default=None)
    act.add_argument("--free", metavar="F1,F2", default=None)
    act.add_argument("--schema", metavar="TOML", default=None, help="the schema to use")
    p.add_argument("--seed", type=int, default=0, help="split, training and method seed (default 0)")
    p.add_argument("--test-size", type=float, default=0.2, help="test share of the split (default 0.2)")
    p.add_argument("--out", metavar="DIR", required=True, help="output folder (resumable)")
    p.add_argument("--quiet", action="store_true", help="no notes on stderr")


def _add_notice(sub: Any) -> None:
    p = sub.add_parser(
        "notice", help="adverse-action notices (JSON + HTML) for declined applicants",
        description="Write one adverse-action notice per declined applicant: principal reasons, "
                    "1-3 recourse options with certificates, audit record (docs/notices.md).")
    _add_source_args(p)
    p.add_argument("--method", metavar="NAME", action="append", required=True,
                   help="method giving the options (repeatable: options of all methods "
                        "compete; a --param goes to each one that takes it)")
    p.add_argument("--applicants", metavar="N", type=int, default=3,
                   help="the first N declined test rows (default 3)")
    p.add_argument("--options", type=int, default=3, metavar="K", help="1-3 options (default 3)")
    p.add_argument("--n-jobs", type=int, default=1, metavar="N",
                   help="write the notices on N joblib processes (default 1: here)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                   help="write the notices on this Dask cluster (joblib's Dask backend)")
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for the scheduler (default 10)")
    add_ledger_option(p)
    p.set_defaults(func=_cmd_notice)


def prepare(args: argparse.Namespace, check: Callable[[Any, Any], None] | None = None
            ) -> tuple[Any, Any, Any, int, Any, Any]:
    """(data, train, test, favourable class, model, family) of ``notice``/``audit``: the
    dataset with its actionability flags, its split, and the model (loaded or trained).
    ``check(train, test)`` runs before any model is loaded or trained: the command's own
    arguments that need the data (method parameters, group columns) are refused there."""
    from robustce.models import MLP
    from robustce.models import load as load_model
    from robustce.models.families import seed_family
    from robustce.notices.reasons import check_recourse_possible

    if not 0 < args.test_size < 1:
        raise _user_error(f"--test-size must be in (0, 1), got {args.test_size}")
    if args.family_size < 0:
        raise _user_error(f"--family-size must be >= 0, got {args.family_size}")
    if args.delta is not None and args.delta <= 0:
        raise _user_error(f"--delta must be > 0, got {args.delta}")
    hidden = hidden_layers(args)
    data = _load_dataset(args)
    check_recourse_possible(data.schema)
    target = data.favourable if data.favourable is not None else 1
    train, test = data.split(test_size=args.test_size, random_state=args.seed)
    if check is not None:
        check(train, test)
    if args.model is not None:
        model = _with_flags(load_model(args.model), args, data)  # flags over the saved schema
    else:
        if not args.quiet:
            print(f"training an MLP on {len(train)} rows of {data.name} ...", file=sys.stderr)
        model = MLP(hidden, epochs=args.epochs, lr=5e-3, random_state=args.seed).fit(train)
    family = None
    if args.family_size:
        _, family = seed_family(train, MLP(hidden, epochs=args.epochs, lr=5e-3),
                                n_models=args.family_size, random_state=args.seed + 1)
    return data, train, test, int(target), model, family


def params_by_method(classes: list[type], items: list[str]) -> list[dict[str, Any]]:
    """Each method's share of ``--param``: a parameter goes to every ``--method`` that takes
    it, converted and type-checked; one that none takes is refused in one line."""
    from robustce.cli.explain import _parse_params
    from robustce.evaluation.config_values import method_params
    from robustce.methods.registry import param_annotations

    raw = _parse_params(items)
    known = [param_annotations(cls) for cls in classes]
    for key in raw:
        if not any(key in names for names in known):
            allowed = sorted(set().union(*known))
            which = ", ".join(cls.__name__ for cls in classes)
            raise _user_error(f"--param {key}: no --method takes it ({which}); their "
                              f"parameters: {', '.join(allowed)}")
    out = []
    for cls, names in zip(classes, known, strict=True):
        try:
            out.append(method_params(cls, {k: v for k, v in raw.items() if k in names},
                                     "--param"))
        except RobustCEError as exc:
            raise _user_error(f"{str(exc).replace('--param.', '--param ', 1)} "
                              f"(--method {cls.__name__})") from None
    return out


def check_methods(classes: list[type], params: list[dict[str, Any]], args: argparse.Namespace,
                  train: Any) -> None:
    """Build each explainer on a throwaway model of the ``--hidden`` shape: its parameters'
    values are refused here, before any training or solving."""
    from robustce.cli.explain import _stand_in_model
    from robustce.methods.registry import build_explainer

    stand_in = _stand_in_model(train, hidden_layers(args))
    for cls, own in zip(classes, params, strict=True):
        try:
            build_explainer(cls, stand_in, train, seed=args.seed, **own)
        except RobustCEError as exc:
            raise _user_error(f"--method {cls.__name__}: {exc}") from None


def _cmd_notice(args: argparse.Namespace) -> int:
    from robustce.methods.registry import get_method

    if not 1 <= args.options <= 3:
        raise _user_error(f"--options must be 1 to 3, got {args.options}")
    if args.applicants < 1 or args.n_jobs < 1:
        raise _user_error("--applicants and --n-jobs must be >= 1")
    classes = [get_method(m) for m in args.method]
    params = params_by_method(classes, args.param)
    hidden_layers(args)
    ledger = open_ledger(args)  # before any work: a ledger that cannot be opened stops here
    client = None
    try:
        if args.scheduler is not None:  # before any training: a silent address stops here
            from robustce.audits.execute import connect

            client = connect(args.scheduler, args.connect_timeout)
        paths = _notices(args, classes, params, client, ledger)
    finally:
        if client is not None:
            client.close()
        if ledger is not None:
            ledger.close()
    for p in paths:
        print(f"notice: {p}  (+ {p.with_suffix('.html').name})")
    return EXIT_OK


def _notices(args: argparse.Namespace, classes: list[Any], params: list[dict[str, Any]],
             client: Any, ledger: Any = None) -> list[Any]:
    """Train or load, explain the declined applicants with each method, write the notices
    (and, with a ledger, record the options of the notices written now as promises)."""
    from pathlib import Path

    from robustce.methods.registry import build_explainer
    from robustce.notices import write_notices

    data, train, test, target, model, family = prepare(
        args, lambda train, test: check_methods(classes, params, args, train))
    declined = test.frame[model.predict(test.frame) != target].iloc[: args.applicants]
    if not len(declined):
        raise _user_error("the model declines no test row; nothing to notify")
    expls = []
    for cls, own in zip(classes, params, strict=True):
        explainer = build_explainer(cls, model, train, seed=args.seed, **own)
        expls.append(explainer.explain(declined, target_class=target))
    kw = {"family": family, "shift": args.delta, "max_options": args.options, "seed": args.seed}
    before = {p.name for p in Path(args.out).glob("notice_*.json")}  # a resume keeps these
    if client is not None:
        paths = write_notices(model, expls, Path(args.out), n_jobs=max(2, args.n_jobs),
                              backend="dask", client=client, **kw)
    else:
        paths = write_notices(model, expls, Path(args.out), n_jobs=args.n_jobs, **kw)
    if ledger is not None:
        _record_notices(ledger, model, [p for p in paths if p.name not in before], declined,
                        promise_expiry(args))
    return paths


def _record_notices(ledger: Any, model: Any, paths: list[Any], applicants: Any,
                    expires_at: Any) -> None:
    """The options of the notices at ``paths`` as promises (applicants' full raw rows)."""
    import json

    rows = dict(zip(map(str, applicants.index), applicants.to_dict("records"), strict=True))
    n = 0
    for path in paths:
        doc = json.loads(path.read_text(encoding="utf-8"))
        n += len(ledger.record_notice(model, doc, rows[str(doc["applicant_id"])],
                                      expires_at=expires_at))
    print(f"ledger: {n} promises recorded in {ledger.url}")


__all__ = ["check_methods", "hidden_layers", "params_by_method", "prepare"]
