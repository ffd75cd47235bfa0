"""The models a service serves: where each is read from, its schema, hash and methods.

A served model is a directory, in one of two layouts (both written by robustce itself, never a
pickle):

* a saved model (``Model.save`` / :func:`robustce.models.load`: ``model.json`` +
  ``weights.pt``);
* an Explanations directory of ``robustce explain --out DIR`` (its ``model/`` is the model and
  its ``queries`` are the rejected applicants the page offers).

Either may hold ``train.csv``: the raw training rows (the schema's columns, plus ``_target``,
the class index) that data-based methods (nearest neighbour, PROPLACE, ...) search. Without it
only the methods that need the model alone are offered. A ``family/`` folder of saved models
(retrained versions of the model, e.g. :func:`~robustce.models.families.seed_family`) adds the
validity-after-retraining certificate ``vr``. ``robustce serve`` with no ``--model``
writes such a directory for the built-in ``synthetic_loan`` demo (:func:`build_demo_model`).

Every served model has a favourable class — the outcome recourse aims at: the one saved with
the model (``model.json``'s ``favourable``), or the label ``robustce serve --favourable`` gives
(:attr:`ModelSpec.favourable`, which overrides it without writing to the model's files). A model
with neither is not served (:func:`served_favourable`): the service does not guess.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from robustce.errors import ConfigError, ModelFileError, RobustCEError, ValidationError

__all__ = ["SERVED_METHODS", "ModelSpec", "ServedModel", "build_demo_model", "load_served_model",
           "model_spec", "resolve_class", "served_favourable", "served_hash"]

#: methods the service offers, in the page's order (those importable and applicable to a model;
#: methods that train their own predictor cannot explain a served model)
SERVED_METHODS = ("milp_robust", "nearest_neighbour", "robust_nearest_neighbour", "milp_nearest",
                  "wachter", "proplace", "apas", "diverse_robust")
TRAIN_FILE = "train.csv"
TARGET_COLUMN = "_target"
FAMILY_DIR = "family"


@dataclass(frozen=True)
class ModelSpec:
    """Where a served model lives: what the worker processes are given (paths, no objects);
    ``favourable``: the label of its favourable class when given at serve time (overrides the
    one saved with the model)."""

    id: str
    model_dir: str
    train_csv: str | None
    explanations_dir: str | None
    family_dirs: tuple[str, ...] = ()
    favourable: str | None = None


@dataclass
class ServedModel:
    """A loaded served model: the model (its ``favourable`` class set), its training data (or
    None), the applicants offered by the page (rows the model does not give the favourable
    class), its hash and the methods available for it."""

    spec: ModelSpec
    model: Any
    data: Any  # robustce Dataset or None
    applicants: pd.DataFrame
    hash: str
    methods: list[str] = field(default_factory=list)
    family: list[Any] = field(default_factory=list)  # retrained models (for vr)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def schema(self) -> Any:
        return self.model.encoder.schema

    @property
    def class_names(self) -> list[str]:
        return [str(c) for c in self.model.class_names]

    @property
    def favourable(self) -> int:
        """The index of the favourable class (the default target of recourse)."""
        return int(self.model.favourable)

    @cached_property
    def record_checker(self) -> Any:
        """The :class:`~robustce.serve.records.RecordChecker` of the schema (built once)."""
        from robustce.serve.records import RecordChecker

        return RecordChecker(self.schema)


def model_spec(path: str | os.PathLike, model_id: str | None = None) -> ModelSpec:
    """The :class:`ModelSpec` of a served-model directory (either layout); ``model_id``
    defaults to the directory's name. Raises :class:`ModelFileError` if it holds no model."""
    root = Path(path).resolve()
    if (root / "model.json").is_file():
        model_dir, expl = root, None
    elif (root / "model" / "model.json").is_file():
        model_dir = root / "model"
        expl = str(root) if (root / "meta.json").is_file() else None
    else:
        raise ModelFileError(f"{path} holds no saved model (no model.json, nor model/model.json); "
                             "give a directory of Model.save or `robustce explain --out`")
    train = root / TRAIN_FILE
    family = tuple(str(d) for d in sorted((root / FAMILY_DIR).glob("*"), key=lambda p: p.name)
                   if (d / "model.json").is_file()) if (root / FAMILY_DIR).is_dir() else ()
    mid = model_id or root.name
    if not mid or any(c in mid for c in "/?#% "):
        raise ConfigError(f"model id {mid!r} must be a plain name (no '/', '?', '#', '%', space)")
    return ModelSpec(mid, str(model_dir), str(train) if train.is_file() else None, expl, family)


def _model_hash(model_dir: str) -> str:
    """SHA-256 of ``model.json`` (which records the weights' own SHA-256)."""
    return hashlib.sha256(Path(model_dir, "model.json").read_bytes()).hexdigest()


def served_hash(model_dir: str, saved: int | None, served: int) -> str:
    """The served model's identity (``hash`` in ``/v1/models``, audit records, jobs): the
    SHA-256 of ``model.json`` when the model is served with the favourable class saved in it
    (``saved``); when ``robustce serve --favourable`` serves another (``served``, or one the
    model was saved without), the SHA-256 of that digest and the class index — so two servings
    of one model toward different favourable classes never share an identity."""
    digest = _model_hash(model_dir)
    if saved is not None and int(saved) == int(served):
        return digest
    return hashlib.sha256(f"{digest}\0favourable={int(served)}".encode()).hexdigest()


def _read_training(spec: ModelSpec, model: Any) -> Any:
    from robustce.data.dataset import Dataset

    if spec.train_csv is None:
        return None
    frame = pd.read_csv(spec.train_csv)
    schema = model.encoder.schema
    if TARGET_COLUMN not in frame.columns:
        raise ModelFileError(f"{spec.train_csv} has no {TARGET_COLUMN!r} column (the class index)")
    target = frame.pop(TARGET_COLUMN).astype("int64")
    frame = frame[[c for c in schema.names if c in frame.columns]]
    try:
        schema.validate(frame, check_bounds=False)
    except RobustCEError as exc:
        raise ModelFileError(f"{spec.train_csv} does not fit the model's schema: {exc}") from None
    return Dataset(frame, target, schema, name=spec.id, class_names=tuple(model.class_names),
                   favourable=model.favourable)


def _applicants(spec: ModelSpec, model: Any, data: Any) -> pd.DataFrame:
    """Rows the page offers, at most 50: of the explained queries of an explain directory,
    else of the training rows, those the model does not give its favourable class."""
    if spec.explanations_dir is not None:
        from robustce.explanations import Explanations

        frame = Explanations.load(spec.explanations_dir).queries
    elif data is not None:
        frame = data.frame
    else:
        return pd.DataFrame(columns=model.encoder.schema.names)
    if len(frame) == 0:
        return frame
    return frame[model.predict(frame) != model.favourable].iloc[:50]


def _no_favourable(spec: ModelSpec, class_names: Any) -> ConfigError:
    from robustce.data.dataset import class_mapping

    return ConfigError(
        f"model {spec.id!r} ({spec.model_dir}) declares no favourable class (its classes: "
        f"{class_mapping(class_names)}); name the outcome recourse aims at with "
        f"`robustce serve --favourable {spec.id}=LABEL`, or save the model with one")


def _favourable_index(spec: ModelSpec, class_names: Any, saved: int | None) -> int:
    """The favourable class of a served model: ``spec.favourable`` (a label or index of
    ``class_names``), else ``saved``; :class:`ConfigError` with neither or an unknown label."""
    from robustce.data.dataset import class_index

    if spec.favourable is not None:
        try:
            return class_index(class_names, spec.favourable)
        except ValidationError as exc:
            raise ConfigError(f"--favourable for model {spec.id!r}: {exc}") from None
    if saved is None:
        raise _no_favourable(spec, class_names)
    return saved


def served_favourable(spec: ModelSpec) -> int:
    """The index of the favourable class ``spec`` serves, from ``model.json`` alone (no
    weights read): :class:`ConfigError` in one line, naming the model and the flag to pass,
    where neither the spec nor the saved model declares one."""
    from robustce.models.persistence import read_metadata, saved_favourable

    meta = read_metadata(spec.model_dir)
    return _favourable_index(spec, meta["class_names"], saved_favourable(meta, spec.model_dir))


def _methods_for(model: Any, data: Any) -> list[str]:
    """The :data:`SERVED_METHODS` that can be built for ``model`` (and ``data``)."""
    from robustce.methods.registry import available_methods, build_explainer

    out = []
    available = set(available_methods())
    for name in SERVED_METHODS:
        if name not in available:
            continue
        try:
            build_explainer(name, model, data)
        except RobustCEError:
            continue
        out.append(name)
    return out


def load_served_model(spec: ModelSpec, *, with_methods: bool = True) -> ServedModel:
    """Load a served model from its :class:`ModelSpec` (model, training rows, applicants)."""
    from robustce.models import load as load_model

    model = load_model(spec.model_dir)
    saved = model.favourable
    model.favourable = _favourable_index(spec, model.class_names, saved)
    data = _read_training(spec, model)
    family = [load_model(d) for d in spec.family_dirs]
    for d, member in zip(spec.family_dirs, family, strict=True):
        if member.encoder.n_features_out_ != model.encoder.n_features_out_:
            raise ModelFileError(f"{d}: a family member must share the model's encoding")
    return ServedModel(spec, model, data, _applicants(spec, model, data),
                       served_hash(spec.model_dir, saved, model.favourable),
                       _methods_for(model, data) if with_methods else [], family)


def resolve_class(model: Any, value: Any) -> int:
    """A class index from an index or a label of ``model.class_names``; :class:`ValidationError`
    naming the classes otherwise."""
    labels = [str(c) for c in model.class_names]
    if isinstance(value, str) and value in labels:
        return labels.index(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(labels):
        return value
    raise ValidationError(f"unknown target class {value!r}; the classes are "
                          + ", ".join(f"{k} = {c}" for k, c in enumerate(labels)))


def build_demo_model(directory: str | os.PathLike, *, seed: int = 0, n_applicants: int = 20,
                     n_family: int = 3) -> Path:
    """Train the demo MLP on ``synthetic_loan`` and write a served-model directory: the
    Explanations of ``n_applicants`` rejected test applicants (nearest neighbour), the model in
    ``model/`` (its favourable class, ``approved``, saved with it), ``train.csv`` and
    ``family/``: ``n_family`` retrained versions (other seeds, 1 % of the rows left out:
    :func:`~robustce.models.families.seed_family`). Reuses a directory already written
    (one whose model records its favourable class)."""
    from robustce.datasets import load as load_dataset
    from robustce.methods.registry import build_explainer
    from robustce.models.families import seed_family
    from robustce.utils import atomic_write

    root = Path(directory)
    if _holds_demo(root):
        return root
    data = load_dataset("synthetic_loan", n_samples=2000, random_state=seed)
    train, test = data.split(test_size=0.2, random_state=seed)
    model, family = seed_family(train, {"hidden_layers": (16, 8), "epochs": 50, "lr": 5e-3},
                                n_models=n_family, drop_fraction=0.01, random_state=seed)
    model.set_favourable(train.favourable)  # trained on it, the model has it; said, not assumed
    rejected = test.frame[model.predict(test.frame) != model.favourable].iloc[:n_applicants]
    expl = build_explainer("nearest_neighbour", model, train).explain(
        rejected, target_class=model.favourable)
    expl.save(root)  # writes the directory atomically
    model.save(root / "model")
    for k, member in enumerate(family.models):
        member.save(root / FAMILY_DIR / f"{k:02d}")
    with atomic_write(root / TRAIN_FILE) as fh:
        train.frame.assign(**{TARGET_COLUMN: train.target.to_numpy()}).to_csv(fh, index=False)
    return root


def _holds_demo(root: Path) -> bool:
    """Whether ``root`` already holds a demo directory this version serves (its model saved
    with a favourable class: one written before that was recorded is rebuilt)."""
    from robustce.models.persistence import read_metadata

    if not ((root / "model" / "model.json").is_file() and (root / TRAIN_FILE).is_file()):
        return False
    try:
        return read_metadata(root / "model").get("favourable") is not None
    except ModelFileError:
        return False
