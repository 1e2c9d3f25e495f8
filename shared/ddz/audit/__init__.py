"""Audit and dispute resolution: check a hand's stored events and replay them.

    report = audit_hand(store.read_stream("hand-42"), key, store.read_signatures("hand-42"))
    report.verdict, report.failed_check, report.transcript(), report.state_at(17)

``checks`` holds the checks (pure); ``source`` reads hands from a ``EventStore`` (the only
I/O); ``rebuild`` rebuilds the settlement projection from ``HandSettled`` events.
What each check proves: docs/AUDIT.md.
"""

from ddz.audit.account.report import AuditReport
from ddz.audit.account.snapshot import HandAt, NoSuchEvent
from ddz.audit.checks.results import (
    CHECKS,
    FAILURE_NAMES,
    INCOMPLETE,
    AuditedEvent,
    CheckResult,
    Verdict,
)
from ddz.audit.run import REPLAYABLE_ENGINE_VERSIONS, audit_hand, audited_report

__all__ = [
    "CHECKS",
    "FAILURE_NAMES",
    "INCOMPLETE",
    "REPLAYABLE_ENGINE_VERSIONS",
    "AuditReport",
    "AuditedEvent",
    "CheckResult",
    "HandAt",
    "NoSuchEvent",
    "Verdict",
    "audit_hand",
    "audited_report",
]
