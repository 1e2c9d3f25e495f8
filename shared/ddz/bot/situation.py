"""What the bot knows at a decision, derived from a ``PlayerView`` and nothing else.

This is the only module that reads the view. It counts cards: everything the seat
has seen (its own hand, every play, the bottom cards once shown, any hand shown to
all) is taken out of the full deck; the rest is the *unseen pool*, split between
the seats whose hands are hidden. The bottom cards are known to sit in the
landlord's hand until the landlord plays them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddz.domain.cards import EMPTY_COUNTS, RankCounts, card_counts
from ddz.domain.hand.events import PlayMade
from ddz.domain.hand.view import PlayerView
from ddz.domain.readings import Reading
from ddz.domain.ruleset import RuleSet


@dataclass(frozen=True, slots=True)
class Situation:
    rules: RuleSet
    seat: int
    landlord: int
    hand: RankCounts
    wild: tuple[int, ...]  # wildcard ranks (as ints), sorted
    counts: tuple[int, int, int]  # cards left per seat
    trick: Reading | None  # the play to beat; None: the bot leads
    trick_seat: int  # who made it (-1 when leading)
    passes: int  # passes since the play to beat
    pool: RankCounts  # unseen cards: in the hidden hands of other seats
    known: tuple[RankCounts | None, ...]  # a seat's exact hand when the bot can see it
    landlord_bottom: RankCounts  # bottom cards not yet played (in the landlord's hand)
    bombs_left: tuple[int | None, ...]  # §7 allowance per seat; None = no limit
    played: tuple[RankCounts, ...]  # cards each seat has played this hand

    @property
    def is_landlord(self) -> bool:
        return self.seat == self.landlord

    def partner(self) -> int | None:
        if self.is_landlord:
            return None
        return 3 - self.seat - self.landlord

    def enemies(self) -> tuple[int, ...]:
        if self.is_landlord:
            return ((self.seat + 1) % 3, (self.seat + 2) % 3)
        return (self.landlord,)

    def is_enemy(self, seat: int) -> bool:
        return seat != self.seat and (self.is_landlord or seat == self.landlord)

    def next_seat(self, seat: int | None = None) -> int:
        return ((self.seat if seat is None else seat) + 1) % 3

    def hidden_seats(self) -> tuple[int, ...]:
        return tuple(s for s in range(3) if s != self.seat and self.known[s] is None)


def _sub(a: RankCounts, b: RankCounts) -> RankCounts:
    return tuple(x - y for x, y in zip(a, b, strict=True))


def situation_of(view: PlayerView) -> Situation:
    """Read a view (the seat must be in the playing phase, landlord known)."""
    rules = view.rules
    landlord = view.landlord if view.landlord is not None else -1
    played = [EMPTY_COUNTS, EMPTY_COUNTS, EMPTY_COUNTS]
    for event in view.history:
        if isinstance(event, PlayMade):
            played[event.seat] = tuple(
                x + y for x, y in zip(played[event.seat], card_counts(event.cards), strict=True)
            )
    deck = rules.max_copies
    pool = _sub(deck, view.counts)
    for seat_played in played:
        pool = _sub(pool, seat_played)
    known: list[RankCounts | None] = [None, None, None]
    known[view.seat] = view.counts
    bottom = card_counts(view.bottom) if view.bottom is not None else EMPTY_COUNTS
    for seat, shown in enumerate(view.shown):
        if seat != view.seat and shown is not None:
            known[seat] = card_counts(shown)  # a shown hand stays open: its current cards
    bottom_left = EMPTY_COUNTS
    if view.bottom is not None and 0 <= landlord != view.seat:
        # bottom cards the landlord has not played yet (a played rank may be either)
        bottom_left = tuple(max(0, b - p) for b, p in zip(bottom, played[landlord], strict=True))
    for seat in range(3):
        k = known[seat]
        if seat != view.seat and k is not None:
            pool = _sub(pool, k)
    pool = tuple(max(0, n) for n in pool)
    trick = view.trick
    return Situation(
        rules=rules,
        seat=view.seat,
        landlord=landlord,
        hand=view.counts,
        wild=tuple(sorted(int(r) for r in view.wild)),
        counts=(view.card_counts[0], view.card_counts[1], view.card_counts[2]),
        trick=trick.reading if trick is not None else None,
        trick_seat=trick.seat if trick is not None else -1,
        passes=view.passes,
        pool=pool,
        known=tuple(known),
        landlord_bottom=bottom_left,
        bombs_left=tuple(view.bombs_left),
        played=tuple(played),
    )
