"""Error hierarchy: every error robustce raises on purpose derives from :class:`RobustCEError`."""

from __future__ import annotations


class RobustCEError(Exception):
    """Base class of all robustce errors."""


class ValidationError(RobustCEError, ValueError):
    """Bad user input: wrong columns, NaNs, out-of-range parameters, unseen categories."""


class SchemaError(ValidationError):
    """A feature schema is inconsistent or does not match the data."""


class ProtectedFeatureError(SchemaError):
    """Recourse would need a protected feature: it is the only one left to change (every
    other feature is immutable), and protected features never change."""


class SchedulerUnavailableError(RobustCEError, ConnectionError):
    """A Dask scheduler address did not answer within the connect time limit."""


class UnknownDatasetError(ValidationError, KeyError):
    """A dataset name is not in the registry."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DatasetUnavailableError(RobustCEError, OSError):
    """A dataset file is missing and cannot be downloaded (offline, or checksum mismatch)."""


class ChecksumError(DatasetUnavailableError):
    """A downloaded or cached file does not match its recorded checksum."""


class ModelFileError(RobustCEError, OSError):
    """A saved model directory is missing, incomplete, corrupt or of an unknown format.

    Examples
    --------
    >>> try:
    ...     rc.models.load("no/such/model")
    ... except ModelFileError as err:
    ...     print(type(err).__name__, isinstance(err, OSError))
    ModelFileError True
    """


class NotFittedError(RobustCEError, AttributeError):
    """An object was used before ``fit``."""


class UnsupportedModelError(RobustCEError, TypeError):
    """The model cannot provide what was asked (e.g. a ReLU network view of a tree)."""


class SolverError(RobustCEError, RuntimeError):
    """A MILP/SMT backend failed or is not installed."""


class UnknownSolverError(SolverError, ValidationError):
    """A solver name that is not a known backend (a bad argument: also a ``ValueError``)."""


class ConfigError(ValidationError):
    """A benchmark/CLI configuration is invalid (unknown key, wrong type)."""


class ParameterError(ValidationError, TypeError):
    """A constructor was given a keyword it does not take (the message names the valid ones)."""


class RobustCEWarning(UserWarning):
    """Base class of the warnings robustce issues on purpose (filter them by this class)."""


class ConstantModelWarning(RobustCEWarning):
    """A fitted (or imported) model predicts one class for every training row: it learned
    nothing that separates the classes, and every explainer will report ``infeasible``."""


class OutOfRangeWarning(RobustCEWarning):
    """Inputs lie outside a feature's *observed* (training) range. Accepted — only declared
    bounds are hard — but the model extrapolates there."""


class ConstraintsDataWarning(RobustCEWarning):
    """Some training rows violate the constraints given to an explainer (the message names
    each relation and how many rows break it); a set that no training row satisfies is a
    :class:`ValidationError` instead."""


class UnsupportedConstraintsError(ValidationError):
    """An explainer was given ``constraints`` it cannot honour (exactly or by filtering)."""
