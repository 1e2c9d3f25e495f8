"""The hand's state: nothing but the fold of its events (``evolve``, ``replay``).

``evolve`` applies rules that involve no choice (whose turn is next, what a bomb
multiplies by, when a trick is over); every choice -- the deal, the reading a play
was taken as, the physical cards it removed -- is read from the event itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, TypeAlias, TypeVar

from ddz.domain.cards import EMPTY_COUNTS, Card, Rank, RankCounts, card_counts
from ddz.domain.ledger import Ledger
from ddz.domain.multipliers import (
    Factor,
    MultiplierBreakdown,
    Side,
    bomb,
    grab_factor,
    initial_factor,
    spring_factor,
)
from ddz.domain.ruleset import CLASSIC, Bidding, RuleSet
from ddz.domain.settlement import RoomSettings
from ddz.domain.shuffle import in_deck_order

from .commands import BidAction, DisconnectReason, SeatInfo
from .events import (
    AutoPlayEnded,
    AutoPlayStarted,
    BidMade,
    CardsDealt,
    CardsShown,
    Event,
    HandEnded,
    HandSettled,
    HandStarted,
    LandlordChosen,
    MoveBy,
    Passed,
    PlayerDisconnected,
    PlayerEscaped,
    PlayerReconnected,
    PlayMade,
    Redealt,
    SeedRevealed,
    TurnTimedOut,
    WildcardDrawn,
)

SEATS = (0, 1, 2)
NO_ONE = -1

Changes: TypeAlias = dict[str, Any]
"""The fields an event changes; ``evolve`` applies them in one copy."""
E = TypeVar("E")
Handler: TypeAlias = Callable[[E, "HandState"], Changes]


_NO_ROOM = RoomSettings()


class Phase(StrEnum):
    NOT_STARTED = "not_started"
    BIDDING = "bidding"
    PLAYING = "playing"
    ENDED = "ended"


def next_seat(seat: int) -> int:
    """Play and bidding order (§2): seat s, then (s + 1) % 3."""
    return (seat + 1) % 3


def next_first_bidder(previous_first_bidder: int) -> int:
    """The first bidder of the next hand at the same table rotates in play order (§2)."""
    return next_seat(previous_first_bidder)


@dataclass(frozen=True)
class HandState:
    """One hand, as its events so far have made it. ``HandState()`` is before the start.

    Not slotted on purpose: ``evolve`` copies the instance dict and applies an event's
    changes in one step, which is several times cheaper than ``dataclasses.replace``
    on the hot path of self-play (the instance stays frozen to everyone else).
    """

    version: int = 0  # number of events folded; the index the next event will have
    phase: Phase = Phase.NOT_STARTED
    hand_id: str = ""
    rules: RuleSet = CLASSIC  # placeholder until HandStarted
    room: RoomSettings = _NO_ROOM  # placeholder until HandStarted
    seats: tuple[SeatInfo, ...] = ()
    commitment: str = ""
    client_seeds: tuple[str, ...] = ()
    balances: tuple[int, int, int] | None = None
    asked_first_bidder: int | None = None
    show_before_deal: tuple[int, ...] = ()
    # -- the current deal round
    round: int = 0
    cards: tuple[tuple[Card, ...], ...] = ((), (), ())  # physical, sorted, per seat
    counts: tuple[RankCounts, ...] = (EMPTY_COUNTS, EMPTY_COUNTS, EMPTY_COUNTS)
    bottom: tuple[Card, ...] = ()
    golden_card: Card | None = None
    golden_receiver: int | None = None
    first_bidder: int = NO_ONE
    bids: tuple[BidMade, ...] = ()
    wild: tuple[Rank, ...] = ()  # wildcard ranks drawn so far, in draw order
    wild_set: frozenset[Rank] = frozenset()  # the same, as the rules engine takes them
    shown: tuple[CardsShown, ...] = ()
    # -- whose move (bidding or play); NO_ONE when nobody's
    turn: int = NO_ONE
    # -- after bidding
    landlord: int | None = None
    base: int = 1
    bomb_limits: tuple[int | None, ...] = (None, None, None)
    multiplier: MultiplierBreakdown = field(default_factory=MultiplierBreakdown)
    # -- the trick: the play to beat (None: the player on turn leads) and passes since
    trick: PlayMade | None = None
    passes: int = 0
    plays_made: tuple[int, int, int] = (0, 0, 0)
    bombs_made: tuple[int, int, int] = (0, 0, 0)
    # -- people
    disconnected: frozenset[int] = frozenset()
    escapee: int | None = None  # first to disconnect (§10.2) or who left (§10.3)
    left: frozenset[int] = frozenset()  # seats whose player left (not a lost connection)
    # -- the turn clock: this turn's timeout (the bot moves once for the person), each
    # seat's timeouts in a row, the seats in auto-play (托管, short clock)
    timed_out: TurnTimedOut | None = None
    timeouts: tuple[int, int, int] = (0, 0, 0)
    auto_play: frozenset[int] = frozenset()
    # -- the end
    winner: Side | None = None
    spring: bool = False
    anti_spring: bool = False
    ledger: Ledger | None = None
    seed: str | None = None  # revealed at the end
    # -- every public event so far, in order (what any seat may see)
    log: tuple[Event, ...] = ()

    @property
    def leader(self) -> bool:
        """True when the player on turn leads a new trick (and so cannot pass)."""
        return self.trick is None

    def card_count(self, seat: int) -> int:
        return len(self.cards[seat])


# --- bidding (§6) --------------------------------------------------------------------


def next_bidder(rules: RuleSet, first_bidder: int, bids: tuple[BidMade, ...]) -> int | None:
    """Who bids next, or None when bidding is over (§6)."""
    if rules.bidding is Bidding.CALL_SCORE:
        if len(bids) >= 3 or any(b.score >= 3 for b in bids):
            return None
        return (first_bidder + len(bids)) % 3
    if len(bids) < 3:
        return (first_bidder + len(bids)) % 3
    callers = [b.seat for b in bids if b.action is BidAction.CALL]
    grabbed = any(b.action is BidAction.GRAB for b in bids)
    if len(bids) == 3 and callers and grabbed:
        return callers[0]  # the first caller's last chance to grab back
    return None


def bidding_winner(rules: RuleSet, bids: tuple[BidMade, ...]) -> tuple[int, int] | None:
    """(landlord, base) once bidding is over; None if nobody called (§6)."""
    if rules.bidding is Bidding.CALL_SCORE:
        calls = [b for b in bids if b.action is BidAction.CALL]
        if not calls:
            return None
        best = max(calls, key=lambda b: b.score)
        return best.seat, best.score
    yes = [b for b in bids if b.action is not BidAction.PASS]
    return (yes[-1].seat, 1) if yes else None


def bomb_limits_for(
    rules: RuleSet, landlord: int, bids: tuple[BidMade, ...]
) -> tuple[int | None, int | None, int | None]:
    """Each seat's most bomb-class plays this hand (§7); None = no limit."""
    limits = rules.bomb_limits
    if limits is None:
        return (None, None, None)
    out: list[int | None] = []
    for seat in SEATS:
        if seat == landlord:
            out.append(limits.landlord)
            continue
        own = [b for b in bids if b.seat == seat]
        calls = [b.score for b in own if b.action is BidAction.CALL]
        out.append(limits.for_farmer(max(calls) if calls else None, had_turn=bool(own)))
    return (out[0], out[1], out[2])


# --- the fold ------------------------------------------------------------------------


def _remove(held: tuple[Card, ...], played: tuple[Card, ...]) -> tuple[Card, ...]:
    # Live, a play's cards are the very objects taken from the hand, in hand order: one
    # identity walk (this runs for every play of every self-played hand). Cards read
    # back from a store are equal but not identical: then compare values.
    left = []
    taken = 0
    wanted = len(played)
    for card in held:
        if taken < wanted and card is played[taken]:
            taken += 1
        else:
            left.append(card)
    if taken == wanted:
        return tuple(left)
    gone = set(played)
    return tuple(card for card in held if card not in gone)


_HANDLERS: dict[type, Callable[[Any, HandState], Changes]] = {}


def _on(event_type: type[E]) -> Callable[[Handler[E]], Handler[E]]:
    """Register the fold step for one event type (a dict lookup on the hot path)."""

    def register(handler: Handler[E]) -> Handler[E]:
        _HANDLERS[event_type] = handler
        return handler

    return register


@_on(HandStarted)
def _(event: HandStarted, state: HandState) -> Changes:
    return dict(
        phase=Phase.BIDDING,
        hand_id=event.hand_id,
        rules=event.rules,
        room=event.room,
        seats=event.seats,
        commitment=event.commitment,
        client_seeds=event.client_seeds,
        balances=event.balances,
        asked_first_bidder=event.first_bidder,
        show_before_deal=event.show_before_deal,
        multiplier=MultiplierBreakdown(
            (replace(initial_factor(event.room.initial_multiplier), event=state.version),)
        ),
    )


@_on(CardsDealt)
def _(event: CardsDealt, state: HandState) -> Changes:
    return dict(
        round=event.round,
        cards=event.hands,
        counts=tuple(card_counts(hand) for hand in event.hands),
        bottom=event.bottom,
        golden_card=event.golden_card,
        golden_receiver=event.golden_receiver,
        first_bidder=event.first_bidder,
        turn=event.first_bidder,
        bids=(),
        wild=(),
        wild_set=frozenset(),
        shown=(),
        multiplier=state.multiplier.without("grab").without("show_cards"),
    )


@_on(WildcardDrawn)
def _(event: WildcardDrawn, state: HandState) -> Changes:
    return dict(wild=(*state.wild, event.rank), wild_set=state.wild_set | {event.rank})


@_on(CardsShown)
def _(event: CardsShown, state: HandState) -> Changes:
    # One show counts once, by the largest factor shown in the hand (§6).
    best = max((f.factor for f in state.multiplier.factors if f.reason == "show_cards"), default=1)
    multiplier = state.multiplier
    if event.factor > best:
        multiplier = multiplier.without("show_cards").with_factor(
            Factor("show_cards", event.factor, event.seat, state.version, f"show {event.when}")
        )
    return dict(shown=(*state.shown, event), multiplier=multiplier)


@_on(BidMade)
def _(event: BidMade, state: HandState) -> Changes:
    bids = (*state.bids, event)
    multiplier = state.multiplier
    if event.action is BidAction.GRAB:
        multiplier = multiplier.with_factor(grab_factor(state.rules, event.seat, state.version))
    turn = next_bidder(state.rules, state.first_bidder, bids)
    changes = dict(bids=bids, multiplier=multiplier, turn=NO_ONE if turn is None else turn)
    _moved(event.seat, event.acted_by, state, changes)
    return changes


def _moved(seat: int, acted_by: MoveBy | None, state: HandState, changes: Changes) -> None:
    """A move ends the turn's timeout; the seat's own move ends its timeouts in a row."""
    if state.timed_out is not None:
        changes["timed_out"] = None
    if acted_by is MoveBy.PLAYER and state.timeouts[seat]:
        changes["timeouts"] = _with(state.timeouts, seat, 0)


def _with(values: tuple[int, int, int], seat: int, value: int) -> tuple[int, int, int]:
    out = list(values)
    out[seat] = value
    return (out[0], out[1], out[2])


@_on(Redealt)
def _(event: Redealt, state: HandState) -> Changes:
    return dict(turn=NO_ONE, timed_out=None)


@_on(LandlordChosen)
def _(event: LandlordChosen, state: HandState) -> Changes:
    seat = event.seat
    cards = list(state.cards)
    cards[seat] = in_deck_order(state.rules, cards[seat] + event.bottom)
    counts = list(state.counts)
    counts[seat] = card_counts(cards[seat])
    return dict(
        phase=Phase.PLAYING,
        landlord=seat,
        base=event.base,
        bomb_limits=event.bomb_limits,
        cards=tuple(cards),
        counts=tuple(counts),
        turn=seat,
        trick=None,
        passes=0,
    )


@_on(PlayMade)
def _(event: PlayMade, state: HandState) -> Changes:
    # The hottest fold step of self-play: plain tuples and a dict literal.
    seat = event.seat
    cards = list(state.cards)
    cards[seat] = _remove(cards[seat], event.cards)
    counts = list(state.counts)
    left = list(counts[seat])
    for card in event.cards:
        left[card.rank] -= 1
    counts[seat] = tuple(left)
    plays_made = list(state.plays_made)
    plays_made[seat] += 1
    changes: Changes = {
        "cards": tuple(cards),
        "counts": tuple(counts),
        "plays_made": tuple(plays_made),
        "trick": event,
        "passes": 0,
        "turn": (seat + 1) % 3,
    }
    if state.timed_out is not None or event.acted_by is MoveBy.PLAYER:
        _moved(seat, event.acted_by, state, changes)
    if event.reading.is_bomb:
        bombs_made = list(state.bombs_made)
        bombs_made[seat] += 1
        changes["bombs_made"] = tuple(bombs_made)
        factor = bomb(state.rules, event.reading, seat, state.version)
        if factor.factor != 1:  # ct's 4-card bomb is x1: no factor to show (§9)
            changes["multiplier"] = state.multiplier.with_factor(factor)
    return changes


@_on(Passed)
def _(event: Passed, state: HandState) -> Changes:
    changes: Changes
    if state.passes:
        # Two passes in a row: the last player to play leads a new trick.
        changes = {"trick": None, "passes": 0, "turn": (event.seat + 1) % 3}
    else:
        changes = {"passes": 1, "turn": (event.seat + 1) % 3}
    if state.timed_out is not None or event.acted_by is MoveBy.PLAYER:
        _moved(event.seat, event.acted_by, state, changes)
    return changes


@_on(PlayerDisconnected)
def _(event: PlayerDisconnected, state: HandState) -> Changes:
    escapee = event.seat if event.escapee else state.escapee
    changes = dict(disconnected=state.disconnected | {event.seat}, escapee=escapee)
    if event.reason is DisconnectReason.LEFT:
        changes["left"] = state.left | {event.seat}
    return changes


@_on(TurnTimedOut)
def _(event: TurnTimedOut, state: HandState) -> Changes:
    return dict(timed_out=event, timeouts=_with(state.timeouts, event.seat, event.timeouts))


@_on(AutoPlayStarted)
def _(event: AutoPlayStarted, state: HandState) -> Changes:
    return dict(auto_play=state.auto_play | {event.seat})


@_on(AutoPlayEnded)
def _(event: AutoPlayEnded, state: HandState) -> Changes:
    return dict(
        auto_play=state.auto_play - {event.seat}, timeouts=_with(state.timeouts, event.seat, 0)
    )


@_on(PlayerReconnected)
def _(event: PlayerReconnected, state: HandState) -> Changes:
    return dict(disconnected=state.disconnected - {event.seat})


@_on(PlayerEscaped)
def _(event: PlayerEscaped, state: HandState) -> Changes:
    return dict(
        escapee=event.seat,
        disconnected=state.disconnected | {event.seat},
        left=state.left | {event.seat},
    )


@_on(HandEnded)
def _(event: HandEnded, state: HandState) -> Changes:
    multiplier = state.multiplier
    for flag, anti in ((event.spring, False), (event.anti_spring, True)):
        if flag:
            multiplier = multiplier.with_factor(
                spring_factor(state.rules, anti=anti, event=state.version)
            )
    return dict(
        phase=Phase.ENDED,
        turn=NO_ONE,
        timed_out=None,
        winner=event.winner,
        spring=event.spring,
        anti_spring=event.anti_spring,
        multiplier=multiplier,
    )


@_on(HandSettled)
def _(event: HandSettled, state: HandState) -> Changes:
    return dict(ledger=event.ledger)


@_on(SeedRevealed)
def _(event: SeedRevealed, state: HandState) -> Changes:
    return dict(seed=event.seed)


def evolve(state: HandState, event: Event) -> HandState:
    """The state after ``event``: a pure fold step (no I/O, no randomness)."""
    try:
        handler = _HANDLERS[type(event)]
    except KeyError:
        raise TypeError(f"not a hand event: {event!r}") from None
    changes = handler(event, state)
    changes["version"] = state.version + 1
    if not event.HIDDEN:
        changes["log"] = (*state.log, event)
    fields = state.__dict__.copy()
    fields.update(changes)
    new = object.__new__(HandState)
    object.__setattr__(new, "__dict__", fields)
    return new


def replay(events: Iterable[Event], state: HandState | None = None) -> HandState:
    """Fold events from the start (or from ``state``)."""
    current = HandState() if state is None else state
    for event in events:
        current = evolve(current, event)
    return current
