"""Seeded classic positions for the differential tests (RULES.md §1: 54 cards, 17/17/20).

Hands are rank strings in rank order (``"33344456"``), the notation both this project
and RLCard use (§1), so a position can be handed to either side unchanged.
"""

from __future__ import annotations

import random

from ddz.domain.cards import RANK_SYMBOLS

CLASSIC_DECK = "".join(symbol * 4 for symbol in RANK_SYMBOLS[:13]) + "BR"


def in_rank_order(cards: str) -> str:
    return "".join(sorted(cards, key=RANK_SYMBOLS.index))


def remove(cards: str, taken: str) -> str:
    rest = list(cards)
    for card in taken:
        rest.remove(card)
    return "".join(rest)


def deal(rng: random.Random) -> list[str]:
    """A shuffled classic deal: two farmers' 17 cards and the landlord's 20 (with the bottom)."""
    deck = list(CLASSIC_DECK)
    rng.shuffle(deck)
    return [in_rank_order(deck[:17]), in_rank_order(deck[17:34]), in_rank_order(deck[34:])]


def clumped_deal(rng: random.Random) -> list[str]:
    """A deal whose landlord holds mostly pairs, triples and fours, so that planes,
    four-with-two and bombs (rare in a shuffled deal) come up often; the farmers get
    the rest of the deck at random."""
    counts = dict.fromkeys(RANK_SYMBOLS, 0)
    size = 0
    while size < 20:
        symbol = rng.choice(RANK_SYMBOLS)
        room = (1 if symbol in "BR" else 4) - counts[symbol]
        add = min(rng.choice((1, 2, 3, 3, 4)), room, 20 - size)
        counts[symbol] += add
        size += add
    landlord = "".join(symbol * n for symbol, n in counts.items())
    rest = list(remove(CLASSIC_DECK, landlord))
    rng.shuffle(rest)
    return [in_rank_order(rest[:17]), in_rank_order(rest[17:34]), landlord]


def plane_deal(rng: random.Random) -> list[str]:
    """A deal whose landlord holds a run of 3 to 5 consecutive triples (some of them
    fours) and random other cards: planes with every kind of wing, the wing rules of
    §3 (a triple next to the plane, four of a kind, both jokers) and longer chains."""
    length = rng.randint(3, 5)
    low = rng.randint(0, 12 - length)  # the run stays within 3..A
    run = "".join(RANK_SYMBOLS[r] * rng.choice((3, 3, 3, 4)) for r in range(low, low + length))
    rest = list(remove(CLASSIC_DECK, run))
    rng.shuffle(rest)
    fill = 20 - len(run)
    landlord = in_rank_order(run + "".join(rest[:fill]))
    rest = rest[fill:]
    return [in_rank_order(rest[:17]), in_rank_order(rest[17:34]), landlord]


def sub_hand(rng: random.Random, hand: str) -> str:
    """A random part of a hand, as if some of it had been played already."""
    return in_rank_order(rng.sample(hand, rng.randint(1, len(hand))))


DEAL_KINDS = (deal, deal, clumped_deal, plane_deal)


def deals(rng: random.Random, count: int) -> list[list[str]]:
    """Half shuffled deals; a quarter clumped, a quarter with a plane for the landlord."""
    return [DEAL_KINDS[i % len(DEAL_KINDS)](rng) for i in range(count)]
