"""Bids, grabs and show-cards from the strength of the hand (RULES.md §6).

Strength is the plan score (``plan.Planner``) of the hand, averaged over a few
sampled bottoms (the landlord gets them), turned into an estimated chance of winning
as landlord by a logistic curve fitted on self-play (docs/BOT.md). The bot calls
when that chance is good enough, higher scores for stronger hands, grabs when it is
clearly good, and shows its cards only with a hand that is all but won.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass

from ddz.domain.cards import RankCounts
from ddz.domain.hand.commands import Bid, BidAction
from ddz.domain.hand.view import PlayerView
from ddz.domain.ruleset import Bidding, RuleSet

from .parts import split_wild
from .plan import Planner


@dataclass(frozen=True, slots=True)
class BidCurve:
    """P(landlord wins) = sigmoid(bias + per_score * plan score + per_control * controls).

    Fitted by ``benchmarks/bot_bid_calibration.py`` (bots in all seats, landlord
    fixed); see docs/BOT.md for the figures.
    """

    bias: float = 1.13
    per_score: float = 0.046
    per_control: float = 0.275
    call_at: tuple[tuple[float, int], ...] = ((0.62, 3), (0.56, 2), (0.50, 1))
    grab_at: float = 0.58
    call_grab_at: float = 0.50
    show_at: float = 0.90
    samples: int = 4


CURVES: dict[tuple[int, int], BidCurve] = {
    # (hand size, wildcard ranks drawn) -> curve fitted on 600 self-play hands each
    (17, 0): BidCurve(1.1286, 0.0460, 0.2754),
    (26, 0): BidCurve(-0.4672, 0.0069, 0.1286),
    (17, 1): BidCurve(0.8893, 0.0351, 0.1675),
    (17, 2): BidCurve(-0.2013, 0.0197, 0.1295),
}


def curve_for(rules: RuleSet) -> BidCurve:
    """The calibrated curve for this deal shape (the classic one when none fits)."""
    return CURVES.get((rules.hand_size, rules.wildcard_count), BidCurve())


def control_count(hand: RankCounts, wild: tuple[int, ...]) -> float:
    """Top cards and bombs: 2s, jokers (the big one more), bombs, wildcards."""
    score = hand[12] + 1.5 * hand[13] + 2.0 * hand[14]
    if hand[13] and hand[14]:
        score += 2.0  # a rocket
    score += 2.0 * sum(1 for r in range(13) if hand[r] >= 4 and r not in wild)
    score += 1.5 * sum(hand[r] for r in wild)
    return score


def landlord_chance(
    planner: Planner,
    hand: RankCounts,
    pool: RankCounts,
    bottom: int,
    rng: random.Random,
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
    z = (
        curve.bias
        + curve.per_score * score
        + curve.per_control * control_count(hand, planner.wild_ranks)
    )
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


class Bidder:
    """Bids and shows for one bot. The estimate of a hand is cached, and its sampled
    bottoms are seeded by the hand itself, so asking twice gives the same answer."""

    def __init__(self, seed: bytes, curve: BidCurve | None = None) -> None:
        self.seed = seed
        self.curve = curve
        self._chances: dict[tuple[object, ...], float] = {}

    def chance(self, view: PlayerView, planner: Planner, with_bottom: bool) -> float:
        rules = view.rules
        key = (rules, planner.wild_ranks, view.counts, with_bottom)
        hit = self._chances.get(key)
        if hit is not None:
            return hit
        if len(self._chances) > 4096:
            self._chances.clear()
        text = f"{rules.name}|{planner.wild_ranks}|{view.counts}|{with_bottom}".encode()
        rng = random.Random(hashlib.sha256(self.seed + b"|bid|" + text).digest())
        pool = tuple(d - h for d, h in zip(rules.max_copies, view.counts, strict=True))
        bottom = rules.bottom_size if with_bottom else 0
        curve = self.curve or curve_for(rules)
        chance = landlord_chance(planner, view.counts, pool, bottom, rng, curve)
        self._chances[key] = chance
        return chance

    def bid(self, view: PlayerView, planner: Planner) -> Bid:
        curve = self.curve or curve_for(view.rules)
        seat = view.seat
        chance = self.chance(view, planner, with_bottom=True)
        if view.rules.bidding is Bidding.CALL_SCORE:
            highest = max((b.score for b in view.bids), default=0)
            want = next((score for at, score in curve.call_at if chance >= at), 0)
            return Bid.call(seat, want) if want > highest else Bid.pass_(seat)
        called = any(b.action is BidAction.CALL for b in view.bids)
        if not called:
            return Bid.call(seat) if chance >= curve.call_grab_at else Bid.pass_(seat)
        return Bid.grab(seat) if chance >= curve.grab_at else Bid.pass_(seat)

    def show(self, view: PlayerView, planner: Planner) -> bool:
        """Show only a hand that is all but won (the show multiplies the stake, §6)."""
        if view.landlord is not None and view.landlord != view.seat:
            return False
        curve = self.curve or curve_for(view.rules)
        return self.chance(view, planner, with_bottom=view.landlord is None) >= curve.show_at
