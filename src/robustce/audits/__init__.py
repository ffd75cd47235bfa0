"""Portfolio recourse audits: ``audit`` (see :mod:`.audit`), per-applicant recourse
(:mod:`.recourse`), group metrics with bootstrap CIs (:mod:`.groups`), global actions
(:mod:`.global_actions`), partitioned execution on joblib or Dask (:mod:`.partitions`,
:mod:`.execute`) and the report (:mod:`.report`). See ``docs/audit.md``."""

from robustce.audits.audit import AuditResult, audit
from robustce.audits.execute import connect
from robustce.audits.global_actions import Action, apply_action, global_actions
from robustce.audits.groups import METRICS, GroupAccumulator

__all__ = ["METRICS", "Action", "AuditResult", "GroupAccumulator", "apply_action", "audit",
           "connect", "global_actions"]
