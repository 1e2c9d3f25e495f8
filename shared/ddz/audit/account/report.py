"""What an audit says: the checks in order, the verdict, and the hand as recorded.

``AuditReport`` is a value: ``audit_hand`` builds it; the CLI, the AuditService and the
tests read it. The transcript and ``state_at`` are computed on demand from the decoded
events it keeps (``ddz audit --all`` needs neither).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ddz.audit.checks.results import INCOMPLETE, AuditedEvent, CheckResult, Verdict

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ddz.audit.account.sight import Sight
    from ddz.audit.account.snapshot import HandAt
    from ddz.audit.account.timeline import Timeline


@dataclass(frozen=True)
class AuditReport:
    """The audit of one hand's stream. ``checks`` holds every check that ran, in order,
    ending at the first failure (or at ``incomplete``)."""

    stream_id: str
    event_count: int
    checks: tuple[CheckResult, ...]
    events: tuple[AuditedEvent, ...] = ()  # decoded; shorter when decoding failed
    key_id: str = ""
    # The stored events as audited (``StoredRow``s; ``trace_id`` read from them where the
    # store keeps it): what the transcript shows beside the checks' findings.
    rows: Sequence[Any] = field(default=(), compare=False, repr=False)
    _cache: dict[object, Any] = field(default_factory=dict, compare=False, repr=False)

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

    def timeline(self, sight: Sight | None = None) -> Timeline:
        """The account of the hand as data (``ddz.audit.account.timeline.Timeline``): each event
        with its time, who acted, the arithmetic of the settlement, the checks; the cards
        ``sight`` sees (``ddz.audit.account.sight``; every seat's by default)."""
        from ddz.audit.account.sight import EVERY_SEAT
        from ddz.audit.account.transcript import timeline

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
        """The table as it stood after event ``version`` (``ddz.audit.account.snapshot.HandAt``),
        with the cards ``sight`` sees (every seat's by default)."""
        from ddz.audit.account.sight import EVERY_SEAT
        from ddz.audit.account.snapshot import hand_at

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
