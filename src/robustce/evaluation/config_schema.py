"""The benchmark configuration's keys and entry types (the language of
:mod:`robustce.evaluation.config`): which keys each table takes, the values some keys allow,
the ``[model] kind`` estimators, and the ``[[datasets]]`` / ``[[methods]]`` entries a parsed
configuration holds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClassRef", "DatasetEntry", "MethodEntry"]

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
