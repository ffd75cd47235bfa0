"""robustce: robust counterfactual explanations with checkable guarantees.

Submodules that need torch or the solvers (``models``, ``methods``, ``robustness``,
``evaluation``, ``solvers``) are imported on first attribute access, so ``robustce --version``
and the data layer start fast.
"""

from importlib import import_module
from typing import Any

from robustce import data, datasets, errors
from robustce.explanations import Explanations
from robustce.utils import package_version

__version__ = package_version()

_LAZY = ("evaluation", "methods", "models", "robustness", "solvers")

__all__ = [
    "Explanations",
    "__version__",
    "data",
    "datasets",
    "errors",
    "evaluation",
    "methods",
    "models",
    "robustness",
    "solvers",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = import_module(f"robustce.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'robustce' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
