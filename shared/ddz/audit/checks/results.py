"""The checks an audit runs, by name and in order, what each found (``CheckResult``),
the verdict they add up to, the stored events they read, decoded (``AuditedEvent``), and
the audited hand they make together (``AuditedHand``).

Values only: the report (``ddz.audit.account.report``), its account (``timeline``,
``transcript``, ``snapshot``) and every check import them from here, below all of them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from ddz.domain.hand import Recorded
from ddz.v1 import envelope_pb2

HASH_CHAIN = "hash_chain"
PRODUCER_SIGNATURE = "producer_signature"
SIGNATURE = "signature"
INCOMPLETE = "incomplete"
ENGINE_VERSION = "engine_version"
COMMITMENT = "commitment"
DEAL = "deal"
DECISIONS = "decisions"
MULTIPLIER = "multiplier"
SETTLEMENT = "settlement"

CHECKS: tuple[str, ...] = (
    HASH_CHAIN,
    PRODUCER_SIGNATURE,
    SIGNATURE,
    ENGINE_VERSION,
    COMMITMENT,
    DEAL,
    DECISIONS,
    MULTIPLIER,
    SETTLEMENT,
)
"""The checks of a finished hand, in the order they run (docs/AUDIT.md). ``incomplete``
is not a check of its own: it is what stops the audit of a hand that has not ended
(after the hash chain and any signature, which a hand in play can already be held to)."""

FAILURE_NAMES: tuple[str, ...] = (*CHECKS[:3], INCOMPLETE, *CHECKS[3:])
"""Every name ``failed_check`` can take, in audit order."""


class Verdict(StrEnum):
    CLEAN = "clean"  # every check holds
    FAILED = "failed"  # a check failed: ``failed_check`` names the first
    INCOMPLETE = "incomplete"  # the hand has not ended (no seed revealed yet)


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    passed: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


class AuditedEvent(NamedTuple):
    """One stored event, decoded: its stream version, the event (or rejection) and the
    envelope it came in (producer, wall-clock time: shown, never used by a check).
    A named tuple: one is made for every event of every audited hand."""

    version: int
    event_id: str
    event: Recorded
    envelope: envelope_pb2.EventEnvelope

    @property
    def type(self) -> str:
        return self.event.TYPE

    @property
    def producer(self) -> str:
        return self.envelope.producer

    @property
    def occurred_at(self) -> dt.datetime | None:
        if not self.envelope.HasField("occurred_at"):
            return None
        when: dt.datetime = self.envelope.occurred_at.ToDatetime(tzinfo=dt.UTC)
        return when


@dataclass(frozen=True)
class AuditedHand:
    """One hand's stream as audited: every check that ran, in order, ending at the first
    failure (or at ``incomplete``), and the events they decoded. What the account of the
    hand is written from (``ddz.audit.account``); ``AuditReport`` adds that account."""

    stream_id: str
    event_count: int
    checks: tuple[CheckResult, ...]
    events: tuple[AuditedEvent, ...] = ()  # decoded; shorter when decoding failed
    key_id: str = ""
    # The stored events as audited (``StoredRow``s; ``trace_id`` read from them where the
    # store keeps it): what the transcript shows beside the checks' findings.
    rows: Sequence[Any] = field(default=(), compare=False, repr=False)

    def trace_ids(self) -> dict[int, str]:
        """The trace id each traced event arrived in, by stream version."""
        found: dict[int, str] = {}
        for row in self.rows:
            trace_id = getattr(row, "trace_id", None)
            if trace_id:
                found[row.stream_version] = trace_id
        return found

    @property
    def hand_id(self) -> str:
        return self.stream_id.removeprefix("hand-")

    @property
    def failure(self) -> CheckResult | None:
        return next((check for check in self.checks if not check.passed), None)

    @property
    def failed_check(self) -> str | None:
        failure = self.failure
        return None if failure is None else failure.name

    @property
    def verdict(self) -> Verdict:
        failed = self.failed_check
        if failed is None:
            return Verdict.CLEAN
        return Verdict.INCOMPLETE if failed == INCOMPLETE else Verdict.FAILED

    @property
    def clean(self) -> bool:
        return self.verdict is Verdict.CLEAN

    @property
    def producer_keys(self) -> tuple[tuple[str, str], ...]:
        """The (producer, key id) pairs the decoded events name as their signers (what
        the ``producer_signature`` check verified), sorted."""
        return tuple(sorted({
            (a.producer.split("@", 1)[0], a.envelope.producer_key_id) for a in self.events
        }))  # fmt: skip

    @property
    def message(self) -> str:
        """One line: what held, or the first check that failed and why."""
        failure = self.failure
        if failure is None:
            return f"clean: {', '.join(c.name for c in self.checks)} all hold"
        if failure.name == INCOMPLETE:
            return f"incomplete: {failure.detail}"
        return f"{failure.name} check failed: {failure.detail}"
