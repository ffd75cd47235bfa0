"""What the ``robustce`` commands share: exit codes, user errors, reading a CSV, and the
dataset of ``--dataset`` / ``--data`` with its schema and actionability flags."""

from __future__ import annotations

import argparse
from typing import Any

from robustce.errors import ValidationError

EXIT_OK = 0
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


def _user_error(message: str) -> Exception:
    return ValidationError(message)


def hidden_layers(args: argparse.Namespace) -> tuple[int, ...]:
    """``--hidden`` as layer sizes; ``--hidden`` and ``--epochs`` checked (one line)."""
    try:
        hidden = tuple(int(h) for h in args.hidden.split(",") if h.strip())
    except ValueError:
        raise _user_error(f"--hidden must be comma-separated integers, got {args.hidden!r}") from None
    if not hidden or min(hidden) < 1 or (args.epochs is not None and args.epochs < 1):
        raise _user_error("--hidden needs positive layer sizes and --epochs a positive integer")
    return hidden


def _read_csv(path: str, what: str) -> Any:
    import pandas as pd

    try:
        return pd.read_csv(path)
    except FileNotFoundError:
        raise _user_error(f"{what} file not found: {path}") from None
    except (OSError, ValueError, pd.errors.ParserError) as exc:  # EmptyDataError is a ValueError
        raise _user_error(f"{what} file {path} cannot be read as CSV: {exc}") from None


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
    for flag, action in (("free", "free"), ("immutable", "immutable"), ("protected", "protected"),
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


def _actionability_flags(args: argparse.Namespace, data: Any) -> dict[str, str]:
    """Feature → actionability that the command line sets: the features named by the
    actionability flags, and every feature of ``--schema`` (read from ``data.schema``, where
    :func:`_load_dataset` applied them)."""
    named = set(data.schema.names) if getattr(args, "schema", None) else set()
    for flag in ("free", "immutable", "protected", "increase_only", "decrease_only"):
        named.update(_names(getattr(args, flag, None)))
    out = {}
    for name in data.schema.names:
        if name in named:
            f = data.schema[name]
            out[name] = "protected" if f.protected else f.actionability.value
    return out


def _with_flags(model: Any, args: argparse.Namespace, data: Any) -> Any:
    """A loaded ``--model`` with the command line's actionability (``--immutable``, ...,
    ``--schema``) over the one saved with it; the model itself when none is given."""
    flags = _actionability_flags(args, data)
    if not flags:
        return model
    unknown = [n for n in flags if n not in model.encoder.schema.names]
    if unknown:
        raise _user_error(f"--model {args.model} has no feature(s) {unknown}; its features: "
                          f"{', '.join(model.encoder.schema.names)}")
    return model.with_actionability(**flags)


def _names(text: str | None) -> list[str]:
    return [] if not text else [n.strip() for n in text.split(",") if n.strip()]
