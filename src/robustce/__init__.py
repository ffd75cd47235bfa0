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

_LAZY = ("audits", "evaluation", "ledger", "methods", "models", "notices", "robustness",
         "solvers")
# functions of lazily imported submodules: rc.notice(...), rc.audit(...)
_LAZY_FUNCTIONS = {"notice": "robustce.notices.notice", "audit": "robustce.audits.audit"}

__all__ = [
    "Explanations",
    "__version__",
    "audit",
    "audits",
    "data",
    "datasets",
    "errors",
    "evaluation",
    "ledger",
    "methods",
    "models",
    "notice",
    "notices",
    "robustness",
    "solvers",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = import_module(f"robustce.{name}")
        globals()[name] = module
        return module
    if name in _LAZY_FUNCTIONS:
        func = getattr(import_module(_LAZY_FUNCTIONS[name]), name)
        globals()[name] = func
        return func
    raise AttributeError(f"module 'robustce' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_FUNCTIONS))
