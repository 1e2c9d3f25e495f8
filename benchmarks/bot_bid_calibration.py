"""Calibrate the bot's bidding curve (ddz.bot.bidding.BidCurve) by self-play.

For random deals and each seat, the bot's strength score of that seat's hand (the
mean plan score over sampled bottoms, exactly what the bot computes when bidding)
is recorded, then the hand is played with that seat as the fixed landlord and bots
in all three seats. A logistic fit of "landlord won" on the score gives the curve's
``mid`` (the score at which the landlord wins half the time) and ``scale``.

    .venv/bin/python benchmarks/bot_bid_calibration.py --variant classic --deals 300
"""

from __future__ import annotations

import argparse
import json
import math
import random

from ddz.bot import Bot, Budget
from ddz.bot.bidding import BidCurve, control_count
from ddz.bot.eval import deal_seed, eval_room, play_fixed
from ddz.bot.parts import split_wild
from ddz.bot.plan import Planner
from ddz.domain.hand import Hand, StartHand
from ddz.domain.multipliers import Side
from ddz.domain.ruleset import ruleset_for


def features(rules_name: str, seed: bytes, seat: int, samples: int) -> tuple[float, float]:
    rules = ruleset_for(rules_name)
    hand = Hand()
    from ddz.bot.eval import SEATS

    hand.execute(StartHand("cal", rules, eval_room(rules), SEATS, seed, first_bidder=seat))
    state = hand.state
    wild = tuple(sorted(int(r) for r in state.wild))
    counts = state.counts[seat]
    pool = tuple(d - h for d, h in zip(rules.max_copies, counts, strict=True))
    planner = Planner(rules, wild)
    rng = random.Random(f"cal/{seat}")
    deck = [r for r, n in enumerate(pool) for _ in range(n)]
    total = 0.0
    for _ in range(samples):
        c = list(counts)
        for r in rng.sample(deck, rules.bottom_size):
            c[r] += 1
        total += planner.score(*split_wild(tuple(c), wild))
    return total / samples, control_count(counts, wild)


def fit(xs: list[float], ys: list[int]) -> tuple[float, float]:
    """Logistic regression y ~ sigmoid((x - mid) / scale) by Newton's method on the
    standardised score; returns (mid, scale)."""
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / n) or 1.0
    zs = [(x - mean) / sd for x in xs]
    a, b = 0.0, 0.0
    for _ in range(100):
        ga = gb = haa = hab = hbb = 0.0
        for z, y in zip(zs, ys, strict=True):
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, a + b * z))))
            ga += y - p
            gb += (y - p) * z
            w = p * (1 - p) + 1e-9
            haa += w
            hab += w * z
            hbb += w * z * z
        det = haa * hbb - hab * hab
        if det <= 0:
            break
        da = (hbb * ga - hab * gb) / det
        db = (haa * gb - hab * ga) / det
        a += da
        b += db
        if abs(da) + abs(db) < 1e-9:
            break
    # sigmoid(a + b (x - mean) / sd) = sigmoid((x - mid) / scale)
    scale = sd / b
    return mean - a * scale, scale


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", default="classic")
    parser.add_argument("--deals", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rules = ruleset_for(args.variant)
    xs: list[float] = []
    cs: list[float] = []
    ys: list[int] = []
    samples = BidCurve().samples
    for deal in range(args.deals):
        seed = deal_seed(args.seed, deal)
        seat = deal % 3
        score, controls = features(args.variant, seed, seat, samples)
        xs.append(score)
        cs.append(controls)
        bots = [Bot(args.seed, budget=Budget(max_cards=12)) for _ in range(3)]
        state = play_fixed(rules, eval_room(rules), bots, seed, seat, f"cal-{deal}")
        ys.append(int(state.winner is Side.LANDLORD))
    with open(f"/tmp/bidcal-{args.variant}.json", "w") as out:
        json.dump({"xs": xs, "cs": cs, "ys": ys}, out)
    mid, scale = fit(xs, ys)
    print(
        f"{args.variant}: {len(xs)} hands, landlord wins {sum(ys) / len(ys):.1%}, "
        f"mid {mid:.2f}, scale {scale:.2f}"
    )
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):
        print(f"  score quantile {q:.2f}: {sorted(xs)[int(q * (len(xs) - 1))]:.1f}")


if __name__ == "__main__":
    main()
