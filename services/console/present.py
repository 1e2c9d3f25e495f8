"""How the desk writes the audit's account on a page: times, who acted, a seat's kind,
a trace id's link. Words only; what happened is ``ddz.audit``'s (the same account as
``ddz audit``)."""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

from ddz.audit import HandAt
from ddz.audit.timeline import Entry

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


def who(entry: Entry) -> str:
    """Who acted: on a move, the person or the bot (for whom, and why); else the service
    that recorded the event."""
    actor = entry.actor
    if actor is None:
        return entry.producer or "?"
    name = f"{actor.player} (seat {actor.seat})" if actor.player else f"seat {actor.seat}"
    if not actor.bot:
        return name
    return f"{actor.mark} (seat {actor.seat})"


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
