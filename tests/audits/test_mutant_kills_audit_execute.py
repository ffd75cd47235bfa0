"""A resumed audit on joblib processes writes each partition's rows under that partition's
own index (mutant ``audit_joblib_results_written_by_position``: with partitions 0 and 2 on
disk, the rows of partition 1 went to 0, those of 3 to 1, ...). The computation is replaced
by one that records which partition it was given (pickled by value into the workers)."""

from __future__ import annotations

import pandas as pd

from robustce.audits import execute


class Store:
    """Partitions 0 and 2 already on disk; records what is written where."""

    def __init__(self):
        self.written: dict[int, pd.DataFrame] = {}

    def done(self, i: int) -> bool:
        return i in (0, 2)

    def write(self, i: int, frame: pd.DataFrame) -> None:
        assert i not in self.written
        self.written[i] = frame


def test_a_resumed_joblib_run_writes_each_partition_under_its_own_index(monkeypatch):
    def computed(task, i, frame):  # a closure: cloudpickle sends it by value
        return pd.DataFrame({"partition": [i], "first_row": [int(frame["row"].iloc[0])]})

    monkeypatch.setattr(execute, "run_partition", computed)
    parts = [pd.DataFrame({"row": range(10 * k, 10 * k + 10)}) for k in range(6)]
    store = Store()
    written = execute.run_partitions(None, parts, store, backend="joblib", n_jobs=2)
    assert sorted(written) == [1, 3, 4, 5]
    assert sorted(store.written) == [1, 3, 4, 5]
    for i, frame in store.written.items():
        assert frame["partition"].tolist() == [i] and frame["first_row"].tolist() == [10 * i]
