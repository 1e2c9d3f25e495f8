"""The readable account of an audited hand: who held what, each bid and play with its
reading (and, for a bot's move on a person's behalf, why the bot played), every refusal
with its reason, each multiplier factor, the ledger and its arithmetic, the verdict;
every event with its UTC time and the time since the deal.

``timeline(report, sight)`` builds it as data (``ddz.audit.account.timeline.Timeline``, what the
desk renders); ``transcript(report)`` is its text, the lines ``ddz audit HAND`` prints
(plain text: the CLI colours them). ``#N`` is the event's stream version, the number
``ddz audit HAND --at N`` takes. ``sight`` (``ddz.audit.account.sight``) says whose cards it
shows: every seat's for the operator's terminal; none of a hand in play, or one seat's,
on the desk.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from ddz.audit.account.arithmetic import Arithmetic, explain
from ddz.audit.account.marks import Actor, Marker
from ddz.audit.account.sight import EVERY_SEAT, Sight
from ddz.audit.account.timeline import Entry, Timeline
from ddz.audit.checks import describe
from ddz.audit.checks.replay import settlement_outcome
from ddz.audit.checks.results import AuditedEvent, AuditedHand
from ddz.domain.hand import CommandRejected, Event, HandState, evolve
from ddz.domain.hand.events import (
    BidMade,
    CardsDealt,
    CardsShown,
    HandEnded,
    HandSettled,
    HandStarted,
    LandlordChosen,
    Passed,
    PlayerDisconnected,
    PlayerEscaped,
    PlayerReconnected,
    PlayMade,
    SeedRevealed,
)
from ddz.domain.multipliers import Factor
from ddz.domain.ruleset import Scoring

if TYPE_CHECKING:
    from collections.abc import Mapping


def _room(started: HandStarted) -> str:
    room, rules = started.room, started.rules
    parts = [f"{rules.scoring.value} scoring", f"initial ×{room.initial_multiplier}"]
    if rules.scoring is Scoring.CT_POINTS:
        parts.append(f"rake {room.rake}")
        parts.append("no cap" if room.cap is None else f"cap {room.cap}")
        parts.append(f"escape penalty {room.escape_penalty}")
    if rules.scoring is Scoring.BEANS:
        parts.append(f"coefficient {room.coefficient}, fee {room.fee}")
        if rules.wildcard_count:
            parts.append(f"wildcard coefficient {room.wildcard_coefficient}, cap {room.hand_cap}")
    if started.balances is not None:
        parts.append(f"balances at start {'/'.join(map(str, started.balances))}")
    return ", ".join(parts)


class _Entry:
    """An entry as it is written (``Entry`` once done)."""

    def __init__(self, audited: AuditedEvent, text: str, dealt: dt.datetime | None) -> None:
        self.audited = audited
        self.text = text
        self.details: list[str] = []
        self.actor: Actor | None = None
        self.dealt = dealt

        self.multiplier: int | None = None

    def done(self, traces: Mapping[int, str]) -> Entry:
        audited, at = self.audited, self.audited.occurred_at
        since = None if at is None or self.dealt is None else (at - self.dealt).total_seconds()
        return Entry(
            audited.version, audited.type, self.text, tuple(self.details), at, since,
            self.actor, isinstance(audited.event, CommandRejected), self.multiplier,
            audited.producer.split("@", 1)[0], traces.get(audited.version),
        )  # fmt: skip


class _Writer:
    def __init__(self, report: AuditedHand, sight: Sight) -> None:
        self.report = report
        self.sight = sight
        self.ended = any(isinstance(a.event, HandEnded) for a in report.events)
        self.started: HandStarted | None = None
        self.entries: list[_Entry] = []
        self.names: tuple[str, ...] = ("", "", "")
        self.hand_versions: list[int] = []  # stream version of each folded hand event
        self.marker = Marker()
        self.dealt: dt.datetime | None = None
        self.current: AuditedEvent | None = None
        self.escaped: PlayerEscaped | None = None
        self.arithmetic: Arithmetic | None = None

    def seat(self, seat: int) -> str:
        name = self.names[seat] if 0 <= seat < len(self.names) else ""
        return f"seat {seat} {name}".rstrip()

    def at(self, version: int, text: str) -> None:
        assert self.current is not None and self.current.version == version
        self.entries.append(_Entry(self.current, text, self.dealt))

    def shows(self, seat: int) -> bool:
        return self.sight.shows(seat, self.ended)

    def more(self, text: str) -> None:
        self.entries[-1].details.append(text)

    def factor(self, f: Factor) -> str:
        where = []
        if f.seat is not None:
            where.append(self.seat(f.seat))
        if f.detail:
            where.append(f.detail)
        if f.event is not None and 0 <= f.event < len(self.hand_versions):
            where.append(f"#{self.hand_versions[f.event]}")
        return f"{f.reason} ×{f.factor}" + (f" ({', '.join(where)})" if where else "")

    def write(self) -> list[Entry]:
        report = self.report
        state = HandState()
        # the first deal round's time: every event is timed from it (the start, before)
        self.dealt = next(
            (a.occurred_at for a in report.events if isinstance(a.event, CardsDealt)), None
        )
        for audited in report.events:
            event, version = audited.event, audited.version
            self.current = audited
            actor = self.marker.see(version, event)
            if isinstance(event, CommandRejected):
                self.refused(version, event)
                self.entries[-1].actor = actor
                self.entries[-1].multiplier = state.multiplier.total if state.seats else None
                continue
            self.describe(version, event, state)
            self.entries[-1].actor = actor
            try:
                state = evolve(state, event)
            except Exception:  # a record that failed its audit may not fold: stop here
                self.more("(the hand cannot be followed past this event)")
                break
            self.entries[-1].multiplier = state.multiplier.total if state.seats else None
            self.hand_versions.append(version)
            self.after(event, state)
        traces = self.report.trace_ids()
        return [entry.done(traces) for entry in self.entries]

    def refused(self, version: int, event: CommandRejected) -> None:
        if self.shows(event.seat):
            what = f"{describe.command(event.command)} — {event.reason.value}: {event.message}"
        else:  # the attempt, and the rules' words on it, may name the seat's cards
            what = f"{describe.command_unseen(event.command)} — {event.reason.value}"
        self.at(version, f"REFUSED {self.seat(event.seat)}: {what}")

    def deal(self, version: int, event: CardsDealt) -> None:
        golden = ""
        if event.golden_card is not None:  # dealt face up: every seat saw it
            golden = (
                f"golden card {event.golden_card} (position {event.golden_position}) "
                f"to seat {event.golden_receiver}"
            )
        if self.sight.shows_all(self.ended):
            self.at(version, f"deal, round {event.round} (hidden until the end):")
            for seat, cards in enumerate(event.hands):
                self.more(f"{self.seat(seat):<16} {len(cards):2d} cards  {describe.ranks(cards)}")
            self.more(f"bottom {describe.ranks(event.bottom)}{'; ' * bool(golden)}{golden}")
            self.more(f"{self.seat(event.first_bidder)} bids first")
            return
        head = f"{describe.event(event)}; "
        seen = self.sight.seat
        if seen is None or not self.shows(seen):
            self.at(version, f"{head}cards hidden while the hand is in play")
        else:
            mine = event.hands[seen] if 0 <= seen < len(event.hands) else ()
            self.at(version, f"{head}seat {seen} holds {describe.ranks(mine)}")
        for seat, cards in enumerate(event.hands):
            held = describe.ranks(cards) if self.shows(seat) else "hidden"
            self.more(f"{self.seat(seat):<16} {len(cards):2d} cards  {held}")
        self.more(f"bottom: {len(event.bottom)} cards, hidden until the landlord takes them")
        if golden:
            self.more(golden)

    def settlement(self, event: HandSettled, state: HandState) -> None:
        """The settlement's arithmetic, from the outcome the audit settles (the replayed
        hand), ending in the recorded ledger's figures."""
        try:
            self.arithmetic = explain(
                settlement_outcome(state, self.escaped), event.ledger, self.names
            )
        except Exception:  # a record that failed its audit may not settle: say so
            self.more("arithmetic: (the recorded hand does not give a settlement outcome)")
            return
        self.more("arithmetic:")
        for line in self.arithmetic.lines():
            self.more(f"  {line}")

    def describe(self, version: int, event: Event, state: HandState) -> None:
        match event:
            case HandStarted():
                self.started = event
                self.names = tuple(s.player_id for s in event.seats)
                self.marker.start(
                    self.names, frozenset(s for s, info in enumerate(event.seats) if info.is_bot)
                )
                first = (
                    "the golden card decides who bids first"
                    if event.first_bidder is None
                    else f"seat {event.first_bidder} bids first"
                )
                self.at(version, f"hand started under rule set {event.rules.name!r}: {first}")
                seats = " · ".join(
                    f"{self.seat(s)}{' (bot)' if info.is_bot else ''}"
                    for s, info in enumerate(event.seats)
                )
                self.more(f"seats: {seats}")
                self.more(f"room: {_room(event)}")
                self.more(f"commitment sha256(seed) = {event.commitment}")
                if event.client_seeds:
                    self.more(f"client seeds: {', '.join(event.client_seeds)}")
                if event.show_before_deal:
                    shown = ", ".join(self.seat(s) for s in event.show_before_deal)
                    self.more(f"playing open before the deal: {shown}")
            case CardsDealt():
                self.deal(version, event)
            case BidMade():
                text = describe.bid(event.seat, event.action, event.score, state.rules.bidding)
                self.at(version, text.replace(f"seat {event.seat}", self.seat(event.seat), 1))
            case LandlordChosen():
                limits = ""
                if any(limit is not None for limit in event.bomb_limits):
                    limits = "; bomb limits " + " / ".join(
                        "none" if limit is None else str(limit) for limit in event.bomb_limits
                    )
                self.at(
                    version,
                    f"{self.seat(event.seat)} is the landlord at base {event.base} and takes "
                    f"the bottom {describe.ranks(event.bottom)}{limits}",
                )
            case PlayMade():
                text = describe.event(event).replace(f"seat {event.seat}", self.seat(event.seat), 1)
                if event.reading.is_bomb:
                    text += " — bomb-class play"
                self.at(version, text)
            case CardsShown():
                self.at(
                    version,
                    f"{self.seat(event.seat)} shows their cards ({event.when.replace('_', ' ')}, "
                    f"×{event.factor}): {describe.ranks(event.cards)}",
                )
            case PlayerDisconnected():
                first = " (first to drop: the hand's escapee)" if event.escapee else ""
                self.at(version, f"{self.seat(event.seat)} disconnected; the bot plays{first}")
            case PlayerEscaped():
                self.escaped = event
                self.at(
                    version,
                    f"{self.seat(event.seat)} left the hand (escape); escape multiplier "
                    f"{describe.breakdown(event.escape_multiplier)}",
                )
            case HandEnded():
                if event.winner is None:
                    self.at(version, "hand over: ended by the escape")
                else:
                    out = (
                        "" if event.out_seat is None else f", {self.seat(event.out_seat)} went out"
                    )
                    flags = "; spring" * event.spring + "; anti-spring" * event.anti_spring
                    self.at(version, f"hand over: {event.winner.value} win{out}{flags}")
                left = " · ".join(
                    f"{self.seat(s)} {describe.ranks(cards)}"
                    for s, cards in enumerate(event.final_hands)
                )
                self.more(f"cards left: {left}")
            case HandSettled():
                self.at(
                    version,
                    f"settled: landlord {self.seat(event.landlord)}, base {event.base} × "
                    f"multiplier ×{event.multiplier.total} = {event.base * event.multiplier.total}",
                )
                self.more("multiplier:")
                for f in event.multiplier.factors:
                    self.more(f"  {self.factor(f)}")
                self.more("ledger:")
                for line in event.ledger.lines:
                    self.more(f"  {describe.ledger_line(line, self.names)}")
                deltas = " · ".join(
                    f"{self.seat(s)} {d:+d}" for s, d in enumerate(event.ledger.deltas)
                )
                self.more(f"deltas: {deltas} · system {event.ledger.system:+d}")
                self.settlement(event, state)
            case SeedRevealed():
                self.at(version, f"seed revealed: {event.seed}")
            case Passed() | PlayerReconnected():
                text = describe.event(event)
                self.at(version, text.replace(f"seat {event.seat}", self.seat(event.seat), 1))
            case _:
                self.at(version, describe.event(event, state))

    def after(self, event: Event, state: HandState) -> None:
        if isinstance(event, LandlordChosen):
            held = state.cards[event.seat]
            cards = f": {describe.ranks(held)}" if self.shows(event.seat) else ""
            self.more(f"{self.seat(event.seat)} now holds {len(held)} cards{cards}")
        if isinstance(event, PlayMade) and event.reading.is_bomb:
            self.more(f"multiplier now {describe.breakdown(state.multiplier)}")


def timeline(report: AuditedHand, sight: Sight = EVERY_SEAT) -> Timeline:
    """The account of the hand as data (``Timeline``), showing the cards ``sight`` sees."""
    failure = report.failure
    warning = None
    if failure is not None and failure.name in ("hash_chain", "signature", "engine_version"):
        warning = f"(the record fails the {failure.name} check: read what follows with care)"
    writer = _Writer(report, sight)
    entries = writer.write()
    started = writer.started
    return Timeline(
        report.hand_id, report.stream_id, report.event_count, writer.dealt, warning,
        tuple(entries), writer.arithmetic, report.verdict.value, report.checks,
        report.message,
        players=() if started is None else writer.names,
        bots=() if started is None else tuple(s.is_bot for s in started.seats),
        variant="" if started is None else started.rules.name,
        room="" if started is None else _room(started),
        ended=writer.ended, sight=sight,
    )  # fmt: skip


def transcript(report: AuditedHand) -> list[str]:
    """The text of ``timeline(report)``: what ``ddz audit HAND`` prints."""
    return timeline(report).lines()
