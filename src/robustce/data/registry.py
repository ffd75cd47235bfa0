"""Dataset registry: names -> loaders. ``load(name)`` is ``rc.datasets.load``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robustce.data.builtin import synthetic_loan
from robustce.data.dataset import Dataset
from robustce.errors import UnknownDatasetError

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
    (e.g. ``n_samples``, ``random_state``); file datasets take ``data_home``."""
    spec = get_spec(name)
    if spec.builtin:
        return spec.loader(**params)
    return spec.loader(data_home=data_home, **params)


register(DatasetSpec("synthetic_loan", synthetic_loan,
                     "synthetic loan applications, mixed feature kinds (built in)", builtin=True))
