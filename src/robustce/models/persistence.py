"""Saving and loading models without pickle.

A saved model is a directory::

    model/
      model.json   {"format": "robustce-model", "format_version": 1, "class": "MLP",
                    "params": {...}, "encoder": {...}, "class_names": [...],
                    "favourable": "approved", "layer_sizes": [...],
                    "weights_file": "weights.pt", "weights_sha256": "...",
                    "robustce_version": "..."}
      weights.pt   a torch state dict (tensors only)

``favourable`` is the label (an entry of ``class_names``) of the model's favourable class, or
null; files written before it existed lack the key and load with ``model.favourable = None``.

``load`` reads the weights with ``torch.load(..., weights_only=True)``, which refuses anything
but tensors and plain containers, and checks the recorded SHA-256 first, so a truncated or
swapped file gives a :class:`ModelFileError` naming the file instead of a confusing torch
error. Saving writes a temporary directory beside the target and renames it into place.

Only models that own their weights (:class:`~robustce.models.MLP`) can be saved. Wrapped
scikit-learn estimators are not saved by robustce: persist the estimator with the tool of your
choice (e.g. ``skops.io``) and call :func:`robustce.models.wrap` again after loading it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from robustce.data.encoder import Encoder
from robustce.errors import ModelFileError, RobustCEError, UnsupportedModelError, ValidationError
from robustce.utils import package_version, replace_dir, temp_dir_beside

__all__ = ["FORMAT_VERSION", "ModelFileError", "load", "read_metadata", "register_model",
           "saved_favourable", "save_model"]

FORMAT_NAME = "robustce-model"
FORMAT_VERSION = 1
META_FILE = "model.json"
WEIGHTS_FILE = "weights.pt"


_SAVEABLE: dict[str, type] = {}


def register_model(cls: type) -> type:
    """Class decorator: make a model class saveable and loadable under its class name.

    The class provides ``_state_dict()`` (tensors), ``_saved_params()`` (JSON-able
    constructor parameters) and a classmethod ``_from_saved(params, encoder, class_names,
    state)``. Registration happens when the class's module is imported (``robustce.models``
    imports every built-in one), so this module never imports a model class itself.
    """
    for attr in ("_state_dict", "_saved_params", "_from_saved"):
        if not callable(getattr(cls, attr, None)):
            raise UnsupportedModelError(f"{cls.__name__} cannot be registered as saveable: it lacks {attr}")
    _SAVEABLE[cls.__name__] = cls
    return cls


def _registry() -> dict[str, type]:
    return dict(_SAVEABLE)


def _jsonable(value: Any) -> Any:
    """Plain JSON values (numpy scalars -> Python scalars); reject what JSON cannot hold."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValidationError(f"cannot save the non-finite number {value} in model.json")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise ValidationError(f"cannot save a value of type {type(value).__name__} in model.json: {value!r}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_saved_model(path: Path) -> bool:
    return path.is_dir() and (path / META_FILE).is_file()


def save_model(model: Any, path: str | os.PathLike, *, overwrite: bool = True) -> Path:
    """Write ``model`` (which provides ``_state_dict``/``_saved_params``) to directory ``path``."""
    import torch

    if not hasattr(model, "_state_dict"):
        raise UnsupportedModelError(
            f"{type(model).__name__} cannot be saved by robustce; wrapped scikit-learn estimators "
            "are saved with their own tools (e.g. skops.io) and wrapped again after loading"
        )
    cls_name = type(model).__name__
    if cls_name not in _registry():
        raise UnsupportedModelError(f"no saved format for {cls_name}")
    path = Path(path)
    if path.exists():
        if not _is_saved_model(path):
            raise ValidationError(
                f"{path} exists and is not a saved robustce model; refusing to overwrite it"
            )
        if not overwrite:
            raise ValidationError(f"{path} already holds a saved model (pass overwrite=True)")
    params = dict(model._saved_params())
    if not (params.get("random_state") is None or isinstance(params["random_state"], int | np.integer)):
        params["random_state"] = None  # a Generator has no JSON form; the weights are what matter
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_dir_beside(path, "tmp")
    try:
        state = model._state_dict()
        torch.save(state, tmp / WEIGHTS_FILE)
        meta = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "class": cls_name,
            "robustce_version": package_version(),
            "params": _jsonable(params),
            "encoder": _jsonable(model.encoder.to_dict()),
            "class_names": _jsonable(list(model.class_names)),
            "favourable": _jsonable(getattr(model, "favourable_label", None)),
            "layer_sizes": list(model.network().layer_sizes),
            "weights_file": WEIGHTS_FILE,
            "weights_sha256": _sha256(tmp / WEIGHTS_FILE),
        }
        with open(tmp / META_FILE, "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=2, sort_keys=True)
            fh.write("\n")
        replace_dir(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The validated ``model.json`` of a saved model directory."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"no saved model at {path}")
    if not path.is_dir():
        raise ModelFileError(f"{path} is not a directory; a saved model is a directory with {META_FILE}")
    meta_path = path / META_FILE
    if not meta_path.is_file():
        raise ModelFileError(f"{path} has no {META_FILE}; is it a saved robustce model?")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{meta_path} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ModelFileError(f"{meta_path} is not a robustce model description (format != {FORMAT_NAME!r})")
    version = meta.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise ModelFileError(
            f"{meta_path} has format_version {version!r}; this robustce reads versions 1..{FORMAT_VERSION}"
        )
    missing = [k for k in ("class", "params", "encoder", "class_names", "weights_file", "weights_sha256")
               if k not in meta]
    if missing:
        raise ModelFileError(f"{meta_path} lacks the keys {missing}")
    return meta


def saved_favourable(meta: dict[str, Any], path: str | os.PathLike) -> int | None:
    """The index of the favourable class recorded in a saved model's ``meta``data (its label
    among ``class_names``), ``None`` where none is recorded (also files that predate the key);
    :class:`ModelFileError` when the label is not one of the classes."""
    label = meta.get("favourable")
    if label is None:
        return None
    names = list(meta["class_names"])
    for k, name in enumerate(names):
        if name == label and type(name) is type(label):
            return k
    raise ModelFileError(f"{Path(path) / META_FILE}: the favourable class {label!r} is not one "
                         f"of its classes {names}")


def load(path: str | os.PathLike) -> Any:
    """Load a model saved with ``model.save(path)``.

    Raises :class:`ModelFileError` when the directory or a file is missing, the description is
    not valid, or the weights do not match their checksum or the recorded architecture.

    Parameters
    ----------
    path : the directory ``model.save`` wrote.

    Returns
    -------
    Model
        The model, of the class it was saved from.

    Examples
    --------
    >>> import tempfile
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> model = rc.models.NetworkModel([(np.array([[4.0, -4.0]]), np.array([-1.0]))], enc)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = model.save(f"{tmp}/rule")
    ...     loaded = load(f"{tmp}/rule")
    >>> loaded, bool((loaded.predict(data.frame) == model.predict(data.frame)).all())
    (NetworkModel(ReLUNetwork(2-1), classes=[0, 1]), True)
    """
    import torch

    path = Path(path)
    meta = read_metadata(path)
    classes = _registry()
    cls = classes.get(meta["class"])
    if cls is None:
        raise ModelFileError(f"{path}: unknown model class {meta['class']!r}; known: {sorted(classes)}")
    weights = path / Path(str(meta["weights_file"])).name
    if not weights.is_file():
        raise ModelFileError(f"{path} has no weights file {weights.name}")
    if _sha256(weights) != meta["weights_sha256"]:
        raise ModelFileError(f"{weights} does not match the checksum recorded in {META_FILE} (corrupt?)")
    try:
        encoder = Encoder.from_dict(meta["encoder"])
    except (RobustCEError, KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: the saved encoder is invalid: {exc}") from None
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for unreadable files
        raise ModelFileError(f"{weights} cannot be read as a torch state dict: {exc}") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelFileError(f"{weights} is not a state dict of tensors")
    try:
        model = cls._from_saved(dict(meta["params"]), encoder, tuple(meta["class_names"]), state)
    except (RuntimeError, RobustCEError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: the weights do not fit the saved description: {exc}") from None
    model.favourable = saved_favourable(meta, path)
    sizes = meta.get("layer_sizes")
    if sizes is not None and list(model.network().layer_sizes) != list(sizes):
        raise ModelFileError(
            f"{path}: architecture {model.network().layer_sizes} differs from the recorded {sizes}"
        )
    return model
