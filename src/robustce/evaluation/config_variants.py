"""The ``[quick]`` scale and the ``[variants.NAME]`` protocols of a benchmark configuration:
each turns the raw tables into those of the smaller run or of the variant's protocol, before
:func:`~robustce.evaluation.config.parse_config` validates them."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from robustce.errors import ConfigError
from robustce.evaluation.config_schema import QUICK_KEYS, VARIANT_DATASET_KEYS, VARIANT_KEYS
from robustce.evaluation.config_values import _merge, _no_unknown, _show, _table

__all__ = ["apply_quick", "apply_variant", "merge_datasets", "variant_named"]


# --- the quick scale ----------------------------------------------------------------------------
def _quick_table(value: Any) -> dict[str, Any]:
    table = _table(value, "quick")
    _no_unknown(table, QUICK_KEYS, "quick")
    return table


def apply_quick(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The config at its ``[quick]`` scale: the same protocol on fewer seeds, queries,
    retrained models or datasets. ``quick.seeds`` / ``quick.n_jobs`` replace the top-level
    values, ``quick.queries`` / ``quick.evaluation`` merge into those tables (a dataset's own
    ``evaluation`` still overrides them), ``quick.datasets`` lists the dataset labels to keep;
    ``name`` gets a " (quick)" suffix."""
    if "quick" not in raw:
        raise ConfigError("quick: this config has no [quick] table, so it has no quick scale")
    out = {k: copy.deepcopy(v) for k, v in raw.items() if k != "quick"}
    quick = _quick_table(raw["quick"])
    for key in ("seeds", "n_jobs"):
        if key in quick:
            out[key] = quick[key]
    for key in ("queries", "evaluation"):
        if key in quick:
            out[key] = _merge(_table(out.get(key, {}), key), _table(quick[key], f"quick.{key}"))
    if "datasets" in quick:
        keep = quick["datasets"]
        if not isinstance(keep, list) or not keep or not all(isinstance(k, str) for k in keep):
            raise ConfigError(f"quick.datasets: expected a non-empty list of dataset labels, "
                              f"got {_show(keep)}")
        entries = out.get("datasets") or []
        labels = [e if isinstance(e, str) else e.get("label", e.get("name"))
                  if isinstance(e, Mapping) else None for e in entries]
        for i, k in enumerate(keep):
            if k not in labels:
                raise ConfigError(f"quick.datasets[{i}]: no dataset labelled {k!r}; "
                                  f"labels: {', '.join(map(str, labels))}")
        out["datasets"] = [e for e, lab in zip(entries, labels, strict=True) if lab in keep]
    out["name"] = f"{out.get('name', 'benchmark')} (quick)"
    return out


# --- protocol variants --------------------------------------------------------------------------
def _variant_table(value: Any, path: str) -> dict[str, Any]:
    table = _table(value, path)
    _no_unknown(table, VARIANT_KEYS, path)
    for label, entry in _table(table.get("datasets", {}), f"{path}.datasets").items():
        _no_unknown(_table(entry, f"{path}.datasets.{label}"), VARIANT_DATASET_KEYS,
                    f"{path}.datasets.{label}")
    return table


def variant_named(raw: Mapping[str, Any], name: str) -> Any:
    """The config's ``[variants.NAME]`` table as written; :class:`ConfigError` naming the
    variants there are when it has none of that name."""
    variants = _table(raw.get("variants", {}), "variants")
    if name not in variants:
        known = ", ".join(sorted(variants)) or "none"
        raise ConfigError(f"variant {name!r}: this config has no [variants.{name}] table "
                          f"(variants: {known})")
    return variants[name]


def merge_datasets(entries: Sequence[Any], overrides: Mapping[str, Any],
                   path: str) -> list[Any]:
    """``[[datasets]]`` entries with ``overrides`` (dataset label -> table) merged into the
    entries of that label, key by key (a ``model`` of another ``kind`` replaces the entry's);
    :class:`ConfigError` for a label no entry has."""
    out = [e if isinstance(e, Mapping) else {"name": e} for e in entries]
    labels = [e.get("label", e.get("name")) for e in out]
    for label, over in overrides.items():
        if label not in labels:
            raise ConfigError(f"{path}.{label}: no dataset labelled {label!r}; labels: "
                              f"{', '.join(map(str, labels))}")
        i = labels.index(label)
        model = over.get("model")
        if isinstance(model, Mapping) and model.get("kind", "mlp") != \
                _table(out[i].get("model", {}), f"{path}.{label}.model").get("kind", "mlp"):
            out[i] = {k: v for k, v in out[i].items() if k != "model"}  # another kind replaces
        out[i] = _merge(out[i], over)
    return out


def apply_variant(raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The config under its ``[variants.NAME]`` protocol (e.g. ``authors``: the construction of
    a paper's own code where it differs from the paper's text). The variant's ``model``,
    ``split``, ``queries`` and ``evaluation`` tables merge into the top-level ones (key by key),
    its ``datasets`` table (by dataset label) into those entries (a dataset ``model`` of another
    ``kind`` replaces the entry's instead); its ``description`` replaces
    the config's; ``name`` gets a " (NAME variant)" suffix. Methods, seeds and the ``[quick]``
    scale are the config's own. Other variants are dropped."""
    variant = _variant_table(variant_named(raw, name), f"variants.{name}")
    out = {k: copy.deepcopy(v) for k, v in raw.items() if k != "variants"}
    for key in ("model", "split", "queries", "evaluation"):
        if key in variant:
            out[key] = _merge(_table(out.get(key, {}), key),
                              _table(variant[key], f"variants.{name}.{key}"))
    if "datasets" in variant:
        out["datasets"] = merge_datasets(out.get("datasets") or [], variant["datasets"],
                                         f"variants.{name}.datasets")
    if "description" in variant:
        out["description"] = variant["description"]
    out["name"] = f"{out.get('name', 'benchmark')} ({name} variant)"
    return out
