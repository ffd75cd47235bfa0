"""Adverse-action notices: principal reasons (:mod:`.reasons`), the notice with its recourse
options and audit record (:mod:`.notice`, :mod:`.record`), JSON and HTML (:mod:`.render`),
and a resumable batch writer (:mod:`.batch`). See ``docs/notices.md``."""

from robustce.notices.batch import write_notices
from robustce.notices.notice import NOTICE_VERSION, Notice, RecourseOption, notice
from robustce.notices.reasons import (
    MAX_REASONS,
    Reason,
    check_recourse_possible,
    feature_contributions,
    principal_reasons,
)
from robustce.notices.render import (
    notice_schema,
    to_html,
    to_json,
    to_pdf,
    validate_notice,
    write_notice,
)

__all__ = ["MAX_REASONS", "NOTICE_VERSION", "Notice", "Reason", "RecourseOption",
           "check_recourse_possible", "feature_contributions", "notice", "notice_schema",
           "principal_reasons", "to_html", "to_json", "to_pdf", "validate_notice", "write_notice",
           "write_notices"]
