"""A table service killed with SIGKILL and started again loses nothing a player was
waiting for (the table service a process of its own, the rest of the suite in this
process, one real nats-server):

- the room queues: each ticket is an entry of the KV bucket ``ddz_room_queue``, read
  back on start; a player whose JoinRoom was cut joins again into the same place (its
  joined time, so the bot fill wait, unchanged), one who does not come back is seated
  all the same, and everyone is seated once;
- the next-hand round: each NextHand is a ``seat_ready`` on the table's stream, so the
  other seat's NextHand after the restart deals the hand, and a round nobody completes
  ends when the ready wait, counted from the first ask, runs out.

Where a player is ``ddz play``'s own client (``ddz.client.Session``), its calls ride
through the restart by themselves.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import nats.js.errors
import pytest
from ddz.access.tokens import player_token
from ddz.adapters.messaging.lease import BUCKET as LEASE_BUCKET
from ddz.adapters.messaging.room_queue import RoomQueueKV
from ddz.adapters.messaging.subjects import stream_filter
from ddz.adapters.messaging.table_stream import decode, table_stream_id
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.adapters.runtime.nats_server import free_port
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.security.event_signing import event_keyring
from ddz.application.room_tickets import QueuedTicket
from ddz.application.table_history import occurred_at
from ddz.client.session import Session
from ddz.domain.table import SeatReady, TableClosed, TableEvent
from ddz.v1 import table_pb2
from suite_kit import Suite
from table_kit import ENDED, Watcher, act, hint, join

HOST = "127.0.0.1"
READY_WAIT = 20.0
"""The turn clock and the ready wait (``DDZ_TURN_TIMEOUT``): longer than a restart."""
LEASE_TTL = 2.0
"""A killed instance's lease lapses this soon: the restarted one takes over."""

pytestmark = pytest.mark.suite(turn_timeout=READY_WAIT)


class TableProcess:
    """``python -m services.table`` on a port of its own, in place of the suite's; the
    suite's clients dial it. ``kill`` is SIGKILL: nothing is said, written or closed."""

    def __init__(self, suite: Suite, log_dir: Path) -> None:
        self.suite = suite
        self.port = free_port(HOST)
        self.address = f"{HOST}:{self.port}"
        self.log_path = log_dir / "table.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.leased = False  # the service holds a lease ``table`` (its instances')

    async def start(self) -> None:
        self.process = self.suite.spawn(
            "table", self.log_path, DDZ_TABLE_PORT=str(self.port), DDZ_TABLE_ADDR=self.address,
            DDZ_TABLE_METRICS_PORT="0", DDZ_LEASE_TTL=repr(LEASE_TTL),
        )  # fmt: skip
        self.suite.settings = self.suite.settings.with_addresses(table=self.address)
        settings = self.suite.settings
        for _ in range(1200):
            status = await asyncio.to_thread(health_status, self.address, 1.0, settings=settings)
            if status == SERVING and await self.active():
                return
            assert self.process.poll() is None, self.log_path.read_text()[-3000:]
            await asyncio.sleep(0.05)
        raise AssertionError("the table process never served: " + self.log_path.read_text())

    async def active(self) -> bool:
        """This process holds the table's lease, if the service has one: a restarted
        instance stands by (forwarding) until the killed one's lease lapses."""
        assert self.process is not None
        try:
            lease = await (await self.suite.bus.js.key_value(LEASE_BUCKET)).get("table")
        except (nats.js.errors.BucketNotFoundError, nats.js.errors.KeyNotFoundError):
            return not self.leased  # never a lease: one instance, active when it serves
        self.leased = True
        return f"-{self.process.pid}-" in (lease.value or b"").decode()

    async def kill_and_restart(self) -> float:
        """SIGKILL, then start again at the same address; the time of the kill."""
        assert self.process is not None
        killed = time.time()
        os.kill(self.process.pid, signal.SIGKILL)
        await asyncio.to_thread(self.process.wait)
        await self.start()
        return killed

    def stop(self) -> None:
        """A clean stop at the end: its lease released, so the next test's table
        service is the active one at once."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
async def table(suite: Suite, tmp_path: Path) -> AsyncIterator[TableProcess]:
    await suite.stop("table")
    process = TableProcess(suite, tmp_path)
    try:
        await process.start()
        yield process
    finally:
        process.stop()
        # No lease of a gone instance left for the next test's table service to wait out.
        await until(lambda: lease_gone(suite), "the table's lease to go", timeout=30.0)


async def lease_gone(suite: Suite) -> bool:
    try:
        await (await suite.bus.js.key_value(LEASE_BUCKET)).get("table")
    except (nats.js.errors.BucketNotFoundError, nats.js.errors.KeyNotFoundError):
        return True
    return False


async def kept_tickets(suite: Suite) -> dict[str, QueuedTicket]:
    queue = RoomQueueKV(suite.bus)
    return {ticket.player_id: ticket for ticket in await queue.tickets()}


async def has(suite: Suite, *players: str) -> dict[str, QueuedTicket] | None:
    kept = await kept_tickets(suite)
    return kept if set(players) <= set(kept) else None


async def until(probe: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = await probe()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def cut(call: asyncio.Future[Any]) -> None:
    """The call the kill cut: it ends UNAVAILABLE (the connection went with it)."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await asyncio.wait_for(call, 30)
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE, caught.value.details()


# -- the queues ---------------------------------------------------------------------------


async def test_queued_players_keep_their_places_and_are_seated_once(
    suite: Suite, table: TableProcess
) -> None:
    """Ann (``ddz play``'s client) and Ben wait in a room that never fills by itself; the
    service is killed. Ann's client joins again by itself, Ben does not; Cy joins: the
    three sit at one table in the order they first joined, each once, and Ben's next
    JoinRoom brings him to his seat."""
    settings = suite.settings
    ann = Session(settings.calling, table.address, player_token(settings.keys, "ann"))
    try:
        rooms = {room.room_id: room for room in (await ann.rooms()).rooms}
        ann_joins = asyncio.ensure_future(ann.join(rooms["waiting"]))
        await until(lambda: has(suite, "ann"), "ann's ticket kept")
        ben_joins = asyncio.ensure_future(join(suite.player("ben"), "waiting"))
        before = await until(lambda: has(suite, "ann", "ben"), "ben's ticket kept")

        killed = await table.kill_and_restart()

        await cut(ben_joins)
        assert not ann_joins.done()  # her client waits on, joining again
        # Back in the queue with the times they first joined: the fill wait goes on.
        after = await kept_tickets(suite)
        assert after == before and all(t.joined < killed for t in after.values())
        listed = await suite.table_as(None).ListRooms(table_pb2.ListRoomsRequest())
        waiting = next(r for r in listed.rooms if r.room_id == "waiting")
        assert (waiting.queued, waiting.tables) == (2, 0)

        cy = await join(suite.player("cy"), "waiting")
        seated = [seat.player_id for seat in cy.table.seats]
        assert seated == ["ann", "ben", "cy"] and cy.seat == 2
        ann_joined = await asyncio.wait_for(ann_joins, 30)
        assert (ann_joined.table.table_id, ann_joined.seat) == (cy.table.table_id, 0)
        ben = await join(suite.player("ben"), "waiting")  # seated while he was away
        assert ben.rejoined and (ben.table.table_id, ben.seat) == (cy.table.table_id, 1)
        listed = await suite.table_as(None).ListRooms(table_pb2.ListRoomsRequest())
        waiting = next(r for r in listed.rooms if r.room_id == "waiting")
        assert (waiting.queued, waiting.tables) == (0, 1)
        assert await kept_tickets(suite) == {}  # seated: out of the bucket
    finally:
        await ann.close()


# -- the next hand ------------------------------------------------------------------------


async def play_out(stub: Any, hand_id: str, seat: int) -> Any:
    """Play ``seat`` with the hints until the hand ends; the last view."""
    watcher = Watcher(stub, hand_id, seat).start()
    seen = 0
    while True:
        await watcher.until(lambda u, seen=seen: u.position > seen)
        latest = watcher.updates[-1]
        seen = latest.position
        if latest.view.phase == ENDED:
            return latest.view
        if latest.view.my_turn:
            try:
                await act(stub, hand_id, seat, await hint(stub, hand_id, seat))
            except grpc.aio.AioRpcError as exc:
                assert error_reason(exc) in ("NOT_YOUR_TURN", "WRONG_PHASE"), exc.details()


async def a_hand_played(suite: Suite, alice: Session) -> tuple[str, str, Any]:
    """Alice (a ``Session``) and Bob at one table of the classic room, its first hand
    played to the end: (table id, that hand, Bob's seat stub)."""
    rooms = {room.room_id: room for room in (await alice.rooms()).rooms}
    alice_joined, bob_joined = await asyncio.gather(
        alice.join(rooms["classic"]), join(suite.player("bob"), "classic")
    )
    assert alice_joined.table.table_id == bob_joined.table.table_id
    bob = suite.table_as(bob_joined.token)
    hand_id = alice_joined.hand_id
    await asyncio.gather(
        play_out(suite.table_as(alice_joined.token), hand_id, alice_joined.seat),
        play_out(bob, hand_id, bob_joined.seat),
    )
    return alice_joined.table.table_id, hand_id, bob


async def table_events(suite: Suite, table_id: str) -> list[tuple[float, TableEvent]]:
    """The table's stream as written: each event with its envelope's time."""
    keyring = event_keyring(suite.settings.keys)
    subject = stream_filter(table_stream_id(table_id))
    found: list[tuple[float, TableEvent]] = []
    seq = 0
    while True:
        try:
            msg = await suite.bus.js.get_msg(suite.bus.stream, seq + 1, subject=subject, next=True)
        except Exception:  # NotFoundError: the end of the stream
            return found
        envelope = keyring.open(msg.data or b"")
        found.append((occurred_at(envelope), decode(envelope.type, 1, envelope.payload)))
        seq = int(msg.seq or 0)


async def test_a_seat_ready_before_the_restart_counts_and_the_other_seat_gets_the_hand(
    suite: Suite, table: TableProcess
) -> None:
    settings = suite.settings
    alice = Session(settings.calling, table.address, player_token(settings.keys, "alice"))
    try:
        table_id, first_hand, bob = await a_hand_played(suite, alice)
        alice_stub = suite.table_as(alice.seat_token)  # one ask, never repeated
        alice_asks = asyncio.ensure_future(
            alice_stub.NextHand(table_pb2.NextHandRequest(table_id=table_id), timeout=60)
        )

        async def said() -> bool:
            return any(isinstance(e, SeatReady) for _, e in await table_events(suite, table_id))

        await until(said, "alice's seat_ready on the table's stream")

        await table.kill_and_restart()

        await cut(alice_asks)
        dealt = await bob.NextHand(table_pb2.NextHandRequest(table_id=table_id), timeout=60)
        assert dealt.hand_id and dealt.hand_id != first_hand
        shown = await suite.table.GetTable(table_pb2.GetTableRequest(table_id=table_id))
        assert list(shown.table.hand_ids) == [first_hand, dealt.hand_id]
        assert shown.table.current_hand_id == dealt.hand_id
    finally:
        await alice.close()


async def test_a_round_nobody_completes_ends_when_the_wait_from_the_first_ask_runs_out(
    suite: Suite, table: TableProcess
) -> None:
    settings = suite.settings
    alice = Session(settings.calling, table.address, player_token(settings.keys, "alice"))
    try:
        table_id, first_hand, _bob = await a_hand_played(suite, alice)
        alice_asks = asyncio.ensure_future(alice.next_hand(first_hand))

        async def said() -> float | None:
            return next((at for at, e in await table_events(suite, table_id)
                         if isinstance(e, SeatReady)), None)  # fmt: skip

        await until(said, "alice's seat_ready on the table's stream")
        await asyncio.sleep(2.0)  # the restart comes well after her ask

        killed = await table.kill_and_restart()

        # Her client rides through the restart and gets the service's own answer.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await asyncio.wait_for(alice_asks, READY_WAIT + 60)
        assert refused.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert "bob did not come back for the next hand" in str(refused.value.details())
        events = await table_events(suite, table_id)
        asked = next(e for _, e in events if isinstance(e, SeatReady))
        closed_at, closed = events[-1]
        assert isinstance(closed, TableClosed) and "bob did not come back" in closed.reason
        # The wait ran from her ask, not from the restart.
        assert closed_at >= asked.said_at + READY_WAIT
        assert closed_at < killed + READY_WAIT
    finally:
        await alice.close()
