"""``LedgerReport``: what a check of the ledger against a new model version found — honour
rates overall and by method, certificate kind, group and age (with bootstrap intervals), the
broken promises with their repairs, and the deployment gate.

The JSON contract (``to_dict``): ``records``, ``outstanding``, ``honoured``, ``honour_rate``,
``by_method``, ``by_certificate``, ``by_group``, ``by_age``, ``broken`` (each with ``id``,
``method`` and ``repair``), plus the policy, the model version and the check's settings.
A rate entry is ``{"n", "honoured", "honour_rate", "ci": [low, high]}``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["LedgerReport"]


def _value(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _rate(value: float | None) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.4f}"


@dataclass
class LedgerReport:
    """The result of :func:`~robustce.ledger.check.check`.

    Attributes
    ----------
    ledger : the ledger's URL (password hidden).
    model_hash : the checked (new) model version.
    policy : ``report``, ``reissue`` or ``grandfather``.
    as_of : the time the promises were outstanding at (ISO 8601, UTC).
    records : promises in the ledger.
    outstanding : promises outstanding and checked.
    honoured : outstanding promises honoured (by the new model, or by the grandfather policy).
    broken_total : outstanding promises not honoured (all of them, listed in ``broken`` or
        not).
    honoured_by_model : those the new model puts in their target class.
    honoured_by_policy : those honoured only because their issuing version still decides
        them (policy ``grandfather``; 0 otherwise).
    honour_rate : ``honoured / outstanding`` (None without outstanding promises).
    honour_rate_ci : its 95 % Poisson-bootstrap interval.
    by_method : a rate entry per method.
    by_certificate : a rate entry per certificate kind.
    by_age : a rate entry per age bucket of the promises (``0-30d`` ... ``2y+``).
    by_group : per group column, a rate entry per level (of the applicant's row).
    broken : the broken promises: id, method, applicant key, issuing model, target class,
        changed features, certificate kind, issue time, and ``repair`` (``from_promised`` /
        ``from_original``: status, the row to reach, its changes, validity under the new
        model) where repairs were asked for; the first ``max_broken`` of them where the
        check was given one.
    reissued : ``[broken id, new id]`` per repair written as a new promise (``reissue``).
    n_boot : the bootstrap's replicates.
    seed : the bootstrap's seed.

    Examples
    --------
    >>> report = LedgerReport(
    ...     ledger="sqlite:///ledger.sqlite3", model_hash="sha256:v2", policy="report",
    ...     as_of="2026-01-01T00:00:00+00:00", records=20, outstanding=20, honoured=19,
    ...     broken_total=1,
    ...     honoured_by_model=19, honoured_by_policy=0, honour_rate=0.95,
    ...     honour_rate_ci=[0.85, 1.0], by_method={}, by_certificate={}, by_age={}, broken=[],
    ...     by_group={"region": {
    ...         "north": {"n": 15, "honoured": 15, "honour_rate": 1.0, "ci": [1.0, 1.0]},
    ...         "south": {"n": 5, "honoured": 4, "honour_rate": 0.8, "ci": [0.4, 1.0]}}})
    >>> report.gate(0.9)  # overall passes, one group does not
    ['group region=south: honour rate 0.8000 < 0.9 (1 of 5 broken)']
    >>> report.gate(0.8)
    []
    """

    ledger: str
    model_hash: str
    policy: str
    as_of: str
    records: int
    outstanding: int
    honoured: int
    broken_total: int
    honoured_by_model: int
    honoured_by_policy: int
    honour_rate: float | None
    honour_rate_ci: list[float | None]
    by_method: dict[str, dict[str, Any]]
    by_certificate: dict[str, dict[str, Any]]
    by_group: dict[str, dict[str, dict[str, Any]]]
    by_age: dict[str, dict[str, Any]]
    broken: list[dict[str, Any]]
    reissued: list[list[int]] = field(default_factory=list)
    n_boot: int = 0
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (plain values)."""
        return asdict(self)

    def gate(self, min_honour_rate: float) -> list[str]:
        """The deployment gate: one line per failure — the overall honour rate, or any
        group level's, below ``min_honour_rate``; an empty list passes."""
        r = float(min_honour_rate)
        failures = []
        if self.honour_rate is not None and self.honour_rate < r:
            failures.append(f"honour rate {self.honour_rate:.4f} < {r:g} "
                            f"({self.outstanding - self.honoured} of {self.outstanding} "
                            "promises broken)")
        for column, levels in self.by_group.items():
            for level, entry in levels.items():
                rate = entry["honour_rate"]
                if rate is not None and rate < r:
                    failures.append(f"group {column}={level}: honour rate {rate:.4f} < {r:g} "
                                    f"({entry['n'] - entry['honoured']} of {entry['n']} broken)")
        return failures

    def format(self) -> str:
        """A plain-text summary."""
        lines = [f"ledger {self.ledger}: {self.records} promises, {self.outstanding} "
                 f"outstanding as of {self.as_of}",
                 f"model {self.model_hash} (policy {self.policy}): honoured {self.honoured} "
                 f"of {self.outstanding}, honour rate {_rate(self.honour_rate)}"
                 + (f" [{_rate(self.honour_rate_ci[0])}, {_rate(self.honour_rate_ci[1])}]"
                    if self.honour_rate is not None else "")]
        if self.honoured_by_policy:
            lines.append(f"  {self.honoured_by_policy} honoured by the grandfather policy "
                         "(their issuing model version still decides them)")
        for title, table in (("method", self.by_method), ("certificate", self.by_certificate),
                             ("age", self.by_age),
                             *((f"group {c}", t) for c, t in self.by_group.items())):
            if not table:
                continue
            lines.append(f"by {title}:")
            for key, e in table.items():
                ci = e["ci"]
                lines.append(f"  {key:<24} {e['honoured']:>7} / {e['n']:<7} "
                             f"{_rate(e['honour_rate'])} [{_rate(ci[0])}, {_rate(ci[1])}]")
        if self.broken_total:
            listed = (f" ({len(self.broken)} listed)" if len(self.broken) < self.broken_total
                      else "")
            lines.append(f"broken: {self.broken_total}{listed}")
            for b in self.broken[:10]:
                rep = (b.get("repair") or {}).get("from_promised") or {}
                what = ", ".join(f"{f} {_value(v[0])} → {_value(v[1])}" for f, v in
                                 (rep.get("changes") or {}).items()) or rep.get("status", "-")
                lines.append(f"  #{b['id']} {b['method']}: now needs {what}")
            if len(self.broken) > 10:
                lines.append(f"  ... and {len(self.broken) - 10} more (--json lists all)")
        if self.reissued:
            lines.append(f"reissued: {len(self.reissued)} repairs written as new promises")
        return "\n".join(lines)
