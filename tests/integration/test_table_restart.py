"""A table service that restarts loses nothing a table is: its tables come back from
their ``table-<id>`` streams, a seat token issued before the restart still acts for
its seat, a player who joins the room again is brought back to the same seat, a
hand whose person is on turn (or stays away) still ends, its turn clock resumed from
the hand's last event and handing the seat to the bot, a hand whose deal and its
cancel were lost every time is kept (not withdrawn) and dealt by the next one, as is a
hand assigned but not yet dealt when the service died. (Queues and next-hand rounds across a
SIGKILL: test_table_queue_restart.py.)"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
from typing import Any

import grpc
import nats.js.errors
import pytest
from ddz.adapters.messaging.hand_stream import hand_stream_id
from ddz.adapters.messaging.hand_stream import read as read_hand
from ddz.adapters.messaging.subjects import stream_filter
from ddz.adapters.messaging.table_stream import JetStreamTableLog, decode, table_stream_id
from ddz.adapters.security.event_signing import ensure_signer, event_keyring
from ddz.application.errors import Kind, Refusal
from ddz.domain.hand.events import HandStarted
from ddz.domain.table import HandAssigned, HandWithdrawn, TableClosed
from ddz.v1 import envelope_pb2, recorder_pb2, table_pb2
from suite_kit import Suite
from table_kit import ENDED, act, hint, join, view_of

WAIT = 60.0


async def until(probe: Any, what: str, timeout: float = WAIT) -> Any:
    """``await probe()`` once it is truthy (bounded: the machine may be slow)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await probe()
        if found:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def my_turn(stub: Any, hand_id: str, seat: int) -> Any:
    """The seat's view once the seat is on turn and played by its person."""

    async def probe() -> Any:
        view = await view_of(stub, hand_id, seat)
        return view if view.my_turn and seat not in view.disconnected else None

    return await until(probe, f"seat {seat}'s turn")


async def ended(suite: Suite, hand_id: str, seat: int) -> Any:
    """The hand's end, as the operator sees it (no call of the seat's own)."""

    async def probe() -> Any:
        view = await view_of(suite.table, hand_id, seat)
        return view if view.phase == ENDED else None

    return await until(probe, f"hand {hand_id} to end")


async def without_watchdog(suite: Suite) -> None:
    """Restart the bot service with its stalled-hand watchdog out of reach, so a seat
    handed to the bot is the table's turn clock's doing, not the backstop's. The table
    service is started again after it (it dials the bot where it is now)."""
    await suite.stop("table")
    await suite.stop("bot")
    suite.settings = dataclasses.replace(
        suite.settings, clocks=dataclasses.replace(suite.settings.clocks, stall_margin=3600.0)
    )
    await suite.start("bot")
    await suite.start("table")


async def restart_table(suite: Suite, turn_timeout: float) -> None:
    """Stop the table service and start it again, its turn clock ``turn_timeout``."""
    await suite.stop("table")
    suite.settings = dataclasses.replace(
        suite.settings, clocks=dataclasses.replace(suite.settings.clocks, turn_timeout=turn_timeout)
    )
    await suite.start("table")


async def test_a_seat_token_acts_after_a_restart_and_the_clock_hands_an_absent_seat_to_the_bot(
    suite: Suite,
) -> None:
    await without_watchdog(suite)
    joined = await join(suite.player("ann"), "classic")
    table_id, seat, hand_id = joined.table.table_id, joined.seat, joined.hand_id
    stub = suite.table_as(joined.token)
    await my_turn(stub, hand_id, seat)
    first = await act(stub, hand_id, seat, await hint(stub, hand_id, seat))
    assert first.outcome.version > 0
    before = (await stub.GetTable(table_pb2.GetTableRequest(table_id=table_id))).table
    await my_turn(stub, hand_id, seat)  # her next turn spans the restart

    # The clock resumes from the hand's last event: a margin for the restart and a call.
    await restart_table(suite, turn_timeout=10.0)

    stub = suite.table_as(joined.token)  # the same token, the service's new address
    answer = await act(stub, hand_id, seat, await hint(stub, hand_id, seat))
    assert answer.outcome.version > first.outcome.version
    after = (await stub.GetTable(table_pb2.GetTableRequest(table_id=table_id))).table
    assert after.table_id == table_id and after.room_id == "classic"
    assert list(after.seats) == list(before.seats)
    assert list(after.hand_ids) == [hand_id] and after.current_hand_id == hand_id
    back = await join(suite.player("ann"), "classic")  # the room knows her seat
    assert (back.table.table_id, back.seat) == (table_id, seat)
    # Ann stays away now: her turns time out (then auto-play), the bot plays her seat to
    # the end; a timeout is no disconnect.
    end = await ended(suite, hand_id, seat)
    assert seat in end.auto_play and seat not in end.disconnected
    # The table's stream is recorded beside the hand's; the audit (hands only) passes.
    await until(lambda: revealed(suite, hand_id), "the hand's seed stored")
    await until(lambda: recorded(suite, table_stream_id(table_id)), "the table's stream stored")
    audit = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "audit", "--all"],
        capture_output=True, text=True, timeout=120, env=suite.env(),
    )  # fmt: skip
    assert audit.returncode == 0, audit.stdout + audit.stderr


async def stored_events(suite: Suite, stream_id: str) -> list[envelope_pb2.EventEnvelope]:
    try:
        read = await suite.recorder.ReadStream(recorder_pb2.ReadStreamRequest(stream_id=stream_id))
    except grpc.aio.AioRpcError as exc:
        if exc.code() is not grpc.StatusCode.NOT_FOUND:
            raise
        return []
    return [envelope_pb2.EventEnvelope.FromString(e.envelope) for e in read.events]


async def recorded(suite: Suite, stream_id: str) -> bool:
    types = [e.type for e in await stored_events(suite, stream_id)]
    return types[:2] == ["table_opened", "hand_assigned"]


async def revealed(suite: Suite, hand_id: str) -> bool:
    events = await stored_events(suite, hand_stream_id(hand_id))
    return bool(events) and events[-1].type == "seed_revealed"


async def test_a_turn_that_spans_the_restart_still_times_out(suite: Suite) -> None:
    await without_watchdog(suite)
    joined = await join(suite.player("bea"), "classic")
    seat, hand_id = joined.seat, joined.hand_id
    stub = suite.table_as(joined.token)
    await my_turn(stub, hand_id, seat)

    await restart_table(suite, turn_timeout=0.5)

    end = await ended(suite, hand_id, seat)
    assert seat in end.auto_play and seat not in end.disconnected


async def test_a_table_is_its_stream_with_one_writer_and_its_id_stays_taken(suite: Suite) -> None:
    seats = [table_pb2.SeatSpec(player_id=p) for p in ("cy", "di")]
    seats.append(table_pb2.SeatSpec(player_id="bot-x", is_bot=True))
    opened = await suite.table.OpenTable(
        table_pb2.OpenTableRequest(table_id="t-restart", variant="classic", seats=seats)
    )
    table_log = JetStreamTableLog(  # a second writer with the table service's own key
        suite.bus, keyring=event_keyring(suite.settings.keys),
        signer=ensure_signer(suite.settings.keys, "table"),
    )  # fmt: skip
    history = await table_log.read("t-restart")
    assert history is not None and history.state.seats[0].player_id == "cy"
    assert "t-restart" in await table_log.open_table_ids()

    await restart_table(suite, turn_timeout=30.0)

    got = await suite.table.GetTable(table_pb2.GetTableRequest(table_id="t-restart"))
    assert got.table == opened.table
    started = await suite.table.StartHand(table_pb2.StartHandRequest(table_id="t-restart"))
    history = await table_log.read("t-restart")
    assert history is not None and history.state.hand_ids == (started.hand_id,)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await suite.table.OpenTable(
            table_pb2.OpenTableRequest(table_id="t-restart", variant="classic", seats=seats)
        )
    assert refused.value.code() is grpc.StatusCode.ALREADY_EXISTS
    # One writer per table: an event written from a stale position is refused, unwritten.
    with pytest.raises(Refusal) as stale:
        await table_log.append("t-restart", history.cursor, [TableClosed("a second writer")])
        await table_log.append("t-restart", history.cursor, [TableClosed("a third writer")])
    assert stale.value.kind is Kind.CONFLICT
    after = await table_log.read("t-restart")
    assert after is not None and after.state.closed_reason == "a second writer"

    # Closed on its stream: not folded back by the next start, and its id stays taken.
    await restart_table(suite, turn_timeout=30.0)
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await suite.table.GetTable(table_pb2.GetTableRequest(table_id="t-restart"))
    assert unknown.value.code() is grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as taken:
        await suite.table.OpenTable(
            table_pb2.OpenTableRequest(table_id="t-restart", variant="classic", seats=seats)
        )
    assert taken.value.code() is grpc.StatusCode.ALREADY_EXISTS
    assert "t-restart" not in await table_log.open_table_ids()


async def test_a_deal_lost_every_time_with_the_dealer_away_is_kept_and_dealt_after_a_restart(
    suite: Suite,
) -> None:
    """The dealer is away: each Deal times out (the answer lost), and so does the table's
    call to call the deal off (``CancelDeal``). Whether the hand is dealt is not known,
    so the table does not withdraw it (a stalled dealer might deal it yet): no
    ``hand_withdrawn``; the restarted service, the dealer back, asks for that very deal
    and the hand is dealt once. (A deal the dealer calls off is withdrawn:
    test_deal_cancel.py.)"""
    seats = [table_pb2.SeatSpec(player_id=p) for p in ("eli", "fay")]
    seats.append(table_pb2.SeatSpec(player_id="bot-w", is_bot=True))
    await suite.table.OpenTable(
        table_pb2.OpenTableRequest(table_id="t-withdrawn", variant="classic", seats=seats)
    )
    await suite.stop("dealer")
    suite.settings = dataclasses.replace(
        suite.settings, rpc=dataclasses.replace(suite.settings.rpc, rpc_timeout=1.0)
    )  # a Deal's deadline
    await restart_table(suite, turn_timeout=30.0)
    with pytest.raises(grpc.aio.AioRpcError) as lost:
        await suite.table.StartHand(table_pb2.StartHandRequest(table_id="t-withdrawn"), timeout=60)
    assert lost.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED, lost.value.details()
    assigned = await last_table_event(suite, "t-withdrawn")
    assert isinstance(assigned, HandAssigned), assigned  # never withdrawn

    await suite.start("dealer")
    suite.settings = dataclasses.replace(
        suite.settings, rpc=dataclasses.replace(suite.settings.rpc, rpc_timeout=30.0)
    )
    await restart_table(suite, turn_timeout=30.0)

    async def dealt() -> list[Any]:
        found, _ = await read_hand(
            suite.bus, assigned.hand_id, keyring=event_keyring(suite.settings.keys)
        )
        return found

    found = await until(dealt, "the kept hand to be dealt")
    assert sum(isinstance(e.event, HandStarted) for e in found) == 1
    assert found[0].envelope.causation_id == assigned.deal_request_id
    got = await suite.table.GetTable(table_pb2.GetTableRequest(table_id="t-withdrawn"))
    assert list(got.table.hand_ids) == [assigned.hand_id]


async def last_table_event(suite: Suite, table_id: str) -> object:
    """The last event of the table's stream, read from the bus."""
    subject = stream_filter(table_stream_id(table_id))
    seq, last = 0, None
    while True:
        try:
            msg = await suite.bus.js.get_msg(suite.bus.stream, seq + 1, subject=subject, next=True)
        except nats.js.errors.NotFoundError:
            break
        seq, last = int(msg.seq or 0), msg
    assert last is not None, f"no stream of table {table_id}"
    envelope = event_keyring(suite.settings.keys).open(last.data or b"")
    return decode(envelope.type, envelope.type_version, envelope.payload)


async def test_a_hand_assigned_when_the_table_died_is_dealt_by_the_instance_after_it(
    suite: Suite,
) -> None:
    """The table service died after it recorded a hand's assignment and before the
    dealer's answer reached it (here: it never asked). The instance that folds the table
    back asks for that very deal, under the request id and players' seeds the
    assignment recorded: the hand is dealt once, with those seeds, listed at its table,
    and plays to its end (it is not withdrawn, nor dealt twice)."""
    seats = [table_pb2.SeatSpec(player_id=f"bot-u{s}", is_bot=True) for s in range(3)]
    await suite.table.OpenTable(
        table_pb2.OpenTableRequest(table_id="t-undealt", variant="classic", seats=seats)
    )
    await suite.stop("table")
    table_log = JetStreamTableLog(
        suite.bus, keyring=event_keyring(suite.settings.keys),
        signer=ensure_signer(suite.settings.keys, "table"),
    )  # fmt: skip
    history = await table_log.read("t-undealt")
    assert history is not None and history.state.hand_ids == ()
    assigned = HandAssigned(
        "0" * 31 + "1", first_bidder=2, client_seeds=(b"\x07" * 16, b"\x08" * 16),
        deal_request_id="deal-of-the-dead-instance",
    )  # fmt: skip
    await table_log.append("t-undealt", history.cursor, [assigned])
    await suite.start("table")

    async def dealt() -> list[Any]:
        found, _ = await read_hand(
            suite.bus, assigned.hand_id, keyring=event_keyring(suite.settings.keys)
        )
        return found

    found = await until(dealt, "the assigned hand to be dealt")
    started = found[0]
    assert isinstance(started.event, HandStarted)
    assert started.envelope.causation_id == assigned.deal_request_id
    assert started.event.client_seeds == tuple(s.hex() for s in assigned.client_seeds)
    assert started.event.first_bidder == 2
    got = await suite.table.GetTable(table_pb2.GetTableRequest(table_id="t-undealt"))
    assert list(got.table.hand_ids) == [assigned.hand_id]
    assert got.table.current_hand_id in (assigned.hand_id, "")  # in play, or over already
    await ended(suite, assigned.hand_id, 0)
    history = await table_log.read("t-undealt")
    assert history is not None and history.state.hand_ids == (assigned.hand_id,)
    assert not isinstance(await last_table_event(suite, "t-undealt"), HandWithdrawn)
