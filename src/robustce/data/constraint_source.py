"""Which constraints an explainer applies, and where they come from.

Every explainer's ``constraints`` defaults to :data:`FROM_DATASET`: the constraints its
training data ships in ``Dataset.meta["constraints"]`` (``synthetic_loan``: ``debt <= income``,
``years_employed <= age - 16``). ``None`` (or ``"none"``, for TOML and the command line) switches
them off; a :class:`~robustce.data.Constraints`, a mapping or a list of relations replaces them.
:func:`resolve_constraints` returns the constraints to apply and their provenance, which the
result's ``meta["constraints"]`` records (``source``: ``"dataset"``, ``"argument"`` or ``"off"``).
See ``docs/constraints.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robustce.data.constraints import Constraints, as_constraints
from robustce.errors import ValidationError

__all__ = ["FROM_DATASET", "NO_CONSTRAINTS", "dataset_constraints", "resolve_constraints"]

#: the default of every explainer's ``constraints``: those its training data ships
FROM_DATASET = "dataset"
#: ``constraints="none"``: no constraints, as ``None`` (TOML and the command line have no null)
NO_CONSTRAINTS = "none"


def dataset_constraints(data: Any) -> Constraints | None:
    """The constraints ``data`` ships (``data.meta["constraints"]``), or None (no data, or
    a dataset that ships none). Its causal graph (``meta["causal"]``) is not among them: a
    causal model changes what a CE is (an action set), so it is applied only when given."""
    spec = getattr(data, "meta", None)
    spec = spec.get("constraints") if isinstance(spec, Mapping) else None
    if not spec:
        return None
    c = as_constraints(spec)
    if c is None or not (c.relations or c.conditionals or c.groups or c.max_changes is not None
                         or c.causal is not None):
        return None
    return c


def resolve_constraints(value: Any, data: Any) -> tuple[Constraints | None, dict[str, Any]]:
    """``(constraints to apply, provenance)`` for an explainer's ``constraints`` argument.

    ``value``: :data:`FROM_DATASET` (the dataset's, if it ships any), ``None`` or
    :data:`NO_CONSTRAINTS` (none), or constraints of the user's (a :class:`Constraints`, a
    mapping for :meth:`Constraints.from_dict`, a list of relation strings), which replace the
    dataset's. The provenance: ``{"source": "dataset" | "argument" | "off"}``, the dataset's
    name where it has one, and, when a dataset's constraints are not applied, them under
    ``"not_applied"``. Raises :class:`~robustce.errors.ValidationError` for anything else.
    """
    shipped = dataset_constraints(data)
    where = {"dataset": getattr(data, "name", None)} if data is not None else {}
    if isinstance(value, str):
        if value == FROM_DATASET:
            if shipped is None:
                return None, {"source": "off", **where}
            return shipped, {"source": "dataset", **where}
        if value == NO_CONSTRAINTS:
            value = None
        else:
            raise ValidationError(f"constraints: unknown value {value!r}; give {FROM_DATASET!r} "
                                  f"(the dataset's own, the default), None or {NO_CONSTRAINTS!r} "
                                  "(none), or constraints (a Constraints, a mapping, a list of "
                                  "relations)")
    if isinstance(value, list | tuple):
        if not all(isinstance(v, str) for v in value):
            raise ValidationError("constraints must be a robustce Constraints, a mapping, a list "
                                  f"of relation strings, {FROM_DATASET!r} or None; got a list "
                                  f"holding {sorted({type(v).__name__ for v in value})}")
        value = Constraints(list(value))
    given = as_constraints(value)
    origin: dict[str, Any] = {"source": "off" if given is None else "argument", **where}
    if shipped is not None:
        origin["not_applied"] = shipped.to_dict()
    return given, origin
