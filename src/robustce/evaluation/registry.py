"""Method names -> explainer classes, for configs and the command line.

Names are lower-case with underscores (``"nearest_neighbour"``, ``"milp_robust"``); the class
name itself (``"MILPRobust"``) and hyphens (``"milp-robust"``) are accepted too. Classes are
looked up lazily in :mod:`robustce.methods` (then in its submodules), so a method that is not
implemented or whose optional dependency is missing is simply not *available* — asking for it
gives a :class:`~robustce.errors.ConfigError` that lists the ones that are.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from robustce.errors import ConfigError

__all__ = ["METHOD_CLASSES", "available_methods", "get_method", "method_name", "register_method",
           "unregister_method"]

#: canonical name -> class name in ``robustce.methods``
METHOD_CLASSES: dict[str, str] = {
    "nearest_neighbour": "NearestNeighbour",
    "wachter": "Wachter",
    "milp_nearest": "MILPNearest",
    "milp_robust": "MILPRobust",
    "robust_nearest_neighbour": "RobustNearestNeighbour",
    "roar": "ROAR",
    "proplace": "PROPLACE",
    "apas": "APAS",
    "diverse_robust": "DiverseRobust",
    "mace": "MACE",
    "counternet": "CounterNet",
    "rocoursenet": "RoCourseNet",
}

#: user-registered explainers (plug-ins, test doubles): name -> class
_CUSTOM: dict[str, type] = {}

_ALIASES = {
    "nn": "nearest_neighbour",
    "nearest_neighbor": "nearest_neighbour",
    "robust_nearest_neighbor": "robust_nearest_neighbour",
    "rnn": "robust_nearest_neighbour",
    "milp_r": "milp_robust",
    "apds": "apas",
}


def _normalise(name: str) -> str:
    key = str(name).strip().replace("-", "_").replace(" ", "_")
    by_class = {v.lower(): k for k, v in METHOD_CLASSES.items()}
    low = key.lower()
    if low in by_class:
        return by_class[low]
    return _ALIASES.get(low, low)


def _lookup_class(class_name: str) -> type | None:
    try:
        methods = importlib.import_module("robustce.methods")
    except ImportError:  # pragma: no cover - the package itself is broken
        return None
    cls = getattr(methods, class_name, None)
    if isinstance(cls, type):
        return cls
    # not exported (yet): search the submodules of robustce.methods
    for info in pkgutil.iter_modules(methods.__path__):
        try:
            mod = importlib.import_module(f"robustce.methods.{info.name}")
        except Exception:  # noqa: BLE001 - a broken optional method must not hide the others
            continue
        cls = getattr(mod, class_name, None)
        if isinstance(cls, type):
            return cls
    return None


def register_method(name: str, cls: type) -> None:
    """Make ``cls`` (an :class:`~robustce.methods.Explainer` subclass) available as ``name``."""
    from robustce.methods.base import Explainer

    if not (isinstance(cls, type) and issubclass(cls, Explainer)):
        raise ConfigError(f"{cls!r} is not an Explainer subclass")
    _CUSTOM[_normalise(name)] = cls


def unregister_method(name: str) -> None:
    _CUSTOM.pop(_normalise(name), None)


def available_methods() -> list[str]:
    """Canonical names of the methods importable in this installation."""
    names = [name for name, cls in METHOD_CLASSES.items() if _lookup_class(cls) is not None]
    return names + [n for n in _CUSTOM if n not in names]


def get_method(name: str) -> type:
    """The explainer class registered under ``name``; :class:`ConfigError` if unknown or
    not available here."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"method name must be a non-empty string, got {name!r}")
    key = _normalise(name)
    if key in _CUSTOM:
        return _CUSTOM[key]
    if key not in METHOD_CLASSES:
        raise ConfigError(
            f"unknown method {name!r}; available: {', '.join(available_methods()) or '(none)'}"
        )
    cls = _lookup_class(METHOD_CLASSES[key])
    if cls is None:
        raise ConfigError(
            f"method {name!r} ({METHOD_CLASSES[key]}) is not available in this installation; "
            f"available: {', '.join(available_methods()) or '(none)'}"
        )
    return cls


def method_name(name_or_cls: Any) -> str:
    """Canonical registry name of a method name or class."""
    if isinstance(name_or_cls, type):
        for key, custom in _CUSTOM.items():
            if custom is name_or_cls:
                return key
        for key, cls_name in METHOD_CLASSES.items():
            if name_or_cls.__name__ == cls_name:
                return key
        return str(getattr(name_or_cls, "name", name_or_cls.__name__))
    key = _normalise(name_or_cls)
    if key not in METHOD_CLASSES and key not in _CUSTOM:
        raise ConfigError(f"unknown method {name_or_cls!r}; available: {', '.join(available_methods())}")
    return key
