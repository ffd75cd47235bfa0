"""robustce: robust counterfactual explanations with checkable guarantees."""

from importlib.metadata import PackageNotFoundError, version

from robustce import data, datasets, errors, models, robustness

try:
    __version__ = version("robustce")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "data", "datasets", "errors", "models", "robustness"]
