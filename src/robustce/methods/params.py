"""Parameter checks shared by every explainer (:class:`~robustce.methods.base.Explainer`):
the ``n_jobs`` cap, a target class given by index or by label, and the message for an unknown
keyword (naming the valid parameters and the nearest one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.validation import check_integer

__all__ = ["MAX_JOBS", "is_label", "resolve_class"]

MAX_JOBS = 4096  # |n_jobs| cap: joblib passes it to C ints and spawns up to that many workers


def _unknown_params_message(cls: type, unknown: list[str]) -> str:
    import difflib

    valid = cls.param_names()
    hints = []
    for name in unknown:
        if name == "delta" and "shift" in valid:
            hints.append("δ goes in shift= (a number, or rc.robustness.ParameterShift(delta))")
        else:
            close = difflib.get_close_matches(name, valid, n=1)
            if close:
                hints.append(f"did you mean {close[0]!r}?")
    return (f"{cls.__name__} does not take {', '.join(map(repr, unknown))}"
            + (f" ({'; '.join(hints)})" if hints else "")
            + f"; its parameters are {', '.join(valid)}")


def is_label(value: Any) -> bool:
    """Whether ``value`` names a class by its label (a string) rather than by its index."""
    return isinstance(value, str | np.str_)


def resolve_class(value: Any, class_names: tuple[Any, ...]) -> int:
    """The index of a class given as an index (an integer) or as a label among
    ``class_names``; :class:`~robustce.errors.ValidationError` naming the labels otherwise."""
    if not is_label(value):
        check_integer(value, "target_class", low=0, high=len(class_names) - 1)
        return int(value)
    labels = [str(c) for c in class_names]
    if str(value) not in labels:
        mapping = ", ".join(f"{k} = {c}" for k, c in enumerate(labels))
        raise ValidationError(f"target_class {value!r} is not a class of the model; its "
                              f"classes are {mapping}")
    return labels.index(str(value))
