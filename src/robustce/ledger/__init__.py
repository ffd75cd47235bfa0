"""The recourse ledger: every option given to an applicant, kept append-only, and checked
against each new model version (honour rates, repairs, a deployment gate).

* :class:`Ledger` — the store (SQLite by default, PostgreSQL by URL): ``record``,
  ``record_explanations``, ``record_notice``, ``promises``, ``deciding_version``;
* :func:`check` — re-score the outstanding promises with a new model: a
  :class:`LedgerReport` (honour rates by method, certificate, group and age, with bootstrap
  intervals; the broken promises with their repairs; ``gate``);
* :func:`certificate_of` — a method's certificate as the ledger keeps it.
"""

from robustce.ledger.certificates import CERTIFICATE_KINDS, certificate_of
from robustce.ledger.check import POLICIES, check
from robustce.ledger.report import LedgerReport
from robustce.ledger.store import EVENT_STATUSES, TERMINAL, Ledger, LedgerError

__all__ = ["CERTIFICATE_KINDS", "EVENT_STATUSES", "POLICIES", "TERMINAL", "Ledger",
           "LedgerError", "LedgerReport", "certificate_of", "check"]
