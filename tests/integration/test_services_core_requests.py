"""Requests to the core services (the ``core_suite`` fixture): bad input gets a clear
status and reason and the service keeps serving, a batch of decisions is answered as
``Decide`` answers each, and a second writer cannot fork a hand.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import Any

import grpc
import pytest
from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.adapters.security.event_signing import event_keyring
from ddz.domain.hand import (
    Bid,
    CommandRejected,
    RejectReason,
)
from ddz.v1 import (
    dealer_pb2,
    hand_events_pb2,
    recorder_pb2,
    rules_pb2,
    settlement_pb2,
)
from driver_kit import _if_length, deal_request, decide_request, full_state, stored_stream
from suite_kit import Suite, eventually

pytestmark = pytest.mark.suite(max_message_bytes=64 * 1024)  # the oversized request


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
        core_suite.bus, hand_id, keyring=event_keyring(core_suite.settings.keys)
    )
    assert [e.envelope.stream_version for e in on_bus] == list(range(1, cursor.version + 1))
    bids = [e.event for e in on_bus if e.envelope.type == "bid_made"]
    assert len(bids) == 1
