"""Small shared helpers: random state handling, atomic file and directory writes, the package
version."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

from robustce.errors import ValidationError

__all__ = ["atomic_write", "check_destination", "check_random_state", "package_version",
           "percentile_interval", "replace_dir",
           "temp_dir_beside"]


@lru_cache(maxsize=1)
def package_version() -> str:
    """The installed robustce version (``0.0.0+unknown`` when run from an uninstalled source
    tree); every module that records it asks here, not the top-level package. Read once per
    process (the metadata look-up costs milliseconds, and every ``explain`` records it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("robustce")
    except PackageNotFoundError:
        return "0.0.0+unknown"


def check_random_state(random_state: int | np.random.Generator | None) -> np.random.Generator:
    """``None`` -> fresh generator, ``int`` -> seeded generator, ``Generator`` -> itself."""
    if isinstance(random_state, bool):
        raise ValidationError(f"random_state must be None, an int >= 0 or a numpy Generator, got "
                              f"{random_state!r}")
    if random_state is None or isinstance(random_state, int | np.integer):
        if random_state is not None and random_state < 0:
            raise ValidationError(f"random_state must be None, an int >= 0 or a numpy Generator, "
                                  f"got {random_state!r}")
        return np.random.default_rng(None if random_state is None else int(random_state))
    if isinstance(random_state, np.random.Generator):
        return random_state
    raise ValidationError(
        f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}"
    )


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w") -> Iterator:
    """Write to a temporary file beside ``path`` and rename it into place on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def temp_dir_beside(path: str | os.PathLike, tag: str = "tmp") -> Path:
    """A new hidden directory next to ``path`` (same filesystem, so it can be renamed into
    place atomically), with the usual permissions rather than mkdtemp's 0700."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.{tag}-"))
    os.chmod(tmp, 0o777 & ~_umask())
    return tmp


def replace_dir(tmp: str | os.PathLike, path: str | os.PathLike) -> None:
    """Rename directory ``tmp`` (made with :func:`temp_dir_beside`) to ``path``.

    An existing ``path`` is first moved aside and deleted only once ``tmp`` is in place (it is
    moved back if that rename fails), so ``path`` always holds either the old or the new
    directory. Callers decide beforehand whether ``path`` may be replaced.
    """
    tmp, path = Path(tmp), Path(path)
    if not path.exists():
        os.replace(tmp, path)
        return
    backup = temp_dir_beside(path, "old")
    os.replace(path, backup / path.name)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.replace(backup / path.name, path)
        raise
    shutil.rmtree(backup, ignore_errors=True)


def check_destination(path: str | os.PathLike, what: str, *, directory: bool = True) -> Path:
    """Check, before any work, that ``path`` can be written: it is not an existing entry of
    the wrong kind (a file where a directory goes, or the reverse), and its nearest existing
    ancestor is a writable directory (not a regular file). Creates nothing (a probe
    directory made and removed in that ancestor answers what permission bits cannot:
    ``/proc``, a read-only file system); raises :class:`ValidationError` with one line naming
    ``what`` and the path. Returns the path normalised (``a/b/../c`` -> ``a/c``)."""
    path = Path(os.path.normpath(path))
    if path.exists():
        if directory and not path.is_dir():
            raise ValidationError(f"{what} {path} exists and is not a directory")
        if not directory and path.is_dir():
            raise ValidationError(f"{what} {path} is a directory, not a file")
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValidationError(f"{what} {path} cannot be created: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK) or (
            path.exists() and not os.access(path, os.W_OK)):
        raise ValidationError(f"{what} {path} cannot be written: no permission in {parent}")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".robustce-probe-", dir=parent))
    except OSError as exc:
        raise ValidationError(f"{what} {path} cannot be written: {parent} refuses new entries "
                              f"({exc.strerror or exc})") from None
    return path


def percentile_interval(samples: np.ndarray, point: float) -> tuple[float, float]:
    """The 95 % percentile interval of bootstrap replicates ``samples`` (non-finite ones
    dropped), extended to the point estimate where the replicates lie on one side of it (a
    skewed bootstrap distribution): every interval contains its value. NaN, NaN without a
    finite replicate. Used by the audit's group figures and the ledger's honour rates."""
    s = samples[np.isfinite(samples)]
    if len(s) == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(s, [2.5, 97.5])
    if np.isfinite(point):
        lo, hi = min(lo, point), max(hi, point)
    return float(lo), float(hi)
