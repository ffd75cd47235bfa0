"""robustce: robust counterfactual explanations with checkable guarantees."""

from importlib.metadata import PackageNotFoundError, version

from robustce import data, datasets, errors, evaluation, methods, models, robustness
from robustce.explanations import Explanations

try:
    __version__ = version("robustce")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

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
]
