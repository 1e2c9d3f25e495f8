"""A hand's page, as data: its seats, its timeline (each event with its UTC time, the
time since the deal, who acted and what, the multiplier so far), the table after event
N, and the result's arithmetic, seen by every seat or by one.

Events are decoded and described by the audit's own code (``ddz.audit.describe``, the
fold of ``ddz.domain.hand``), so the page and ``ddz audit``'s transcript say the same.
Who acted is one mapping, ``ACTORS`` (event type -> who), which new event types extend.

What a page never shows: the cards of a hand that has not ended (a live hand shows the
public events and the number of cards each seat holds), and, in one seat's view, the
cards of any other seat until the hand's end shows them to all.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ddz.adapters import codec
from ddz.adapters.codec import CodecError
from ddz.audit import describe
from ddz.audit.marks import WHY_BY
from ddz.domain.hand import CommandRejected, HandState, Recorded, evolve
from ddz.domain.hand.events import (
    CardsDealt,
    HandEnded,
    HandSettled,
    HandStarted,
    MoveBy,
    PlayerDisconnected,
)
from ddz.domain.hand.state import NO_ONE
from ddz.v1 import envelope_pb2

HIDDEN = "hidden"


@dataclass(frozen=True, slots=True)
class Decoded:
    version: int
    event: Recorded | None  # None: this build cannot read it (the audit says why)
    envelope: envelope_pb2.EventEnvelope

    @property
    def at(self) -> dt.datetime | None:
        if not self.envelope.HasField("occurred_at"):
            return None
        when: dt.datetime = self.envelope.occurred_at.ToDatetime(tzinfo=dt.UTC)
        return when


@dataclass(frozen=True, slots=True)
class Row:
    version: int
    type: str
    at: str  # UTC, "2026-12-04 18:03:07.412"
    since_deal: str  # "+12.4 s"
    actor: str
    text: str
    multiplier: int | None  # after this event
    refused: bool = False


@dataclass(frozen=True, slots=True)
class SeatAt:
    seat: int
    player: str
    kind: str  # "person" | "bot seat" | "bot for the person (disconnected)"
    role: str  # landlord | farmer | ""
    cards: str  # card notation, or HIDDEN
    count: int
    on_turn: bool


@dataclass
class HandPage:
    hand_id: str
    ended: bool
    view: int | None  # None: every seat
    at: int  # the table is shown after this event
    last: int  # the last event's version
    variant: str = ""
    room: str = ""
    players: tuple[str, ...] = ()
    bots: tuple[bool, ...] = ()
    rows: list[Row] = field(default_factory=list)
    seats: list[SeatAt] = field(default_factory=list)
    at_text: str = ""
    to_beat: str = ""
    multiplier: str = ""
    result: list[str] = field(default_factory=list)
    started: str = ""


def decode(stored: Sequence[envelope_pb2.StoredEvent]) -> list[Decoded]:
    out = []
    for version, item in enumerate(stored, start=1):
        envelope = envelope_pb2.EventEnvelope.FromString(item.envelope)
        try:
            event: Recorded | None = codec.decode_event(
                envelope.type, envelope.type_version, envelope.payload
            )
        except CodecError:
            event = None
        out.append(Decoded(envelope.stream_version or version, event, envelope))
    return out


# -- who acted -------------------------------------------------------------------------------

Actor = Callable[["_Seats", Recorded, HandState], str]


@dataclass(frozen=True)
class _Seats:
    players: tuple[str, ...]
    bots: tuple[bool, ...]

    def who(self, seat: int, state: HandState, by: MoveBy | None = None) -> str:
        name = self.players[seat] if 0 <= seat < len(self.players) else f"seat {seat}"
        if by is not None and by.for_person:  # the move says who made it, and why
            return f"the bot for {name} (seat {seat}, {WHY_BY[by]})"
        if 0 <= seat < len(self.bots) and self.bots[seat]:
            return f"bot seat {seat}"
        if seat in state.disconnected:
            return f"the bot for {name} (seat {seat}, disconnected)"
        return f"{name} (seat {seat})"


def _seat_actor(seats: _Seats, event: Recorded, state: HandState) -> str:
    return seats.who(getattr(event, "seat", NO_ONE), state, getattr(event, "acted_by", None))


def _service(name: str) -> Actor:
    return lambda seats, event, state: name


ACTORS: Mapping[str, Actor] = MappingProxyType({
    "hand_started": _service("dealer"),
    "cards_dealt": _service("dealer"),
    "wildcard_drawn": _service("dealer"),
    "redealt": _service("rules"),
    "cards_shown": _seat_actor,
    "bid_made": _seat_actor,
    "landlord_chosen": _service("rules"),
    "play_made": _seat_actor,
    "passed": _seat_actor,
    "player_disconnected": _service("table (the connection, or leaving)"),
    "turn_timed_out": _service("table (the turn clock)"),
    "auto_play_started": _service("table (the turn clock)"),
    "auto_play_ended": _seat_actor,
    "player_reconnected": _seat_actor,
    "player_escaped": _seat_actor,
    "hand_ended": _service("rules"),
    "hand_settled": _service("rules"),
    "seed_revealed": _service("rules"),
    "command_rejected": _seat_actor,
})  # fmt: skip
"""Who acted, by event type; an event type not listed is credited to its producer."""


def _actor(seats: _Seats, item: Decoded, state: HandState) -> str:
    assert item.event is not None
    found = ACTORS.get(item.event.TYPE)
    if found is None:
        return item.envelope.producer.split("@", 1)[0] or "?"
    return found(seats, item.event, state)


# -- the page ---------------------------------------------------------------------------------


def build(
    hand_id: str, decoded: Sequence[Decoded], *, at: int | None, view: int | None
) -> HandPage:
    """The page of a hand after event ``at`` (None: the last), seen by ``view``."""
    last = decoded[-1].version if decoded else 0
    ended = any(isinstance(d.event, HandEnded) for d in decoded)
    at = last if at is None else max(1, min(at, last))
    page = HandPage(hand_id, ended, view, at, last)
    started = next((d.event for d in decoded if isinstance(d.event, HandStarted)), None)
    if started is not None:
        page.variant = started.rules.name
        page.players = tuple(s.player_id for s in started.seats)
        page.bots = tuple(s.is_bot for s in started.seats)
        page.room = _room(started)
    seats = _Seats(page.players, page.bots)
    dealt = next((d.at for d in decoded if isinstance(d.event, CardsDealt)), None)
    origin = dealt or (decoded[0].at if decoded else None)
    if origin is not None:
        page.started = _when(origin)
    state = HandState()
    shown: HandState | None = None
    for item in decoded:
        event = item.event
        if event is None:
            page.rows.append(Row(item.version, item.envelope.type, _when(item.at),
                                 _since(item.at, origin), "?", "cannot be read by this build",
                                 None))  # fmt: skip
            continue
        actor = _actor(seats, item, state)
        text = _text(event, state, page)
        refused = isinstance(event, CommandRejected)
        if not isinstance(event, CommandRejected):
            try:
                state = evolve(state, event)
            except Exception:  # a record that fails its audit may not fold
                text += " (the hand cannot be followed past this event)"
        multiplier = None if state.seats == () else state.multiplier.total
        page.rows.append(Row(item.version, event.TYPE, _when(item.at), _since(item.at, origin),
                             actor, text, multiplier, refused))  # fmt: skip
        if item.version == at:
            shown = state
            page.at_text = text
        if isinstance(event, HandSettled):
            page.result = _result(event, page.players)
    if shown is not None:
        _table(page, shown, seats)
    return page


def _text(event: Recorded, state: HandState, page: HandPage) -> str:
    if isinstance(event, CardsDealt):
        return _deal(event, page)
    if isinstance(event, CommandRejected):
        return (f"REFUSED: {describe.command(event.command)} — {event.reason.value}: "
                f"{event.message}")  # fmt: skip
    if isinstance(event, PlayerDisconnected):
        return f"{describe.event(event, state)}: the bot plays for them from here"
    return describe.recorded(event, state)


def _deal(event: CardsDealt, page: HandPage) -> str:
    head = f"the deal of round {event.round} (seat {event.first_bidder} bids first)"
    if not page.ended:
        return f"{head}; cards hidden while the hand is in play"
    if page.view is not None:
        mine = describe.ranks(event.hands[page.view]) if page.view < len(event.hands) else ""
        return f"{head}; seat {page.view} holds {mine}"
    hands = " · ".join(f"seat {s}: {describe.ranks(h)}" for s, h in enumerate(event.hands))
    return f"{head}; {hands}; bottom {describe.ranks(event.bottom)}"


def _table(page: HandPage, state: HandState, seats: _Seats) -> None:
    page.multiplier = describe.breakdown(state.multiplier) if state.seats else ""
    trick = state.trick
    if trick is not None:
        page.to_beat = (f"seat {trick.seat}'s {describe.ranks(trick.cards)} as "
                        f"{describe.reading(trick.reading)}")  # fmt: skip
    for seat, name in enumerate(page.players):
        cards = state.cards[seat] if seat < len(state.cards) else ()
        visible = page.ended and (page.view is None or page.view == seat)
        role = ""
        if state.landlord is not None:
            role = "landlord" if seat == state.landlord else "farmer"
        kind = "bot seat" if page.bots[seat] else "person"
        if not page.bots[seat] and seat in state.disconnected:
            kind = "person; the bot plays for them (disconnected)"
        page.seats.append(SeatAt(
            seat, name, kind, role, describe.ranks(cards) if visible else HIDDEN, len(cards),
            state.turn == seat,
        ))  # fmt: skip


def _result(settled: HandSettled, players: Sequence[str]) -> list[str]:
    """The arithmetic from base to the ledger's figures."""
    m = settled.multiplier
    factors = " × ".join(f"{f.reason} {f.factor}" for f in m.factors) or "1"
    lines = [
        f"landlord seat {settled.landlord} at base {settled.base}",
        f"multiplier: {factors} = ×{m.total}",
        f"ledger multiplier ×{settled.ledger.multiplier}, system take {settled.ledger.system}",
    ]
    lines += [describe.ledger_line(line, players) for line in settled.ledger.lines]
    deltas = ", ".join(
        f"{players[s] if s < len(players) else f'seat {s}'} {d:+d}"
        for s, d in enumerate(settled.ledger.deltas)
    )
    lines.append(f"deltas: {deltas}")
    return lines


def _room(started: HandStarted) -> str:
    room, rules = started.room, started.rules
    parts = [
        f"{rules.name}",
        f"{rules.scoring.value} scoring",
        f"initial ×{room.initial_multiplier}",
    ]
    if rules.scoring.value == "beans":
        parts.append(f"coefficient {room.coefficient}, fee {room.fee}")
        if rules.wildcard_count:
            parts.append(f"wildcard coefficient {room.wildcard_coefficient}, cap {room.hand_cap}")
    else:
        parts.append(f"rake {room.rake}")
        parts.append("no cap" if room.cap is None else f"cap {room.cap}")
    if started.balances is not None:
        parts.append(f"balances at start {'/'.join(map(str, started.balances))}")
    return ", ".join(parts)


def _when(at: dt.datetime | None) -> str:
    return "" if at is None else at.strftime("%Y-%m-%d %H:%M:%S.") + f"{at.microsecond // 1000:03d}"


def _since(at: dt.datetime | None, origin: dt.datetime | None) -> str:
    if at is None or origin is None:
        return ""
    seconds = round((at - origin).total_seconds(), 1)
    return f"{seconds + 0.0:+.1f} s"  # + 0.0: never "-0.0"
