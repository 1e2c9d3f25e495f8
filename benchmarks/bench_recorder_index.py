#!/usr/bin/env python3
"""The recorder's write path with the desk's hand index, in one process: a fetched
batch's events stored by the real ``Record`` use case on the real store, and the index
kept either as the recorder keeps it (``HandIndex.apply_many``: one transaction for the
batch's streams) or one transaction per stream (``HandIndex.apply`` each).

    .venv/bin/python benchmarks/bench_recorder_index.py [--hands 48] [--batch 16]
        [--postgres URL]

Hands are self-played with greedy bots and signed with keys made here; 8 hands run at
once, their events interleaved as the bus delivers them, fetched ``--batch`` at a time.
Each round stores fresh hands with each way, one after the other; printed: CPU and wall
ms per hand, and batch / per stream.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import random
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from ddz.adapters.codec import envelope_for
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.service_db.hand_index import HandIndex
from ddz.adapters.store import create_store
from ddz.audit.store.sample import SampleKeys
from ddz.domain.players import GreedyPlayer
from ddz.domain.ruleset import CLASSIC
from ddz.domain.selfplay import play_hand
from ddz.domain.settlement import RoomSettings
from ddz.v1.envelope_pb2 import EventEnvelope

from services.recorder.use_cases.handlers import Record

AT_ONCE = 8  # hands in play together, as with `ddz bench e2e --tables 8`
Streams = Sequence[tuple[str, Sequence[bytes]]]


def signed_hand(keys: SampleKeys, hand_id: str, seed: int) -> list[bytes]:
    bots = [GreedyPlayer(random.Random(seat)) for seat in range(3)]
    played, _ = play_hand(CLASSIC, RoomSettings(), bots, seed.to_bytes(32, "big"), hand_id=hand_id)
    at = dt.datetime.now(dt.UTC)
    return [
        keys.seal(EventEnvelope.FromString(envelope_for(
            f"hand-{hand_id}", version, event, "cause", "corr", "bench",
            event_id=f"{hand_id}-{version}", occurred_at=at)))
        for version, event in enumerate(played, start=1)
    ]  # fmt: skip


def arrivals(hands: list[list[bytes]], batch: int) -> list[list[bytes]]:
    """The hands' events as fetched batches: ``AT_ONCE`` hands interleaved."""
    events: list[bytes] = []
    for first in range(0, len(hands), AT_ONCE):
        group = hands[first : first + AT_ONCE]
        for i in range(max(map(len, group))):
            events += [h[i] for h in group if i < len(h)]
    return [events[i : i + batch] for i in range(0, len(events), batch)]


def per_stream(index: HandIndex) -> Callable[[Streams], None]:
    def apply(streams: Streams) -> None:
        for stream_id, envelopes in streams:
            index.apply(stream_id, envelopes)

    return apply


async def one_way(
    url: str, way: str, keys: SampleKeys, hands: int, batch: int
) -> tuple[float, float]:
    store = create_store(url, upgrade=True)
    try:
        upgrade_service_db(store.engine)
        index = HandIndex(store.engine)
        keep = index.apply_many if way == "batch" else per_stream(index)
        record = Record(store, keyring=keys.keyring, on_stored=keep)
        tag = uuid.uuid4().hex[:8]
        batches = arrivals([signed_hand(keys, f"{tag}{n}", n) for n in range(hands)], batch)
        cpu, wall = time.process_time(), time.perf_counter()
        for fetched in batches:
            await record(fetched)
        return (time.process_time() - cpu) / hands * 1e3, (time.perf_counter() - wall) / hands * 1e3
    finally:
        store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=48)
    parser.add_argument("--batch", type=int, default=16, help="events a fetch returns")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--postgres", metavar="URL", help="also on this PostgreSQL")
    args = parser.parse_args()
    keys = SampleKeys.generate()
    with tempfile.TemporaryDirectory() as scratch:
        urls = [f"sqlite:///{Path(scratch) / 'events.sqlite3'}"] + (
            [args.postgres] if args.postgres else []
        )
        for url in urls:
            for round_ in range(args.rounds):
                stream = await one_way(url, "stream", keys, args.hands, args.batch)
                batch = await one_way(url, "batch", keys, args.hands, args.batch)
                store = url.split(":")[0]
                print(f"{store:10} round {round_}: CPU ms/hand, per stream {stream[0]:.2f}, "
                      f"per batch {batch[0]:.2f} ({batch[0] / stream[0]:.2f}); "
                      f"wall {stream[1]:.2f}, {batch[1]:.2f} "
                      f"({batch[1] / stream[1]:.2f})")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
