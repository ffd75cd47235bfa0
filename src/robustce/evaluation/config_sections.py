"""The sections of a benchmark configuration, each validated and normalised: ``[model]``,
``[evaluation]`` (with its ``retrain`` and ``perturb`` protocols), ``metrics``,
``[[datasets]]`` and ``[[methods]]``."""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from robustce.errors import ConfigError, RobustCEError
from robustce.evaluation.config_schema import (
    DATASET_KEYS,
    EVAL_KEYS,
    METHOD_DATA,
    METHOD_KEYS,
    MODEL_KINDS,
    MODEL_SKIP,
    OPTIMIZER_STATES,
    PERTURB_KEYS,
    RETRAIN_KEYS,
    RETRAIN_PARAMS,
    RETRAIN_PROTOCOLS,
    SKLEARN_MODELS,
    DatasetEntry,
    MethodEntry,
)
from robustce.evaluation.config_values import (
    _check_method_params,
    _check_params,
    _check_values,
    _matches,
    _merge,
    _no_unknown,
    _show,
    _signature_info,
    _simple_table,
    _table,
    _typed,
)
from robustce.methods.registry import get_method, method_name

__all__ = ["available_metric_names", "sklearn_model_class"]


def sklearn_model_class(kind: str) -> type:
    """The scikit-learn estimator class of a ``[model] kind`` other than "mlp"."""
    import importlib

    module, _, name = SKLEARN_MODELS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def _model(value: Any, path: str = "model") -> dict[str, Any]:
    """The ``[model]`` table: ``kind`` ("mlp" — robustce's ``MLP``, the default — or one of
    :data:`SKLEARN_MODELS`) and the constructor parameters of that model, checked against its
    signature. An "mlp" table is returned without ``kind`` (the form fingerprints use)."""
    from robustce.models.mlp import MLP

    table = _table(value, path)
    kind = table.pop("kind", "mlp")
    if kind not in MODEL_KINDS:
        raise ConfigError(f"{path}.kind: expected one of {', '.join(MODEL_KINDS)}, got {kind!r}")
    if "random_state" in table:
        raise ConfigError(f"{path}.random_state: set by `seeds`, not in the model table")
    if kind != "mlp":
        # names against the signature; values by scikit-learn's own parameter constraints (a
        # default such as batch_size="auto" says nothing about the other accepted types)
        cls = sklearn_model_class(kind)
        names = {n: (None, inspect.Parameter.empty) for n in _signature_info(cls.__init__)}
        _check_values(table, names, path, skip=MODEL_SKIP)
        try:
            cls(**table)._validate_params()
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
        return {"kind": kind, **table}
    _check_params(table, MLP.__init__, path, skip=MODEL_SKIP)
    try:
        MLP(**table)
    except RobustCEError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return table


def _evaluation(value: Any, path: str = "evaluation") -> dict[str, Any]:
    table = _table(value, path)
    _no_unknown(table, EVAL_KEYS, path)
    out: dict[str, Any] = {}
    if "delta" in table:
        delta = _typed(table["delta"], float, f"{path}.delta")
        if not math.isfinite(delta) or delta <= 0:
            raise ConfigError(f"{path}.delta: must be a positive number, got {delta}")
        out["delta"] = delta
    out["lof_neighbors"] = _typed(table.get("lof_neighbors", 10), int, f"{path}.lof_neighbors")
    if out["lof_neighbors"] < 1:
        raise ConfigError(f"{path}.lof_neighbors: must be a positive integer")
    if "retrain" in table:
        out["retrain"] = _retrain(table["retrain"], f"{path}.retrain")
    if "perturb" in table:
        out["perturb"] = _perturb(table["perturb"], f"{path}.perturb")
    return out


def _perturb(value: Any, path: str = "evaluation.perturb") -> dict[str, Any]:
    from robustce.evaluation.perturbation import PERTURB_DEFAULTS, PerturbationSpec

    out = {**PERTURB_DEFAULTS, **_simple_table(value, PERTURB_KEYS, path)}
    try:
        PerturbationSpec(**out)
    except RobustCEError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return out


def _retrain(value: Any, path: str = "evaluation.retrain") -> dict[str, Any]:
    retrain = _simple_table(value, RETRAIN_KEYS, path)
    protocol = retrain.setdefault("protocol", "proplace")
    if protocol not in RETRAIN_PROTOCOLS:
        raise ConfigError(f"{path}.protocol: expected one of {RETRAIN_PROTOCOLS}, got {protocol!r}")
    allowed = {"protocol"} | RETRAIN_PARAMS[protocol]
    for key in retrain:
        if key not in allowed:
            raise ConfigError(f"{path}.{key}: not a parameter of protocol {protocol!r}; "
                              f"allowed: {', '.join(sorted(allowed))}")
    if "optimizer" in retrain and retrain["optimizer"] not in OPTIMIZER_STATES:
        raise ConfigError(f"{path}.optimizer: expected one of {OPTIMIZER_STATES}, "
                          f"got {retrain['optimizer']!r}")
    if "d2_params" in retrain and "d2" not in retrain:
        raise ConfigError(f"{path}.d2_params: parameters of a d2 dataset, but there is no d2")
    if "d2" in retrain:
        from robustce.data.registry import get_spec

        try:
            spec = get_spec(retrain["d2"])
        except RobustCEError as exc:
            raise ConfigError(f"{path}.d2: {exc}") from None
        _check_params(retrain.get("d2_params", {}), spec.loader, f"{path}.d2_params",
                      skip={"data_home"})
    if "method_data" in retrain and retrain["method_data"] not in METHOD_DATA:
        raise ConfigError(f"{path}.method_data: expected one of {METHOD_DATA}, "
                          f"got {retrain['method_data']!r}")
    for key in ("same_init_retrain", "same_init_drop"):
        if key in retrain and not all(_matches(v, int) and v >= 1 for v in retrain[key]):
            raise ConfigError(f"{path}.{key}: expected a list of 1-based model positions, got "
                              f"{_show(retrain[key])}")
    if "member_model" in retrain:
        retrain["member_model"] = _model(retrain["member_model"], f"{path}.member_model")
        if "kind" in retrain["member_model"]:
            raise ConfigError(f"{path}.member_model: the retrained models are robustce MLPs; "
                              "give MLP parameters only")
    if protocol == "proplace":
        retrain.setdefault("n_retrain", 5)
        retrain.setdefault("n_drop", 5)
        retrain.setdefault("drop_fraction", 0.01)
        if retrain["n_retrain"] < 0 or retrain["n_drop"] < 0 or retrain["n_retrain"] + retrain["n_drop"] < 1:
            raise ConfigError(f"{path}: need n_retrain + n_drop >= 1 (both non-negative)")
        if not 0 < retrain["drop_fraction"] < 1:
            raise ConfigError(f"{path}.drop_fraction: must be in (0, 1)")
    elif protocol == "continued":
        retrain.setdefault("n_models", 1)
        retrain.setdefault("fraction", 1.0)
        retrain.setdefault("epochs", 5)
        if retrain["n_models"] < 1 or retrain["epochs"] < 1:
            raise ConfigError(f"{path}: n_models and epochs must be positive integers")
        if not 0 < retrain["fraction"] <= 1:
            raise ConfigError(f"{path}.fraction: must be in (0, 1]")
        if "lr" in retrain and not retrain["lr"] > 0:
            raise ConfigError(f"{path}.lr: must be > 0")
    else:
        retrain.setdefault("n_models", 5)
        retrain.setdefault("drop_fraction", 0.0)
        if retrain["n_models"] < 1:
            raise ConfigError(f"{path}.n_models: must be a positive integer")
        if not 0 <= retrain["drop_fraction"] < 1:
            raise ConfigError(f"{path}.drop_fraction: must be in [0, 1)")
    return retrain


def available_metric_names() -> list[str]:
    """Names of the registered metrics (from :mod:`robustce.evaluation.metrics`)."""
    from robustce.evaluation.metrics import available_metrics

    return list(available_metrics())


_NEEDS_HINT = {"family": "an [evaluation.retrain] table", "shift": "evaluation.delta",
               "perturbed": "an [evaluation.perturb] table"}


def _metrics(value: Any, evaluations: Sequence[Mapping[str, Any]]) -> list[str] | None:
    """The metric names, each checked against what every dataset's evaluation provides."""
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise ConfigError(f"metrics: expected a non-empty list of metric names, got {_show(value)}")
    known = available_metric_names()
    for i, m in enumerate(value):
        if not isinstance(m, str):
            raise ConfigError(f"metrics[{i}]: expected a metric name, got {_show(m)}")
        if m not in known:
            raise ConfigError(f"metrics[{i}]: unknown metric {m!r}; available: {', '.join(known)}")
        have = {"data"} | ({"family"} if all("retrain" in e for e in evaluations) else set()) \
            | ({"shift"} if all("delta" in e for e in evaluations) else set()) \
            | ({"perturbed"} if all("perturb" in e for e in evaluations) else set())
        missing = sorted(_metric_needs(m) - have)
        if missing:
            raise ConfigError(f"metrics[{i}]: metric {m!r} needs "
                              f"{' and '.join(_NEEDS_HINT.get(n, n) for n in missing)}")
    if len(set(value)) != len(value):
        raise ConfigError(f"metrics: duplicates in {value}")
    return list(value)


def _metric_needs(name: str) -> set[str]:
    from robustce.evaluation.metrics import METRICS

    spec = METRICS.get(name)
    return set(getattr(spec, "needs", ()) or ())


def _named_entries(value: Any, section: str) -> Iterator[tuple[int, str, dict[str, Any], str]]:
    """The entries of a ``[[datasets]]`` / ``[[methods]]`` list, checked alike: yields
    ``(position, path, table, name)``; a bare string stands for ``{name = ...}``."""
    if value is None:
        raise ConfigError(f"{section}: required (a list of [[{section}]] tables or names)")
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{section}: expected a non-empty list, got {_show(value)}")
    for i, entry in enumerate(value):
        path = f"{section}[{i}]"
        if isinstance(entry, str):
            entry = {"name": entry}
        entry = _table(entry, path)
        _no_unknown(entry, DATASET_KEYS if section == "datasets" else METHOD_KEYS, path)
        if "name" not in entry:
            raise ConfigError(f"{path}.name: required")
        yield i, path, entry, _typed(entry["name"], str, f"{path}.name")


def _datasets(value: Any, model: Mapping[str, Any], evaluation: Mapping[str, Any],
              methods: Sequence[MethodEntry]) -> list[DatasetEntry]:
    """``[[datasets]]``; an entry's ``model`` / ``evaluation`` tables merge over the top-level
    ones (e.g. a per-dataset network and δ), its ``methods`` table overrides parameters of
    methods by label (e.g. ``methods = { milp_robust = { shift = 0.035 } }``)."""
    from robustce.data.registry import get_spec, list_datasets

    by_label = {m.label: m for m in methods}
    out: list[DatasetEntry] = []
    for _, path, entry, name in _named_entries(value, "datasets"):
        try:
            spec = get_spec(name)
        except RobustCEError:
            known = ", ".join(s.name for s in list_datasets())
            raise ConfigError(f"{path}.name: unknown dataset {name!r}; available: {known}") from None
        params = _table(entry.get("params", {}), f"{path}.params")
        _check_params(params, spec.loader, f"{path}.params", skip={"data_home"})
        label = _typed(entry.get("label", name), str, f"{path}.label")
        overrides: dict[str, Any] = {}
        own_model = dict(model)
        if "model" in entry:
            overrides["model"] = _table(entry["model"], f"{path}.model")
            same_kind = overrides["model"].get("kind", model.get("kind", "mlp")) == \
                model.get("kind", "mlp")
            own_model = _model(_merge(model, overrides["model"]) if same_kind
                               else overrides["model"], f"{path}.model")
        own_eval = _evaluation(evaluation)
        if "evaluation" in entry:
            overrides["evaluation"] = _table(entry["evaluation"], f"{path}.evaluation")
            own_eval = _evaluation(_merge(evaluation, overrides["evaluation"]), f"{path}.evaluation")
        method_params: dict[str, dict[str, Any]] = {}
        if "methods" in entry:
            overrides["methods"] = _table(entry["methods"], f"{path}.methods")
            for mlabel, mparams in overrides["methods"].items():
                where = f"{path}.methods.{mlabel}"
                if mlabel not in by_label:
                    raise ConfigError(f"{where}: no method labelled {mlabel!r}; "
                                      f"labels: {', '.join(by_label)}")
                mparams = _table(mparams, where)
                _check_method_params(mparams, by_label[mlabel].cls, where)
                method_params[mlabel] = mparams
        rows = entry.get("rows")
        if rows is not None and (not _matches(rows, int) or rows < 2):
            raise ConfigError(f"{path}.rows: expected an integer >= 2 (rows to subsample), "
                              f"got {_show(rows)}")
        kind = own_model.get("kind", "mlp")
        if kind != "mlp" and "retrain" in own_eval and not (
                own_eval["retrain"]["protocol"] == "continued"
                and hasattr(sklearn_model_class(kind), "partial_fit")):
            raise ConfigError(f"{path}: evaluation.retrain retrains the torch MLP (or, protocol "
                              f"continued, an estimator with partial_fit); model kind {kind!r} "
                              "has no retraining protocol")
        all_free = _typed(entry.get("all_free", False), bool, f"{path}.all_free")
        all_continuous = _typed(entry.get("all_continuous", False), bool,
                                f"{path}.all_continuous")
        optional = _typed(entry.get("optional", False), bool, f"{path}.optional")
        query_draws = entry.get("query_draws")
        if query_draws is not None and (not _matches(query_draws, int) or query_draws < 1):
            raise ConfigError(f"{path}.query_draws: expected a positive integer, got "
                              f"{_show(query_draws)}")
        out.append(DatasetEntry(name=name, label=label, params=params, model=own_model,
                                evaluation=own_eval, method_params=method_params, overrides=overrides,
                                rows=rows, all_free=all_free, all_continuous=all_continuous,
                                optional=optional, query_draws=query_draws))
    _unique([d.label for d in out], "datasets", "label")
    return out


def _methods(value: Any) -> list[MethodEntry]:
    out: list[MethodEntry] = []
    for i, path, entry, raw_name in _named_entries(value, "methods"):
        try:
            cls = get_method(raw_name)
        except ConfigError as exc:
            raise ConfigError(f"{path}.name: {exc}") from None
        name = method_name(raw_name)
        params = _table(entry.get("params", {}), f"{path}.params")
        _check_method_params(params, cls, f"{path}.params")
        label = _typed(entry.get("label", name), str, f"{path}.label")
        only = entry.get("datasets")
        if only is not None:
            if not isinstance(only, list) or not only or not all(isinstance(k, str) for k in only):
                raise ConfigError(f"{path}.datasets: expected a non-empty list of dataset "
                                  f"labels, got {_show(only)}")
            only = tuple(only)
        out.append(MethodEntry(name=name, label=label, cls=cls, params=params, index=i,
                               datasets=only))
    _unique([m.label for m in out], "methods", "label")
    return out


def _unique(labels: Sequence[str], path: str, what: str) -> None:
    seen: set[str] = set()
    for i, lab in enumerate(labels):
        if lab in seen:
            raise ConfigError(f"{path}[{i}].{what}: duplicate {lab!r}; give each entry a unique label")
        if not lab or any(c in lab for c in "/\\\0") or lab.startswith("."):
            raise ConfigError(f"{path}[{i}].{what}: {lab!r} cannot be used in file names")
        seen.add(lab)
