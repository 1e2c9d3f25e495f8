"""What a hand can be asked to do. Commands are requests: ``decide`` turns
each into events or a ``Rejection``; a command never changes anything by itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

from ddz.domain.cards import RankCounts
from ddz.domain.readings import Reading
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import RoomSettings


@dataclass(frozen=True, slots=True)
class SeatInfo:
    """Who sits in a seat, and whether the table's bot plays it from the start."""

    player_id: str
    is_bot: bool = False


@dataclass(frozen=True, slots=True)
class StartHand:
    """Deal a new hand from a server seed (``ddz-shuffle-v1``, docs/SHUFFLE.md).

    ``first_bidder`` None: the golden card's receiver bids first (§2, first hand at a
    table); the table passes the rotated seat for later hands (``next_first_bidder``).
    ``show_before_deal``: seats that chose to play open before the deal (§6, x5).
    ``balances``: bean balances at the hand's start (§10.3 balance limits).
    """

    hand_id: str
    rules: RuleSet
    room: RoomSettings
    seats: tuple[SeatInfo, SeatInfo, SeatInfo]
    seed: bytes = field(repr=False)  # secret until the hand reveals it
    first_bidder: int | None = None
    client_seeds: tuple[bytes, ...] = ()
    balances: tuple[int, int, int] | None = None
    show_before_deal: frozenset[int] = field(default_factory=frozenset)


class DisconnectReason(StrEnum):
    """Why a seat's player is away (§10.2, §10.3): the event says which, for disputes."""

    CONNECTION_LOST = "connection_lost"  # no stream came back within the grace period
    LEFT = "left"  # the player left the table (LeaveRoom; ``Escape``)


class BidAction(StrEnum):
    """A bid in either scheme of §6: call score uses CALL with a score, or PASS;
    grab landlord uses CALL (first yes), GRAB (each later yes), or PASS."""

    PASS = "pass"
    CALL = "call"
    GRAB = "grab"


@dataclass(frozen=True, slots=True)
class Bid:
    seat: int
    action: BidAction
    score: int = 0  # call score 1..3 (CALL in the call-score scheme); 0 otherwise
    by_bot: bool = False  # the bot service sends it (its seat, or for an absent person)

    @classmethod
    def call(cls, seat: int, score: int = 0) -> Bid:
        return cls(seat, BidAction.CALL, score)

    @classmethod
    def grab(cls, seat: int) -> Bid:
        return cls(seat, BidAction.GRAB)

    @classmethod
    def pass_(cls, seat: int) -> Bid:
        return cls(seat, BidAction.PASS)


@dataclass(frozen=True, slots=True)
class ShowCards:
    """Show one's hand to everyone (§6). ``cards_held`` is given only while the deal is
    still being dealt out (before the first bid): how many cards the seat had seen."""

    seat: int
    cards_held: int | None = None


@dataclass(frozen=True, slots=True)
class Play:
    """Play ``cards`` (rank counts; the hand picks the physical cards). ``declared``:
    the reading meant, for an ambiguous wildcard play (§3); None = the highest legal."""

    seat: int
    cards: RankCounts
    declared: Reading | None = None
    by_bot: bool = False


@dataclass(frozen=True, slots=True)
class Pass:
    seat: int
    by_bot: bool = False


@dataclass(frozen=True, slots=True)
class Disconnect:
    """The seat dropped: the table's bot plays for it until it comes back (§10.2).
    ``reason`` None: not said (commands sent before reasons were recorded)."""

    seat: int
    reason: DisconnectReason | None = None


@dataclass(frozen=True, slots=True)
class TimeOut:
    """The seat's person, connected, let the turn's clock run out: the bot makes this
    one move for them (no disconnect, no escapee). ``deadline_ms`` (Unix ms, server
    time) and ``turn_seconds`` are the clock that ran out; after ``auto_play_after``
    timeouts in a row the seat goes into auto-play (0: never)."""

    seat: int
    deadline_ms: int
    turn_seconds: float
    auto_play_after: int = 2


@dataclass(frozen=True, slots=True)
class Resume:
    """The seat's person ends auto-play (the game's cancel-auto-play button)."""

    seat: int


@dataclass(frozen=True, slots=True)
class Reconnect:
    seat: int


@dataclass(frozen=True, slots=True)
class Escape:
    """The seat left for good. Bean rooms: the hand ends and §10.3 applies; elsewhere
    it is a disconnect that never comes back (the bot plays on, §10.2)."""

    seat: int


Command: TypeAlias = (
    StartHand | Bid | ShowCards | Play | Pass | Disconnect | Reconnect | Escape | TimeOut | Resume
)
