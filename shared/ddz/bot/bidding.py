"""Bids, grabs and show-cards from the strength of the hand (RULES.md §6).

Strength is the plan score (``plan.Planner``) of the hand, averaged over a few
sampled bottoms (the landlord gets them), turned into an estimated chance of winning
as landlord by a logistic curve fitted on self-play (docs/BOT.md). The bot calls
when that chance is good enough, higher scores for stronger hands, grabs when it is
clearly good, and shows its cards only with a hand that is all but won.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ddz.domain.cards import RankCounts
from ddz.domain.hand.commands import Bid, BidAction
from ddz.domain.hand.view import PlayerView
from ddz.domain.ruleset import Bidding

from .plan import Planner, split_wild


@dataclass(frozen=True, slots=True)
class BidCurve:
    """P(landlord wins) = 1 / (1 + exp(-(score - mid) / scale)), per hand size."""

    mid: float = -14.0
    scale: float = 4.0
    call_at: tuple[tuple[float, int], ...] = ((0.62, 3), (0.56, 2), (0.50, 1))
    grab_at: float = 0.58
    call_grab_at: float = 0.50
    show_at: float = 0.90
    samples: int = 6


def landlord_chance(
    planner: Planner, hand: RankCounts, pool: RankCounts, bottom: int, rng: random.Random,
    curve: BidCurve,
) -> float:
    """Estimated chance to win as landlord with ``hand`` plus ``bottom`` cards of ``pool``."""
    deck = [r for r, n in enumerate(pool) for _ in range(n)]
    total = 0.0
    samples = max(1, curve.samples) if bottom and len(deck) >= bottom else 1
    for _ in range(samples):
        counts = list(hand)
        if bottom and len(deck) >= bottom:
            for r in rng.sample(deck, bottom):
                counts[r] += 1
        natural, wilds = split_wild(tuple(counts), planner.wild_ranks)
        total += planner.score(natural, wilds)
    score = total / samples
    return 1.0 / (1.0 + math.exp(-(score - curve.mid) / curve.scale))


def choose_bid(
    view: PlayerView, planner: Planner, rng: random.Random, curve: BidCurve = BidCurve()
) -> Bid:
    seat = view.seat
    pool = tuple(
        d - h for d, h in zip(view.rules.max_copies, view.counts, strict=True)
    )
    chance = landlord_chance(planner, view.counts, pool, view.rules.bottom_size, rng, curve)
    if view.rules.bidding is Bidding.CALL_SCORE:
        highest = max((b.score for b in view.bids), default=0)
        want = next((score for at, score in curve.call_at if chance >= at), 0)
        return Bid.call(seat, want) if want > highest else Bid.pass_(seat)
    called = any(b.action is BidAction.CALL for b in view.bids)
    if not called:
        return Bid.call(seat) if chance >= curve.call_grab_at else Bid.pass_(seat)
    return Bid.grab(seat) if chance >= curve.grab_at else Bid.pass_(seat)


def wants_show(
    view: PlayerView, planner: Planner, rng: random.Random, curve: BidCurve = BidCurve()
) -> bool:
    """Show only a hand that is all but won (the show multiplies the stake, §6)."""
    extra = view.rules.bottom_size if view.landlord is None else 0
    if view.landlord is not None and view.landlord != view.seat:
        return False
    pool = tuple(d - h for d, h in zip(view.rules.max_copies, view.counts, strict=True))
    return landlord_chance(planner, view.counts, pool, extra, rng, curve) >= curve.show_at
