"""Run the audit's partitions serially, on joblib processes or on a Dask cluster; each
finished partition is written at once (atomically) by the calling process, and partitions
already on disk are skipped (resume). At most ``window`` partitions are in flight, so memory
stays bounded whatever the input's size."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pandas as pd

from robustce.audits.partitions import PartitionStore
from robustce.audits.recourse import AuditTask, run_partition
from robustce.errors import SchedulerUnavailableError, ValidationError

__all__ = ["BACKENDS", "connect", "run_partitions"]

BACKENDS = ("serial", "joblib", "dask")


def connect(scheduler: Any, timeout: float = 10.0) -> Any:
    """A ``dask.distributed.Client``: ``scheduler`` itself when it is one, else a client of
    the address ``tcp://host:port``, given up after ``timeout`` seconds.

    Parameters
    ----------
    scheduler : a ``dask.distributed.Client`` or a scheduler address ``tcp://host:port``.
    timeout : seconds to wait for the scheduler to answer.

    Raises
    ------
    SchedulerUnavailableError
        When the address does not answer in time (or cannot be reached).

    Examples
    --------
    >>> from distributed import LocalCluster
    >>> from robustce.audits import connect
    >>> with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
    ...     client = connect(cluster.scheduler_address, timeout=5)
    ...     print(type(client).__name__, client.submit(sum, [1, 2]).result())
    ...     client.close()
    Client 3
    >>> connect("tcp://127.0.0.1:9", timeout=0.2)  # nothing listens there
    Traceback (most recent call last):
    ...
    robustce.errors.SchedulerUnavailableError: the Dask scheduler tcp://127.0.0.1:9 did not answer ...
    """
    from distributed import Client

    if isinstance(scheduler, Client):
        return scheduler
    try:
        return Client(str(scheduler), timeout=f"{float(timeout)}s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise SchedulerUnavailableError(
            f"the Dask scheduler {scheduler} did not answer within {timeout:g} s "
            f"({type(exc).__name__}: {exc}); check the address and that the scheduler runs"
        ) from None


def run_partitions(task: AuditTask, partitions: Iterable[pd.DataFrame], store: PartitionStore,
                   *, backend: str = "serial", n_jobs: int = 2, scheduler: Any = None,
                   connect_timeout: float = 10.0, window: int | None = None,
                   on_partition: Callable[[int], None] | None = None) -> list[int]:
    """Compute and write every partition not yet in ``store``; returns the indices written.

    ``on_partition(i)`` is called after partition ``i`` is on disk (progress; tests use it
    to simulate a crash).
    """
    if backend not in BACKENDS:
        raise ValidationError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    todo = ((i, f) for i, f in enumerate(partitions) if not store.done(i))
    written: list[int] = []

    def done(i: int, frame: pd.DataFrame) -> None:
        store.write(i, frame)
        written.append(i)
        if on_partition is not None:
            on_partition(i)

    if backend == "serial":
        for i, f in todo:
            done(i, run_partition(task, i, f))
    elif backend == "joblib":
        from joblib import Parallel, delayed

        jobs = ((i, delayed(run_partition)(task, i, f)) for i, f in todo)
        idx: list[int] = []

        def calls() -> Iterator[Any]:
            for i, call in jobs:
                idx.append(i)
                yield call

        par = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator",
                       pre_dispatch=str(window or 2 * n_jobs))
        for k, frame in enumerate(par(calls())):
            done(idx[k], frame)
    else:
        _run_dask(task, todo, connect(scheduler, connect_timeout), window, done)
    return written


def _run_dask(task: AuditTask, todo: Iterator[tuple[int, pd.DataFrame]], client: Any,
              window: int | None, done: Callable[[int, pd.DataFrame], None]) -> None:
    from distributed import as_completed

    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    window = window or 2 * n_workers
    shared = client.scatter(task, broadcast=True)
    index: dict[Any, int] = {}
    # the loop of *this* client: with no futures yet, as_completed() would look for Dask's
    # default client, and the one connect() opens is not the default (set_as_default=False)
    pending = as_completed(loop=client.loop)
    for i, f in todo:
        fut = client.submit(run_partition, shared, i, f, pure=False)
        index[fut] = i
        pending.add(fut)
        while pending.count() >= window:
            ready = next(pending)
            done(index.pop(ready), ready.result())
    for ready in pending:
        done(index.pop(ready), ready.result())
