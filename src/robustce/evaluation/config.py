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
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import math
import tomllib
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robustce.errors import ConfigError, RobustCEError
from robustce.methods.registry import (
    convert_params,
    converter_for,
    get_method,
    method_name,
    param_annotations,
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

#: the named benchmark configurations shipped with the package (``robustce benchmark NAME``)
CONFIG_DIR = Path(__file__).with_name("configs")

TOP_KEYS = {"name", "description", "seeds", "metrics", "n_jobs", "backend", "out_dir", "on_error",
            "data_home", "model", "split", "queries", "evaluation", "datasets", "methods", "quick",
            "variants"}
DATASET_KEYS = {"name", "label", "params", "model", "evaluation", "methods", "rows", "all_free",
                "all_continuous", "optional", "query_draws"}
# what [quick] may change: the scale, never the protocol
QUICK_KEYS = {"description", "seeds", "queries", "evaluation", "datasets", "n_jobs"}
# what a [variants.NAME] table may change: the protocol, never the methods or the scale
VARIANT_KEYS = {"description", "model", "split", "queries", "evaluation", "datasets"}
VARIANT_DATASET_KEYS = {"name", "params", "model", "evaluation", "methods", "all_free",
                        "all_continuous", "query_draws"}
MODEL_SKIP = {"self", "random_state"}
METHOD_KEYS = {"name", "label", "params", "datasets"}
#: ``[model] kind`` -> the scikit-learn estimator trained on the encoded training split and
#: wrapped with ``rc.models.wrap`` ("mlp", the default, is robustce's torch ``MLP``)
SKLEARN_MODELS = {
    "tree": "sklearn.tree:DecisionTreeClassifier",
    "forest": "sklearn.ensemble:RandomForestClassifier",
    "logistic": "sklearn.linear_model:LogisticRegression",
    "sklearn_mlp": "sklearn.neural_network:MLPClassifier",
}
MODEL_KINDS = ("mlp", *SKLEARN_MODELS)
SPLIT_KEYS = {"test_size": float, "stratify": bool}
class ClassRef:
    """Config type of ``queries.from_class`` / ``target_class``: a class index or a label."""


QUERY_KEYS = {"n": int, "from_class": ClassRef, "target_class": ClassRef, "source": str,
              "family_agrees": bool, "order": str, "replace": bool, "draws": int,
              "own_class_robust": bool}
QUERY_SOURCES = ("test", "train", "d1", "all")
QUERY_ORDERS = ("first", "random")
EVAL_KEYS = {"delta", "lof_neighbors", "retrain", "perturb"}
PERTURB_KEYS = {"scale": float, "n_repeats": int, "max_tries": int}
RETRAIN_KEYS = {"protocol": str, "n_models": int, "n_retrain": int, "n_drop": int,
                "drop_fraction": float, "fraction": float, "epochs": int, "lr": float,
                "method_data": str, "shared_drop": bool, "same_init_retrain": list,
                "same_init_drop": list, "member_model": dict, "d2": str, "d2_params": dict,
                "optimizer": str}
#: what the methods (and the data-based metrics) see under a protocol whose model is trained on
#: a half D1: the whole training split, D1 only (D2 arrives with the retraining), or D1 and a
#: random half of the test split ("d1_all": the PROPLACE authors halve the data first and split
#: each half 80/20, so their D1 is a half's training and test rows)
METHOD_DATA = ("all", "d1", "d1_all")
RETRAIN_PROTOCOLS = ("proplace", "seeds", "continued")
#: the parameters each retraining protocol takes (besides ``protocol``)
RETRAIN_PARAMS = {"proplace": {"n_retrain", "n_drop", "drop_fraction", "method_data", "shared_drop",
                               "same_init_retrain", "same_init_drop", "member_model"},
                  "seeds": {"n_models", "drop_fraction"},
                  "continued": {"n_models", "fraction", "epochs", "lr", "method_data", "d2",
                                "d2_params", "optimizer"}}
OPTIMIZER_STATES = ("fresh", "kept")
# parameters set by the runner, never from a config
RUNNER_SET = {"random_state"}


@dataclass(frozen=True)
class DatasetEntry:
    """One ``[[datasets]]`` entry. ``model`` and ``evaluation`` are the effective tables for this
    dataset (the top-level ones with the entry's overrides merged in); ``method_params`` holds
    the entry's per-method parameter overrides by method label; ``overrides`` the entry's own
    ``model`` / ``evaluation`` / ``methods`` tables as written. ``rows``: a random subsample of
    that many rows (drawn with the run's seed) before the split; ``all_free``: every feature
    made free (no immutable or monotone constraints, as in papers without actionability);
    ``all_continuous``: every feature a real number on its model-space column (binary and
    numeric features only; the domain of papers whose MILP relaxes every column);
    ``optional``: a data file that cannot be had skips the dataset's cells with the reason
    instead of failing them; ``query_draws``: this dataset's ``queries.draws``."""

    name: str
    label: str
    params: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    evaluation: dict[str, Any] = field(default_factory=dict)
    method_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)
    rows: int | None = None
    all_free: bool = False
    all_continuous: bool = False
    optional: bool = False
    query_draws: int | None = None

    def data_options(self) -> dict[str, Any]:
        """The entry's data options as written (``rows``, ``all_free``, ``optional``; defaults
        left out)."""
        out: dict[str, Any] = {}
        if self.rows is not None:
            out["rows"] = self.rows
        if self.all_free:
            out["all_free"] = True
        if self.all_continuous:
            out["all_continuous"] = True
        if self.optional:
            out["optional"] = True
        if self.query_draws is not None:
            out["query_draws"] = self.query_draws
        return out


@dataclass(frozen=True)
class MethodEntry:
    name: str  # canonical registry name
    label: str  # unique label in tables and cell file names
    cls: type
    params: dict[str, Any] = field(default_factory=dict)  # as written in the config
    index: int = 0
    datasets: tuple[str, ...] | None = None  # the dataset labels it runs on (None: all)

    @property
    def trains_own_model(self) -> bool:
        """Whether the method trains its own predictor (CounterNet, RoCourseNet: no ``model``
        argument) instead of explaining the benchmark's model."""
        from robustce.methods.registry import trains_own_model

        return trains_own_model(self.cls)

    def runs_on(self, label: str) -> bool:
        """Whether this method has cells on the dataset labelled ``label``."""
        return self.datasets is None or label in self.datasets

    def build(self, model: Any, data: Any, seed: int, params: Mapping[str, Any] | None = None) -> Any:
        """The explainer of this entry for one seed with ``params`` (default: the entry's own;
        see :meth:`BenchmarkConfig.method_params` for a dataset's), via
        :func:`~robustce.methods.registry.build_explainer`."""
        from robustce.methods.registry import build_explainer

        return build_explainer(self.cls, model, data, seed=seed,
                               **(self.params if params is None else params))


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


def named_configs() -> dict[str, str]:
    """Name -> one-line description (the ``description`` key) of every shipped configuration."""
    out = {}
    for path in sorted(CONFIG_DIR.glob("*.toml")):
        try:
            description = tomllib.loads(path.read_text()).get("description", "")
        except (OSError, tomllib.TOMLDecodeError) as exc:
            description = f"(unreadable: {exc})"
        out[path.stem] = str(description).strip().splitlines()[0] if description else ""
    return out


def named_config_path(name: str) -> Path:
    """The file of a shipped configuration; :class:`ConfigError` listing the names if unknown."""
    path = CONFIG_DIR / f"{name}.toml"
    if not name or "/" in name or "\\" in name or not path.is_file():
        raise ConfigError(f"no benchmark configuration named {name!r}; named ones: "
                          f"{', '.join(named_configs()) or '(none)'} (or give a path to a .toml file)")
    return path


def resolve_config(name_or_path: str | Path, *, quick: bool = False, variant: str | None = None
                   ) -> BenchmarkConfig:
    """A shipped configuration by name (``"proplace-table1"``) or a TOML file by path (see
    :func:`config_path`)."""
    return load_config(config_path(name_or_path), quick=quick, variant=variant)


def config_path(name_or_path: str | Path) -> Path:
    """The file of a configuration given by name or path: an argument that names an existing
    file, ends in ``.toml`` or contains a path separator is a path, anything else a name."""
    text = str(name_or_path)
    if (isinstance(name_or_path, Path) or Path(text).is_file() or text.endswith(".toml")
            or "/" in text or "\\" in text):
        return Path(text)
    return named_config_path(text)


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


# --- the quick scale ----------------------------------------------------------------------------
def _quick_table(value: Any) -> dict[str, Any]:
    table = _table(value, "quick")
    _no_unknown(table, QUICK_KEYS, "quick")
    return table


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``base``: tables merge key by key (recursively), the rest replaces."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


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


# --- sections -----------------------------------------------------------------------------
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


def _simple_table(value: Any, keys: Mapping[str, type], path: str) -> dict[str, Any]:
    table = _table(value, path)
    _no_unknown(table, set(keys), path)
    return {k: _typed(v, keys[k], f"{path}.{k}") for k, v in table.items()}


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
