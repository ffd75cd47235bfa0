"""``rc.datasets``: load named benchmark and built-in datasets, or wrap your own frame."""

from robustce.data.dataset import Dataset, from_frame
from robustce.data.registry import list_datasets, load

__all__ = ["Dataset", "from_frame", "list_datasets", "load"]
