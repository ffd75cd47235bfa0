"""The method parameters a client of the service may set: an allow-list per method.

A request's ``params`` are the case worker's choices — the shift δ a CE must withstand, the
norm it is nearest in, how many CEs to show — never execution settings: worker processes or
threads (``n_jobs``, ``threads``), solvers, backends and their options, time limits (the
request's ``time_limit_s`` sets them), seeds (its ``seed``), files, callables or objects. Each
allowed parameter has a type and a range checked here, strictly (no string or bool for a
number, finite numbers only), before any solver work; :func:`check_client_params` names every
refused parameter with its location ``["body", "params", NAME]``. The methods then check the
values further (a norm a method does not support, ...) when the service builds them.

Ranges: δ in (0, 10] as :class:`~robustce.serve.schemas.CertifySpec`'s ``delta``; α and R of
APΔS in (0, 1); counts small enough that one item's work stays a case worker's request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from robustce.distance import NORMS

__all__ = ["CLIENT_PARAMS", "Choice", "Integer", "Number", "allowed_params", "check_client_params"]

#: at most this many refused parameters are listed (then one "and N more" entry)
MAX_PARAM_ERRORS = 10


@dataclass(frozen=True)
class Number:
    """A finite JSON number (int or float, never a bool or a string) in ``lo .. hi``;
    ``lo_open``/``hi_open`` exclude the bound."""

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False

    def problem(self, value: Any) -> str | None:
        if type(value) not in (int, float):
            return f"expected a number, got {_kind(value)}"
        if not math.isfinite(value):
            return "expected a finite number"
        low_ok = value > self.lo if self.lo_open else value >= self.lo
        high_ok = value < self.hi if self.hi_open else value <= self.hi
        if not (low_ok and high_ok):
            return f"{value!r} is outside {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}" \
                   f"{')' if self.hi_open else ']'}"
        return None


@dataclass(frozen=True)
class Integer:
    """A JSON integer (never a float, a bool or a string) in ``lo .. hi`` (inclusive)."""

    lo: int
    hi: int

    def problem(self, value: Any) -> str | None:
        if type(value) is not int:
            return f"expected an integer, got {_kind(value)}"
        if not self.lo <= value <= self.hi:
            return f"{value!r} is outside [{self.lo}, {self.hi}]"
        return None


@dataclass(frozen=True)
class Choice:
    """One of ``options`` (strings)."""

    options: tuple[str, ...]

    def problem(self, value: Any) -> str | None:
        if type(value) is not str:
            return f"expected one of {list(self.options)}, got {_kind(value)}"
        if value not in self.options:
            return f"{_short(value)} is not one of {list(self.options)}"
        return None


def _kind(value: Any) -> str:
    names = {bool: "a boolean", str: "a string", int: "an integer", float: "a number",
             list: "an array", dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


_SHIFT = Number(0.0, 10.0, lo_open=True)  # δ of the parameter shift (as CertifySpec.delta)
_NORM = Choice(NORMS)
_NEIGHBOURS = Integer(1, 50)
_PROBABILITY = Number(0.0, 1.0, lo_open=True, hi_open=True)

#: per served method, the parameters a client may set and their type/range
CLIENT_PARAMS: dict[str, dict[str, Number | Integer | Choice]] = {
    "milp_robust": {"shift": _SHIFT, "norm": _NORM},
    "milp_nearest": {"norm": _NORM},
    "nearest_neighbour": {"n_neighbours": _NEIGHBOURS, "norm": _NORM},
    "robust_nearest_neighbour": {"shift": _SHIFT, "n_neighbours": _NEIGHBOURS, "norm": _NORM},
    "wachter": {"margin": Number(0.0, 10.0)},
    "proplace": {"shift": _SHIFT, "k": Integer(1, 100), "norm": _NORM},
    "apas": {"delta": _SHIFT, "alpha": _PROBABILITY, "R": _PROBABILITY, "norm": _NORM},
    "diverse_robust": {"n_counterfactuals": Integer(1, 20), "norm": _NORM},
}


def allowed_params(method: str) -> list[str]:
    """The parameter names a client may set for ``method`` (none for a method not listed)."""
    return list(CLIENT_PARAMS.get(method, {}))


def check_client_params(method: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The problems of ``params`` for ``method`` as FastAPI-style field errors (empty when
    every parameter is allowed and valid): a name not on the allow-list, a value of the wrong
    type or outside its range. At most :data:`MAX_PARAM_ERRORS` are listed, then one entry
    saying how many more there were."""
    spec = CLIENT_PARAMS.get(method, {})
    allowed = list(spec)
    errors: list[dict[str, Any]] = []
    more = 0
    for name, value in params.items():
        if name in spec:
            problem = spec[name].problem(value)
            error = None if problem is None else {
                "loc": ["body", "params", name], "type": "value_error.param",
                "msg": f"{name} of {method}: {problem}"}
        else:
            shown = name if len(name) <= 100 else name[:100] + "…"
            error = {"loc": ["body", "params", shown], "type": "value_error.param_not_allowed",
                     "msg": f"{shown!r} is not a parameter a client may set for {method}; "
                            f"allowed: {', '.join(allowed) or '(none)'}",
                     "ctx": {"allowed": allowed}}
        if error is None:
            continue
        if len(errors) < MAX_PARAM_ERRORS:
            errors.append(error)
        else:
            more += 1
    if more:
        errors.append({"loc": ["body", "params"], "type": "value_error.truncated",
                       "msg": f"and {more} more refused parameter(s)"})
    return errors
