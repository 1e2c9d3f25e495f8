"""Several instances of the settlement, bot and dealer services on one bus and one store
(real nats-server, SQLite).

- settlement: two instances share the durable consumer; every hand applied once, each
  instance applied some, balances read the same on both.
- bot: a second instance takes half the partitions and replays no history; both play,
  no move ever races another (no VERSION_CONFLICT); the first one cut off mid-play, the
  second takes its partitions and every hand finishes.
- dealer: two instances on one seed table; hands dealt by either end (their seeds
  revealed through the other); one hand id asked of both at once is dealt once.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from audit_kit import PLAYERS, deal_request, play_hands
from ddz.adapters import codec
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.subjects import ALL_SUBJECTS, parse_subject
from ddz.adapters.runtime.nats_server import NatsServer
from ddz.audit.store.sample import Mischief
from ddz.v1 import (
    hand_events_pb2,
    recorder_pb2,
    settlement_pb2,
    settlement_pb2_grpc,
)
from deal_kit import assigned
from suite_kit import (
    CORE,
    TTL,
    Suite,
    consumers_idle,
    cut,
    eventually,
    instances,
    running_suite,
    suite_settings,
    when,
)

# --- settlement: instances share the durable consumer -------------------------------------


@pytest.fixture
async def core(bus: EventBus, nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[Suite]:
    settings = suite_settings(tmp_path, nats_server.url)
    async with running_suite(CORE, settings, bus) as suite:
        yield suite


async def balances(channel: grpc.aio.Channel) -> dict[str, tuple[int, int]]:
    stub = settlement_pb2_grpc.SettlementServiceStub(channel)
    found = {}
    for player in PLAYERS:
        answer = await stub.GetBalance(settlement_pb2.GetBalanceRequest(player_id=player))
        found[player] = (answer.balance, answer.hands)
    return found


async def test_two_settlement_instances_share_the_hands_and_agree_on_balances(
    core: Suite,
) -> None:
    suite = core
    second_channel = await suite.start_another("settlement")
    played = await play_hands(suite, "classic", 12, seed=7, odds=Mischief(refuse=0), concurrency=4)
    await eventually(lambda: consumers_idle(suite.bus, "settlement"), timeout=60.0)

    applied = [app.consumer.apply.applied for app in instances(suite, "settlement")]
    assert sum(applied) == len(played)  # each hand applied once, by one instance
    assert all(count > 0 for count in applied), applied  # and both had a share
    # Balances are the store's projection: read the same on either instance.
    first, second = await balances(suite.channel("settlement")), await balances(second_channel)
    assert first == second
    assert sum(hands for _balance, hands in first.values()) == 3 * len(played)


# --- bot: hands shared by partition leases ------------------------------------------------

BOT_SEATS = [hand_events_pb2.SeatInfo(player_id=f"bot-{i}", is_bot=True) for i in range(3)]


@pytest.fixture
async def bots(bus: EventBus, nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[Suite]:
    """The core services and one bot instance, the hands shared by 8 partitions."""
    settings = suite_settings(tmp_path, nats_server.url)
    settings = replace(
        settings, bus=replace(settings.bus, lease_ttl=TTL),
        bot=replace(settings.bot, bot_partitions=8, bot_player="greedy"),
    )  # fmt: skip
    async with running_suite((*CORE, "bot"), settings, bus) as suite:
        yield suite


async def deal_bot_hands(suite: Suite, count: int) -> list[str]:
    hand_ids = []
    for _ in range(count):
        hand_id = "inst-" + uuid.uuid4().hex[:10]
        request = await assigned(suite.bus, suite.settings, hand_id, seats=BOT_SEATS)
        await suite.dealer.Deal(request)
        hand_ids.append(hand_id)
    return hand_ids


async def all_settled(suite: Suite, hand_ids: list[str]) -> None:
    stub = suite.settlement

    async def every_one() -> bool:
        for hand_id in hand_ids:
            try:
                await stub.GetLedger(settlement_pb2.GetLedgerRequest(hand_id=hand_id))
            except grpc.aio.AioRpcError as exc:
                if exc.code() is not grpc.StatusCode.NOT_FOUND:
                    raise
                return False
        return True

    await eventually(every_one, timeout=60.0, every=0.2)


async def delivered(bus: EventBus, durable: str) -> int:
    """Messages the server has sent the consumer ``durable`` so far."""
    info = await bus.js.consumer_info(bus.stream, durable)
    return int(info.delivered.consumer_seq or 0) if info.delivered else 0


async def events_on_bus(bus: EventBus, hand_ids: list[str]) -> int:
    """The events of these hands on the bus, public and internal."""
    info = await bus.js.stream_info(bus.stream, subjects_filter=ALL_SUBJECTS)
    streams = {f"hand-{hand_id}" for hand_id in hand_ids}
    subjects = info.state.subjects or {}
    return sum(n for subject, n in subjects.items() if parse_subject(subject).stream_id in streams)


def split(apps: list[Any]) -> bool:
    """Every instance holds some partitions, and every partition has one holder."""
    held = [app.partitions.held for app in apps]
    return all(held) and sorted(k for h in held for k in h) == list(range(8))


async def test_bot_instances_share_the_hands_one_decision_per_turn(bots: Suite) -> None:
    suite = bots
    (first,) = instances(suite, "bot")
    assert first.partitions.held == frozenset(range(8))  # alone: every partition
    before = await deal_bot_hands(suite, 4)
    await all_settled(suite, before)

    # A second instance joins: the partitions are split, and it replays nothing.
    await suite.start_another("bot")
    first, second = instances(suite, "bot")
    await eventually(when(lambda: split([first, second])), timeout=30.0)
    info = await suite.bus.js.consumer_info(suite.bus.stream, second.durable)
    assert str(getattr(info.config.deliver_policy, "value", info.config.deliver_policy)) == "new"
    assert not set(before) & (set(second.feed.hands) | set(second.feed._ended))

    accepted = [app.autoplay.stats.accepted for app in (first, second)]
    sent = [await delivered(suite.bus, app.durable) for app in (first, second)]
    hands = await deal_bot_hands(suite, 12)
    await all_settled(suite, hands)
    stats = [app.autoplay.stats for app in (first, second)]
    assert all(s.accepted > a for s, a in zip(stats, accepted, strict=True))  # both played
    # Each is sent its own hands' events only (its consumer filters on its partitions'
    # subjects), and between them every event of every hand.
    events = await events_on_bus(suite.bus, hands)
    shares = [
        await delivered(suite.bus, app.durable) - n
        for app, n in zip((first, second), sent, strict=True)
    ]
    assert all(0 < share < events for share in shares), (shares, events)
    assert sum(shares) >= events, (shares, events)
    # One decision per bot turn: no move ever raced another for a version.
    assert [s.conflicts for s in stats] == [0, 0]
    assert [s.refused for s in stats] == [0, 0]

    # The first instance vanishes mid-play: the second takes its partitions and
    # finishes every hand, the first one's included.
    more = await deal_bot_hands(suite, 6)
    await cut(first.bus)
    await eventually(when(lambda: second.partitions.held == frozenset(range(8))),
                     timeout=10 * TTL)  # fmt: skip
    await all_settled(suite, more)


# --- dealer: N instances on one seed table -------------------------------------------------


async def test_two_dealers_deal_and_either_serves_the_seeds(core: Suite) -> None:
    suite = core
    second = await suite.another("dealer")  # the suite's clients of the second dealer
    # Hands dealt by the second dealer, played to the end: their seeds are revealed by
    # the rules service through the first dealer (one seed table for both).
    played = await play_hands(second, "classic", 3, seed=9, odds=Mischief(refuse=0))
    played += await play_hands(suite, "classic", 3, seed=10, odds=Mischief(refuse=0))
    await eventually(lambda: consumers_idle(suite.bus, "recorder", "settlement"), timeout=60.0)
    for hand in played:
        answer = await suite.recorder.ReadStream(
            recorder_pb2.ReadStreamRequest(stream_id=f"hand-{hand.hand_id}")
        )
        assert codec.parse_envelope(answer.events[-1].envelope).type == "seed_revealed"

    # One hand id asked of both at once: dealt once, the other refused.
    hand_id = "twice-" + uuid.uuid4().hex[:10]
    request = await deal_request(suite.bus, suite.settings, hand_id, "classic", random.Random(3))
    stubs = [suite.dealer, second.dealer]
    answers = await asyncio.gather(*(stub.Deal(request) for stub in stubs), return_exceptions=True)
    refused = [a for a in answers if isinstance(a, grpc.aio.AioRpcError)]
    assert len(refused) == 1, answers
    assert refused[0].code() is grpc.StatusCode.ALREADY_EXISTS
