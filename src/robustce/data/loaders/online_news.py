"""UCI Online News Popularity (not in the offline copy: downloaded on first use)."""

from __future__ import annotations

import numpy as np

from robustce.data.dataset import Dataset
from robustce.data.loaders._common import PathLike, _finish, _read
from robustce.data.schema import infer_schema
from robustce.errors import DatasetUnavailableError

ONLINE_NEWS_DESCRIPTION = (
    "UCI Online News Popularity (Mashable, 39 644 rows, 58 features; url and timedelta "
    "dropped). Class 1 = popular (shares >= 1400, the median used by Fernandes et al.), "
    "class 0 = unpopular. Not in the offline copy: downloaded from UCI (no recorded checksum)."
)


def load_online_news(data_home: PathLike = None, threshold: float = 1400) -> Dataset:
    """UCI Online News Popularity; class 1 = ``shares >= threshold`` (default 1400).

    The file (``online_news/OnlineNewsPopularity.csv``) is not part of the offline copy; it
    is extracted from UCI's zip archive on first use.
    """
    relpath = "online_news/OnlineNewsPopularity.csv"
    df = _read(relpath, data_home, skipinitialspace=True)
    df.columns = [str(c).strip() for c in df.columns]
    if "shares" not in df.columns:
        raise DatasetUnavailableError(f"{relpath} has no 'shares' column; columns: "
                                      f"{list(df.columns)[:8]}...")
    y = (df["shares"].to_numpy() >= threshold).astype(np.int64)
    X = df.drop(columns=[c for c in ("url", "timedelta", "shares") if c in df.columns])
    schema = infer_schema(X)
    return _finish("online_news", X, y, schema, ("unpopular", "popular"),
                   ONLINE_NEWS_DESCRIPTION,
                   meta={"files": [relpath], "target": f"shares >= {threshold}"})
