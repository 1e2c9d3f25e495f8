"""The checks an audit runs, by name and in order, what each found (``CheckResult``),
the verdict they add up to, and the stored events they read, decoded (``AuditedEvent``).

Values only: the report (``ddz.audit.account.report``), its account (``timeline``,
``transcript``) and every check import them from here, below all of them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
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
