#!/usr/bin/env python3
"""The least work the suite must do for one hand besides moving messages.

    .venv/bin/python benchmarks/bench_hand_work.py [--hands 300] [--player greedy]

``bench_bus_floor.py`` measures what JetStream and gRPC cost a hand with handlers that do
nothing. This script measures, in one process and CPU time, the work that no service can
skip on top of that: playing the hand (the bots' decisions and the rules' checks of every
move, deal to settlement), serialising each event's envelope once, decoding it once in
each of the four processes that read every event (recorder, table, bot, and the rules
service when it rebuilds a hand), folding it into the hand's state in the two that follow
hands live (table and bot), and storing the hand in SQLite. Their sum, added to the bus
and gRPC floors, bounds from below the CPU a hand costs the suite, hence from above the
hands/s two cores can give.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ddz.adapters import codec
from ddz.adapters.store import create_store
from ddz.bot.kinds import make_player
from ddz.domain.hand import Recorded
from ddz.domain.hand.state import replay
from ddz.domain.ruleset import CLASSIC
from ddz.domain.selfplay import hand_seed, play_hand, run_seed
from ddz.domain.settlement import RoomSettings
from ddz.player_kinds import PLAYER_KINDS

DECODERS = 4  # processes that decode every event: recorder, table, bot, rules
FOLDERS = 2  # processes that fold every event into a live hand state: table, bot


def per_hand_ms(work: Callable[[], object], hands: int) -> float:
    started = time.process_time()
    work()
    return (time.process_time() - started) * 1000 / hands


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=300)
    parser.add_argument("--player", choices=PLAYER_KINDS, default="greedy")
    args = parser.parse_args()
    players = [make_player(args.player, seed) for seed in range(3)]
    master = run_seed("bench-hand-work")
    hands: list[list[Recorded]] = []

    def play() -> None:
        for index in range(args.hands):
            events, _ = play_hand(
                CLASSIC, RoomSettings(), players, hand_seed(master, index), hand_id=f"h{index}"
            )
            hands.append(list(events))

    envelopes: list[list[bytes]] = []

    def encode() -> None:
        for index, events in enumerate(hands):
            envelopes.append(
                [
                    codec.envelope_and_bytes(f"hand-h{index}", version, event, "c", "c", "bench")[1]
                    for version, event in enumerate(events, 1)
                ]
            )

    def decode() -> None:
        for hand in envelopes:
            for data in hand:
                codec.decode_envelope(data)

    def fold() -> None:
        for events in hands:
            replay(events)  # type: ignore[arg-type]

    with tempfile.TemporaryDirectory() as tmp:
        store = create_store(f"sqlite:///{Path(tmp) / 'events.sqlite3'}", upgrade=True)

        def store_hands() -> None:
            for index, hand in enumerate(envelopes):
                store.append(f"hand-h{index}", 0, hand)

        figures = {
            f"play the hand ({args.player} bots, rules checks, settlement)": per_hand_ms(
                play, args.hands
            ),
            "serialise every envelope once": per_hand_ms(encode, args.hands),
            "decode every envelope once": per_hand_ms(decode, args.hands),
            "fold every event into the hand state once": per_hand_ms(fold, args.hands),
            "store the hand in SQLite (one append)": per_hand_ms(store_hands, args.hands),
        }
        store.close()
    events = sum(len(h) for h in hands) / args.hands
    print(f"{args.hands} classic hands, {events:.1f} events a hand; CPU ms a hand, one process:")
    for label, value in figures.items():
        print(f"  {label:58s} {value:6.2f}")
    play_ms, encode_ms, decode_ms, fold_ms, store_ms = figures.values()
    least = play_ms + encode_ms + DECODERS * decode_ms + FOLDERS * fold_ms + store_ms
    print(
        f"least the suite must do besides messaging: play + serialise + {DECODERS} decodes "
        f"+ {FOLDERS} folds + store = {least:.2f} ms a hand"
    )


if __name__ == "__main__":
    main()
