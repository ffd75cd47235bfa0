"""Method names -> explainer classes, and :func:`build_explainer`, the one way configs, the
command line and the demo turn a name and plain parameters into a ready explainer.

Names are lower-case with underscores (``"nearest_neighbour"``, ``"milp_robust"``); the class
name itself (``"MILPRobust"``) and hyphens (``"milp-robust"``) are accepted too. Classes are
looked up lazily in :mod:`robustce.methods` (then in its submodules), so a method that is not
implemented yet is simply not *available* — asking for it gives a
:class:`~robustce.errors.ConfigError` that lists the ones that are.

**Plain values → constructor arguments.** A parameter's annotation decides how a plain value
(from TOML or ``--param K=V``) is converted: :data:`PARAM_CONVERTERS` maps a type to a function
from the plain value to an instance, so ``shift: ParameterShift | float`` accepts ``0.03`` (δ)
or a table ``{delta = 0.03, biases = false}``, and a parameter typed
:class:`~robustce.distance.Distance` accepts ``"l1"`` or ``{norm = "l1", space = "raw"}``. A new
parameter type registers its converter with :func:`register_converter`; no name is special.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from robustce.data.constraint_source import FROM_DATASET, NO_CONSTRAINTS
from robustce.data.constraints import Constraints
from robustce.distance import Distance
from robustce.errors import ConfigError, RobustCEError
from robustce.methods.base import Explainer, Trainable
from robustce.robustness.shift import ParameterShift

__all__ = [
    "METHOD_CLASSES",
    "PARAM_CONVERTERS",
    "available_methods",
    "build_explainer",
    "convert_params",
    "converter_for",
    "get_method",
    "method_name",
    "param_annotations",
    "register_converter",
    "register_method",
    "trains_own_model",
    "unregister_method",
]

#: canonical name -> class name in ``robustce.methods``
METHOD_CLASSES: dict[str, str] = {
    "nearest_neighbour": "NearestNeighbour",
    "wachter": "Wachter",
    "milp_nearest": "MILPNearest",
    "milp_robust": "MILPRobust",
    "ensemble_robust": "EnsembleRobust",
    "retrain_robust": "RetrainRobust",
    "robust_nearest_neighbour": "RobustNearestNeighbour",
    "roar": "ROAR",
    "rbr": "RBR",
    "wachter_robust": "WachterRobust",
    "proto_robust": "ProtoRobust",
    "robx": "RobX",
    "proplace": "PROPLACE",
    "apas": "APAS",
    "diverse_robust": "DiverseRobust",
    "dice": "DiCE",
    "mace": "MACE",
    "minimum_observable": "MinimumObservable",
    "ar": "ActionableRecourse",
    "pft": "PlausibleFeatureTweaking",
    "counternet": "CounterNet",
    "rocoursenet": "RoCourseNet",
}

#: user-registered explainers (plug-ins, test doubles): name -> class
_CUSTOM: dict[str, type] = {}

_ALIASES = {
    "nn": "nearest_neighbour",
    "mo": "minimum_observable",
    "actionable_recourse": "ar",
    "feature_tweaking": "pft",
    "plausible_feature_tweaking": "pft",
    "nearest_neighbor": "nearest_neighbour",
    "robust_nearest_neighbor": "robust_nearest_neighbour",
    "rnn": "robust_nearest_neighbour",
    "milp_r": "milp_robust",
    "apds": "apas",
    "wacht_r": "wachter_robust",
    "wachter_r": "wachter_robust",
    "proto_r": "proto_robust",
    "robxnn": "robx",
    "robx_nn": "robx",
}


# --- names ----------------------------------------------------------------------------------
def _normalise(name: str) -> str:
    key = str(name).strip().replace("-", "_").replace(" ", "_")
    by_class = {v.lower(): k for k, v in METHOD_CLASSES.items()}
    low = key.lower()
    if low in by_class:
        return by_class[low]
    return _ALIASES.get(low, low)


def _lookup_class(class_name: str) -> type | None:
    methods = importlib.import_module("robustce.methods")
    cls = getattr(methods, class_name, None)
    if isinstance(cls, type):
        return cls
    # not exported (yet): search the submodules of robustce.methods
    for info in pkgutil.iter_modules(methods.__path__):
        try:
            mod = importlib.import_module(f"robustce.methods.{info.name}")
        except Exception:  # noqa: BLE001 - a broken work-in-progress method must not hide the others
            continue
        cls = getattr(mod, class_name, None)
        if isinstance(cls, type):
            return cls
    return None


def register_method(name: str, cls: type) -> None:
    """Make ``cls`` (an :class:`~robustce.methods.Explainer` subclass) available as ``name``.

    Parameters
    ----------
    name : the registry name (used by configs, the CLI and :func:`build_explainer`).
    cls : the :class:`~robustce.methods.Explainer` subclass.

    Examples
    --------
    >>> class Nearest(rc.methods.NearestNeighbour):
    ...     pass
    >>> register_method("my_nearest", Nearest)
    >>> get_method("my-nearest") is Nearest, "my_nearest" in available_methods()
    (True, True)
    >>> unregister_method("my_nearest")
    """
    if not (isinstance(cls, type) and issubclass(cls, Explainer)):
        raise ConfigError(f"{cls!r} is not an Explainer subclass")
    _CUSTOM[_normalise(name)] = cls


def unregister_method(name: str) -> None:
    _CUSTOM.pop(_normalise(name), None)


def available_methods() -> list[str]:
    """Canonical names of the methods importable in this installation.

    Examples
    --------
    >>> {"milp_robust", "nearest_neighbour", "wachter"} <= set(available_methods())
    True
    """
    names = [name for name, cls in METHOD_CLASSES.items() if _lookup_class(cls) is not None]
    return names + [n for n in _CUSTOM if n not in names]


def get_method(name: str) -> type:
    """The explainer class registered under ``name``; :class:`ConfigError` if unknown or
    not available here.

    Parameters
    ----------
    name : a name of :func:`available_methods`.

    Returns
    -------
    type
        The :class:`Explainer` subclass.

    Examples
    --------
    >>> get_method("milp_robust").__name__, get_method("MILPRobust") is get_method("milp-robust")
    ('MILPRobust', True)
    """
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


# --- parameters -------------------------------------------------------------------------------
def _shift_from_plain(value: Any) -> ParameterShift:
    """``0.03`` → ``ParameterShift(delta=0.03)``; ``{delta = 0.03, biases = false}`` → the same
    with those fields."""
    if isinstance(value, Mapping):
        unknown = set(value) - {"delta", "p", "biases"}
        if unknown:
            raise ConfigError(f"unknown ParameterShift keys {sorted(unknown)}; allowed: delta, p, biases")
        if "delta" not in value:
            raise ConfigError("a shift table needs `delta`")
        fields = dict(value)
        if fields.get("p") == "inf":  # how ParameterShift.to_dict writes it
            fields["p"] = float("inf")
        return ParameterShift(**fields)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"wrong type: expected a number (δ) or a table {{delta = ...}}, got "
                          f"{type(value).__name__} {value!r}")
    return ParameterShift(delta=float(value))


def _distance_from_plain(value: Any) -> Distance:
    """``"l1"`` → ``Distance("l1")``; a table → :meth:`Distance.from_dict`."""
    if isinstance(value, str):
        return Distance(value)
    if isinstance(value, Mapping):
        return Distance.from_dict(value)
    raise ConfigError(f"wrong type: expected a norm name (\"l1\") or a table {{norm = ..., space = ...}}, "
                      f"got {type(value).__name__} {value!r}")


def _constraints_from_plain(value: Any) -> Constraints | str:
    """A table ``{relations = [...], max_changes = 2}`` → :meth:`Constraints.from_dict`; a
    list of relation strings → ``Constraints(list)``; ``"dataset"`` (the dataset's own, the
    default) and ``"none"`` (none) unchanged."""
    if isinstance(value, str) and value in (FROM_DATASET, NO_CONSTRAINTS):
        return value
    if isinstance(value, Mapping):
        return Constraints.from_dict(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return Constraints(list(value))
    raise ConfigError(f"wrong type: expected a table {{relations = [...], max_changes = ...}}, "
                      f"a list of relations, \"{FROM_DATASET}\" or \"{NO_CONSTRAINTS}\", got "
                      f"{type(value).__name__} {value!r}")


#: parameter type -> converter from a plain (TOML / JSON) value to an instance of that type
PARAM_CONVERTERS: dict[type, Callable[[Any], Any]] = {
    ParameterShift: _shift_from_plain,
    Distance: _distance_from_plain,
    Constraints: _constraints_from_plain,
}


def register_converter(typ: type, converter: Callable[[Any], Any]) -> None:
    """Let every method parameter annotated with ``typ`` accept what ``converter`` takes."""
    if not isinstance(typ, type) or not callable(converter):
        raise ConfigError(f"register_converter needs a type and a callable, got {typ!r}, {converter!r}")
    PARAM_CONVERTERS[typ] = converter


def param_annotations(cls: type) -> dict[str, tuple[Any, Any]]:
    """``name -> (type hint or None, default)`` for every name in ``cls.param_names()``; each
    is read from the first class in the MRO whose ``__init__`` declares it."""
    out: dict[str, tuple[Any, Any]] = {}
    for name in cls.param_names():
        for klass in cls.__mro__:
            init = vars(klass).get("__init__")
            if init is None or klass is object:
                continue
            param = inspect.signature(init).parameters.get(name)
            if param is None:
                continue
            try:
                hints = typing.get_type_hints(init)
            except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the default
                hints = {}
            out[name] = (hints.get(name), param.default)
            break
    return out


def _types_in(hint: Any) -> list[type]:
    """The classes named by a hint (``A | B | None`` → [A, B, NoneType])."""
    if isinstance(hint, type):
        return [hint]
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return [t for a in typing.get_args(hint) for t in _types_in(a)]
    return []


def converter_for(hint: Any) -> tuple[type, Callable[[Any], Any]] | None:
    """``(type, converter)`` of the first type in ``hint`` that has a registered converter."""
    for typ in _types_in(hint):
        if typ in PARAM_CONVERTERS:
            return typ, PARAM_CONVERTERS[typ]
    return None


def convert_params(cls: type, params: Mapping[str, Any]) -> dict[str, Any]:
    """Plain values → constructor arguments of ``cls``, by each parameter's annotation.

    Unknown names raise :class:`ConfigError` naming the key and listing the allowed ones; a
    converter that rejects its value raises :class:`ConfigError` naming the key. Values that
    are already instances of the annotated type, ``None`` and parameters without a converter
    pass unchanged.
    """
    info = param_annotations(cls)
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key not in info:
            raise ConfigError(f"{key}: unknown parameter of {cls.__name__}; "
                              f"allowed: {', '.join(info) or '(none)'}")
        found = converter_for(info[key][0])
        if found is None or value is None or isinstance(value, found[0]):
            out[key] = value
            continue
        try:
            out[key] = found[1](value)
        except RobustCEError as exc:
            raise ConfigError(f"{key}: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{key}: cannot make a {found[0].__name__} from {value!r}: {exc}") from None
    return out


# --- the one constructor -----------------------------------------------------------------------
def trains_own_model(method: str | type) -> bool:
    """Whether a method (registry name or class) trains its own predictor — CounterNet,
    RoCourseNet: its constructor takes no ``model`` — instead of explaining a given model."""
    cls = method if isinstance(method, type) else get_method(method)
    return "model" not in inspect.signature(cls.__init__).parameters


def build_explainer(name: str | type, model: Any, data: Any = None, /, *, seed: int | None = None,
                    **params: Any) -> Explainer:
    """A ready explainer: ``Method(model, data, **params)``, fitted on ``data`` if trainable.
    Methods that train their own model (CounterNet, RoCourseNet) take ``model=None`` and are
    built as ``Method(**params).fit(data)``.

    ``name`` is a registry name (or an Explainer class); ``params`` are plain values or
    constructor arguments (converted by :func:`convert_params`); ``seed`` becomes
    ``random_state`` for methods that take one and were not given one (others ignore it).

    Parameters
    ----------
    name : registry name (``"milp_robust"``) or an :class:`Explainer` class.
    model : the model to explain (None for methods that train their own).
    data : the training :class:`~robustce.data.Dataset`.
    seed : default ``random_state``.
    **params : constructor parameters of the method.

    Returns
    -------
    Explainer

    Examples
    --------
    Plain values (as a TOML config or ``--param`` gives them) become constructor arguments:

    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> model = rc.models.wrap(LogisticRegression().fit(enc.transform(data.frame), data.y), enc)
    >>> explainer = build_explainer("milp_robust", model, data, shift=0.02)
    >>> type(explainer).__name__, explainer.shift
    ('MILPRobust', ParameterShift(delta=0.02, p=inf, biases=True))
    """
    cls = name if isinstance(name, type) else get_method(name)
    if not issubclass(cls, Explainer):
        raise ConfigError(f"{cls!r} is not an Explainer subclass")
    kwargs = convert_params(cls, params)
    if seed is not None and "random_state" in cls.param_names():
        kwargs.setdefault("random_state", int(seed))
    if not trains_own_model(cls):
        explainer = cls(model, data, **kwargs)
    elif model is not None:  # CounterNet-style: the method trains its own predictor
        raise ConfigError(f"{cls.__name__} trains its own model and takes none; pass model=None "
                          "and the training data")
    else:
        explainer = cls(**kwargs)
    if isinstance(explainer, Trainable):
        explainer.fit(data)
    return explainer
