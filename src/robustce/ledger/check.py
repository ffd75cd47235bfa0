"""Check the ledger against a new model version: re-score every outstanding promise's target
row with the new model (its own ``predict`` on the raw rows, partition by partition), and
report honour rates, the broken promises and their repairs (:class:`LedgerReport`).

Policies (the lender's choice, docs/ledger.md):

* ``report`` — only report; the ledger is not written;
* ``reissue`` — a broken promise whose repair from the promised row is valid under the new
  model gets that repair as a new promise (issued by the new model, linked to the broken
  one), and a ``reissued`` event: it is no longer outstanding;
* ``grandfather`` — a promise keeps being decided by the model version that issued it until
  it expires: one the new model breaks counts as honoured *by policy*
  (``honoured_by_policy``), and is not listed as broken.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.ledger.promises import as_micros, from_micros, now_micros, promise_row
from robustce.ledger.rates import RateAccumulator
from robustce.ledger.report import LedgerReport
from robustce.ledger.store import Ledger, LedgerError

__all__ = ["AGE_BUCKETS", "POLICIES", "check", "rescore"]

POLICIES = ("report", "reissue", "grandfather")
#: (upper bound in days, label) of the age buckets of ``by_age``
AGE_BUCKETS = ((30, "0-30d"), (90, "30-90d"), (180, "90-180d"), (365, "180-365d"),
               (730, "1-2y"), (np.inf, "2y+"))
_DAY_US = 86_400 * 1_000_000


def _age_labels(issued_us: np.ndarray, when_us: int) -> np.ndarray:
    days = (when_us - issued_us) / _DAY_US
    edges = np.array([b for b, _ in AGE_BUCKETS])
    names = np.array([n for _, n in AGE_BUCKETS], dtype=object)
    return names[np.minimum(np.searchsorted(edges, days, side="right"), len(names) - 1)]


def _check_args(policy: str, n_boot: int, partition_size: int, groups: Any) -> list[str]:
    if policy not in POLICIES:
        raise ValidationError(f"policy must be one of {POLICIES}, got {policy!r}")
    if int(n_boot) < 0:
        raise ValidationError(f"n_boot must be >= 0, got {n_boot}")
    if int(partition_size) < 1:
        raise ValidationError(f"partition_size must be >= 1, got {partition_size}")
    groups = [groups] if isinstance(groups, str) else list(groups or [])
    if not all(isinstance(g, str) and g for g in groups):
        raise ValidationError(f"groups must be column names, got {groups!r}")
    return groups


def _rows(texts: pd.Series) -> pd.DataFrame:
    return pd.DataFrame.from_records([json.loads(t) for t in texts])


def _columns(frame: pd.DataFrame, names: Sequence[str], what: str, url: str) -> pd.DataFrame:
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise LedgerError(f"ledger {url}: the {what} lack the column(s) {', '.join(missing)}")
    return frame[list(names)]


def rescore(model: Any, part: pd.DataFrame, url: str
            ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Re-score promises (unparsed rows of :meth:`Ledger.promises`) with ``model``: (the
    promised raw rows, the promised classes, whether ``model``'s own ``predict`` on each row
    still gives its class)."""
    names = list(model.encoder.schema.names)
    targets = _columns(_rows(part["target_row"]), names, "promised rows", url)
    wanted = part["target_class"].to_numpy(dtype=np.int64)
    return targets, wanted, np.asarray(model.predict(targets)) == wanted


def check(ledger: Ledger | str, model: Any, *, groups: Sequence[str] | str | None = None,
          policy: str = "report", repair: bool = True, repair_method: str = "milp_nearest",
          repair_data: Any = None, repair_params: dict[str, Any] | None = None,
          n_boot: int = 200, seed: int = 0, partition_size: int = 10_000,
          as_of: Any = None, max_broken: int | None = None) -> LedgerReport:
    """Check the promises outstanding ``as_of`` (default now) against ``model``.

    Parameters
    ----------
    ledger : a :class:`Ledger` or its URL.
    model : the new model version (a robustce model).
    groups : columns of the applicants' rows to report the honour rate by.
    policy : ``report``, ``reissue`` or ``grandfather`` (module docstring).
    repair : compute each broken promise's repairs (from the promised and the original row).
    repair_method, repair_data, repair_params : the nearest-CE method of the repairs (built
        once), its training data (None: ``milp_nearest`` needs none) and parameters.
    n_boot, seed : Poisson-bootstrap replicates of the intervals, and their seed.
    partition_size : promises read and scored at a time (memory is bounded by it).
    as_of : the time outstanding promises are taken at (datetime or ISO text, UTC).
    max_broken : list (and repair) at most this many broken promises, the first by id
        (None: all); the counts and rates always cover every promise.

    Returns
    -------
    LedgerReport

    Examples
    --------
    Issue recourse under v1, retrain, check the promises under v2:

    >>> import tempfile, os
    >>> data = rc.datasets.load("synthetic_loan", n_samples=600, random_state=0)
    >>> train, test = data.split(test_size=0.3, random_state=0)
    >>> v1 = rc.models.MLP(hidden_layers=(8,), epochs=100, random_state=0).fit(train)
    >>> v2 = rc.models.MLP(hidden_layers=(8,), epochs=100, random_state=5).fit(train)
    >>> declined = test.frame[v1.predict(test.frame) == 0].head(6)
    >>> expl = rc.methods.MILPNearest(v1, train).explain(declined)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     ledger = rc.ledger.Ledger(os.path.join(tmp, "ledger.sqlite3"))
    ...     _ = ledger.record_explanations(v1, expl)
    ...     report = rc.ledger.check(ledger, v2, groups=["housing"], n_boot=50)
    ...     ledger.close()
    >>> report.outstanding
    6
    >>> kept = v2.predict(expl.counterfactuals[expl.feature_names]) == 1  # a recount
    >>> bool(report.honoured == kept.sum()), bool(len(report.broken) == (~kept).sum())
    (True, True)
    >>> broken = report.broken[0]["repair"]["from_promised"]  # what to do now, under v2
    >>> v2.predict(pd.DataFrame([broken["row"]])).tolist()
    [1]
    """
    from robustce.notices.record import model_hash

    groups = _check_args(policy, n_boot, partition_size, groups)
    if max_broken is not None and int(max_broken) < 0:
        raise ValidationError(f"max_broken must be >= 0 or None, got {max_broken}")
    own = isinstance(ledger, str)
    book = Ledger(ledger) if own else ledger
    try:
        return _check(book, model, model_hash(model), groups, policy, repair, repair_method,
                      repair_data, repair_params, int(n_boot), int(seed), int(partition_size),
                      now_micros() if as_of is None else as_micros(as_of),
                      None if max_broken is None else int(max_broken))
    finally:
        if own:
            book.close()


def _check(book: Ledger, model: Any, digest: str, groups: list[str], policy: str, repair: bool,
           repair_method: str, repair_data: Any, repair_params: Any, n_boot: int, seed: int,
           partition_size: int, when: int, max_broken: int | None) -> LedgerReport:
    records = book.count()
    last_id = book.last_id()  # promises written by this check (reissues) are not read again
    acc = RateAccumulator(n_boot, seed)
    repairer = None
    broken: list[dict[str, Any]] = []
    reissued: list[list[int]] = []
    counts = {"outstanding": 0, "model": 0, "policy": 0}
    for index, part in enumerate(book.promises(outstanding=True, as_of=from_micros(when),
                                               partition_size=partition_size, parse=False,
                                               until_id=last_id)):
        targets, wanted, by_model = rescore(model, part, book.url)
        by_policy = np.zeros(len(part), dtype=bool)
        if policy == "grandfather":  # the issuing version still decides (not expired)
            by_policy = ~by_model & (part["model_hash"].to_numpy() != digest)
        honoured = by_model | by_policy
        counts["outstanding"] += len(part)
        counts["model"] += int(by_model.sum())
        counts["policy"] += int(by_policy.sum())
        labels = {"overall": np.zeros(len(part), dtype=np.int64),
                  "method": part["method"].to_numpy(),
                  "certificate": part["certificate_kind"].to_numpy(),
                  "age": _age_labels(part["issued_at"].to_numpy(dtype=np.int64), when)}
        originals = None
        if groups:
            originals = _rows(part["applicant_row"])
            for g in groups:
                if g not in originals.columns:
                    raise LedgerError(f"ledger {book.url}: no applicant row has the group "
                                      f"column {g!r}")
                labels[f"group:{g}"] = originals[g].astype(str).to_numpy()
        acc.add(labels, honoured, index)
        bad = np.flatnonzero(~honoured)
        if max_broken is not None:  # listed (and repaired): the first max_broken
            bad = bad[:max(0, max_broken - len(broken))]
        if not len(bad):
            continue
        rows = part.iloc[bad]
        original = (originals.iloc[bad] if originals is not None
                    else _rows(rows["applicant_row"]))
        entries = [_broken_entry(r) for r in rows.to_dict("records")]
        if repair:
            if repairer is None:  # built once per check
                from robustce.ledger.repair import Repairer

                repairer = Repairer(model, repair_method, repair_data, repair_params, seed)
            promised = targets.iloc[bad]
            from_promised = repairer.repair(promised, wanted[bad])
            from_original = repairer.repair(_columns(original, list(promised.columns),
                                                     "applicant rows", book.url), wanted[bad])
            for e, a, b in zip(entries, from_promised, from_original, strict=True):
                e["repair"] = {"method": repairer.method, "from_promised": a, "from_original": b}
            if policy == "reissue":
                reissued += _reissue(book, digest, rows, original, entries)
        broken += entries
    report_groups = {g: acc.result(f"group:{g}") for g in groups}
    overall = acc.result("overall").get("0")
    n = counts["outstanding"]
    honoured_n = counts["model"] + counts["policy"]
    return LedgerReport(
        ledger=book.url, model_hash=digest, policy=policy,
        as_of=from_micros(when).isoformat(), records=records, outstanding=n,
        honoured=honoured_n, broken_total=n - honoured_n, honoured_by_model=counts["model"],
        honoured_by_policy=counts["policy"],
        honour_rate=honoured_n / n if n else None,
        honour_rate_ci=overall["ci"] if overall else [None, None],
        by_method=acc.result("method"), by_certificate=acc.result("certificate"),
        by_group=report_groups, by_age=_age_order(acc.result("age")), broken=broken,
        reissued=reissued, n_boot=n_boot, seed=seed)


def _age_order(table: dict[str, Any]) -> dict[str, Any]:
    return {name: table[name] for _, name in AGE_BUCKETS if name in table}


def _broken_entry(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": int(row["id"]), "method": row["method"],
            "applicant_key": row["applicant_key"], "issued_by": row["model_hash"],
            "target_class": int(row["target_class"]), "target_label": row["target_label"],
            "certificate": row["certificate_kind"], "changed": json.loads(row["changed"]),
            "issued_at": from_micros(int(row["issued_at"])).isoformat(),
            "promised_row": json.loads(row["target_row"])}


def _reissue(book: Ledger, digest: str, rows: pd.DataFrame, original: pd.DataFrame,
             entries: list[dict[str, Any]]) -> list[list[int]]:
    """Write each valid repair from the promised row as a new promise of the new model,
    linked to the broken one, and a ``reissued`` event on the broken one."""
    new, links = [], []
    now = now_micros()
    for row, applicant, e in zip(rows.to_dict("records"), original.to_dict("records"), entries,
                                 strict=True):
        fix = e["repair"]["from_promised"]
        if not fix.get("valid"):
            continue
        expires = row["expires_at"]  # the broken promise's expiry, where still ahead
        keep = expires is not None and not pd.isna(expires) and int(expires) > now
        r = promise_row(applicant_id=None, applicant_row=applicant, target_row=fix["row"],
                        model=digest, method=e["repair"]["method"],
                        target_class=int(row["target_class"]), issued_at=from_micros(now),
                        expires_at=from_micros(int(expires)) if keep else None)
        r.update(applicant_key=row["applicant_key"], applicant_hashed=row["applicant_hashed"],
                 target_label=row["target_label"], reissue_of=int(row["id"]))
        new.append(r)
        links.append(int(row["id"]))
    if not new:
        return []
    ids = book.record_rows(new, origin="reissue")
    book.add_statuses([{"promise_id": old, "status": "reissued", "model_hash": digest,
                        "repair_id": nid, "note": None, "at": now}
                       for old, nid in zip(links, ids, strict=True)])
    return [[old, nid] for old, nid in zip(links, ids, strict=True)]
