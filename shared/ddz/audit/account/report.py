"""What an audit says: the checks in order, the verdict, and the hand as recorded.

``AuditReport`` is a value: ``audit_hand`` builds it; the CLI, the AuditService and the
tests read it. It is the audited hand (``ddz.audit.checks.results.AuditedHand``: the
checks, the verdict, the decoded events) with its account: the timeline and transcript
(``transcript``) and ``state_at`` (``snapshot``), computed on demand from the decoded
events it keeps (``ddz audit --all`` needs neither). Those modules read the audited hand,
not this report, so the imports point one way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ddz.audit.account.sight import EVERY_SEAT, Sight
from ddz.audit.account.snapshot import HandAt, hand_at
from ddz.audit.account.timeline import Timeline
from ddz.audit.account.transcript import timeline
from ddz.audit.checks.results import AuditedHand


@dataclass(frozen=True)
class AuditReport(AuditedHand):
    """The audit of one hand's stream and its account."""

    _cache: dict[object, Any] = field(default_factory=dict, compare=False, repr=False)

    def timeline(self, sight: Sight | None = None) -> Timeline:
        """The account of the hand as data (``ddz.audit.account.timeline.Timeline``): each
        event with its time, who acted, the arithmetic of the settlement, the checks; the
        cards ``sight`` sees (``ddz.audit.account.sight``; every seat's by default)."""
        sight = EVERY_SEAT if sight is None else sight
        key = ("timeline", sight)
        if key not in self._cache:
            self._cache[key] = timeline(self, sight)
        found: Timeline = self._cache[key]
        return found

    def transcript(self) -> list[str]:
        """The readable account of the hand: the text of ``timeline()``."""
        if "transcript" not in self._cache:
            self._cache["transcript"] = self.timeline().lines()
        lines: list[str] = self._cache["transcript"]
        return lines

    def state_at(self, version: int, sight: Sight | None = None) -> HandAt:
        """The table as it stood after event ``version`` (``ddz.audit.account.snapshot``),
        with the cards ``sight`` sees (every seat's by default)."""
        return hand_at(self, version, EVERY_SEAT if sight is None else sight)

    def to_json(self, *, with_transcript: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "hand_id": self.hand_id,
            "stream_id": self.stream_id,
            "events": self.event_count,
            "verdict": self.verdict.value,
            "failed_check": self.failed_check,
            "message": self.message,
            "checks": [check.to_json() for check in self.checks],
        }
        if with_transcript:
            out["transcript"] = self.transcript()
            out["timeline"] = self.timeline().to_json()
        return out
