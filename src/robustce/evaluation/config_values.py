"""The checks every table of a benchmark configuration shares: keys, types, tables merged
over tables, and parameters checked against a signature or an explainer's annotations (the
messages name the key path, e.g. ``methods[1].params.lam: unknown parameter``)."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from robustce.errors import ConfigError
from robustce.evaluation.config_schema import RUNNER_SET, ClassRef
from robustce.methods.registry import convert_params, converter_for, param_annotations

__all__ = ["check_backend", "method_params"]


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``base``: tables merge key by key (recursively), the rest replaces."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def _no_unknown(table: Mapping[str, Any], allowed: set[str], path: str) -> None:
    for key in table:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise ConfigError(f"{where}: unknown key; allowed: {', '.join(sorted(allowed))}")


def _table(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: expected a table, got {type(value).__name__}")
    return dict(value)


def _typed(value: Any, typ: type, path: str) -> Any:
    if not _matches(value, typ):
        raise ConfigError(f"{path}: expected {_type_name(typ)}, got {_show(value)}")
    return float(value) if typ is float else value


def _show(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _seeds(value: Any, path: str = "seeds") -> list[int]:
    if value is None:
        raise ConfigError(f"{path}: required (a list of integers, e.g. seeds = [0, 1, 2])")
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{path}: expected a non-empty list of integers, got {_show(value)}")
    for i, s in enumerate(value):
        if not _matches(s, int) or s < 0:
            raise ConfigError(f"{path}[{i}]: expected a non-negative integer, got {_show(s)}")
    if len(set(value)) != len(value):
        raise ConfigError(f"{path}: duplicates in {value}")
    return [int(s) for s in value]


def _path(value: Any, path: str, base: Path | None) -> Path | None:
    if value is None:
        return None
    _typed(value, str, path)
    p = Path(value).expanduser()
    return p if p.is_absolute() or base is None else base / p


def check_backend(backend: str, path: str) -> None:
    """ConfigError naming ``path`` unless ``backend`` is a joblib backend."""
    from joblib.parallel import BACKENDS, EXTERNAL_BACKENDS

    if backend not in BACKENDS and backend not in EXTERNAL_BACKENDS:
        known = sorted(set(BACKENDS) | set(EXTERNAL_BACKENDS))
        raise ConfigError(f"{path}: unknown joblib backend {backend!r}; known: {', '.join(known)}")


def _simple_table(value: Any, keys: Mapping[str, type], path: str) -> dict[str, Any]:
    table = _table(value, path)
    _no_unknown(table, set(keys), path)
    return {k: _typed(v, keys[k], f"{path}.{k}") for k, v in table.items()}


# --- parameter checking --------------------------------------------------------------------
def _signature_info(func: Any) -> dict[str, tuple[Any, Any]]:
    """name -> (type hint or None, default) of a function's named parameters."""
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to defaults
        hints = {}
    return {name: (hints.get(name), p.default)
            for name, p in inspect.signature(func).parameters.items()
            if name not in ("self", "model", "data") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


def _check_params(params: Mapping[str, Any], func: Any, path: str, *,
                  skip: set[str] = frozenset()) -> None:
    """Names against the signature of ``func``, values against its annotations."""
    _check_values(params, _signature_info(func), path, skip=skip)


def _check_method_params(params: Mapping[str, Any], cls: type, path: str) -> None:
    """Names against ``cls.param_names()``, values against their annotations; a parameter
    whose annotated type has a converter (:data:`~robustce.methods.registry.PARAM_CONVERTERS`)
    is checked by converting it."""
    for k in RUNNER_SET & set(params):
        raise ConfigError(f"{path}.{k}: set by the seed, not as a parameter")
    info = param_annotations(cls)
    _check_values(params, info, path)
    try:
        convert_params(cls, params)
    except ConfigError as exc:
        raise ConfigError(f"{path}.{exc}") from None


def _check_values(params: Mapping[str, Any], info: Mapping[str, tuple[Any, Any]], path: str, *,
                  skip: set[str] = frozenset()) -> None:
    names = [n for n in info if n not in skip]
    for key, value in params.items():
        if key not in names:
            raise ConfigError(f"{path}.{key}: unknown parameter; allowed: {', '.join(names) or '(none)'}")
        hint, default = info[key]
        if converter_for(hint) is not None:
            continue  # checked by converting it
        if hint is not None:
            ok = _matches_hint(value, hint)
        elif default is not inspect.Parameter.empty and default is not None:
            ok = _matches_hint(value, type(default))
        else:
            ok = True
        if ok is False:
            expected = _hint_name(hint) if hint is not None else _type_name(type(default))
            raise ConfigError(f"{path}.{key}: wrong type: expected {expected}, got {_show(value)}")


def _matches(value: Any, typ: type) -> bool:
    if typ is bool:
        return isinstance(value, bool)
    if typ is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if typ is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if typ is ClassRef:
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    return isinstance(value, typ)


def _matches_hint(value: Any, hint: Any) -> bool | None:
    """True/False when the hint can be checked against a TOML value, None when it cannot."""
    if hint is Any or hint is inspect.Parameter.empty:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        results = [_matches_hint(value, a) for a in args]
        if any(r is True for r in results):
            return True
        return None if any(r is None for r in results) else False
    if origin is typing.Literal:
        return value in args
    if origin in (list, tuple, Sequence, typing.Sequence) or hint in (list, tuple):
        if not isinstance(value, list | tuple):
            return False
        if args and args[-1] is not Ellipsis and origin is tuple and len(args) != len(value):
            return False
        item = args[0] if args else None
        if item is None:
            return True
        results = [_matches_hint(v, item) for v in value]
        return False if any(r is False for r in results) else True
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        return isinstance(value, Mapping)
    if hint in (int, float, bool, str):
        return _matches(value, hint)
    if isinstance(hint, type):
        if hint.__module__.startswith("numpy"):
            return None
        return isinstance(value, hint) or None
    return None


def _type_name(typ: type) -> str:
    return {int: "an integer", float: "a number", bool: "true/false", str: "a string",
            ClassRef: "a class index or label"}.get(typ, typ.__name__)


def _hint_name(hint: Any) -> str:
    if isinstance(hint, type):
        return _type_name(hint)
    return str(hint).replace("typing.", "")


def method_params(cls: type, params: Mapping[str, Any], path: str = "params") -> dict[str, Any]:
    """Check config-style ``params`` (names, types) for explainer ``cls`` and convert them to
    constructor arguments (by annotation, see :func:`~robustce.methods.registry.convert_params`).
    Raises :class:`ConfigError` naming ``path.key``."""
    _check_method_params(params, cls, path)
    return convert_params(cls, params)
