"""Partitioned input and output of an audit: the applicants are streamed from a DataFrame,
a CSV or a Parquet file in partitions of ``partition_rows``; each partition's per-applicant
results are written atomically to ``parts/part-NNNNN.parquet`` (CSV without pyarrow), so a
killed run resumes by skipping the partitions whose file exists. A manifest records the run's
configuration; resuming with another configuration is refused (the partitions would not
match)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from robustce.errors import ValidationError
from robustce.utils import atomic_write

__all__ = ["PartitionStore", "iter_partitions"]


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def iter_partitions(source: Any, partition_rows: int) -> Iterator[pd.DataFrame]:
    """Yield consecutive frames of at most ``partition_rows`` rows of ``source`` (a DataFrame,
    or the path of a ``.csv`` / ``.parquet`` file, read chunk by chunk: memory is bounded by
    one partition). Row labels are the row's position in the whole input."""
    if partition_rows < 1:
        raise ValidationError(f"partition_rows must be >= 1, got {partition_rows}")
    start = 0
    if isinstance(source, pd.DataFrame):
        for start in range(0, len(source), partition_rows):
            yield source.iloc[start:start + partition_rows]
        return
    path = Path(source)
    if not path.exists():
        raise ValidationError(f"audit input not found: {path}")
    if path.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(batch_size=partition_rows):
            frame = batch.to_pandas()
            frame.index = pd.RangeIndex(start, start + len(frame))
            start += len(frame)
            yield frame
    elif path.suffix.lower() == ".csv":
        for frame in pd.read_csv(path, chunksize=partition_rows):
            frame.index = pd.RangeIndex(start, start + len(frame))
            start += len(frame)
            yield frame
    else:
        raise ValidationError(f"audit input must be a DataFrame, .csv or .parquet, got {path}")


class PartitionStore:
    """The per-partition result files of one audit run under ``directory/parts``."""

    def __init__(self, directory: str | os.PathLike, config: dict[str, Any]):
        self.directory = Path(directory)
        self.parts = self.directory / "parts"
        self.config = config
        self.suffix = ".parquet" if _has_pyarrow() else ".csv"

    def open(self) -> None:
        """Create the folders and the manifest, or check the existing manifest matches."""
        self.parts.mkdir(parents=True, exist_ok=True)
        manifest = self.directory / "manifest.json"
        text = json.dumps(self.config, sort_keys=True, indent=1, default=str)
        if manifest.exists():
            old = json.loads(manifest.read_text())
            if old != json.loads(text):
                diff = sorted(k for k in set(old) | set(self.config)
                              if old.get(k) != json.loads(text).get(k))
                raise ValidationError(
                    f"{self.directory} holds an audit run with another configuration "
                    f"(differs in {diff}); use a new output folder or the same settings")
            return
        with atomic_write(manifest) as fh:
            fh.write(text)

    def path(self, index: int) -> Path:
        return self.parts / f"part-{index:05d}{self.suffix}"

    def done(self, index: int) -> bool:
        return self.path(index).exists()

    def write(self, index: int, frame: pd.DataFrame) -> Path:
        path = self.path(index)
        with atomic_write(path, "wb") as fh:
            if self.suffix == ".parquet":
                frame.to_parquet(fh, index=False)
            else:
                frame.to_csv(fh, index=False)
        return path

    def read(self, index: int, columns: list[str] | None = None) -> pd.DataFrame:
        path = self.path(index)
        if self.suffix == ".parquet":
            return pd.read_parquet(path, columns=columns)
        return pd.read_csv(path, usecols=columns)

    def indices(self) -> list[int]:
        return sorted(int(p.stem.split("-")[1]) for p in self.parts.glob(f"part-*{self.suffix}"))
