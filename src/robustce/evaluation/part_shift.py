"""The shift-by-parts protocol of RoCourseNet's Table 1 (``robustce benchmark rocoursenet-table1``).

A dataset whose ``groups`` name its parts — german original / corrected, student school GP / MS,
loan years, the simulated covariate- and label-shift parts D1 / D2 — is split part by part
(stratified, ``test_size``, the seed). For one method and one part g:

* the predictor: a method that trains its own (CounterNet, RoCourseNet) is trained on g's
  training split with the dataset's ``trained`` parameters; a post-hoc method explains an
  :class:`~robustce.models.MLP` with the dataset's ``predictor`` parameters trained on g's
  training split (one per part and seed, shared by the post-hoc methods of a run);
* the queries: every row of g's test split (or its first ``queries``), each CE aiming at the
  class opposite to g's own prediction;
* validity: the share of g's queries whose CE g's predictor puts in the target class;
* robust validity: the same share on the predictor of every other part h (the same method
  trained on h), averaged over the (query, h) pairs — a part's CEs meet the models the data
  shift would bring;
* ``robust_validity_to_c``: robust validity of the queries whose CE aims at class c;
* ``robust_validity_median``: the median of the validity matrix (g's CEs on h's predictor, over
  the ordered pairs h ≠ g), the statistic of the authors' saved results, beside its mean;
* ``out_of_range`` and ``excess_range_*``: how many CEs leave the data range, and how far
  (:func:`out_of_range`; the authors' CEs are unbounded, ``bounded=False``);
* proximity L1 (model space, queries with a CE), coverage, the predictor's accuracy.

A query without a CE counts as invalid. One cell is (dataset, seed, method): its metrics are
averages over the parts; the table gives mean ± std over seeds. ``train_s`` is the wall time
to train the method's predictors (all parts; post-hoc: the shared MLPs), ``time_s`` the CE
time per query. Cells are written atomically to ``out_dir/cells/`` and a rerun skips those
with the same fingerprint; cells run one after another (training is the cost and uses torch's
threads).

A configuration is a TOML file with ``protocol = "parts"``::

    name, description, seeds, test_size (0.25), split ("random": stratified by the seed;
    "last": the last test_size of each part's rows, unshuffled, as the authors), out_dir,
    data_home
    [[datasets]]  name, label, params (loader arguments), kinds (feature -> kind, see
                  Dataset.with_kinds), all_free, queries (first N test rows per part),
                  seeds (replaces the top-level ones), trained = {...}, predictor = {...},
                  methods = {label = {params}} (per-dataset method parameters)
    [[methods]]   name (registry), label, params, datasets (labels it runs on)
    [quick]       description, seeds, queries, epochs (a cap on every epochs), datasets
    [variants.NAME]  description, test_size, split, datasets = {label = {trained, predictor,
                  params, kinds, all_free, methods}} (merged key by key; ``--variant NAME``)
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from robustce.errors import ConfigError

# the benchmark configuration's validators: same messages, same rules
from robustce.evaluation.config import _digest
from robustce.evaluation.config_values import _no_unknown, _path, _seeds, _table, _typed
from robustce.evaluation.config_variants import merge_datasets, variant_named
from robustce.evaluation.results import cell_id, read_cell
from robustce.utils import atomic_write

__all__ = ["PartCEs", "PartShiftConfig", "PartShiftResult", "apply_part_variant", "out_of_range",
           "parse_part_shift",
           "part_predictors", "posthoc_parts", "run_part_shift", "scaled_columns", "score_parts",
           "split_part", "trained_parts"]

#: format of a part-shift cell file (not the runner's: its cells are never mixed up)
CELL_FORMAT = "parts-1"
TOP_KEYS = {"name", "description", "protocol", "seeds", "test_size", "split", "out_dir",
            "data_home", "datasets", "methods", "quick", "variants"}
#: what a ``[variants.NAME]`` table may change: the protocol, never the methods or the scale
VARIANT_KEYS = {"description", "test_size", "split", "datasets"}
VARIANT_DATASET_KEYS = {"params", "kinds", "all_free", "trained", "predictor", "methods"}
SPLITS = ("random", "last")
DATASET_KEYS = {"name", "label", "params", "kinds", "all_free", "queries", "seeds", "trained",
                "predictor", "methods"}
METHOD_KEYS = {"name", "label", "params", "datasets"}
QUICK_KEYS = {"description", "seeds", "queries", "epochs", "datasets"}
METRICS = ("validity", "robust_validity", "robust_validity_median", "robust_validity_to_0",
           "robust_validity_to_1", "proximity_l1", "coverage", "accuracy", "out_of_range",
           "excess_range_mean", "excess_range_max", "train_s", "time_s")


# --- scoring ------------------------------------------------------------------------------------
@dataclass
class PartCEs:
    """One part's queries (model space), own predictions, CEs (NaN rows: no CE), labels and the
    wall time of the CE step for all its queries."""

    X: np.ndarray
    own: np.ndarray
    C: np.ndarray
    y: np.ndarray
    seconds: float
    scaled: dict[str, tuple[int, float]] | None = None

    @property
    def has(self) -> np.ndarray:
        return ~np.isnan(self.C).any(axis=1)


def scaled_columns(encoder: Any) -> dict[str, tuple[int, float]]:
    """``{feature: (model column, raw range upper - lower)}`` of the encoder's min-max scaled
    (numeric, non-constant) features: the columns whose model-space range is [0, 1]."""
    return {b.feature.name: (b.start, float(b.feature.upper - b.feature.lower))
            for b in encoder.blocks_
            if b.encoding == "scaled" and b.feature.upper != b.feature.lower}


def out_of_range(parts: Mapping[Any, PartCEs]) -> dict[str, Any]:
    """How far the CEs leave the data range (the schema bounds: model space [0, 1]) on the
    scaled features. ``out_of_range``: the share of CEs with some feature outside;
    ``excess_range_mean`` / ``excess_range_max``: a leaving CE's largest excess as a multiple of
    its feature's range (mean over the leaving CEs, max over all); ``out_of_range_by_feature``:
    per feature the share of CEs outside and the mean (over those) / max excess in raw units.
    Empty when no part knows its ``scaled`` columns."""
    known = [p for p in parts.values() if p.scaled]
    if not known:
        return {}
    names = list(known[0].scaled)
    cols = [c for c, _ in known[0].scaled.values()]
    spans = np.array([r for _, r in known[0].scaled.values()])
    v = np.vstack([p.C[p.has][:, cols] for p in known])
    rel = np.maximum(v - 1.0, 0.0) + np.maximum(-v, 0.0)  # excess / range, (CEs, features)
    raw = rel * spans
    worst = rel.max(axis=1) if len(rel) else np.zeros(0)
    leaves = worst > 0
    by_feature = {name: {"share": float((raw[:, j] > 0).mean()) if len(raw) else 0.0,
                         "mean_excess": float(raw[raw[:, j] > 0, j].mean())
                         if (raw[:, j] > 0).any() else 0.0,
                         "max_excess": float(raw[:, j].max()) if len(raw) else 0.0}
                  for j, name in enumerate(names)}
    return {"out_of_range": float(leaves.mean()) if len(leaves) else 0.0,
            "excess_range_mean": float(worst[leaves].mean()) if leaves.any() else 0.0,
            "excess_range_max": float(worst.max()) if len(worst) else 0.0,
            "out_of_range_by_feature": by_feature}


def score_parts(parts: Mapping[Any, PartCEs],
                predict: Mapping[Any, Callable[[np.ndarray], np.ndarray]]) -> dict[str, Any]:
    """Validity (own predictor), robust validity (every other part's predictor), robust
    validity by target class, proximity L1, coverage and accuracy, each averaged over the parts
    (``by_part`` keeps each part's); a query without a CE is invalid.

    ``validity_matrix[g][h]``: the share of g's queries whose CE h's predictor puts in the
    target class (h ≠ g). ``robust_validity`` is its mean, ``robust_validity_median`` its
    median (the statistic of the RoCourseNet authors' validity matrices). With the parts'
    ``scaled`` columns, the :func:`out_of_range` figures too."""
    if len(parts) < 2:
        raise ConfigError("the parts protocol needs at least two parts")
    val, rob, prox, cov, acc, sec, n = [], [], [], [], [], [], 0
    rob_to: dict[int, list[float]] = {0: [], 1: []}
    by_part: dict[str, dict[str, Any]] = {}
    matrix: dict[str, dict[str, float]] = {}  # g's CEs on h's predictor, h != g
    for g, p in parts.items():
        has, want = p.has, 1 - p.own

        def valid_on(h: Any, p: PartCEs = p, has: np.ndarray = has,
                     want: np.ndarray = want) -> np.ndarray:
            ok = np.zeros(len(has), dtype=bool)
            if has.any():
                ok[has] = predict[h](p.C[has]) == want[has]
            return ok

        val.append(float(valid_on(g).mean()))
        each = {h: valid_on(h) for h in parts if h != g}
        on_others = np.mean(list(each.values()), axis=0)
        rob.append(float(on_others.mean()))
        matrix[str(g)] = {str(h): float(ok.mean()) for h, ok in each.items()}
        info: dict[str, Any] = {"validity": round(val[-1], 4), "robust_validity": round(rob[-1], 4)}
        for c in (0, 1):  # split by the class the CE aims at
            info[f"n_to_{c}"] = int((want == c).sum())
            if (want == c).any():
                rob_to[c].append(float(on_others[want == c].mean()))
                info[f"robust_validity_to_{c}"] = round(rob_to[c][-1], 4)
        prox.append(float(np.abs(p.C[has] - p.X[has]).sum(axis=1).mean()) if has.any()
                    else math.nan)
        cov.append(float(has.mean()))
        acc.append(float((p.own == p.y).mean()))
        info |= {"accuracy": round(acc[-1], 4),
                 "base_rate": round(float(max(p.y.mean(), 1 - p.y.mean())), 4),
                 "share_y1": round(float(p.y.mean()), 4),
                 "share_pred1": round(float(p.own.mean()), 4)}
        by_part[str(g)] = info
        sec.append(p.seconds)
        n += len(p.X)
    finite = [v for v in prox if math.isfinite(v)]
    entries = [v for row in matrix.values() for v in row.values()]
    return {"validity": float(np.mean(val)), "robust_validity": float(np.mean(rob)),
            "robust_validity_median": float(np.median(entries)),
            **{f"robust_validity_to_{c}": float(np.mean(v)) if v else math.nan
               for c, v in rob_to.items()},
            "proximity_l1": float(np.mean(finite)) if finite else math.nan,
            "coverage": float(np.mean(cov)), "accuracy": float(np.mean(acc)),
            "time_s": float(np.sum(sec) / max(n, 1)), "n_queries": n, "by_part": by_part,
            "validity_matrix": matrix, **out_of_range(parts)}


# --- configuration --------------------------------------------------------------------------------
@dataclass
class PartDataset:
    """One ``[[datasets]]`` entry of a part-shift configuration."""

    name: str
    label: str
    params: dict[str, Any] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    all_free: bool = False
    queries: int | None = None
    seeds: list[int] | None = None
    trained: dict[str, Any] = field(default_factory=dict)
    predictor: dict[str, Any] = field(default_factory=dict)
    method_params: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class PartMethod:
    """One ``[[methods]]`` entry: a registry method; ``trains_own`` if it takes no model."""

    name: str
    label: str
    cls: type
    params: dict[str, Any] = field(default_factory=dict)
    datasets: tuple[str, ...] | None = None

    @property
    def trains_own(self) -> bool:
        from robustce.methods.registry import trains_own_model

        return trains_own_model(self.cls)


@dataclass
class PartShiftConfig:
    """A validated part-shift configuration (see the module docstring)."""

    name: str
    seeds: list[int]
    datasets: list[PartDataset]
    methods: list[PartMethod]
    test_size: float = 0.25
    split: str = "random"
    description: str = ""
    out_dir: Path | None = None
    data_home: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def cells(self) -> list[tuple[PartDataset, int, PartMethod]]:
        """Every (dataset, seed, method) cell, grouped by (dataset, seed)."""
        return [(d, s, m) for d in self.datasets for s in (d.seeds or self.seeds)
                for m in self.methods if m.datasets is None or d.label in m.datasets]

    def method_params(self, dataset: PartDataset, method: PartMethod) -> dict[str, Any]:
        """The method's constructor parameters on ``dataset``: the dataset's ``trained`` ones
        for a method that trains its own predictor, then the method's, then the dataset's
        overrides for it."""
        base = dict(dataset.trained) if method.trains_own else {}
        return base | method.params | dataset.method_params.get(method.label, {})

    def fingerprint(self, dataset: PartDataset, seed: int, method: PartMethod) -> str:
        """Hash of everything that determines a cell; a stale cell file is recomputed."""
        key = {"data": dataset.name, "params": dataset.params, "kinds": dataset.kinds,
               "all_free": dataset.all_free, "queries": dataset.queries, "seed": seed,
               "test_size": self.test_size, "method": method.name,
               **({"split": self.split} if self.split != "random" else {}),
               "method_params": self.method_params(dataset, method),
               "predictor": None if method.trains_own else dataset.predictor}
        return _digest(key)


def _check_keys(table: Any, allowed: set[str], path: str) -> dict[str, Any]:
    out = _table(table, path)
    _no_unknown(out, allowed, path)
    return out


def _positive_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{path}: expected a positive integer, got {value!r}")
    return value


def _apply_quick(raw: dict[str, Any]) -> dict[str, Any]:
    """The configuration at its ``[quick]`` scale: fewer seeds, queries, epochs or datasets."""
    if "quick" not in raw:
        raise ConfigError("quick: this config has no [quick] table, so it has no quick scale")
    quick = _check_keys(raw.pop("quick"), QUICK_KEYS, "quick")
    if "seeds" in quick:
        raw["seeds"] = _seeds(quick["seeds"], "quick.seeds")
    datasets = [dict(d) for d in raw.get("datasets") or [] if isinstance(d, Mapping)]
    if "datasets" in quick:
        keep = quick["datasets"]
        labels = [d.get("label", d.get("name")) for d in datasets]
        if not isinstance(keep, list) or not keep or any(k not in labels for k in keep):
            raise ConfigError(f"quick.datasets: expected a non-empty list of the labels "
                              f"{labels}, got {keep!r}")
        datasets = [d for d, lab in zip(datasets, labels, strict=True) if lab in keep]
    for d in datasets:
        if "seeds" in quick:
            d.pop("seeds", None)
        if "queries" in quick:
            d["queries"] = _positive_int(quick["queries"], "quick.queries")
        if "epochs" in quick:
            cap = _positive_int(quick["epochs"], "quick.epochs")
            for key in ("trained", "predictor"):
                if isinstance(d.get(key), Mapping):
                    d[key] = dict(d[key]) | {"epochs": min(cap, d[key].get("epochs", cap))}
    raw["datasets"] = datasets
    raw["name"] = f"{raw.get('name', 'benchmark')} (quick)"
    return raw


def _variant(raw: Mapping[str, Any], path: str) -> dict[str, Any]:
    table = _check_keys(raw, VARIANT_KEYS, path)
    for label, entry in _table(table.get("datasets", {}), f"{path}.datasets").items():
        _check_keys(entry, VARIANT_DATASET_KEYS, f"{path}.datasets.{label}")
    return table


def apply_part_variant(raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The part-shift configuration under its ``[variants.NAME]`` protocol (e.g. ``authors``:
    the construction of the paper's own code). The variant's ``test_size`` and ``split``
    replace the top-level ones, its ``datasets`` table (by label) merges into those entries —
    ``trained``, ``predictor``, ``params``, ``kinds`` and per-dataset ``methods`` key by key —
    and its ``description`` replaces the config's; ``name`` gets a " (NAME variant)" suffix.
    Methods, seeds and the ``[quick]`` scale stay the config's own. Raises
    :class:`ConfigError` for an unknown variant or key."""
    variant = _variant(variant_named(raw, name), f"variants.{name}")
    out = {k: copy.deepcopy(v) for k, v in raw.items() if k != "variants"}
    for key in ("test_size", "split", "description"):
        if key in variant:
            out[key] = copy.deepcopy(variant[key])
    out["datasets"] = merge_datasets(out.get("datasets") or [], variant.get("datasets", {}),
                                     f"variants.{name}.datasets")
    out["name"] = f"{out.get('name', 'benchmark')} ({name} variant)"
    return out


def parse_part_shift(raw: Mapping[str, Any], base_dir: str | Path | None = None, *,
                     quick: bool = False, variant: str | None = None) -> PartShiftConfig:
    """Validate a part-shift configuration dict (the TOML file's tables); ``variant="NAME"``
    applies its ``[variants.NAME]`` protocol first (:func:`apply_part_variant`), ``quick=True``
    then its ``[quick]`` table. Raises :class:`ConfigError` naming the key at fault."""
    from robustce.methods.registry import get_method

    raw = _check_keys(copy.deepcopy(dict(raw)), TOP_KEYS, "config")
    if raw.get("protocol") != "parts":
        raise ConfigError(f"protocol: expected 'parts', got {raw.get('protocol')!r}")
    if variant is not None:
        raw = apply_part_variant(raw, variant)
    elif "variants" in raw:  # checked, then dropped
        for key, table in _table(raw.pop("variants"), "variants").items():
            _variant(table, f"variants.{key}")
    if quick:
        raw = _apply_quick(raw)
    elif "quick" in raw:
        _check_keys(raw.pop("quick"), QUICK_KEYS, "quick")
    base = Path(base_dir) if base_dir is not None else None
    test_size = raw.get("test_size", 0.25)
    if isinstance(test_size, bool) or not isinstance(test_size, int | float) \
            or not 0 < test_size < 1:
        raise ConfigError(f"test_size: expected a number in (0, 1), got {test_size!r}")
    split = raw.get("split", "random")
    if split not in SPLITS:
        raise ConfigError(f"split: expected one of {', '.join(SPLITS)}, got {split!r}")
    methods: list[PartMethod] = []
    for i, m in enumerate(raw.get("methods") or []):
        m = _check_keys(m, METHOD_KEYS, f"methods[{i}]")
        name = _typed(m.get("name"), str, f"methods[{i}].name")
        try:
            cls = get_method(name)
        except ConfigError as exc:
            raise ConfigError(f"methods[{i}].name: {exc}") from None
        ds = m.get("datasets")
        if ds is not None and (not isinstance(ds, list) or not all(isinstance(x, str) for x in ds)):
            raise ConfigError(f"methods[{i}].datasets: expected a list of labels, got {ds!r}")
        methods.append(PartMethod(name, _typed(m.get("label", name), str, f"methods[{i}].label"),
                                  cls, _table(m.get("params", {}), f"methods[{i}].params"),
                                  None if ds is None else tuple(ds)))
    if not methods:
        raise ConfigError("methods: at least one [[methods]] entry is needed")
    if len({m.label for m in methods}) != len(methods):
        raise ConfigError("methods: labels must be unique (give a `label` to repeated methods)")
    datasets: list[PartDataset] = []
    for i, d in enumerate(raw.get("datasets") or []):
        path = f"datasets[{i}]"
        d = _check_keys(d, DATASET_KEYS, path)
        name = _typed(d.get("name"), str, f"{path}.name")
        tables = {k: _table(d.get(k, {}), f"{path}.{k}")
                  for k in ("params", "kinds", "trained", "predictor", "methods")}
        for label, params in tables["methods"].items():
            if label not in {m.label for m in methods}:
                raise ConfigError(f"{path}.methods.{label}: no method labelled {label!r}")
            tables["methods"][label] = _table(params, f"{path}.methods.{label}")
        queries = d.get("queries")
        datasets.append(PartDataset(
            name, _typed(d.get("label", name), str, f"{path}.label"), tables["params"],
            tables["kinds"], _typed(d.get("all_free", False), bool, f"{path}.all_free"),
            None if queries is None else _positive_int(queries, f"{path}.queries"),
            None if "seeds" not in d else _seeds(d["seeds"], f"{path}.seeds"),
            tables["trained"], tables["predictor"], tables["methods"]))
    if not datasets:
        raise ConfigError("datasets: at least one [[datasets]] entry is needed")
    if len({d.label for d in datasets}) != len(datasets):
        raise ConfigError("datasets: labels must be unique")
    for i, m in enumerate(methods):
        for lab in m.datasets or ():
            if lab not in {d.label for d in datasets} and not quick:
                raise ConfigError(f"methods[{i}].datasets: no dataset labelled {lab!r}")
    config = PartShiftConfig(
        name=_typed(raw.get("name", "benchmark"), str, "name"),
        seeds=_seeds(raw.get("seeds", [0]), "seeds"), datasets=datasets, methods=methods,
        test_size=float(test_size), split=split,
        description=_typed(raw.get("description", ""), str, "description"),
        out_dir=_path(raw.get("out_dir"), "out_dir", base),
        data_home=_path(raw.get("data_home"), "data_home", base),
        raw=raw)
    _check_parameters(config)
    return config


def _check_parameters(config: PartShiftConfig) -> None:
    """Every method's and predictor's parameters and every feature kind, before any work."""
    import inspect

    from robustce.methods.registry import convert_params
    from robustce.models.mlp import MLP

    mlp_params = set(inspect.signature(MLP.__init__).parameters) - {"self", "random_state"}
    for i, d in enumerate(config.datasets):
        path = f"datasets[{i}]"
        for name, kind in d.kinds.items():
            if kind not in ("categorical", "integer", "continuous"):
                raise ConfigError(f"{path}.kinds.{name}: expected 'categorical', 'integer' or "
                                  f"'continuous', got {kind!r}")
        for key in d.predictor:
            if key not in mlp_params:
                raise ConfigError(f"{path}.predictor.{key}: unknown parameter of MLP; "
                                  f"allowed: {', '.join(sorted(mlp_params))}")
        for m in (m for m in config.methods if m.datasets is None or d.label in m.datasets):
            try:
                convert_params(m.cls, config.method_params(d, m))
            except ConfigError as exc:
                raise ConfigError(f"{path} / method {m.label!r}: {exc}") from None


# --- running -------------------------------------------------------------------------------------
@dataclass
class _Group:
    """What the cells of one (dataset, seed) share: the parts' splits and, once a post-hoc
    method asks, the parts' MLPs."""

    splits: dict[Any, tuple[Any, Any]]
    mlps: dict[Any, Any] | None = None
    mlp_s: float = math.nan


def _prepare(config: PartShiftConfig, d: PartDataset, seed: int) -> _Group:
    from robustce.data.registry import load

    data = load(d.name, data_home=config.data_home, **d.params)
    if data.groups is None:
        raise ConfigError(f"dataset {d.label!r} has no groups: the parts protocol needs parts")
    if d.kinds:
        data = data.with_kinds(d.kinds)
    if d.all_free:
        data = data.all_free()
    return _Group({g: split_part(p, config.test_size, config.split, seed)
                   for g, p in data.by_group().items()})


def split_part(part: Any, test_size: float, how: str = "random", seed: int = 0
               ) -> tuple[Any, Any]:
    """One part's (train, test): ``"random"`` a stratified random split (the seed's);
    ``"last"`` the last ``test_size`` share of the rows in file order, unshuffled (the
    RoCourseNet authors' split: the test set is the same for every seed)."""
    if how == "random":
        return part.split(test_size=test_size, random_state=seed)
    n_test = math.ceil(test_size * len(part))
    cut = len(part) - n_test
    return part.subset(np.arange(cut)), part.subset(np.arange(cut, len(part)))


def _queries(test: Any, n: int | None) -> Any:
    return test if n is None or n >= len(test) else test.subset(np.arange(n))


def trained_parts(cls: type, params: Mapping[str, Any], splits: Mapping[Any, tuple[Any, Any]],
                  seed: int, n_queries: int | None = None, checkpoint: Path | None = None
                  ) -> tuple[dict[Any, PartCEs], dict[Any, Callable], dict[str, float]]:
    """Train a method that brings its own predictor (CounterNet, RoCourseNet) on every part's
    training split and take its CEs for the part's test queries (one forward pass). Returns the
    parts' CEs, the parts' predictors and the training time (``train_s`` wall,
    ``train_cpu_s`` CPU, summed over the parts).

    ``checkpoint``: a directory where each finished part (its CEs, its trained predictor and
    its training time) is saved, atomically, as soon as it is done; a part found there is loaded
    instead of trained, so an interrupted cell (loan: 16 parts, hours of training) resumes at
    the part it stopped in. The caller keys the directory by the cell's fingerprint."""
    import joblib

    from robustce.methods.registry import build_explainer

    parts: dict[Any, PartCEs] = {}
    predictors: dict[Any, Callable] = {}
    times = {"train_s": 0.0, "train_cpu_s": 0.0}
    for g, (train, test) in splits.items():
        saved = None if checkpoint is None else checkpoint / f"part_{g}.joblib"
        if saved is not None and saved.is_file():
            part, predict, spent = joblib.load(saved)
        else:
            t0, c0 = time.perf_counter(), time.process_time()
            m = build_explainer(cls, None, train, seed=seed, **({"progress": False} | params))
            spent = {"train_s": time.perf_counter() - t0, "train_cpu_s": time.process_time() - c0}
            q = _queries(test, n_queries)
            X = m.encoder.transform(q.frame)
            own = m.model.predict(X)
            t1 = time.perf_counter()
            C = m.counterfactuals(X)
            part = PartCEs(X, own, C, q.y, time.perf_counter() - t1, scaled_columns(m.encoder))
            predict = m.model.predict
            if saved is not None:
                with atomic_write(saved, "wb") as fh:
                    joblib.dump((part, predict, spent), fh)
        parts[g], predictors[g] = part, predict
        for k in times:
            times[k] += spent[k]
    return parts, predictors, times


def posthoc_parts(cls: type, params: Mapping[str, Any], predictors: Mapping[Any, Any],
                  splits: Mapping[Any, tuple[Any, Any]], seed: int,
                  n_queries: int | None = None) -> dict[Any, PartCEs]:
    """A post-hoc method's CEs for every part's test queries, explaining that part's
    predictor (built on the part's training split); NaN rows where it found none."""
    from robustce.methods.registry import build_explainer

    parts = {}
    for g, (train, test) in splits.items():
        m, q = predictors[g], _queries(test, n_queries)
        X = m.encoder.transform(q.frame)
        explainer = build_explainer(cls, m, train, seed=seed, **params)
        t1 = time.perf_counter()
        res = explainer.explain(X)
        secs = time.perf_counter() - t1
        C = np.full_like(X, np.nan)
        pos, ces = res.first_counterfactuals()
        C[pos] = ces
        parts[g] = PartCEs(X, m.predict(X), C, q.y, secs, scaled_columns(m.encoder))
    return parts


def part_predictors(params: Mapping[str, Any], splits: Mapping[Any, tuple[Any, Any]],
                    seed: int) -> tuple[dict[Any, Any], float]:
    """The post-hoc methods' predictors: an :class:`~robustce.models.MLP` (``params``) trained
    on every part's training split; and the seconds it took."""
    from robustce.models.mlp import MLP

    t0 = time.perf_counter()
    mlps = {g: MLP(**params, random_state=seed).fit(train) for g, (train, _) in splits.items()}
    return mlps, time.perf_counter() - t0


def _trained_cell(method: PartMethod, params: dict[str, Any], group: _Group, d: PartDataset,
                  seed: int, checkpoint: Path | None = None) -> dict[str, Any]:
    parts, predict, times = trained_parts(method.cls, params, group.splits, seed, d.queries,
                                          checkpoint=checkpoint)
    return score_parts(parts, predict) | times


def _posthoc_cell(method: PartMethod, params: dict[str, Any], group: _Group, d: PartDataset,
                  seed: int) -> dict[str, Any]:
    if group.mlps is None:  # one predictor per part, shared by every post-hoc method
        group.mlps, group.mlp_s = part_predictors(d.predictor, group.splits, seed)
    parts = posthoc_parts(method.cls, params, group.mlps, group.splits, seed, d.queries)
    return score_parts(parts, {g: m.predict for g, m in group.mlps.items()}) | {
        "train_s": group.mlp_s}


def _clean(value: Any) -> Any:
    """``value`` for strict JSON: the runner's scalars (NaN → None) inside dicts and lists."""
    from robustce.evaluation.runner import _scalar

    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return _scalar(value)


def _cell_path(out: Path, d: PartDataset, seed: int, m: PartMethod) -> Path:
    return out / "cells" / f"{cell_id(d.label, seed, m.label)}.json"


def _parts_path(out: Path, d: PartDataset, seed: int, m: PartMethod) -> Path:
    """Where a trained cell checkpoints its finished parts (one folder per fingerprint)."""
    return _cell_path(out, d, seed, m).with_suffix(".parts")


def _read_cell(path: Path) -> dict[str, Any] | None:
    return read_cell(path, CELL_FORMAT)


@dataclass
class PartShiftResult:
    """The cells of a part-shift run and the mean ± std table over seeds."""

    config: PartShiftConfig
    cells: list[dict[str, Any]]
    out_dir: Path

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [c for c in self.cells if not c.get("ok")]

    def table(self) -> pd.DataFrame:
        """Rows (dataset, method), columns (metric, "mean"/"std") over the seeds' cells; ``n``
        is the number of queries per seed, ``errors`` the failed cells."""
        rows: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
        for d in self.config.datasets:
            for m in self.config.methods:
                cells = [c for c in self.cells if c["dataset"] == d.label
                         and c["method"] == m.label]
                if not cells:
                    continue
                ok = [c for c in cells if c.get("ok")]
                row: dict[tuple[str, str], float] = {}
                for name in (*METRICS, "n_queries"):
                    v = np.array([c[name] for c in ok if c.get(name) is not None], dtype=float)
                    key = "n" if name == "n_queries" else name
                    row[(key, "mean")] = float(v.mean()) if len(v) else math.nan
                    row[(key, "std")] = float(v.std()) if len(v) and key != "n" else math.nan
                row[("errors", "mean")], row[("errors", "std")] = len(cells) - len(ok), math.nan
                rows[(d.label, m.label)] = row
        table = pd.DataFrame.from_dict(rows, orient="index")
        if len(table):
            table.index = pd.MultiIndex.from_tuples(table.index, names=["dataset", "method"])
            table.columns = pd.MultiIndex.from_tuples(table.columns, names=["metric", "stat"])
        return table

    def format(self, digits: int = 3) -> str:
        from robustce.evaluation.report import format_table

        return format_table(self.table(), digits=digits)


def run_part_shift(config: PartShiftConfig | Mapping[str, Any], out_dir: str | Path | None = None,
                   *, progress: bool = True, retry_errors: bool = False, resume: bool = True
                   ) -> PartShiftResult:
    """Run (or resume) a part-shift benchmark; each cell is written to
    ``out_dir/cells/<dataset>__seed<s>__<method>.json`` as soon as it is done, then
    ``table.csv``. A cell that raises is recorded (``ok: false``, the error) and the run goes
    on; rerun with ``retry_errors`` to compute it again."""
    if not isinstance(config, PartShiftConfig):
        config = parse_part_shift(config)
    out = Path(out_dir) if out_dir is not None else config.out_dir
    if out is None:
        raise ConfigError("out_dir: no output directory given (config `out_dir` or argument)")
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "config.json") as fh:
        json.dump(config.raw, fh, indent=1, default=str)
    cells = config.cells()
    prints = [config.fingerprint(d, s, m) for d, s, m in cells]
    records: list[dict[str, Any] | None] = []
    for (d, s, m), fp in zip(cells, prints, strict=True):
        rec = _read_cell(_cell_path(out, d, s, m))
        fresh = rec is not None and rec.get("fingerprint") == fp
        records.append(rec if resume and fresh and (rec.get("ok") or not retry_errors) else None)
    todo = [i for i, rec in enumerate(records) if rec is None]
    key, group = None, None  # cells come grouped by (dataset, seed): one group is kept at a time
    bar = tqdm(total=len(todo), desc="cells", unit="cell", disable=not progress, file=sys.stderr)
    for i in todo:
        d, s, m = cells[i]
        params = config.method_params(d, m)
        record: dict[str, Any] = {"format": CELL_FORMAT, "dataset": d.label, "seed": s,
                                  "method": m.label, "method_name": m.name, "params": params,
                                  "fingerprint": prints[i]}
        t0 = time.perf_counter()
        try:
            if key != (d.label, s):
                key = (d.label, s)
                try:
                    group = _prepare(config, d, s)
                except Exception as exc:  # every cell of the group reports it
                    group = exc
            if isinstance(group, BaseException):
                raise group
            if m.trains_own:  # per-part checkpoints, kept only for this fingerprint
                parts_dir = _parts_path(out, d, s, m)
                ckpt = parts_dir / prints[i]
                if parts_dir.is_dir():
                    for stale in parts_dir.iterdir():
                        if stale != ckpt:
                            shutil.rmtree(stale, ignore_errors=True)
                record |= {"ok": True, **_trained_cell(m, params, group, d, s, checkpoint=ckpt)}
            else:
                record |= {"ok": True, **_posthoc_cell(m, params, group, d, s)}
        except Exception as exc:
            record |= {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                       "traceback": traceback.format_exc(limit=8)}
        record["seconds"] = time.perf_counter() - t0
        records[i] = record = _clean(record)
        with atomic_write(_cell_path(out, d, s, m)) as fh:
            json.dump(record, fh, indent=1, allow_nan=False)
        if record.get("ok"):  # the cell is on disk: its parts are no longer needed
            shutil.rmtree(_parts_path(out, d, s, m), ignore_errors=True)
        bar.set_postfix_str(f"{d.label} {s} {m.label}", refresh=False)
        bar.update(1)
    bar.close()
    result = PartShiftResult(config, [r for r in records if r is not None], out)
    with atomic_write(out / "table.csv") as fh:
        result.table().to_csv(fh)
    return result
