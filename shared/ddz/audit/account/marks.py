"""Which moves a bot made for a person, and why: one table, ``BOT_MARKS``.

The record says when a bot takes a seat over and when it hands it back; every move of
the seat in between is the bot's, on the person's behalf. An event type that starts or
ends a takeover is one row here (a new one, e.g. a turn that timed out, adds a row):

- ``Takeover(reason, UNTIL_BACK)``: the bot plays the seat until a release;
- ``Takeover(reason, NEXT_MOVE)``: the bot makes the seat's next move only;
- ``RELEASE``: the person plays again.

Seats that are bots from the start (``SeatInfo.is_bot``) are marked as bot seats.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ddz.domain.hand import CommandRejected, Recorded
from ddz.domain.hand.events import (
    AutoPlayEnded,
    AutoPlayStarted,
    BidMade,
    MoveBy,
    Passed,
    PlayerDisconnected,
    PlayerEscaped,
    PlayerReconnected,
    PlayMade,
    TurnTimedOut,
)


class Hold(StrEnum):
    UNTIL_BACK = "until_back"
    NEXT_MOVE = "next_move"


@dataclass(frozen=True, slots=True)
class Takeover:
    """The bot takes the seat over, for ``reason`` (in the person's words: why their
    seat was played for them); ``hold`` says for how long."""

    reason: str | Callable[[Any], str]
    hold: Hold = Hold.UNTIL_BACK
    # The turn clock's takeovers: the person is still connected, so a move recorded as
    # their own (``acted_by``) is theirs, and ends the takeover.
    clock: bool = False

    def why(self, event: object) -> str:
        return self.reason(event) if callable(self.reason) else self.reason


RELEASE = None

BOT_MARKS: Mapping[str, Takeover | None] = {
    PlayerDisconnected.TYPE: Takeover("connection lost"),
    PlayerEscaped.TYPE: Takeover("left the hand"),
    PlayerReconnected.TYPE: RELEASE,
    TurnTimedOut.TYPE: Takeover("turn timed out", Hold.NEXT_MOVE, clock=True),
    AutoPlayStarted.TYPE: Takeover("auto-play", clock=True),
    AutoPlayEnded.TYPE: RELEASE,
}
"""Event type -> the takeover it starts, or ``RELEASE`` (the person is back)."""

WHY_BY: Mapping[MoveBy, str] = {
    MoveBy.BOT_TURN_TIMEOUT: "turn timed out",
    MoveBy.BOT_AUTO_PLAY: "auto-play",
    MoveBy.BOT_CONNECTION_LOST: "connection lost",
    MoveBy.BOT_LEFT: "left the hand",
}
"""Why the bot moved for a person, as a move recorded since moves say who made them
(``acted_by``) tells it; older moves are read by the takeovers of ``BOT_MARKS``."""

MOVES = frozenset({BidMade.TYPE, PlayMade.TYPE, Passed.TYPE, CommandRejected.TYPE})
"""The events that are a seat's move (a refused one too): the ones a mark goes on."""

BOT_SEAT = "bot seat"


@dataclass(frozen=True, slots=True)
class Actor:
    """Who made a move: the seat's person, or a bot (``bot``) and why (``why``)."""

    seat: int
    player: str
    bot: bool = False
    why: str = ""
    since: int | None = None  # the event that started the takeover

    @property
    def mark(self) -> str:
        """``bot for alice: connection lost at #18``; empty for the person's own move."""
        if not self.bot:
            return ""
        if self.why == BOT_SEAT:
            return "bot seat"
        since = f" at #{self.since}" if self.since is not None else ""
        return f"bot for {self.player}: {self.why}{since}"

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "player": self.player,
            "bot": self.bot,
            "why": self.why or None,
            "since": self.since,
        }


class Marker:
    """Follows a hand's events and says who made each move."""

    def __init__(self) -> None:
        self.players: tuple[str, ...] = ()
        self.bots: frozenset[int] = frozenset()
        self.away: dict[int, tuple[Takeover, str, int]] = {}  # seat -> (takeover, why, #)

    def start(self, players: tuple[str, ...], bots: frozenset[int]) -> None:
        self.players, self.bots = players, bots

    def see(self, version: int, event: Recorded) -> Actor | None:
        """The actor of ``event`` when it is a move (else None), and any takeover it
        starts or ends."""
        kind = event.TYPE
        seat = getattr(event, "seat", None)
        if not isinstance(seat, int):
            return None
        if kind in BOT_MARKS:
            takeover = BOT_MARKS[kind]
            if takeover is RELEASE:
                self.away.pop(seat, None)
            else:
                self.away[seat] = (takeover, takeover.why(event), version)
            return None
        if kind not in MOVES:
            return None
        player = self.players[seat] if 0 <= seat < len(self.players) else ""
        held = self.away.get(seat)
        if seat in self.bots and held is None:  # a bot's seat, whatever a move says of it
            return Actor(seat, player, True, BOT_SEAT)
        by = getattr(event, "acted_by", None)
        # The move says who made it, and that is the record; but a move said to be its
        # player's while the seat's connection is gone was the bot's, sent unmarked (by
        # a bot service older than the mark), as records before the mark are read.
        if by is not None and not (by is MoveBy.PLAYER and held and not held[0].clock):
            if held is not None and (held[0].hold is Hold.NEXT_MOVE or by is MoveBy.PLAYER):
                del self.away[seat]
            if by is MoveBy.BOT_SEAT:
                return Actor(seat, player, True, BOT_SEAT)
            if by is MoveBy.PLAYER:
                return Actor(seat, player)
            since = held[2] if held is not None else None
            return Actor(seat, player, True, WHY_BY[by], since)
        if held is not None:
            takeover, why, since = held
            if takeover.hold is Hold.NEXT_MOVE:
                del self.away[seat]
            return Actor(seat, player, True, why, since)
        if seat in self.bots:
            return Actor(seat, player, True, BOT_SEAT)
        return Actor(seat, player)
