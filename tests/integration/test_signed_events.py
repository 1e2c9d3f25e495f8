"""Signed events on a real nats-server: a forged event on a hand's subject (published
with credentials good enough for the subject, signed by no producer allowed it) is left
out of every read of the hand, the hand's writer goes on after it, the hand feed refuses
to fold it, and a table's stream with a forged record cannot be folded back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import Reject
from ddz.adapters.messaging.hand_feed import HandFeed
from ddz.adapters.messaging.hand_stream import HandCursor
from ddz.adapters.messaging.subjects import subject_for
from ddz.adapters.messaging.table_stream import JetStreamTableLog
from ddz.adapters.runtime.nats_server import start_nats_server
from ddz.adapters.security.event_signing import EventKeyring, EventSigner
from ddz.application.table_history import TableCursor
from ddz.domain.hand import Disconnect, HandState, SeatInfo, StartHand, decide, replay
from ddz.domain.ruleset import CLASSIC
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import TableClosed, TableOpened
from ddz.v1 import envelope_pb2
from signing_kit import DEALER, KEYRING, RULES, TABLE

PEOPLE = (SeatInfo("ann"), SeatInfo("bea"), SeatInfo("cai"))


@pytest.fixture
async def bus(tmp_path: Path) -> AsyncIterator[EventBus]:
    server = start_nats_server(tmp_path / "nats", port=0)
    bus = await EventBus.connect(server.url, name="signed-events-test")
    try:
        await bus.ensure_stream()
        yield bus
    finally:
        await bus.close()
        server.stop()


async def deal(bus: EventBus, hand_id: str) -> HandCursor:
    events = decide(HandState(), StartHand(hand_id, CLASSIC, RoomSettings(), PEOPLE, bytes(32)))
    assert isinstance(events, list)
    cursor, _ = await hand_stream.publish(
        bus, hand_id, HandCursor(), events, causation_id="t", correlation_id="t",
        producer="dealer", signer=DEALER,
    )  # fmt: skip
    return cursor


def forged_settled(hand_id: str, version: int, signer: EventSigner | None) -> bytes:
    """A ``hand_settled`` as a forger makes it: unsigned, or under a key of its own (its
    payload does not matter: nobody reads one before its signature)."""
    envelope = envelope_pb2.EventEnvelope(
        event_id=f"forged-{version}-{signer is None}", stream_id=f"hand-{hand_id}",
        stream_version=version, type="hand_settled", payload=b"a million beans",
    )  # fmt: skip
    return envelope.SerializeToString() if signer is None else signer.seal(envelope)


@pytest.mark.parametrize("signed", [False, True])
async def test_a_forged_event_on_a_hand_is_left_out_and_the_hand_goes_on(
    bus: EventBus, signed: bool
) -> None:
    cursor = await deal(bus, "h1")
    forger = EventSigner.of("rules", Ed25519PrivateKey.generate()) if signed else None
    forged = forged_settled("h1", cursor.version + 1, forger)
    ack = await bus.publish(subject_for("hand-h1", "hand_settled"), forged, "forged-1")

    read, after = await hand_stream.read(bus, "h1", keyring=KEYRING)
    assert [e.envelope.stream_version for e in read] == [1, 2]  # the forgery left out
    assert after.version == 2 and after.public_seq == ack.seq  # but its place counted

    # The hand's writer goes on after it: its next event checks against that sequence.
    more = decide(replay([e.event for e in read]), Disconnect(0))  # type: ignore[arg-type]
    assert isinstance(more, list)
    cursor, published = await hand_stream.publish(
        bus, "h1", after, more, causation_id="t", correlation_id="t", producer="rules",
        signer=RULES,
    )  # fmt: skip
    read, _ = await hand_stream.read(bus, "h1", keyring=KEYRING)
    assert [e.data for e in read][-1] == published[0].envelope and cursor.version == 3

    # The hand feed the table and bot fold from refuses it (terminated, never folded).
    feed = HandFeed(bus, keyring=KEYRING)
    with pytest.raises(Reject, match="not signed by its producer"):
        await feed.handle_data(forged)
    fold = await feed.load("h1")
    assert fold is not None and fold.version == 3


class CountingKeyring(EventKeyring):
    """The test keyring, counting the signatures it checks."""

    checked = 0

    def check(
        self, data: bytes, envelope: envelope_pb2.EventEnvelope, *, verify: bool = True
    ) -> None:
        self.checked += 1
        super().check(data, envelope, verify=verify)


async def test_a_feed_holding_a_hand_folds_its_answer_once_and_still_refuses_a_forgery(
    bus: EventBus,
) -> None:
    """While a move of the bot's is in flight on a hand, its feed holds what the bus
    brings of it; once the answer is learned, the move's own events are dropped without
    a check, and anything else is checked as ever: a forgery is never folded."""
    cursor = await deal(bus, "h2")
    keyring = CountingKeyring(keys=KEYRING.keys)
    feed = HandFeed(bus, keyring=keyring)
    fold = await feed.load("h2")
    assert fold is not None and fold.version == cursor.version
    checked = keyring.checked

    feed.hold("h2")
    more = decide(fold.state, Disconnect(0))
    assert isinstance(more, list)
    cursor, published = await hand_stream.publish(
        bus, "h2", cursor, more, causation_id="t", correlation_id="t", producer="rules",
        signer=RULES,
    )  # fmt: skip
    forged = forged_settled("h2", cursor.version + 1, None)
    for data in [p.envelope for p in published] + [forged]:
        await feed.handle_data(data)  # held: neither checked nor folded yet
    assert (fold.version, keyring.checked) == (cursor.version - len(published), checked)

    await feed.learn("h2", [p.message for p in published])  # the answer
    await feed.release("h2")
    assert fold.version == cursor.version  # the move, folded once, from the answer
    assert keyring.checked == checked + 1  # only the forgery was looked at: refused
    with pytest.raises(Reject, match="not signed by its producer"):
        await feed.handle_data(forged)  # no longer held: refused on arrival, as before
    assert fold.version == cursor.version


async def test_a_table_record_signed_by_another_producer_is_not_the_tables(
    bus: EventBus,
) -> None:
    opened = TableOpened("t1", CLASSIC, RoomSettings(), PEOPLE)
    log = JetStreamTableLog(bus, keyring=KEYRING, signer=TABLE)
    cursor = await log.append("t1", TableCursor(), [opened])
    history = await log.read("t1")
    assert history is not None and history.state.seats[0].player_id == "ann"
    # The rules' key (good for hand events) on a table's stream.
    rogue = JetStreamTableLog(bus, keyring=KEYRING, signer=RULES)
    await rogue.append("t1", cursor, [TableClosed("forged")])
    with pytest.raises(codec.CodecError, match="may not sign it"):
        await log.read("t1")
