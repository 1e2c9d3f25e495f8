"""What happened in a hand: immutable, versioned facts named in the past tense.

An event carries everything a replay needs without re-deriving any choice: the
physical cards a play removed and the reading it was taken as (§3), the deal itself
(from the audited seed, docs/SHUFFLE.md), the wildcard ranks drawn (§5). Each class
has a stable ``TYPE`` name and a ``VERSION``; a field change is a new version.

``HIDDEN`` marks the only event that holds other seats' cards (``CardsDealt``): it
stays on internal channels and is never part of a player's view.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, TypeAlias

from ddz.domain.cards import Card, Rank
from ddz.domain.ledger import Ledger
from ddz.domain.multipliers import MultiplierBreakdown, Side
from ddz.domain.readings import Reading
from ddz.domain.ruleset import RuleSet, WildcardDraw
from ddz.domain.settlement import RoomSettings

from .commands import BidAction, DisconnectReason, SeatInfo


class MoveBy(StrEnum):
    """Who made a bid or play, and why the bot made it when the seat is a person's.
    Recorded on every move since it was introduced; None on events written before."""

    PLAYER = "player"  # the seat's own player
    BOT_SEAT = "bot_seat"  # a bot's seat, from the start of the hand
    BOT_TURN_TIMEOUT = "bot_turn_timeout"  # the person let this turn's clock run out
    BOT_AUTO_PLAY = "bot_auto_play"  # the person is in auto-play (托管), short clock out
    BOT_CONNECTION_LOST = "bot_connection_lost"  # the person's connection is gone
    BOT_LEFT = "bot_left"  # the person left the table (§10.2: the bot plays on)

    @property
    def for_person(self) -> bool:
        """The bot moved in a person's seat."""
        return self not in (MoveBy.PLAYER, MoveBy.BOT_SEAT)


class AutoPlayEnd(StrEnum):
    ACTED = "acted"  # the person made a move of their own
    RESUMED = "resumed"  # the person sent Resume


@dataclass(frozen=True, slots=True)
class HandStarted:
    """The hand's public header: rules, room, seats and the seed commitment."""

    TYPE: ClassVar[str] = "hand_started"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    hand_id: str
    rules: RuleSet
    room: RoomSettings
    seats: tuple[SeatInfo, ...]
    first_bidder: int | None  # as asked; None = the golden card decides (§2)
    commitment: str  # sha256(server seed), hex
    client_seeds: tuple[str, ...]  # hex, public inputs of the deal
    algorithm: str  # "ddz-shuffle-v1"
    engine_version: str
    balances: tuple[int, int, int] | None
    show_before_deal: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CardsDealt:
    """One deal round (round 0, then one per re-deal): every seat's cards. HIDDEN."""

    TYPE: ClassVar[str] = "cards_dealt"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = True

    round: int
    hands: tuple[tuple[Card, ...], ...]
    bottom: tuple[Card, ...]
    golden_card: Card | None
    golden_position: int | None
    golden_receiver: int | None
    first_bidder: int


@dataclass(frozen=True, slots=True)
class WildcardDrawn:
    """A wildcard rank drawn and shown (§5): tiandi's heaven before bidding, laizi's
    rank and tiandi's earth after the landlord is known."""

    TYPE: ClassVar[str] = "wildcard_drawn"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    index: int  # position in rules.wildcard_draws
    when: WildcardDraw
    rank: Rank


@dataclass(frozen=True, slots=True)
class CardsShown:
    """A seat showed its hand (§6): from now on its cards are public."""

    TYPE: ClassVar[str] = "cards_shown"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    when: str  # "before_deal" | "during_deal" | "after_deal"
    cards_held: int | None
    factor: int
    cards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class BidMade:
    TYPE: ClassVar[str] = "bid_made"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    action: BidAction
    score: int
    acted_by: MoveBy | None = None


@dataclass(frozen=True, slots=True)
class Redealt:
    """Nobody called (§6): the round's cards go back; round ``round`` is dealt next."""

    TYPE: ClassVar[str] = "redealt"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    round: int
    commitment: str  # sha256 of the new round's key (docs/SHUFFLE.md)


@dataclass(frozen=True, slots=True)
class LandlordChosen:
    """Bidding is over: the landlord takes the bottom cards, shown to all (§1, §6)."""

    TYPE: ClassVar[str] = "landlord_chosen"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    base: int
    bottom: tuple[Card, ...]
    bomb_limits: tuple[int | None, int | None, int | None]  # §7; None = no limit


@dataclass(frozen=True, slots=True)
class PlayMade:
    TYPE: ClassVar[str] = "play_made"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    cards: tuple[Card, ...]
    reading: Reading  # the reading taken, with its wildcard substitutes
    acted_by: MoveBy | None = None


@dataclass(frozen=True, slots=True)
class Passed:
    TYPE: ClassVar[str] = "passed"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    acted_by: MoveBy | None = None


@dataclass(frozen=True, slots=True)
class PlayerDisconnected:
    """The seat dropped; the table's bot plays for it from now on (auto-play)."""

    TYPE: ClassVar[str] = "player_disconnected"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    escapee: bool  # the hand's first disconnect: its escapee for §10.2
    reason: DisconnectReason | None = None  # None: written before reasons were recorded


@dataclass(frozen=True, slots=True)
class TurnTimedOut:
    """A connected person's turn clock ran out: the bot makes this one move for them.
    No disconnect, no escapee. ``timeouts``: the seat's timeouts in a row, this one
    included; ``on_auto_play``: the seat was already in auto-play (its short clock)."""

    TYPE: ClassVar[str] = "turn_timed_out"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    deadline_ms: int  # Unix milliseconds, server time
    turn_seconds: float  # what the turn was given
    timeouts: int
    on_auto_play: bool
    auto_play_after: int  # the timeouts in a row that start auto-play (0: never)


@dataclass(frozen=True, slots=True)
class AutoPlayStarted:
    """The seat is in auto-play (托管): each of its turns gets the short clock, then a
    bot move, until its person acts or resumes. Not a disconnect."""

    TYPE: ClassVar[str] = "auto_play_started"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    timeouts: int  # the timeouts in a row that started it


@dataclass(frozen=True, slots=True)
class AutoPlayEnded:
    TYPE: ClassVar[str] = "auto_play_ended"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    reason: AutoPlayEnd


@dataclass(frozen=True, slots=True)
class PlayerReconnected:
    """The seat is back and plays for itself again (auto-play stops)."""

    TYPE: ClassVar[str] = "player_reconnected"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int


@dataclass(frozen=True, slots=True)
class PlayerEscaped:
    """The seat left a bean-room hand (§10.3). ``escape_multiplier`` is the multiplier
    with every bomb still held counted (``unplayed_bombs``, one factor each)."""

    TYPE: ClassVar[str] = "player_escaped"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seat: int
    escape_multiplier: MultiplierBreakdown


@dataclass(frozen=True, slots=True)
class HandEnded:
    """A seat went out (§8), or a bean-room escape ended the hand (winner None)."""

    TYPE: ClassVar[str] = "hand_ended"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    winner: Side | None
    out_seat: int | None  # who played their last card
    spring: bool
    anti_spring: bool
    final_hands: tuple[tuple[Card, ...], ...]  # cards left, shown to all at the end


@dataclass(frozen=True, slots=True)
class HandSettled:
    TYPE: ClassVar[str] = "hand_settled"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    ledger: Ledger
    multiplier: MultiplierBreakdown
    landlord: int
    base: int


@dataclass(frozen=True, slots=True)
class SeedRevealed:
    """The server seed, so anyone can re-derive every deal of the hand."""

    TYPE: ClassVar[str] = "seed_revealed"
    VERSION: ClassVar[int] = 1
    HIDDEN: ClassVar[bool] = False

    seed: str  # hex


Event: TypeAlias = (
    HandStarted
    | CardsDealt
    | WildcardDrawn
    | CardsShown
    | BidMade
    | Redealt
    | LandlordChosen
    | PlayMade
    | Passed
    | PlayerDisconnected
    | PlayerReconnected
    | PlayerEscaped
    | TurnTimedOut
    | AutoPlayStarted
    | AutoPlayEnded
    | HandEnded
    | HandSettled
    | SeedRevealed
)

EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        HandStarted,
        CardsDealt,
        WildcardDrawn,
        CardsShown,
        BidMade,
        Redealt,
        LandlordChosen,
        PlayMade,
        Passed,
        PlayerDisconnected,
        PlayerReconnected,
        PlayerEscaped,
        TurnTimedOut,
        AutoPlayStarted,
        AutoPlayEnded,
        HandEnded,
        HandSettled,
        SeedRevealed,
    )
}
