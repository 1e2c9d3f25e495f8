"""The audited hand as data: a ``Timeline`` of entries (one per stored event: its time,
the time since the deal, who acted and for whom, the service that recorded it, the
multiplier so far, the trace id of the command, the text), the settlement's arithmetic
and the checks. ``ddz audit`` prints ``Timeline.lines()``; the desk (services/console)
renders the same ``Timeline``: one account of the hand for both
(``ddz.audit.account.transcript`` builds it, for a ``ddz.audit.account.sight.Sight``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from ddz.audit.account.arithmetic import Arithmetic
from ddz.audit.account.marks import Actor
from ddz.audit.account.sight import EVERY_SEAT, Sight
from ddz.audit.checks.results import CheckResult

INDENT = "      "


def clock(at: dt.datetime | None) -> str:
    """``16:45:12.345`` UTC; ``--:--:--.---`` for an event recorded without a time."""
    if at is None:
        return "--:--:--.---"
    return at.astimezone(dt.UTC).strftime("%H:%M:%S.") + f"{at.microsecond // 1000:03d}"


def elapsed(seconds: float | None) -> str:
    """``+3.2s``, ``+1m05.0s``, ``+1h02m03s`` (``-0.0s`` before the deal); blank when
    a time is missing."""
    if seconds is None:
        return ""
    sign = "-" if seconds < 0 else "+"
    left = abs(seconds)
    if left < 60:
        return f"{sign}{left:.1f}s"
    minutes, secs = divmod(left, 60)
    if minutes < 60:
        return f"{sign}{int(minutes)}m{secs:04.1f}s"
    hours, minutes = divmod(int(minutes), 60)
    return f"{sign}{hours}h{minutes:02d}m{int(secs):02d}s"


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored event in the account."""

    version: int
    type: str
    text: str
    details: tuple[str, ...] = ()
    at: dt.datetime | None = None
    since_deal: float | None = None  # seconds after the first deal round's event (< 0 before)
    actor: Actor | None = None  # set on moves: who made it (the person or a bot, and why)
    refused: bool = False
    multiplier: int | None = None  # the hand's multiplier after this event (None: no hand yet)
    producer: str = ""  # the service that recorded it (the envelope's producer, its name)
    # The trace the event arrived in (``StoredEvent.trace_id``): what support quotes to
    # find the move's spans in the tracing backend. None when it was sent untraced.
    trace_id: str | None = None

    def lines(self) -> list[str]:
        mark = self.actor.mark if self.actor is not None else ""
        text = f"{self.text} [{mark}]" if mark else self.text
        head = f"#{self.version:<4d}{clock(self.at)} {elapsed(self.since_deal):>9}  {text}"
        details = [*self.details, f"trace {self.trace_id}"] if self.trace_id else self.details
        return [head, *(f"{INDENT}{line}" for line in details)]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "type": self.type,
            "text": self.text,
            "details": list(self.details),
            "at": None if self.at is None else self.at.isoformat(),
            "since_deal": self.since_deal,
            "actor": None if self.actor is None else self.actor.to_json(),
            "refused": self.refused,
            "multiplier": self.multiplier,
            "producer": self.producer,
            "trace_id": self.trace_id,
        }


@dataclass(frozen=True)
class Timeline:
    hand_id: str
    stream_id: str
    event_count: int
    dealt_at: dt.datetime | None
    warning: str | None  # the record fails an integrity check: read it with care
    entries: tuple[Entry, ...]
    arithmetic: Arithmetic | None
    verdict: str
    checks: tuple[CheckResult, ...]
    message: str = ""  # the verdict in one line (``AuditReport.message``)
    players: tuple[str, ...] = ()  # by seat
    bots: tuple[bool, ...] = ()  # by seat: a bot's seat from the start
    variant: str = ""
    room: str = ""  # the room's figures, in words
    ended: bool = False  # the hand is over (else in play: ``sight`` may hide every card)
    sight: Sight = EVERY_SEAT  # whose cards the entries show

    def header(self) -> list[str]:
        lines = [f"Hand {self.hand_id} — stream {self.stream_id}, {self.event_count} events"]
        if self.dealt_at is not None:
            when = self.dealt_at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
            lines.append(f"dealt {when} UTC; each event: its UTC time, the time since the deal")
        if self.warning:
            lines.append(self.warning)
        return lines

    def lines(self) -> list[str]:
        """The terminal transcript (``ddz audit HAND``)."""
        lines = self.header()
        for entry in self.entries:
            lines += entry.lines()
        lines.append(f"Verdict: {self.verdict.upper()}")
        for check in self.checks:
            mark = "✓" if check.passed else "✗"
            lines.append(f"  {mark} {check.name}: {check.detail}")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "hand_id": self.hand_id,
            "stream_id": self.stream_id,
            "events": self.event_count,
            "dealt_at": None if self.dealt_at is None else self.dealt_at.isoformat(),
            "warning": self.warning,
            "entries": [entry.to_json() for entry in self.entries],
            "arithmetic": None if self.arithmetic is None else self.arithmetic.to_json(),
            "verdict": self.verdict,
            "checks": [check.to_json() for check in self.checks],
            "message": self.message,
            "players": list(self.players),
            "bots": list(self.bots),
            "variant": self.variant,
            "room": self.room,
            "ended": self.ended,
            "view": self.sight.seat,
        }
