"""Parameter checks shared by every constructor and public function.

Each check takes the value and the parameter's name, returns the value unchanged when it is
acceptable and otherwise raises :class:`~robustce.errors.ValidationError` with one line that
names the parameter, what it must be and what it got. The comparisons are written so that NaN
never passes (``not low < x`` style), and booleans are not numbers here.

    check_number(tau, "tau", low=0, low_open=True)        # a finite number > 0
    check_integer(max_iter, "max_iter", low=1)             # an integer >= 1
    check_choice(loss, "loss", ("hinge", "bce"))
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any

import numpy as np

from robustce.errors import ValidationError

__all__ = ["check_bool", "check_choice", "check_integer", "check_number"]


def _range_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return " and ".join(parts)


def _in_range(x: float, low: float | None, high: float | None, low_open: bool,
              high_open: bool) -> bool:
    if low is not None and not (x > low if low_open else x >= low):
        return False
    return not (high is not None and not (x < high if high_open else x <= high))


def check_number(value: Any, name: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, allow_none: bool = False,
                 allow_inf: bool = False) -> Any:
    """A real number (not a bool), finite unless ``allow_inf``, within [low, high]
    (``low_open`` / ``high_open`` exclude the ends); ``None`` only if ``allow_none``."""
    if value is None and allow_none:
        return value
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    x = float(value) if ok else math.nan
    if ok and (math.isnan(x) or (math.isinf(x) and not allow_inf)):
        ok = False
    if ok:
        ok = _in_range(x, low, high, low_open, high_open)
    if not ok:
        what = "a number" if allow_inf else "a finite number"
        bounds = _range_text(low, high, low_open, high_open)
        none = " or None" if allow_none else ""
        raise ValidationError(f"{name} must be {what}{' ' + bounds if bounds else ''}{none}, "
                              f"got {value!r}")
    return value


def check_integer(value: Any, name: str, *, low: int | None = None, high: int | None = None,
                  allow_none: bool = False) -> Any:
    """An integer (Python or NumPy; not a bool, not a float) within [low, high]."""
    if value is None and allow_none:
        return value
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok:
        ok = _in_range(int(value), low, high, False, False)
    if not ok:
        bounds = _range_text(low, high, False, False)
        none = " or None" if allow_none else ""
        raise ValidationError(f"{name} must be an integer{' ' + bounds if bounds else ''}{none}, "
                              f"got {value!r}")
    return value


def check_choice(value: Any, name: str, choices: Collection[Any]) -> Any:
    """One of ``choices`` (compared with ``==``; unhashable values are simply not in it)."""
    try:
        ok = bool(value in choices)
    except (TypeError, ValueError):  # unhashable, or an array compared element-wise
        ok = False
    if not ok:
        raise ValidationError(f"{name} must be one of {', '.join(map(repr, choices))}; "
                              f"got {value!r}")
    return value


def check_bool(value: Any, name: str) -> Any:
    """``True`` or ``False`` (NumPy booleans too)."""
    if not isinstance(value, bool | np.bool_):
        raise ValidationError(f"{name} must be True or False, got {value!r}")
    return value
