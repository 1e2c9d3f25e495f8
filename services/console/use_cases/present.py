"""How the desk writes the audit's account on a page: times, who acted, a seat's kind,
a trace id's link. Words only; what happened is ``ddz.audit``'s (the same account as
``ddz audit``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from ddz.audit.account.marks import BOT_SEAT
from ddz.audit.account.snapshot import HandAt
from ddz.audit.account.timeline import Entry

TRACE_ID = "{trace_id}"


def when(at: dt.datetime | None) -> str:
    """``2026-12-04 18:03:07.412`` UTC; blank for an event recorded without a time."""
    if at is None:
        return ""
    at = at.astimezone(dt.UTC)
    return at.strftime("%Y-%m-%d %H:%M:%S.") + f"{at.microsecond // 1000:03d}"


def since(seconds: float | None) -> str:
    """``+12.4 s`` after the deal (``-0.3 s`` before it)."""
    if seconds is None:
        return ""
    return f"{round(seconds, 1) + 0.0:+.1f} s"  # + 0.0: never "-0.0"


@dataclass(frozen=True, slots=True)
class Who:
    """Who acted, short enough for the timeline's column (``name``), and why a bot moved
    for a person (``why``, a line of its own under it)."""

    name: str
    why: str = ""


def who(entry: Entry) -> Who:
    """Who acted: on a move, the person or the bot (for whom, and why); else the service
    that recorded the event."""
    actor = entry.actor
    if actor is None:
        return Who(entry.producer or "?")
    seat = f"seat {actor.seat}"
    if not actor.bot:
        return Who(f"{actor.player} ({seat})" if actor.player else seat)
    if actor.why == BOT_SEAT:
        return Who(f"bot seat {actor.seat}")
    since = f" at #{actor.since}" if actor.since is not None else ""
    return Who(f"bot for {actor.player}", f"{seat} · {actor.why}{since}")


@dataclass(frozen=True, slots=True)
class Section:
    """A part of the result's working: its heading and its lines."""

    heading: str
    lines: list[str] = field(default_factory=list)


def sections(details: Sequence[str]) -> list[Section]:
    """The settlement's working (``multiplier:``, ``ledger:``, ``arithmetic:``, each
    followed by its lines) as headed sections, as a bill is read; lines before the first
    heading make a section without one."""
    out: list[Section] = []
    for raw in details:
        line = raw.strip()
        if not line:
            continue
        if line.endswith(":") and raw == raw.lstrip():
            out.append(Section(line[:-1].capitalize()))
        else:
            if not out:
                out.append(Section(""))
            out[-1].lines.append(line)
    return out


def seat_kind(table: HandAt, seat: int) -> str:
    """``person``, ``bot seat`` or the person's seat played by the bot, at that event."""
    if seat < len(table.bots) and table.bots[seat]:
        return "bot seat"
    if seat in table.state.disconnected:
        return "person; the bot plays for them (disconnected)"
    return "person"


def trace_link(trace_id: str, template: str) -> str:
    """Where the operator's tracing shows ``trace_id`` (``DDZ_TRACE_URL``); blank when no
    template is set."""
    if not template:
        return ""
    return template.replace(TRACE_ID, quote(trace_id, safe=""))
