"""No hand waits for a message that was lost: the bot service over a real nats-server.

The core services and the bot run in this process (``core_suite``, then the bot started
and stopped by the test). A hand is dealt through the dealer directly, so no table's
turn clock is involved; the bot plays its bot seats (and disconnected seats) to the end.

- A message delivered to a bot that died before acking it is delivered again, and the
  hand finishes (the bot's consumer acks each message it applied, never cumulatively).
- A bot that starts while a hand already waits on one of its seats (every event of it
  acknowledged before) finds the hand and plays it.
- A person on turn in a hand nobody moves has their turn timed out by the bot's watchdog
  after the turn timeout and the stall margin (as a table's clock would: no disconnect),
  and the bot finishes the hand for them, each of their turns timed out in turn.
- The feed creates its consumer again when the server has lost it, replaces one of the
  kind it used before (push, cumulative acks), and follows on across a nats-server
  restart, with its store or without.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import nats.errors
import pytest
from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_feed import HandFeed
from ddz.adapters.messaging.hand_stream import HandCursor
from ddz.adapters.messaging.subjects import ALL_SUBJECTS
from ddz.adapters.runtime.nats_server import NatsServer, start_nats_server
from ddz.adapters.security.event_signing import event_keyring
from ddz.domain.hand import (
    Disconnect,
    HandState,
    Phase,
    SeatInfo,
    StartHand,
    decide,
    hand_events,
    replay,
)
from ddz.domain.hand.events import (
    BidMade,
    CardsDealt,
    HandStarted,
    MoveBy,
    PlayerDisconnected,
    SeedRevealed,
    TurnTimedOut,
)
from ddz.domain.ruleset import CLASSIC
from ddz.domain.settlement import RoomSettings
from ddz.v1 import hand_events_pb2, rules_pb2
from deal_kit import assigned
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig
from signing_kit import DEALER, KEYRING
from suite_kit import Suite, consumers_idle, eventually

BOT = "bot"  # the bot service's durable consumer
PLAY_WAIT = 120.0  # seconds a hand may take to be played out on a loaded machine


def seats(*bots: bool) -> list[hand_events_pb2.SeatInfo]:
    names = iter(("ann", "bea", "cai"))
    return [
        hand_events_pb2.SeatInfo(player_id=f"bot-{i}" if bot else next(names), is_bot=bot)
        for i, bot in enumerate(bots)
    ]


async def deal(suite: Suite, *bots: bool, first_bidder: int | None = None) -> str:
    hand_id = "lost-" + uuid.uuid4().hex[:10]
    request = await assigned(
        suite.bus, suite.settings, hand_id, seats=seats(*bots), first_bidder=first_bidder
    )
    await suite.dealer.Deal(request)
    return hand_id


async def events_of(suite: Suite, hand_id: str) -> list[object]:
    read, _cursor = await hand_stream.read(
        suite.bus, hand_id, keyring=event_keyring(suite.settings.keys)
    )
    return [item.event for item in read]


async def played_out(suite: Suite, hand_id: str) -> list[object] | None:
    """The hand's events once its last one (the seed's reveal) is in."""
    events = await events_of(suite, hand_id)
    return events if events and isinstance(events[-1], SeedRevealed) else None


async def bot_stopped_with_its_consumer(suite: Suite) -> None:
    """The bot has run once (its durable consumer exists, caught up) and is stopped."""
    await suite.start("bot")
    await eventually(lambda: consumers_idle(suite.bus, BOT))
    await suite.stop("bot")


async def take_from_the_bot(url: str, *, ack: bool) -> list[Msg]:
    """Be the bot for a moment: pull what its durable consumer holds, ack it or not,
    and drop the connection (a process that died right there)."""
    ghost = await EventBus.connect(url, name="ghost-bot")
    try:
        pull = await ghost.js.pull_subscribe_bind(durable=BOT, stream=ghost.stream)
        taken: list[Msg] = []
        while True:
            try:
                batch = await pull.fetch(256, timeout=1.0)
            except TimeoutError:
                break
            if not batch:
                break
            taken += batch
        if ack:
            for msg in taken:
                await msg.ack_sync()
    finally:
        await ghost.nc.close()  # no drain, no flush of anything but the acks above
    return taken


@pytest.fixture
def greedy(core_suite: Suite) -> Suite:
    """The bot plays with the simple player (a hand takes a second, not ten)."""
    core_suite.settings = replace(
        core_suite.settings, bot=replace(core_suite.settings.bot, bot_player="greedy")
    )
    return core_suite


async def test_an_event_delivered_but_never_acked_is_delivered_again(
    greedy: Suite, nats_server: NatsServer
) -> None:
    await bot_stopped_with_its_consumer(greedy)
    hand_id = await deal(greedy, True, True, True)
    taken = await take_from_the_bot(nats_server.url, ack=False)
    streams = {codec.parse_envelope(m.data).stream_id for m in taken}
    assert {s for s in streams if not s.startswith("table-")} == {f"hand-{hand_id}"}
    info = await greedy.bus.js.consumer_info(greedy.bus.stream, BOT)
    assert info.num_ack_pending == len(taken)  # delivered, never acknowledged

    await greedy.start("bot")
    await eventually(lambda: played_out(greedy, hand_id), timeout=PLAY_WAIT)
    # What the dead bot was sent came again to the new one, which acked it.
    await eventually(lambda: consumers_idle(greedy.bus, BOT), timeout=PLAY_WAIT)


async def test_a_bot_started_while_a_hand_waits_on_it_plays_the_hand(
    greedy: Suite, nats_server: NatsServer
) -> None:
    await bot_stopped_with_its_consumer(greedy)
    # Seat 0 is a person who dropped; seats 1 and 2 are bots: every seat is the bot's.
    hand_id = await deal(greedy, False, True, True)
    dropped = rules_pb2.DecideRequest(hand_id=hand_id, seat=0, request_id=uuid.uuid4().hex)
    codec.set_command(dropped, Disconnect(0))
    assert (await greedy.rules.Decide(dropped)).accepted
    # A bot took every event in and acknowledged it, then died before it moved.
    taken = await take_from_the_bot(nats_server.url, ack=True)
    assert len(taken) >= 3
    assert await consumers_idle(greedy.bus, BOT)  # nothing will be delivered again

    await greedy.start("bot")
    events = await eventually(lambda: played_out(greedy, hand_id), timeout=PLAY_WAIT)
    assert replay(hand_events(events)).phase is Phase.ENDED


@pytest.mark.suite(turn_timeout=0.5)
async def test_the_watchdog_times_out_a_person_nobody_sees_and_the_bot_finishes(
    greedy: Suite,
) -> None:
    greedy.settings = replace(
        greedy.settings, clocks=replace(greedy.settings.clocks, stall_margin=0.5)
    )
    await greedy.start("bot")
    # Dealt without a table: no turn clock. Seat 0, a person, bids first and never does.
    hand_id = await deal(greedy, False, True, True, first_bidder=0)
    events = await eventually(lambda: played_out(greedy, hand_id), timeout=PLAY_WAIT)
    after_deal = [e for e in events if not isinstance(e, HandStarted | CardsDealt)]
    # Nobody had moved: the first thing after the deal is seat 0's turn timed out, then
    # the bot's bid for it; the person never comes back, and never is the escapee.
    assert isinstance(after_deal[0], TurnTimedOut) and after_deal[0].seat == 0
    assert isinstance(after_deal[1], BidMade)
    assert (after_deal[1].seat, after_deal[1].acted_by) == (0, MoveBy.BOT_TURN_TIMEOUT)
    assert not [e for e in events if isinstance(e, PlayerDisconnected)]


async def test_the_feed_creates_its_consumer_again_when_the_server_lost_it(
    greedy: Suite, nats_server: NatsServer
) -> None:
    bus = await EventBus.connect(nats_server.url, name="feed-test")
    feed = HandFeed(bus, keyring=event_keyring(greedy.settings.keys), keep_ended=0)
    try:
        await feed.follow("lost-and-found")
        assert feed.healthy
        first = await deal(greedy, False, False, False)
        await eventually(lambda: _followed(feed, first))
        await bus.js.delete_consumer(bus.stream, "lost-and-found")
        second = await deal(greedy, False, False, False)
        await eventually(lambda: _followed(feed, second))
        await eventually(lambda: _healthy(feed))
        # Made again from where it had got to: the first hand is not brought again.
        assert await eventually(lambda: consumers_idle(bus, "lost-and-found"))
    finally:
        await feed.close()
        await bus.close()
    assert not feed.healthy


async def _followed(feed: HandFeed, hand_id: str) -> bool:
    fold = feed.get(hand_id)
    return fold is not None and fold.state.phase is Phase.BIDDING


async def _healthy(feed: HandFeed) -> bool:
    return feed.healthy


async def test_a_consumer_of_the_old_kind_is_replaced_from_where_it_had_acknowledged(
    greedy: Suite, nats_server: NatsServer
) -> None:
    """A push consumer with cumulative acks (what the feed used before) cannot become a
    pull consumer in place: it is replaced by one that starts after its ack floor."""
    first = await deal(greedy, False, False, False)
    await greedy.bus.js.add_consumer(
        greedy.bus.stream,
        ConsumerConfig(
            durable_name="old-kind",
            deliver_subject="_ddz.deliver.old-kind",
            filter_subject=ALL_SUBJECTS,
            ack_policy=AckPolicy.ALL,
        ),
    )
    bus = await EventBus.connect(nats_server.url, name="feed-test")
    feed = HandFeed(bus, keyring=event_keyring(greedy.settings.keys), keep_ended=0)
    try:
        await feed.follow("old-kind")
        info = await bus.js.consumer_info(bus.stream, "old-kind")
        assert info.config.deliver_subject is None
        assert info.config.ack_policy == AckPolicy.EXPLICIT
        await eventually(lambda: _followed(feed, first))  # nothing had been acknowledged
        await eventually(lambda: consumers_idle(bus, "old-kind"))
    finally:
        await feed.close()
        await bus.close()


@pytest.mark.parametrize("store", ["kept", "lost"])
async def test_the_feed_follows_across_a_server_restart(store: str, tmp_path: Path) -> None:
    """A nats-server of its own, restarted on the same port with its store (the consumer
    is still there) or without (the stream and the consumer are made again): the feed
    says it is not healthy while the server is away, then follows the next hand."""
    server = start_nats_server(tmp_path / "first", port=0)
    bus = await EventBus.connect(server.url, name="feed-test")
    feed = HandFeed(bus, keyring=KEYRING, keep_ended=0)
    try:
        await bus.ensure_stream()
        await feed.follow("restarted")
        await publish_deal(bus, "before")
        await eventually(lambda: _followed(feed, "before"))
        server.stop()
        await eventually(lambda: _unhealthy(feed))
        again = tmp_path / ("first" if store == "kept" else "second")
        server = start_nats_server(again, port=server.port)
        await eventually(lambda: _healthy(feed), timeout=30)
        await eventually(lambda: _published(bus, "after"), timeout=30)
        await eventually(lambda: _followed(feed, "after"), timeout=30)
    finally:
        await feed.close()
        await bus.close()
        server.stop()


async def publish_deal(bus: EventBus, hand_id: str) -> None:
    people = (SeatInfo("ann"), SeatInfo("bea"), SeatInfo("cai"))
    start = StartHand(hand_id, CLASSIC, RoomSettings(), people, bytes(32))
    events = decide(HandState(), start, None)
    assert isinstance(events, list)
    await hand_stream.publish(
        bus,
        hand_id,
        HandCursor(),
        events,
        causation_id="t",
        correlation_id="t",
        producer="t",
        signer=DEALER,
    )


async def _published(bus: EventBus, hand_id: str) -> bool:
    """Publish the hand's deal once the server takes it (its stream may be coming back)."""
    try:
        await publish_deal(bus, hand_id)
    except (nats.errors.Error, TimeoutError):
        return False
    return True


async def _unhealthy(feed: HandFeed) -> bool:
    return not feed.healthy
