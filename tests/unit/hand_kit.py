"""Helpers for the hand aggregate's tests: real deals from a seed, rigged deals from
hand-written cards (a rigged hand is a fold of hand-made events, which is all a
hand's state ever is), and short ways to send commands."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import ddz
from ddz.domain.cards import Card, Rank, parse_ranks
from ddz.domain.hand import (
    Bid,
    Command,
    Event,
    Hand,
    HandState,
    Rejection,
    RejectReason,
    SeatInfo,
    StartHand,
)
from ddz.domain.hand.events import CardsDealt, HandStarted, LandlordChosen, WildcardDrawn
from ddz.domain.ruleset import RuleSet, WildcardDraw
from ddz.domain.settlement import RoomSettings
from ddz.domain.shuffle import ALGORITHM, canonical_deck, commitment, in_deck_order

SEED = bytes(range(100, 132))
SEATS = (SeatInfo("p0"), SeatInfo("p1"), SeatInfo("p2", is_bot=True))


def start(
    rules: RuleSet,
    *,
    seed: bytes = SEED,
    first_bidder: int | None = None,
    room: RoomSettings | None = None,
    balances: tuple[int, int, int] | None = None,
    show_before_deal: Iterable[int] = (),
    client_seeds: tuple[bytes, ...] = (),
) -> Hand:
    hand = Hand()
    ok(
        hand,
        StartHand(
            "h1",
            rules,
            room or RoomSettings(),
            SEATS,
            seed,
            first_bidder=first_bidder,
            client_seeds=client_seeds,
            balances=balances,
            show_before_deal=frozenset(show_before_deal),
        ),
    )
    return hand


def physical(rules: RuleSet, texts: Sequence[str]) -> list[tuple[Card, ...]]:
    """Rank notation -> disjoint physical cards of the rule set's deck."""
    free: dict[Rank, list[Card]] = {}
    for card in canonical_deck(rules):
        free.setdefault(card.rank, []).append(card)
    out = []
    for text in texts:
        counts = parse_ranks(text)
        cards = []
        for rank, n in enumerate(counts):
            for _ in range(n):
                cards.append(free[Rank(rank)].pop(0))
        out.append(in_deck_order(rules, cards))
    return out


def rigged(
    rules: RuleSet,
    hands: Sequence[str],
    bottom: str = "",
    *,
    first_bidder: int = 0,
    landlord: int | None = None,
    base: int = 1,
    wild: Sequence[Rank] = (),
    room: RoomSettings | None = None,
    balances: tuple[int, int, int] | None = None,
    bomb_limits: tuple[int | None, int | None, int | None] = (None, None, None),
) -> Hand:
    """A hand whose deal is written out; with ``landlord``, bidding is already over."""
    *seat_cards, bottom_cards = physical(rules, [*hands, bottom])
    events: list[Event] = [
        HandStarted(
            "rigged",
            rules,
            room or RoomSettings(),
            SEATS,
            first_bidder,
            commitment(SEED),
            (),
            ALGORITHM,
            ddz.ENGINE_VERSION,
            balances,
            (),
        ),
        CardsDealt(0, tuple(seat_cards), bottom_cards, None, None, None, first_bidder),
    ]
    if landlord is not None:
        events.append(LandlordChosen(landlord, base, bottom_cards, bomb_limits))
        events += [
            WildcardDrawn(i, WildcardDraw.AFTER_LANDLORD, rank) for i, rank in enumerate(wild)
        ]
    return Hand(events, seed=SEED)


def ok(hand: Hand, command: Command) -> list[Event]:
    result = hand.execute(command)
    assert not isinstance(result, Rejection), f"{command} refused: {result}"
    return result


def refused(hand: Hand, command: Command) -> RejectReason:
    """The rejection's code; also checks that the rejection changed nothing."""
    before_state, before_events = hand.state, list(hand.events)
    result = hand.execute(command)
    assert isinstance(result, Rejection), f"{command} accepted: {result}"
    assert hand.state == before_state and hand.events == before_events
    return result.code


def bids(hand: Hand, *scores: int) -> list[Event]:
    """Call-score bids in turn order (0 = pass)."""
    out: list[Event] = []
    for score in scores:
        seat = hand.state.turn
        out += ok(hand, Bid.call(seat, score) if score else Bid.pass_(seat))
    return out


def of_type(events: Iterable[Event], cls: type) -> list:
    return [e for e in events if isinstance(e, cls)]


def cards_in(value: object) -> set[Card]:
    """Every physical card anywhere inside ``value`` (dataclasses, tuples, sets)."""
    found: set[Card] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Card):
            found.add(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
        elif isinstance(item, tuple | list | set | frozenset):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def hidden_from(state: HandState, seat: int) -> set[Card]:
    """What ``seat`` must not see: other seats' unshown cards, and the bottom cards until
    the landlord has them (then they are public, §1). The golden card is dealt face up
    (§2): public."""
    shown = {s.seat for s in state.shown}
    hidden = {c for s in range(3) if s != seat and s not in shown for c in state.cards[s]}
    if state.landlord is None:
        hidden |= set(state.bottom)
    else:
        hidden -= set(state.bottom)  # shown to everyone once the landlord has them (§1)
    hidden.discard(state.golden_card)  # type: ignore[arg-type]
    return hidden
