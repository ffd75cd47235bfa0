"""``rc.audit``: the portfolio recourse audit — per declined applicant, recourse by the
configured method (:mod:`.recourse`), run in partitions on one machine or a Dask cluster
(:mod:`.execute`), summarised by group with bootstrap CIs (:mod:`.groups`) and by a few
global actions (:mod:`.global_actions`), written as a report (:mod:`.report`).
See ``docs/audit.md``."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from robustce.audits.execute import run_partitions
from robustce.audits.global_actions import global_actions
from robustce.audits.groups import GroupAccumulator
from robustce.audits.partitions import PartitionStore, iter_partitions
from robustce.audits.recourse import AuditTask, group_frame
from robustce.errors import ValidationError
from robustce.notices.reasons import check_recourse_possible
from robustce.notices.record import audit_record, model_hash, schema_hash

__all__ = ["AuditResult", "audit"]


@dataclass
class AuditResult:
    """What an audit found: ``groups`` (metric by group with CIs and gaps), ``fairness``
    (spread of burden and coverage per group column), ``actions`` / ``actions_by_group``
    (global actions), ``totals`` and the audit ``record``; ``directory`` holds the files.

    Attributes
    ----------
    groups : the metric table by group, with bootstrap CIs and gaps.
    fairness : the spread of burden and coverage per group column.
    actions : the global actions over all declined applicants.
    actions_by_group : the global actions per group.
    totals : counts over the portfolio (rows, declined applicants audited, CEs found, ...).
    record : the audit record (model and schema hashes, method, parameters, seed, versions).
    directory : where the audit's files are.
    files : name → path of each file written.
    Examples
    --------
    >>> import tempfile
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> with tempfile.TemporaryDirectory() as out:
    ...     res = rc.audit(model, test.frame, train=train, method="milp_nearest",
    ...                    groups=["housing"], out=out, n_boot=20, min_group=5, report=False)
    >>> cov = res.groups[res.groups["metric"] == "coverage"]
    >>> cov[["level", "n_declined", "value", "too_few"]].round(3)
           level  n_declined  value  too_few
    0   mortgage          14  0.929    False
    5        own           1  1.000     True
    10      rent          45  0.956    False
    >>> res.actions[["action", "coverage"]].round(3)
                                                 action  coverage
    0  set housing to own and increase income by 175500     0.900
    1     set housing to own and set has_guarantor to 0     0.883
    """

    groups: pd.DataFrame
    fairness: pd.DataFrame
    actions: pd.DataFrame
    actions_by_group: pd.DataFrame
    totals: dict[str, Any]
    record: dict[str, Any]
    directory: Path
    files: dict[str, Path] = field(default_factory=dict)


def _applicants(data: Any) -> Any:
    frame = getattr(data, "frame", None)
    return frame if isinstance(frame, pd.DataFrame) else data


def audit(model: Any, data: Any, *, method: str = "nearest_neighbour",
          params: Mapping[str, Any] | None = None, train: Any = None,
          groups: Sequence[str] = (), bands: Mapping[str, Sequence[float]] | None = None,
          family: Any = None, shift: Any = None, target_class: int | None = None,
          out: str | os.PathLike | None = None, partition_rows: int = 10_000,
          backend: str = "serial", n_jobs: int = 2, scheduler: Any = None,
          connect_timeout: float = 10.0, sample_fraction: float | None = None,
          global_sample: int = 5000, max_actions: int = 5, n_boot: int = 200,
          min_group: int = 30, seed: int = 0, report: bool = True,
          on_partition: Callable[[int], None] | None = None) -> AuditResult:
    """Audit recourse over a portfolio of applicants, by group.

    Parameters
    ----------
    model : the fitted robustce model.
    data : the applicants — a Dataset, a DataFrame, or a ``.csv`` / ``.parquet`` path
        (streamed); feature columns plus any group columns.
    method, params : the explainer (registry name) and its parameters.
    train : the Dataset the explainer is built on (default: ``data`` if it is a Dataset).
    groups : group columns (features or other columns).
    bands : numeric group columns turned into bands (``{"age": [25, 45, 65]}`` gives
        ``age_band``).
    family : optional ModelFamily (robust validity vr).
    shift : optional ParameterShift or δ (Δ-validity, the exact test).
    target_class : the favourable class (default: the dataset's favourable one, else 1).
    out : result folder (partitions, manifest, report); a rerun resumes there.
    partition_rows : rows per partition.
    backend : ``serial``, ``joblib`` or ``dask``.
    n_jobs : joblib worker processes.
    scheduler : for ``dask``: a ``distributed.Client`` or a ``tcp://`` address.
    connect_timeout : seconds to wait for the scheduler to answer.
    sample_fraction : audit a seeded sample of this share of the declined (None: all).
    global_sample : applicants used to choose the global actions (a seeded sample).
    max_actions : at most this many global actions.
    n_boot : bootstrap replicates of the confidence intervals.
    min_group : groups with fewer declined applicants are reported, not compared.
    seed : seeds the method, sampling and bootstrap.
    report : write report.md / report.html.
    on_partition : called with each partition's index once it is written.

    Returns
    -------
    AuditResult

    Raises
    ------
    ValidationError
        An unknown group column, bad parameters, a resume with another configuration.
    ProtectedFeatureError
        When a protected feature would be the only mutable one.
    SchedulerUnavailableError
        When the Dask scheduler does not answer within ``connect_timeout``.

    Examples
    --------
    >>> import tempfile
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> with tempfile.TemporaryDirectory() as out:
    ...     res = rc.audit(model, test.frame, train=train, method="milp_nearest",
    ...                    groups=["housing"], out=out, n_boot=20, min_group=5)
    ...     print(sorted(res.files))
    ['cost_by_group.png', 'fairness_gaps.csv', 'global_actions.csv', 'global_actions.png',
     'global_actions_by_group.csv', 'group_metrics.csv', 'report.html', 'report.md',
     'robust_validity_by_group.png']
    >>> res.totals["declined_audited"], round(res.totals["coverage"], 3)
    (60, 0.95)
    >>> res.fairness[["measure", "value", "highest", "lowest"]].round(3)
               measure  value   highest    lowest
    0    burden_spread  0.157  mortgage      rent
    1  coverage_spread  0.027      rent  mortgage
    """
    started = datetime.now(UTC)
    check_recourse_possible(model.encoder.schema)
    if sample_fraction is not None and not 0 < sample_fraction <= 1:
        raise ValidationError(f"sample_fraction must be in (0, 1], got {sample_fraction}")
    if max_actions < 1 or n_boot < 1 or min_group < 1 or global_sample < 1:
        raise ValidationError("max_actions, n_boot, min_group and global_sample must be >= 1")
    if train is None:
        if not hasattr(data, "frame"):
            raise ValidationError("audit needs train= (the Dataset the method is built on) "
                                  "when data is not a Dataset")
        train = data
    if target_class is None:
        fav = getattr(train, "favourable", None)
        target_class = int(fav) if fav is not None else 1
    if isinstance(shift, int | float) and not isinstance(shift, bool):
        from robustce.robustness import ParameterShift

        shift = ParameterShift(float(shift))
    bands = {k: [float(e) for e in v] for k, v in (bands or {}).items()}
    group_names = [f"{g}_band" if g in bands else g for g in groups]
    for b in bands:
        if b not in groups:
            group_names.append(f"{b}_band")
    source = _applicants(data)
    from robustce.methods.registry import method_name

    config = {"method": method_name(method), "params": dict(params or {}),
              "groups": group_names, "bands": bands, "target_class": int(target_class),
              "partition_rows": int(partition_rows), "seed": int(seed),
              "sample_fraction": sample_fraction,
              "family": None if family is None else [family.protocol, len(family)],
              "shift": None if shift is None else float(getattr(shift, "delta", shift)),
              "input": source if isinstance(source, str | os.PathLike) else "frame",
              # the model and what a CE may change: a rerun with another model or other
              # actionability is not a resume (and builds its own explainer: the token)
              "model": model_hash(model), "schema": schema_hash(model.encoder.schema)}
    config["input"] = str(config["input"])
    token = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()
    directory = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="robustce-audit-"))
    store = PartitionStore(directory, config)
    task = AuditTask(model=model, train=train, method=config["method"], params=config["params"],
                     target_class=int(target_class), seed=int(seed),
                     groups=list(groups) + [b for b in bands if b not in groups],
                     bands=bands, family=family, shift=shift, sample_fraction=sample_fraction,
                     token=token)
    n_rows = [0]

    def checked() -> Any:
        for i, frame in enumerate(iter_partitions(source, partition_rows)):
            if i == 0:
                group_frame(frame.iloc[:1], task.groups, bands)  # unknown column: stop here
                store.open()
            n_rows[0] += len(frame)
            yield frame

    run_partitions(task, checked(), store, backend=backend, n_jobs=n_jobs, scheduler=scheduler,
                   connect_timeout=connect_timeout, on_partition=on_partition)
    d = len(model.encoder.schema)
    acc = GroupAccumulator(group_names, n_boot, seed, np.linspace(0.0, float(d), 41))
    sample = None
    n_declined = n_found = 0
    for i in store.indices():
        part = store.read(i)
        acc.add(part, i)
        n_declined += len(part)
        n_found += int(part["found"].sum())
        sample = part if sample is None else pd.concat([sample, part], ignore_index=True)
        if len(sample) > global_sample:
            sample = sample.nsmallest(global_sample, "key")
    actions, by_group = (global_actions(model, sample, group_names, int(target_class),
                                        max_actions=max_actions)
                         if sample is not None else (pd.DataFrame(), pd.DataFrame()))
    table = acc.table(min_group)
    too_few = (table[table["too_few"]][["group", "level", "n_declined"]].drop_duplicates()
               if len(table) else table)
    totals = {"rows": n_rows[0], "declined_audited": n_declined, "found": n_found,
              "coverage": n_found / n_declined if n_declined else float("nan"),
              "partitions": len(store.indices()), "global_sample": 0 if sample is None
              else len(sample), "groups_too_few": too_few.to_dict("records")}
    record = audit_record(model, methods=[{"method": config["method"],
                                           "params": config["params"], "status": "done"}],
                          seed=seed, started_at=started)
    record["config"] = config
    result = AuditResult(table, acc.fairness_gaps(min_group), actions, by_group, totals,
                         record, directory)
    if report:
        from robustce.audits.report import write_report

        result.files = write_report(result, acc)
    return result
