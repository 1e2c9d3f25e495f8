#!/usr/bin/env python3
"""What the table spends building the views it streams: every seat's ``PlayerView``
message at every position of a hand, as ``WatchHand`` sends them.

    .venv/bin/python benchmarks/bench_views.py [--hands 200] [--rounds 3]

A table sends each of a hand's three seats its view after every event (``view_to_pb``).
The part of a view every seat sees alike is encoded once per position and shared by the
three (``ddz.adapters.codec.views``). Measured in one process, CPU time, the rounds
interleaved:

- ``three seats a position``: the table's case, each position's three views one after
  another;
- ``each view alone``: the same views with nothing kept between two of them (what every
  view cost before the public part was shared, and what a stream that lags behind the
  hand's shared state still costs).

Hands of the four variants, greedy bots, from a fixed seed.
"""

from __future__ import annotations

import argparse
import time

from ddz.adapters.codec import views
from ddz.bot.kinds import make_player
from ddz.domain.hand import HandState, PlayerView, evolve, view_for
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI
from ddz.domain.selfplay import hand_seed, play_hand, run_seed
from ddz.domain.settlement import RoomSettings


def positions(hands: int) -> list[list[PlayerView]]:
    """The three seats' views at every position of ``hands`` hands."""
    players = [make_player("greedy", seed) for seed in range(3)]
    master = run_seed("bench-views")
    variants = (CLASSIC, CT, LAIZI, TIANDI)
    seats: list[list[PlayerView]] = []
    for index in range(hands):
        rules = variants[index % len(variants)]
        events, _ = play_hand(rules, RoomSettings(), players, hand_seed(master, index),
                              hand_id=f"h{index}")  # fmt: skip
        state = HandState()
        for event in events:
            state = evolve(state, event)
            seats.append([view_for(state, seat) for seat in range(3)])
    return seats


def shared(seats: list[list[PlayerView]], base: int) -> float:
    started = time.process_time()
    for version, trio in enumerate(seats, base):
        for view in trio:
            views.view_to_pb(view, version=version, table_id="t", now=1.0)
    return time.process_time() - started


def alone(seats: list[list[PlayerView]], base: int) -> float:
    started = time.process_time()
    for version, trio in enumerate(seats, base):
        for view in trio:
            views.forget_encodings()
            views.view_to_pb(view, version=version, table_id="t", now=1.0)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seats = positions(args.hands)
    count = 3 * len(seats)
    totals = {"three seats a position": 0.0, "each view alone": 0.0}
    for round_ in range(args.rounds):
        base = 1 + round_ * len(seats) * 10  # new versions: nothing kept from a round before
        totals["three seats a position"] += shared(seats, base)
        totals["each view alone"] += alone(seats, base + len(seats) * 5)
    per_view = {label: total / (args.rounds * count) * 1e6 for label, total in totals.items()}
    print(
        f"{args.hands} hands of the four variants, {len(seats) / args.hands:.1f} positions a "
        f"hand, {count} views a round, {args.rounds} rounds interleaved; CPU, one process:"
    )
    for label, value in per_view.items():
        per_hand = value * count / args.hands / 1000
        print(f"  {label:28s} {value:6.1f} us a view  {per_hand:5.2f} ms a hand (three seats)")
    ratio = per_view["three seats a position"] / per_view["each view alone"]
    print(f"three seats a position / each view alone: {ratio:.2f}")


if __name__ == "__main__":
    main()
