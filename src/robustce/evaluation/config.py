"""Benchmark configuration: parse and validate a TOML file or a plain dict *before* any work.

Every problem is reported as a :class:`~robustce.errors.ConfigError` whose message starts with
the key path of the offending entry, e.g. ``methods[1].params.lam: unknown parameter``. The
schema (documented in ``docs/benchmark.md``)::

    name = "baselines"            # optional, used in reports
    seeds = [0, 1, 2]             # required; one run of every (dataset, method) per seed
    metrics = ["validity", ...]   # optional; default: every registered metric
    n_jobs = 1                    # optional; joblib workers over cells
    backend = "loky"              # optional; any joblib backend name ("dask", "threading", ...)
    out_dir = "results/baselines" # optional; relative paths are relative to the config file
    on_error = "record"           # or "raise": what a failing cell does
    data_home = "../shared/datasets"   # optional; where file datasets are read from

    [model]                       # kind = "mlp" (default) | "tree" | "forest" | "logistic" |
                                  # "sklearn_mlp", and its parameters (random_state: the seed)
    hidden_layers = [20, 10]
    epochs = 30

    [split]
    test_size = 0.2

    [queries]
    n = 20                        # first n test rows predicted as `from_class`
    from_class = 0                # a class index or label ("rejected"); default 0, or with
                                  # target_class (binary) the other class
    target_class = 1              # optional; binary default: the other class; a label, or
                                  # "favourable": each dataset's declared favourable class
    source = "test"               # or "train": rows of the data the methods see; "d1": the
                                  # rows the model was trained on (protocols with a D1);
                                  # "all": the rows the model was trained on and the test
                                  # rows
    order = "first"               # or "random": n drawn with the seed (no replacement)
    replace = false               # with order = "random": draw with replacement (query ids
                                  # become the draw positions 0..n-1)
    draws = 2000                  # optional, with replace: draw min(draws, rows) rows, then
                                  # keep the first n that pass own_class_robust
    own_class_robust = false      # true: keep a row only if the model's class for it is
                                  # Δ-robust at evaluation.delta (exact test; the APΔS
                                  # authors' `verify_soundness`)
    family_agrees = false         # true: only rows every retrained model also predicts as
                                  # `from_class` (needs [evaluation.retrain])

    [evaluation]
    delta = 0.05                  # ParameterShift for Δ-validity (omit to skip)
    lof_neighbors = 10
    [evaluation.retrain]          # model family for validity after retraining (omit to skip)
    n_models = 5
    d2 = "apas_credit_shift"      # continued only: a dataset of its own as D2 (the model is
    d2_params = {}                # then trained on the whole training split); its loader's
                                  # parameters
    optimizer = "kept"            # continued only: resume the optimiser state of the base
                                  # model's training ("kept") or start a new one ("fresh");
                                  # default: the model's own way (MLP fresh, partial_fit kept)
    method_data = "all"           # protocols with a D1 (proplace, continued): "d1" gives the
                                  # methods and the data metrics D1 only, the model's own data;
                                  # "d1_all": D1 and a random half of the test split
    [evaluation.perturb]          # input-perturbation protocol (omit to skip): enables the
    scale = 0.0008                # set_distance_* metrics; variance = scale * training range
    n_repeats = 3                 # perturbed copies per query (per-query values: their mean)
    max_tries = 100               # redraws until the model keeps the query's class

    [[datasets]]
    name = "synthetic_loan"
    params = { n_samples = 1000 }
    rows = 2000                   # optional; a random subsample (by the seed) before the split
    all_free = true               # optional; every feature free (no immutable/monotone ones)
    all_continuous = true         # optional; every feature a real number on its model column
    optional = true               # optional; skip (with the reason) if its file is unavailable
    query_draws = 2000            # optional; this dataset's queries.draws

    [[methods]]
    name = "wachter"
    label = "Wachter"             # optional; must be unique
    params = { lam = 0.1 }

    [variants.authors]            # optional; a protocol variant run by `--variant authors`:
    description = "..."           # its model / split / queries / evaluation tables merge over
    queries = { replace = true }  # the top-level ones, its `datasets` table (by label) over
    datasets = { adult = { evaluation = { delta = 0.05 } } }   # the entries

The language lives in one module per concept, all re-exported here: the keys and entry
types (:mod:`~robustce.evaluation.config_schema`), the checks every table shares
(:mod:`~robustce.evaluation.config_values`), the sections
(:mod:`~robustce.evaluation.config_sections`), the ``[quick]`` scale and ``[variants.NAME]``
protocols (:mod:`~robustce.evaluation.config_variants`); the named configurations are data, one
TOML file per paper in ``configs/``
(:mod:`~robustce.evaluation.config_named` finds them).
"""

from __future__ import annotations

import copy
import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robustce.errors import ConfigError

# the language, one module per concept; every name this module held before the split (issue 48)
# stays importable from here
from robustce.evaluation.config_named import (  # noqa: F401
    CONFIG_DIR,
    config_path,
    named_config_path,
    named_configs,
)
from robustce.evaluation.config_schema import (  # noqa: F401
    DATASET_KEYS,
    EVAL_KEYS,
    METHOD_DATA,
    METHOD_KEYS,
    MODEL_KINDS,
    MODEL_SKIP,
    OPTIMIZER_STATES,
    PERTURB_KEYS,
    QUERY_KEYS,
    QUERY_ORDERS,
    QUERY_SOURCES,
    QUICK_KEYS,
    RETRAIN_KEYS,
    RETRAIN_PARAMS,
    RETRAIN_PROTOCOLS,
    RUNNER_SET,
    SKLEARN_MODELS,
    SPLIT_KEYS,
    TOP_KEYS,
    VARIANT_DATASET_KEYS,
    VARIANT_KEYS,
    ClassRef,
    DatasetEntry,
    MethodEntry,
)
from robustce.evaluation.config_sections import (  # noqa: F401
    _datasets,
    _evaluation,
    _methods,
    _metrics,
    _model,
    available_metric_names,
    sklearn_model_class,
)
from robustce.evaluation.config_values import (  # noqa: F401
    _no_unknown,
    _path,
    _seeds,
    _simple_table,
    _table,
    _typed,
    check_backend,
    method_params,
)
from robustce.evaluation.config_variants import (  # noqa: F401
    _quick_table,
    _variant_table,
    apply_quick,
    apply_variant,
    merge_datasets,
    variant_named,
)

__all__ = [
    "CONFIG_DIR",
    "BenchmarkConfig",
    "DatasetEntry",
    "MethodEntry",
    "available_metric_names",
    "apply_quick",
    "apply_variant",
    "config_path",
    "load_config",
    "method_params",
    "named_config_path",
    "named_configs",
    "parse_config",
    "read_toml",
    "resolve_config",
]


@dataclass
class BenchmarkConfig:
    """A validated benchmark configuration (the keys of the module docstring's schema).

    Parameters
    ----------
    name : the run's name, used in reports.
    seeds : one run of every (dataset, method) cell per seed.
    datasets : the ``[[datasets]]`` entries.
    methods : the ``[[methods]]`` entries.
    metrics : metric names, or None for every registered metric.
    model : the ``[model]`` table (``kind`` and its training parameters).
    split : the ``[split]`` table.
    queries : the ``[queries]`` table (which rows are explained).
    evaluation : the ``[evaluation]`` table (δ, LOF's k, retrain and perturb protocols).
    n_jobs : joblib workers over cells (default 1).
    backend : a joblib backend name, or None (not set).
    out_dir : where results are written (relative to the config file), or None (not set).
    on_error : ``"record"`` (default: a failing cell is recorded) or ``"raise"``.
    data_home : where file datasets are read from, or None (not set).
    raw : the normalised dict the configuration came from.
    description : free text for reports.
    quick : whether the ``[quick]`` scale was applied.
    variant : the ``[variants.NAME]`` protocol applied, or None.

    Examples
    --------
    >>> config = rc.evaluation.parse_config({
    ...     "name": "loan", "seeds": [0, 1], "model": {"kind": "logistic"},
    ...     "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 200}}],
    ...     "methods": [{"name": "nearest_neighbour"}, {"name": "milp_nearest"}]})
    >>> config.name, config.model, config.on_error
    ('loan', {'kind': 'logistic'}, 'record')
    >>> for dataset, seed, method in config.cells():  # one run per (dataset, seed, method)
    ...     print(dataset.label, seed, method.label)
    synthetic_loan 0 nearest_neighbour
    synthetic_loan 0 milp_nearest
    synthetic_loan 1 nearest_neighbour
    synthetic_loan 1 milp_nearest
    """

    name: str
    seeds: list[int]
    datasets: list[DatasetEntry]
    methods: list[MethodEntry]
    metrics: list[str] | None
    model: dict[str, Any]
    split: dict[str, Any]
    queries: dict[str, Any]
    evaluation: dict[str, Any]
    n_jobs: int = 1
    backend: str | None = None
    out_dir: Path | None = None
    on_error: str = "record"
    data_home: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    quick: bool = False
    variant: str | None = None

    def method_params(self, dataset: DatasetEntry, method: MethodEntry) -> dict[str, Any]:
        """The method's parameters on ``dataset``: its own, with the dataset's overrides."""
        return {**method.params, **dataset.method_params.get(method.label, {})}

    def cells(self) -> list[tuple[DatasetEntry, int, MethodEntry]]:
        """Every (dataset, seed, method) cell in a fixed order."""
        return [(d, s, m) for d in self.datasets for s in self.seeds for m in self.methods
                if m.runs_on(d.label)]

    def group_fingerprint(self, dataset: DatasetEntry, seed: int) -> str:
        """Hash of everything that determines a (dataset, seed) context (data, model, queries)."""
        return _digest({"dataset": dataset.name, "params": dataset.params, "seed": seed,
                        **{k: v for k, v in dataset.data_options().items() if k != "optional"},
                        "model": dataset.model, "split": self.split, "queries": self.queries,
                        "evaluation": dataset.evaluation, "metrics": self.metrics})

    def cell_fingerprint(self, dataset: DatasetEntry, seed: int, method: MethodEntry) -> str:
        """Hash of everything that determines one cell's result; a stale cell is recomputed."""
        return _digest({"group": self.group_fingerprint(dataset, seed), "method": method.name,
                        "params": self.method_params(dataset, method)})


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=repr).encode()).hexdigest()[:16]


# --- entry points -----------------------------------------------------------------------------
def load_config(path: str | Path, *, quick: bool = False, variant: str | None = None
                ) -> BenchmarkConfig:
    """Read and validate a TOML benchmark configuration (its ``[quick]`` scale with ``quick``,
    its ``[variants.NAME]`` protocol with ``variant``).

    Parameters
    ----------
    path : the TOML file.
    quick : apply its ``[quick]`` table.
    variant : the name of a ``[variants.NAME]`` table to apply.

    Returns
    -------
    BenchmarkConfig

    Raises
    ------
    ConfigError
        The file is not valid TOML or breaks the configuration's rules (the message names the key).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> text = '''
    ... seeds = [0, 1]
    ... out_dir = "results"          # relative to the file
    ... [queries]
    ... n = 5
    ... [[datasets]]
    ... name = "synthetic_loan"
    ... [[methods]]
    ... name = "milp_nearest"
    ... '''
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp, "bench.toml")
    ...     _ = path.write_text(text)
    ...     config = rc.evaluation.load_config(path)
    ...     print(config.out_dir == pathlib.Path(tmp, "results"), config.seeds, config.queries["n"])
    True [0, 1] 5
    """
    return parse_config(read_toml(path), base_dir=Path(path).parent, quick=quick, variant=variant)


def read_toml(path: str | Path) -> dict[str, Any]:
    """The tables of a TOML configuration file; :class:`ConfigError` if unreadable."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    return raw


def resolve_config(name_or_path: str | Path, *, quick: bool = False, variant: str | None = None
                   ) -> BenchmarkConfig:
    """A shipped configuration by name (``"proplace-table1"``) or a TOML file by path (see
    :func:`config_path`)."""
    return load_config(config_path(name_or_path), quick=quick, variant=variant)


def parse_config(raw: Mapping[str, Any] | BenchmarkConfig, base_dir: str | Path | None = None, *,
                 quick: bool = False, variant: str | None = None) -> BenchmarkConfig:
    """Validate a config dict (same schema as the TOML file). Raises :class:`ConfigError`.

    ``variant="NAME"`` applies the config's ``[variants.NAME]`` protocol first (see
    :func:`apply_variant`), then ``quick=True`` its ``[quick]`` table (see :func:`apply_quick`).

    Parameters
    ----------
    raw : the configuration mapping (or a BenchmarkConfig, revalidated).
    base_dir : the folder relative paths in it are read from (a TOML file's folder).
    quick : apply its ``[quick]`` table.
    variant : the name of a ``[variants.NAME]`` table to apply.

    Returns
    -------
    BenchmarkConfig

    Examples
    --------
    >>> config = rc.evaluation.parse_config({
    ...     "seeds": [0, 1], "queries": {"n": 5},
    ...     "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 200}}],
    ...     "methods": [{"name": "wachter", "params": {"lam_init": 0.1}}, {"name": "milp_nearest"}]})
    >>> [m.label for m in config.methods], config.seeds, len(config.cells())
    (['wachter', 'milp_nearest'], [0, 1], 4)
    >>> rc.evaluation.parse_config({"seeds": [0], "datasets": [{"name": "synthetic_loan"}],
    ...                             "methods": [{"name": "wachter", "params": {"lam": 0.1}}]})
    Traceback (most recent call last):
    ...
    robustce.errors.ConfigError: methods[0].params.lam: unknown parameter; allowed: lam_init, ...
    """
    if isinstance(raw, BenchmarkConfig):
        return raw
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config must be a table/dict, got {type(raw).__name__}")
    raw = copy.deepcopy(dict(raw))
    if "protocol" in raw:
        raise ConfigError(f"protocol = {raw['protocol']!r}: a part-shift configuration; run it "
                          "with robustce.evaluation.part_shift.run_part_shift (robustce "
                          "benchmark does)")
    _no_unknown(raw, TOP_KEYS, "")
    if variant is not None:
        raw = apply_variant(raw, variant)
    elif "variants" in raw:
        for key, table in _table(raw["variants"], "variants").items():
            _variant_table(table, f"variants.{key}")
        del raw["variants"]
    if quick:
        raw = apply_quick(raw)
    elif "quick" in raw:
        _quick_table(raw["quick"])
        del raw["quick"]
    base = Path(base_dir) if base_dir is not None else None

    name = _typed(raw.get("name", "benchmark"), str, "name")
    description = _typed(raw.get("description", ""), str, "description")
    seeds = _seeds(raw.get("seeds"))
    n_jobs = _typed(raw.get("n_jobs", 1), int, "n_jobs")
    if n_jobs == 0:
        raise ConfigError("n_jobs: must be non-zero (-1 = all cores)")
    backend = raw.get("backend")
    if backend is not None:
        backend = _typed(backend, str, "backend")
        check_backend(backend, "backend")
    on_error = _typed(raw.get("on_error", "record"), str, "on_error")
    if on_error not in ("record", "raise"):
        raise ConfigError(f"on_error: must be 'record' or 'raise', got {on_error!r}")
    out_dir = _path(raw.get("out_dir"), "out_dir", base)
    data_home = _path(raw.get("data_home"), "data_home", base)

    model = _model(raw.get("model", {}))
    split = _simple_table(raw.get("split", {}), SPLIT_KEYS, "split")
    if not 0 < split.get("test_size", 0.2) < 1:
        raise ConfigError(f"split.test_size: must be in (0, 1), got {split['test_size']}")
    queries = _simple_table(raw.get("queries", {}), QUERY_KEYS, "queries")
    queries.setdefault("n", 20)
    if "target_class" not in queries:
        queries.setdefault("from_class", 0)
    if queries["n"] < 1:
        raise ConfigError(f"queries.n: must be a positive integer, got {queries['n']}")
    for key, allowed in (("source", QUERY_SOURCES), ("order", QUERY_ORDERS)):
        if key in queries and queries[key] not in allowed:
            raise ConfigError(f"queries.{key}: expected one of {allowed}, got {queries[key]!r}")
    if queries.get("replace") and queries.get("order", "first") != "random":
        raise ConfigError("queries.replace: drawing with replacement needs order = \"random\"")
    if "draws" in queries:
        if not queries.get("replace"):
            raise ConfigError("queries.draws: a number of draws needs replace = true")
        if queries["draws"] < queries["n"]:
            raise ConfigError(f"queries.draws: must be at least queries.n ({queries['n']}), "
                              f"got {queries['draws']}")
    evaluation_raw = _table(raw.get("evaluation", {}), "evaluation")
    evaluation = _evaluation(evaluation_raw)
    methods = _methods(raw.get("methods"))
    datasets = _datasets(raw.get("datasets"), model, evaluation_raw, methods)
    labels = [d.label for d in datasets]
    for m in methods:
        for k in m.datasets or ():
            if k not in labels:
                raise ConfigError(f"methods[{m.index}].datasets: no dataset labelled {k!r}; "
                                  f"labels: {', '.join(labels)}")
    metrics = _metrics(raw.get("metrics"), [d.evaluation for d in datasets])
    for d in datasets:
        if d.query_draws is not None and not queries.get("replace"):
            raise ConfigError(f"datasets ({d.label}).query_draws: a number of draws needs "
                              "queries.replace = true")
    if queries.get("own_class_robust"):
        for d in datasets:
            if "delta" not in d.evaluation:
                raise ConfigError(f"queries.own_class_robust: dataset {d.label!r} has no "
                                  "evaluation.delta to test the queries' own class at")
    if queries.get("source") == "d1":
        for d in datasets:
            if d.evaluation.get("retrain", {}).get("protocol") not in ("proplace", "continued"):
                raise ConfigError(f"queries.source = \"d1\": dataset {d.label!r} has no D1 (it "
                                  "needs [evaluation.retrain] with protocol proplace or continued)")
    if queries.get("family_agrees"):
        for d in datasets:
            if "retrain" not in d.evaluation:
                raise ConfigError(f"queries.family_agrees: dataset {d.label!r} has no "
                                  "[evaluation.retrain] table, so there is no family to agree")

    normalised = {
        "name": name, "description": description, "seeds": seeds, "metrics": metrics,
        "n_jobs": n_jobs, "backend": backend, "on_error": on_error, "model": model, "split": split,
        "queries": queries, "evaluation": evaluation,
        "datasets": [{"name": d.name, "label": d.label, "params": d.params, **d.data_options(),
                      **d.overrides} for d in datasets],
        "methods": [{"name": m.name, "label": m.label, "params": m.params,
                     **({"datasets": list(m.datasets)} if m.datasets is not None else {})}
                    for m in methods],
    }
    return BenchmarkConfig(name=name, seeds=seeds, datasets=datasets, methods=methods,
                           metrics=metrics, model=model, split=split, queries=queries,
                           evaluation=evaluation, n_jobs=n_jobs, backend=backend, out_dir=out_dir,
                           on_error=on_error, data_home=data_home, raw=normalised,
                           description=description, quick=quick, variant=variant)
