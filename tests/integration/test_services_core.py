"""The core services over a real nats-server and a real database.

Dealer, rules, recorder and settlement run in this process (the ``core_suite``
fixture), each started exactly as its process starts it on a random port. The
tests play whole hands by calling ``RulesService.Decide`` with moves chosen from the
acting seat's ``PlayerView`` (the seat's own cards come from the hand's internal
events, as the bot service reads them), then check what the store recorded.

Runs on SQLite always and on PostgreSQL when ``DDZ_TEST_DATABASE_URL`` is set (the
``database_url`` fixture of tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import nats
import nats.errors
import pytest
from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.server import (
    MIN_SERVER_VERSION,
    WrongLastSequence,
    check_server_version,
)
from ddz.adapters.messaging.subjects import stream_filter, subject_for
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.adapters.runtime.nats_server import NatsServer
from ddz.adapters.runtime.probes import health_status
from ddz.adapters.security.certs import ensure_certificates
from ddz.adapters.security.event_signing import event_keyring
from ddz.adapters.store import create_store
from ddz.application.errors import Kind, Refusal
from ddz.config import Settings
from ddz.domain import selfplay
from ddz.domain.hand import (
    Bid,
    Command,
    CommandRejected,
    HandState,
    Pass,
    Phase,
    RejectReason,
    evolve,
    hand_events,
    replay,
    view_for,
)
from ddz.domain.hand.events import HandSettled, Redealt
from ddz.domain.players import play_of
from ddz.domain.ruleset import CLASSIC, VARIANTS
from ddz.domain.settlement import RoomSettings
from ddz.player_kinds import make_player
from ddz.v1 import (
    dealer_pb2,
    hand_events_pb2,
    recorder_pb2,
    rules_pb2,
    settlement_pb2,
    settlement_pb2_grpc,
)
from deal_kit import assigned
from grpc_health.v1 import health_pb2
from signing_kit import DEALER, KEYRING
from suite_kit import Suite, consumers_idle, eventually

PLAYERS = ("alice", "bob", "carol")

pytestmark = pytest.mark.suite(max_message_bytes=64 * 1024)  # the oversized request


async def deal_request(
    suite: Suite, hand_id: str, variant: str, **fields: Any
) -> dealer_pb2.DealRequest:
    """The hand assigned at a table of its own, as the table service assigns it."""
    return await assigned(suite.bus, suite.settings, hand_id, variant, seats=PLAYERS, **fields)


def decide_request(hand_id: str, command: Command, **fields: Any) -> rules_pb2.DecideRequest:
    request = rules_pb2.DecideRequest(hand_id=hand_id, seat=command.seat, **fields)
    codec.set_command(request, command)
    return request


async def full_state(suite: Suite, hand_id: str) -> HandState:
    """The hand with every seat's cards, from the bus (as a bot reads it)."""
    read, _ = await hand_stream.read(suite.bus, hand_id, keyring=event_keyring(suite.settings))
    return replay(hand_events(r.event for r in read))


def choose(state: HandState, rng: random.Random) -> Command:
    """A legal command for the seat to act, from that seat's view only."""
    view = view_for(state, state.turn)
    if view.phase is Phase.BIDDING:
        return rng.choice(view.legal_bids())
    moves = view.legal_moves()
    if view.can_pass and (not moves or rng.random() < 0.3):
        return Pass(view.seat)
    return play_of(view.seat, rng.choice(moves))


@dataclass
class Driver:
    """Plays one hand through the services, one legal command at a time."""

    suite: Suite
    hand_id: str
    rng: random.Random
    state: HandState = field(default_factory=HandState)
    dealt: dealer_pb2.DealResponse | None = None
    responses: list[rules_pb2.DecideResponse] = field(default_factory=list)

    async def deal(self, variant: str) -> None:
        self.dealt = await self.suite.dealer.Deal(
            await deal_request(self.suite, self.hand_id, variant)
        )
        self.state = await full_state(self.suite, self.hand_id)

    async def step(self) -> None:
        command = choose(self.state, self.rng)
        response = await self.suite.rules.Decide(
            decide_request(self.hand_id, command, request_id=uuid.uuid4().hex)
        )
        assert response.accepted, (command, response.reason, response.message)
        self.responses.append(response)
        events = [codec.decode_envelope(e.SerializeToString())[1] for e in response.events]
        if any(isinstance(e, Redealt) for e in events):
            self.state = await full_state(self.suite, self.hand_id)  # the new deal is internal
            return
        for event in hand_events(events):
            self.state = evolve(self.state, event)

    async def play(self, steps: int = 500) -> None:
        for _ in range(steps):
            if self.state.phase is Phase.ENDED:
                return
            await self.step()
        if steps == 500:
            raise AssertionError("the hand did not end in 500 commands")


async def play_hand(suite: Suite, variant: str, hand_id: str, seed: int) -> Driver:
    driver = Driver(suite, hand_id, random.Random(seed))
    await driver.deal(variant)
    await driver.play()
    return driver


async def stored_stream(suite: Suite, hand_id: str) -> list[Any]:
    response = await suite.recorder.ReadStream(
        recorder_pb2.ReadStreamRequest(stream_id=f"hand-{hand_id}")
    )
    return list(response.events)


# --- tests ----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
async def test_full_hand_of_every_variant_is_stored_in_order_exactly_once(
    core_suite: Suite, variant: str
) -> None:
    hand_id = f"{variant}-{uuid.uuid4().hex[:8]}"
    played = await play_hand(core_suite, variant, hand_id, seed=len(variant))
    # Everything the rules and the dealer published, in order, straight from the bus.
    on_bus, cursor = await hand_stream.read(
        core_suite.bus, hand_id, keyring=event_keyring(core_suite.settings)
    )
    stored = await eventually(
        lambda: _if_length(stored_stream(core_suite, hand_id), cursor.version)
    )
    assert [s.envelope for s in stored] == [r.data for r in on_bus]
    assert [codec.parse_envelope(s.envelope).stream_version for s in stored] == list(
        range(1, cursor.version + 1)
    )
    # The public events each Decide answered with are the stored ones, byte for byte
    # in content (the response re-serialises; compare the parsed envelopes).
    answered = [e for r in played.responses for e in r.events]
    public = [codec.parse_envelope(s.envelope) for s in stored]
    public = [e for e in public if e.type not in codec.HIDDEN_TYPES]
    assert played.dealt is not None
    assert [e.event_id for e in [*played.dealt.events, *answered]] == [e.event_id for e in public]
    # The hand ended and settled; settlement applied the ledger to the players.
    final = replay(hand_events(r.event for r in on_bus))
    assert final.phase is Phase.ENDED and final.ledger is not None
    settlement = core_suite.settlement
    ledger = await eventually(lambda: _ledger(settlement, hand_id))
    assert list(ledger.hand.ledger.deltas) == list(final.ledger.deltas)
    assert list(ledger.hand.players) == list(PLAYERS)
    for seat, player in enumerate(PLAYERS):
        balance = await settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id=player))
        assert (balance.balance, balance.hands) == (final.ledger.deltas[seat], 1)


async def test_concurrent_hands_are_each_stored_in_order(core_suite: Suite) -> None:
    """Hands of every variant at once: the recorder's batches mix streams, and each
    stream is still stored complete and in order; balances add up over the hands."""
    hand_ids = {variant: f"many-{variant}-{uuid.uuid4().hex[:6]}" for variant in VARIANTS}
    drivers = await asyncio.gather(
        *(play_hand(core_suite, variant, hand_id, seed=99) for variant, hand_id in hand_ids.items())
    )
    totals = dict.fromkeys(PLAYERS, 0)
    for driver in drivers:
        on_bus, _ = await hand_stream.read(
            core_suite.bus, driver.hand_id, keyring=event_keyring(core_suite.settings)
        )
        stored = await stored_complete(core_suite, driver.hand_id)
        assert [s.envelope for s in stored] == [e.data for e in on_bus]
        assert driver.state.ledger is not None
        for seat, player in enumerate(PLAYERS):
            totals[player] += driver.state.ledger.deltas[seat]
    settlement = core_suite.settlement
    for driver in drivers:
        await eventually(lambda hand_id=driver.hand_id: _ledger(settlement, hand_id))
    for player, total in totals.items():
        balance = await settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id=player))
        assert (balance.balance, balance.hands) == (total, len(VARIANTS))
    listed = await settlement.ListLedgers(settlement_pb2.ListLedgersRequest(player_id="bob"))
    assert sorted(ledger.hand.hand_id for ledger in listed.ledgers) == sorted(hand_ids.values())
    assert all(ledger.seat == 1 for ledger in listed.ledgers)


async def _if_length(coro: Awaitable[list[Any]], n: int) -> list[Any] | None:
    try:
        events = await coro
    except grpc.aio.AioRpcError:
        return None
    return events if len(events) == n else None


async def _ledger(
    stub: settlement_pb2_grpc.SettlementServiceStub, hand_id: str
) -> settlement_pb2.GetLedgerResponse | None:
    try:
        return await stub.GetLedger(settlement_pb2.GetLedgerRequest(hand_id=hand_id))
    except grpc.aio.AioRpcError as exc:
        if exc.code() is grpc.StatusCode.NOT_FOUND:
            return None
        raise


async def stored_complete(suite: Suite, hand_id: str) -> list[Any]:
    """The stored stream, once it holds everything the bus holds for the hand."""
    _, cursor = await hand_stream.read(suite.bus, hand_id, keyring=event_keyring(suite.settings))
    return await eventually(lambda: _if_length(stored_stream(suite, hand_id), cursor.version))


async def test_duplicated_publishes_change_nothing(core_suite: Suite) -> None:
    hand_id = "dup-" + uuid.uuid4().hex[:8]
    await play_hand(core_suite, "classic", hand_id, seed=7)
    stored = await stored_complete(core_suite, hand_id)
    settlement = core_suite.settlement
    await eventually(lambda: _ledger(settlement, hand_id))
    balances = [
        await settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id=p)) for p in PLAYERS
    ]
    on_bus, _ = await hand_stream.read(
        core_suite.bus, hand_id, keyring=event_keyring(core_suite.settings)
    )
    stream_id = f"hand-{hand_id}"
    # The same event id again: JetStream itself drops it (Nats-Msg-Id).
    for event in on_bus:
        subject = subject_for(stream_id, event.envelope.type, internal=event.hidden)
        ack = await core_suite.bus.publish(subject, event.data, event.envelope.event_id)
        assert ack.duplicate
    # The same event again under a new message id (as after the duplicate window): it
    # reaches the consumers, which must recognise the event id themselves.
    settled = next(e for e in on_bus if isinstance(e.event, HandSettled))
    for event in (on_bus[3], settled):
        subject = subject_for(stream_id, event.envelope.type, internal=event.hidden)
        ack = await core_suite.bus.publish(subject, event.data, uuid.uuid4().hex)
        assert not ack.duplicate
    await eventually(lambda: consumers_idle(core_suite.bus, "recorder"))
    await eventually(lambda: consumers_idle(core_suite.bus, "settlement"))
    assert [s.envelope for s in await stored_stream(core_suite, hand_id)] == [
        s.envelope for s in stored
    ]
    everything = await core_suite.recorder.ReadAll(recorder_pb2.ReadAllRequest())
    streams = [codec.parse_envelope(e.envelope).stream_id for e in everything.events]
    assert streams.count(stream_id) == len(stored)
    assert len(streams) == len(stored) + 2  # and the table's opening and hand_assigned
    again = [
        await settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id=p)) for p in PLAYERS
    ]
    assert again == balances
    mine = await settlement.ListLedgers(settlement_pb2.ListLedgersRequest(player_id="alice"))
    assert [ledger.hand.hand_id for ledger in mine.ledgers] == [hand_id]


async def test_restarting_the_recorder_mid_hand_loses_nothing(
    core_suite: Suite, tmp_path: Path
) -> None:
    hand_id = "restart-" + uuid.uuid4().hex[:8]
    driver = Driver(core_suite, hand_id, random.Random(11))
    await driver.deal("laizi")
    await driver.play(steps=4)
    await eventually(lambda: consumers_idle(core_suite.bus, "recorder"))
    await core_suite.stop("recorder")
    await driver.play(steps=6)  # published while nobody records
    await core_suite.start("recorder")
    await driver.play()
    stored = await stored_complete(core_suite, hand_id)
    on_bus, _ = await hand_stream.read(
        core_suite.bus, hand_id, keyring=event_keyring(core_suite.settings)
    )
    assert [s.envelope for s in stored] == [e.data for e in on_bus]
    store = create_store(core_suite.settings.database_url)
    try:
        hand = [e.envelope for e in store.read_all()
                if codec.parse_envelope(e.envelope).stream_id == f"hand-{hand_id}"]  # fmt: skip
        assert hand == [e.data for e in on_bus]  # (the store has its table's events too)
        # The finished hand's chain head is signed with the operator's key.
        (signature,) = store.read_signatures(f"hand-{hand_id}")
        assert signature.head_hash == stored[-1].hash
    finally:
        store.close()


async def _error(call: Awaitable[Any]) -> tuple[grpc.StatusCode, str | None]:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code(), error_reason(exc)
    raise AssertionError("the call succeeded")


async def test_bad_input_gets_a_clear_status_and_reason_and_the_service_keeps_serving(
    core_suite: Suite,
) -> None:
    rules, dealer = core_suite.rules, core_suite.dealer
    hand_id = "bad-" + uuid.uuid4().hex[:8]
    await dealer.Deal(await deal_request(core_suite, hand_id, "classic", first_bidder=1))
    state = await full_state(core_suite, hand_id)
    assert state.turn == 1

    # Unknown hands: never dealt, or not even a possible id.
    for unknown in ("never-dealt", "bad.id", ""):
        request = decide_request(unknown, Bid.pass_(0))
        assert await _error(rules.Decide(request)) == (grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND")
    # Malformed cards and a request without a command.
    request = rules_pb2.DecideRequest(
        hand_id=hand_id, seat=1, play=hand_events_pb2.PlayCommand(cards="33Z")
    )
    assert await _error(rules.Decide(request)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_CARDS"
    )  # fmt: skip
    request = rules_pb2.DecideRequest(hand_id=hand_id, seat=1)
    assert await _error(rules.Decide(request)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"
    )  # fmt: skip
    # An oversized request is refused by gRPC before any of our code runs.
    huge = rules_pb2.DecideRequest(
        hand_id=hand_id, seat=1, play=hand_events_pb2.PlayCommand(cards="3" * 100_000)
    )
    code, _ = await _error(rules.Decide(huge))
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
    # A stale expected version.
    stale = decide_request(hand_id, Bid.pass_(1), expected_version=1)
    assert await _error(rules.Decide(stale)) == (grpc.StatusCode.ABORTED, "VERSION_CONFLICT")

    # Out of turn: a rule's refusal, answered AND recorded, and nothing changes (§2).
    version = (await rules.GetPublicState(rules_pb2.GetPublicStateRequest(hand_id=hand_id))).version
    refused = await rules.Decide(decide_request(hand_id, Bid.call(0, 3)))
    assert (refused.accepted, refused.reason) == (False, RejectReason.NOT_YOUR_TURN.value)
    assert refused.version == version + 1
    (rejected_envelope,) = refused.events
    _, rejected = codec.decode_envelope(rejected_envelope.SerializeToString())
    assert rejected == CommandRejected(
        Bid.call(0, 3), RejectReason.NOT_YOUR_TURN, refused.message, rejected.request_id
    )
    public = await rules.GetPublicState(rules_pb2.GetPublicStateRequest(hand_id=hand_id))
    assert (public.turn, public.phase, public.version) == (
        1,
        rules_pb2.HAND_PHASE_BIDDING,
        version + 1,
    )
    assert list(public.card_counts) == [17, 17, 17]

    # Still serving: the right seat, with the right expected version, is accepted.
    ok = await rules.Decide(decide_request(hand_id, Bid.call(1, 1), expected_version=version + 1))
    assert ok.accepted and ok.version == version + 2

    stored = await eventually(lambda: _if_length(stored_stream(core_suite, hand_id), version + 2))
    types = [codec.parse_envelope(s.envelope).type for s in stored]
    assert types[-2:] == [CommandRejected.TYPE, "bid_made"]

    # The other services refuse bad ids the same way.
    again = await deal_request(core_suite, hand_id, "classic")  # assigned elsewhere too
    assert await _error(dealer.Deal(again)) == (
        grpc.StatusCode.ALREADY_EXISTS, "VERSION_CONFLICT"
    )  # fmt: skip
    no_table = dealer_pb2.DealRequest(hand_id="other", table_id="bad.id")
    assert await _error(dealer.Deal(no_table)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"
    )  # fmt: skip


async def test_decide_batch_answers_each_command_as_decide_would(core_suite: Suite) -> None:
    """``DecideBatch``: one outcome per command, in order; a command's error (unknown
    hand, malformed cards, stale version) is its outcome, not the call's; one hand's
    commands apply in the order given (§2: seat 1 bids first, then seat 2)."""
    rules, dealer = core_suite.rules, core_suite.dealer
    hand_id = "batch-" + uuid.uuid4().hex[:8]
    await dealer.Deal(await deal_request(core_suite, hand_id, "classic", first_bidder=1))
    version = (await rules.GetPublicState(rules_pb2.GetPublicStateRequest(hand_id=hand_id))).version
    commands = [
        decide_request(hand_id, Bid.call(1, 1), expected_version=version),
        decide_request("never-dealt", Bid.pass_(0)),
        rules_pb2.DecideRequest(
            hand_id=hand_id, seat=2, play=hand_events_pb2.PlayCommand(cards="33Z")
        ),
        decide_request(hand_id, Bid.pass_(2), expected_version=version),  # stale by now
        decide_request(hand_id, Bid.call(0, 3)),  # seat 2's turn: refused and recorded
        decide_request(hand_id, Bid.call(2, 2), expected_version=version + 2),
    ]
    answer = await rules.DecideBatch(rules_pb2.DecideBatchRequest(commands=commands))
    outcomes = list(answer.outcomes)
    assert len(outcomes) == len(commands)
    first, unknown, malformed, stale, refused, last = outcomes
    assert first.response.accepted and first.response.version == version + 1
    assert (unknown.HasField("response"), unknown.code, unknown.reason) == (
        False, grpc.StatusCode.NOT_FOUND.value[0], "UNKNOWN_HAND"
    )  # fmt: skip
    assert (malformed.code, malformed.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT.value[0], "MALFORMED_CARDS"
    )  # fmt: skip
    assert (stale.code, stale.reason) == (grpc.StatusCode.ABORTED.value[0], "VERSION_CONFLICT")
    assert (refused.response.accepted, refused.response.reason) == (
        False, RejectReason.NOT_YOUR_TURN.value
    )  # fmt: skip
    assert last.response.accepted and last.response.version == version + 3
    stored = await eventually(lambda: _if_length(stored_stream(core_suite, hand_id), version + 3))
    types = [codec.parse_envelope(s.envelope).type for s in stored][version:]
    assert types == ["bid_made", CommandRejected.TYPE, "bid_made"]
    # Each answer's events are the stored ones (the answer re-serialises: compare parsed).
    answered = [*first.response.events, *refused.response.events, *last.response.events]
    assert answered == [codec.parse_envelope(s.envelope) for s in stored][version:]
    assert await _error(dealer.Deal(dealer_pb2.DealRequest(hand_id="x"))) == (  # no table
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"
    )  # fmt: skip
    seed = dealer_pb2.GetSeedRequest(hand_id="never-dealt")
    assert await _error(dealer.GetSeed(seed)) == (grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND")
    ledger = settlement_pb2.GetLedgerRequest(hand_id=hand_id)  # not settled yet
    assert await _error(core_suite.settlement.GetLedger(ledger)) == (
        grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND"
    )  # fmt: skip
    read = recorder_pb2.ReadStreamRequest(stream_id="hand-never-dealt")
    assert await _error(core_suite.recorder.ReadStream(read)) == (
        grpc.StatusCode.NOT_FOUND, "UNKNOWN_STREAM"
    )  # fmt: skip


async def test_a_second_writer_cannot_fork_a_hand(core_suite: Suite) -> None:
    """Two rules instances with the same cached state: exactly one extends the hand; the
    other is refused by JetStream's expected-last-subject-sequence check over the hand's
    wildcard subject, reads the hand again and decides on the winner's state."""
    first = core_suite.rules
    second = (await core_suite.another("rules")).rules
    hand_id = "fork-" + uuid.uuid4().hex[:8]
    await core_suite.dealer.Deal(await deal_request(core_suite, hand_id, "ct", first_bidder=0))
    for stub in (first, second):  # both load and cache the hand at the same version
        await stub.GetPublicState(rules_pb2.GetPublicStateRequest(hand_id=hand_id))
    won = await first.Decide(decide_request(hand_id, Bid.call(0, 1)))
    assert won.accepted
    # The second's copy is stale: its append is refused, it reads the hand again and
    # decides there (seat 0 has bid), never answering a conflict of its own making.
    lost = await second.Decide(decide_request(hand_id, Bid.call(0, 2)))
    assert (lost.accepted, lost.reason) == (False, RejectReason.NOT_YOUR_TURN.value)
    on_bus, cursor = await hand_stream.read(
        core_suite.bus, hand_id, keyring=event_keyring(core_suite.settings)
    )
    assert [e.envelope.stream_version for e in on_bus] == list(range(1, cursor.version + 1))
    bids = [e.event for e in on_bus if e.envelope.type == "bid_made"]
    assert len(bids) == 1


async def test_expected_subject_sequence_over_a_wildcard(bus: EventBus) -> None:
    """What the single-writer rule rests on (nats-server 2.15): the check holds over
    ``ddz.v1.hand.<id>.*`` whatever the event's own subject."""
    stream_id = "hand-wild"
    public = stream_filter(stream_id)
    first = await bus.publish(subject_for(stream_id, "a"), b"1", "w1", 0, expected_subject=public)
    await bus.publish(subject_for(stream_id, "b", internal=True), b"2", "w2")  # other side
    with pytest.raises(WrongLastSequence):
        await bus.publish(subject_for(stream_id, "c"), b"3", "w3", 0, expected_subject=public)
    ok = await bus.publish(
        subject_for(stream_id, "c"), b"3", "w3", first.seq, expected_subject=public
    )
    assert ok.seq == first.seq + 2


def deal_events(hand_id: str) -> list[Any]:
    """A decision of two events, one on each side: a hand's deal (``hand_started``, the
    hidden ``cards_dealt``)."""
    players = [make_player("greedy", seed) for seed in range(3)]
    events, _ = selfplay.play_hand(CLASSIC, RoomSettings(), players, bytes(32), hand_id=hand_id)
    deal = events[:2]
    assert [type(e).__name__ for e in deal] == ["HandStarted", "CardsDealt"]
    return deal


class LosesFirstBatchAck(EventBus):
    """A bus whose first atomic batch is stored but whose acknowledgement is lost."""

    lost = False

    async def publish_batch(self, messages: Any, *, timeout: float = 5.0) -> list[int]:
        seqs = await super().publish_batch(messages, timeout=timeout)
        if not self.lost:
            self.lost = True
            raise TimeoutError("acknowledgement lost")
        return seqs


async def test_a_decision_goes_out_whole_and_a_retry_after_a_lost_ack_stores_it_once(
    bus: EventBus,
) -> None:
    """Several events of one decision are one atomic batch (nats-server >= 2.12): the
    deal here, a public ``hand_started`` and the hidden ``cards_dealt``. Its retry after a
    lost acknowledgement is refused by the server and recognised as our own batch."""
    deal = deal_events("atomic")
    lossy = LosesFirstBatchAck(bus.nc, bus.stream)
    assert await lossy.atomic_batches()
    cursor, published = await hand_stream.publish(
        lossy, "atomic", hand_stream.HandCursor(), deal,
        causation_id="c", correlation_id="c", producer="pytest", signer=DEALER,
    )  # fmt: skip
    assert lossy.lost
    on_bus, read_cursor = await hand_stream.read(bus, "atomic", keyring=KEYRING)
    assert read_cursor == cursor and cursor.version == 2
    assert [e.data for e in on_bus] == [p.envelope for p in published]
    assert [e.seq for e in on_bus] == [p.seq for p in published]
    assert (await bus.js.stream_info(bus.stream)).state.messages == 2


class HoldsFirstBatch(EventBus):
    """A bus whose first atomic batch goes out only once ``release`` is set: a deal
    stuck on its way (its NATS node dying) while a retry of it gets through."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def publish_batch(self, messages: Any, *, timeout: float = 5.0) -> list[int]:
        if not self.held.is_set():
            self.held.set()
            await self.release.wait()
        return await super().publish_batch(messages, timeout=timeout)


async def test_a_deal_and_its_retry_racing_are_one_hand_and_both_answer_it(
    bus: EventBus,
) -> None:
    """The first attempt of a deal is held on its way out while the same request, asked
    again (by the table instance that took over), publishes the hand. The first then
    loses the race on the stream's expected sequence, finds the very events it was
    sending, and answers the same deal as the retry did: one hand, nobody refused (a
    refused first attempt would make its dealer forget the seed of a hand in play)."""
    deal = deal_events("raced")
    slow = HoldsFirstBatch(bus.nc, bus.stream)
    assert await slow.atomic_batches()
    ids = {"causation_id": "deal-1", "correlation_id": "raced", "producer": "pytest"}
    first = asyncio.ensure_future(
        hand_stream.JetStreamHandLog(slow, DEALER, KEYRING).start("raced", deal, **ids)
    )
    await asyncio.wait_for(slow.held.wait(), 10)
    retry = await hand_stream.JetStreamHandLog(bus, DEALER, KEYRING).start("raced", deal, **ids)
    slow.release.set()
    assert await asyncio.wait_for(first, 10) == retry
    assert retry[0] == 2 and [e.type for e in retry[1]] == ["hand_started"]
    assert (await bus.js.stream_info(bus.stream)).state.messages == 2
    other = {**ids, "causation_id": "deal-2"}
    with pytest.raises(Refusal) as refused:
        await hand_stream.JetStreamHandLog(bus, DEALER, KEYRING).start("raced", deal, **other)
    assert refused.value.kind is Kind.CONFLICT


async def test_without_atomic_decisions_the_events_go_one_by_one(bus: EventBus) -> None:
    """DDZ_ATOMIC_DECISIONS=0: no batch, each event its own checked publish."""
    deal = deal_events("single")
    lossy = LosesFirstBatchAck(bus.nc, bus.stream)
    lossy.atomic_decisions = False
    cursor, published = await hand_stream.publish(
        lossy, "single", hand_stream.HandCursor(), deal,
        causation_id="c", correlation_id="c", producer="pytest", signer=DEALER,
    )  # fmt: skip
    assert not lossy.lost and cursor.version == 2
    on_bus, _ = await hand_stream.read(bus, "single", keyring=KEYRING)
    assert [e.data for e in on_bus] == [p.envelope for p in published]


@pytest.mark.parametrize("how", ["python -m services.settlement", "ddz serve settlement"])
def test_a_service_process_serves_until_sigterm_then_exits_cleanly(
    how: str, nats_server: NatsServer, tmp_path: Path
) -> None:
    """One way to start a service: the module and the CLI run the same runner; it reports
    SERVING on the health service, and SIGTERM stops it with exit code 0. It finds its
    certificate in the data dir that ``ensure_certificates`` (``ddz init``) prepared."""
    port = free_port()
    ensure_certificates(tmp_path)
    env = {
        **os.environ,
        "DDZ_DATA_DIR": str(tmp_path),
        "DDZ_NATS_URL": nats_server.url,
        "DDZ_SETTLEMENT_PORT": str(port),
        "DDZ_LOG_FORMAT": "json",
    }
    command = how.split()
    if command[0] == "python":
        command[0] = sys.executable
    else:
        command = [sys.executable, "-m", "ddz.entrypoints.cli", *command[1:]]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        serving = wait_serving(
            process, f"127.0.0.1:{port}", "ddz.v1.SettlementService", 30, Settings.from_env(env)
        )
        assert serving, process.stderr.read().decode() if process.stderr else ""
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr.decode()
    lines = [json.loads(line) for line in stderr.decode().splitlines() if line.startswith("{")]
    assert {"listening", "stopping", "stopped"} <= {line["event"] for line in lines}
    assert all(line["service"] == "settlement" for line in lines)


def test_bad_configuration_is_one_line_and_exit_code_2() -> None:
    env = {**os.environ, "DDZ_RULES_PORT": "not-a-port"}
    done = subprocess.run(
        [sys.executable, "-m", "services.rules"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines() == [
        "ddz: error: DDZ_RULES_PORT must be an integer, got 'not-a-port'"
    ]


SHARED_NATS = "nats://127.0.0.1:4222"  # the machine's own server (DEVELOPERS.md)


def test_a_service_on_a_too_old_nats_server_says_so_in_one_line(tmp_path: Path) -> None:
    """The machine's own NATS (2.9 here) predates the per-hand subject check: a service
    pointed at it stops at once with a clear error naming the version, exit code 2,
    instead of refusing every other move of every hand."""

    async def version() -> tuple[int, int, int]:
        nc = await nats.connect(SHARED_NATS, connect_timeout=2, max_reconnect_attempts=0)
        found = nc.connected_server_version
        await nc.close()
        return (found.major, found.minor, found.patch)

    try:
        found = asyncio.run(version())
    except (OSError, nats.errors.Error) as exc:
        pytest.skip(f"no NATS server on {SHARED_NATS}: {exc}")
    if found >= MIN_SERVER_VERSION:
        check_server_version(found)  # a recent shared server is simply accepted
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(DDZ_DATA_DIR=str(tmp_path), DDZ_NATS_URL=SHARED_NATS, DDZ_SETTLEMENT_PORT="0")
    done = subprocess.run(
        [sys.executable, "-m", "services.settlement"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 2
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr
    # Its log lines (JSON, on stderr when there is no log file): the rules engine's build,
    # logged by every service at start, and the error; then the one-line error.
    *logged, line = stderr.strip().splitlines()
    assert [json.loads(entry)["event"] for entry in logged] == ["rules_engine", "bad_configuration"]
    version_text = ".".join(map(str, found))
    assert line == (
        f"ddz: error: settlement: nats-server {version_text} at {SHARED_NATS} is too old: the "
        "suite needs 2.11.0 or later (the per-hand Nats-Expected-Last-Subject-Sequence-Subject "
        "check)"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_serving(
    process: subprocess.Popen[bytes], target: str, service: str, timeout: float, settings: Settings
) -> bool:
    """True once ``service`` reports SERVING; False if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        status = health_status(target, timeout=1, service=service, settings=settings)
        if status == health_pb2.HealthCheckResponse.SERVING:
            return True
        time.sleep(0.1)
    return False
