"""Audit and dispute resolution: check a hand's stored events and replay them.

    report = audit_hand(store.read_stream("hand-42"), key, store.read_signatures("hand-42"))
    report.verdict, report.failed_check, report.transcript(), report.state_at(17)

Its packages, each importing only those below it (an import-linter contract):

- ``evidence``: the evidence file and the keys a record is checked against;
- ``store``: hands read from an event store (one, or all), the balances rebuilt from
  its settled hands, and sample hands written into one as the services write them;
- ``run``: ``audit_hand``, the checks in order and their report;
- ``account``: the report and its account for people (timeline, transcript, the table
  after event N, the settlement's arithmetic);
- ``checks``: the checks themselves (pure) and the values they find.

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
