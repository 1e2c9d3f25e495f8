"""``state_at(N)``: the table as it stood after event N, the question a dispute asks.

Each seat's cards, the play to beat, whose turn, the multiplier so far. Built by
folding the hand's recorded events up to version N (refusals change nothing, so they
are skipped), exactly as the live hand was built. A ``Sight`` (``ddz.audit.account.sight``)
says whose cards it shows (``HIDDEN`` for the others): ``ddz audit --at N`` shows every
seat's, the desk's step-through the same or one seat's, and none of a hand in play.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ddz.audit.account.sight import EVERY_SEAT, Sight
from ddz.audit.checks import describe
from ddz.audit.checks.results import AuditedHand
from ddz.domain.cards import Card
from ddz.domain.hand import CommandRejected, HandState, Phase, evolve
from ddz.domain.hand.events import HandEnded, PlayMade
from ddz.domain.hand.state import NO_ONE
from ddz.domain.multipliers import MultiplierBreakdown

HIDDEN = "hidden"


class NoSuchEvent(LookupError):
    """``--at N`` for an event the hand does not have (or that could not be read)."""


@dataclass(frozen=True)
class HandAt:
    version: int  # the event the table is shown after
    event: str  # that event, in words
    state: HandState
    players: tuple[str, ...]
    sight: Sight = EVERY_SEAT
    ended: bool = True  # the hand has ended (by its last event, not by event N)

    @property
    def to_beat(self) -> PlayMade | None:
        return self.state.trick

    @property
    def turn(self) -> int | None:
        return None if self.state.turn == NO_ONE else self.state.turn

    @property
    def multiplier(self) -> MultiplierBreakdown:
        return self.state.multiplier

    @property
    def multiplier_text(self) -> str:
        """``×4 = initial ×1 · bomb ×2 · ...``: the multiplier so far, factor by factor."""
        return describe.breakdown(self.state.multiplier)

    @property
    def to_beat_text(self) -> str:
        """The play to beat, ``3334 as triple_single ...`` (blank when none)."""
        trick = self.state.trick
        return (
            ""
            if trick is None
            else f"{describe.ranks(trick.cards)} as {describe.reading(trick.reading)}"
        )

    def hand(self, seat: int) -> tuple[Card, ...]:
        return self.state.cards[seat]

    def shows(self, seat: int) -> bool:
        """Whether this view shows the cards ``seat`` holds."""
        return self.sight.shows(seat, self.ended)

    def cards(self, seat: int) -> str:
        """The seat's cards in notation, or ``HIDDEN``."""
        return describe.ranks(self.hand(seat)) if self.shows(seat) else HIDDEN

    @property
    def bots(self) -> tuple[bool, ...]:
        """By seat: a bot's seat from the start."""
        return tuple(seat.is_bot for seat in self.state.seats) or (False, False, False)

    def role(self, seat: int) -> str:
        if self.state.landlord is None:
            return ""
        return "landlord" if seat == self.state.landlord else "farmer"

    def lines(self) -> list[str]:
        state = self.state
        out = [f"After event #{self.version}: {self.event}"]
        header = f"phase {state.phase.value}"
        if state.phase is not Phase.NOT_STARTED:
            header += f", deal round {state.round}"
        if state.landlord is not None:
            header += f", landlord seat {state.landlord} at base {state.base}"
        if state.wild:
            header += f", wildcards {' '.join(r.symbol for r in state.wild)}"
        out.append(header)
        for seat, name in enumerate(self.players):
            role = self.role(seat)
            flags = [role] if role else []
            if seat in state.disconnected:
                flags.append("disconnected, bot plays")
            if state.bomb_limits[seat] is not None:
                flags.append(f"bombs {state.bombs_made[seat]}/{state.bomb_limits[seat]}")
            tag = f" ({', '.join(flags)})" if flags else ""
            cards = self.hand(seat)
            out.append(f"  seat {seat} {name}{tag}: {len(cards):2d} cards  {self.cards(seat)}")
        trick = state.trick
        if state.phase is Phase.PLAYING:
            if trick is None:
                out.append("  to beat: nothing — the player on turn leads")
            else:
                out.append(
                    f"  to beat: seat {trick.seat}'s {self.to_beat_text}; passes since: "
                    f"{state.passes}"
                )
        out.append(f"  turn: {'nobody' if self.turn is None else f'seat {self.turn}'}")
        out.append(f"  multiplier so far: {self.multiplier_text}")
        return out

    def to_json(self) -> dict[str, Any]:
        state = self.state
        trick = state.trick
        return {
            "event": self.version,
            "event_text": self.event,
            "phase": state.phase.value,
            "round": state.round,
            "turn": self.turn,
            "landlord": state.landlord,
            "base": state.base,
            "wild": [r.symbol for r in state.wild],
            "seats": [
                {
                    "seat": seat,
                    "player_id": name,
                    "role": self.role(seat) or None,
                    "cards": self.cards(seat).replace(describe.NOTHING, ""),
                    "physical": [str(card) for card in self.hand(seat)] if self.shows(seat) else [],
                    "count": len(self.hand(seat)),
                    "disconnected": seat in state.disconnected,
                    "bombs_made": state.bombs_made[seat],
                    "bomb_limit": state.bomb_limits[seat],
                }
                for seat, name in enumerate(self.players)
            ],
            "to_beat": None
            if trick is None
            else {
                "seat": trick.seat,
                "cards": describe.ranks(trick.cards),
                "reading": trick.reading.to_json(),
            },
            "passes": state.passes,
            "multiplier": state.multiplier.to_json(),
        }


def hand_at(report: AuditedHand, version: int, sight: Sight = EVERY_SEAT) -> HandAt:
    """The table after event ``version`` of the report's hand, as ``sight`` sees it."""
    events = report.events
    if not 1 <= version <= report.event_count:
        raise NoSuchEvent(
            f"hand {report.hand_id} has events #1..#{report.event_count}, not #{version}"
        )
    if version > len(events):
        raise NoSuchEvent(
            f"event #{version} of hand {report.hand_id} cannot be read "
            f"(only #1..#{len(events)} decode)"
        )
    state = HandState()
    for audited in events[:version]:
        if isinstance(audited.event, CommandRejected):
            continue
        try:
            state = evolve(state, audited.event)
        except Exception as exc:  # a record that failed its audit may not even fold
            raise NoSuchEvent(
                f"the table cannot be rebuilt at event #{audited.version}: {exc}"
            ) from None
    last = events[version - 1].event
    players = tuple(seat.player_id for seat in state.seats) or ("", "", "")
    ended = any(isinstance(a.event, HandEnded) for a in events)
    seen = not isinstance(last, CommandRejected) or sight.shows(last.seat, ended)
    text = describe.recorded(last, state, cards=seen)
    return HandAt(version, text, state, players, sight, ended)
