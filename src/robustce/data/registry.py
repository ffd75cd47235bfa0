"""Dataset registry: names -> loaders. ``load(name)`` is ``rc.datasets.load``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robustce.data import builtin
from robustce.data.builtin import synthetic_loan
from robustce.data.dataset import Dataset
from robustce.data.loaders import CATALOG
from robustce.errors import UnknownDatasetError, ValidationError

__all__ = ["DatasetSpec", "list_datasets", "load", "register"]


@dataclass(frozen=True)
class DatasetSpec:
    """A registered dataset. ``builtin`` ones need no file; the others read ``files`` from
    ``data_home`` (or ``ROBUSTCE_DATA``, or the download cache)."""

    name: str
    loader: Callable[..., Dataset]
    description: str
    builtin: bool = False
    files: tuple[str, ...] = ()


_REGISTRY: dict[str, DatasetSpec] = {}


def register(spec: DatasetSpec) -> DatasetSpec:
    _REGISTRY[spec.name] = spec
    return spec


def list_datasets() -> list[DatasetSpec]:
    """Every registered dataset (built in or read from files), sorted by name.

    Returns
    -------
    list of DatasetSpec
        ``name``, ``description``, ``builtin`` (no file needed) and ``files`` of each.

    Examples
    --------
    >>> builtin = [spec.name for spec in list_datasets() if spec.builtin]
    >>> "synthetic_loan" in builtin
    True
    """
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get_spec(name: str) -> DatasetSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownDatasetError(
            f"unknown dataset {name!r}; available: {', '.join(sorted(_REGISTRY))}"
        ) from None


def load(name: str, data_home: str | Path | None = None, **params: Any) -> Dataset:
    """Load a registered dataset by name. Built-ins take generator parameters
    (e.g. ``n_samples``, ``random_state``); file datasets take ``data_home``.

    Parameters
    ----------
    name : a name of :func:`list_datasets` (``robustce datasets list``).
    data_home : folder holding the files (default: ``$ROBUSTCE_DATA``, else the download cache).
    **params : the dataset's own parameters (an error names the allowed ones).

    Returns
    -------
    Dataset

    Raises
    ------
    UnknownDatasetError
        No dataset of that name (the message lists them).
    DatasetUnavailableError
        Its files are neither local nor downloadable (the message says where to put them).

    Examples
    --------
    >>> data = load("synthetic_loan")                          # built in, no download
    >>> data.name
    'synthetic_loan'
    """
    spec = get_spec(name)
    _check_params(spec, params)
    if spec.builtin:
        return spec.loader(**params)
    return spec.loader(data_home=data_home, **params)


def _check_params(spec: DatasetSpec, params: dict[str, Any]) -> None:
    """Unknown keyword -> ValidationError naming the dataset's parameters (not a TypeError)."""
    try:
        sig = inspect.signature(spec.loader)
    except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
        return
    accepted = [p for p in sig.parameters if p != "data_home"]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValidationError(
            f"dataset {spec.name!r} does not take {unknown}; its parameters are "
            f"{accepted or 'none'}"
        )


register(DatasetSpec("synthetic_loan", synthetic_loan,
                     "synthetic loan applications, mixed feature kinds (built in)", builtin=True))

for _name, _fn, _desc in (
    ("moons", builtin.moons, "2-D two moons, binary (built in; sklearn make_moons)"),
    ("circles", builtin.circles, "2-D concentric circles, binary (built in; sklearn make_circles)"),
    ("blobs", builtin.blobs, "2-D Gaussian blobs, 2 classes by default (built in; make_blobs)"),
    ("covariate_shift", builtin.covariate_shift,
     "2-D simulated covariate shift, parts D1/D2 in groups (built in; RoCourseNet appendix)"),
    ("label_shift", builtin.label_shift,
     "2-D simulated label shift, parts D1/D2 in groups (built in; RoCourseNet appendix)"),
    ("breast_cancer", builtin.breast_cancer,
     "Wisconsin breast cancer, 569 rows; class 1 = benign (built in, scikit-learn)"),
    ("iris", builtin.iris, "Fisher's iris, 150 rows, 3 classes (built in, scikit-learn)"),
    ("wine", builtin.wine, "UCI wine, 178 rows, 3 classes (built in, scikit-learn)"),
):
    register(DatasetSpec(_name, _fn, _desc, builtin=True))

for _name, _info in CATALOG.items():
    register(DatasetSpec(_name, _info.loader, _info.description, files=_info.files))
