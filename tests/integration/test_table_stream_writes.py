"""A table's write whose answer is lost on the way back: the table asks again, and the
event is on its stream once, with no conflict for the table's next write; a queued
ticket likewise is written once.

The loss is real: the table talks to the real nats-server through a TCP relay
(``LossyLink``) that drops the server's next acknowledgement of a publish, after the
stream stored it. The writer's request then times out, it asks again with the same
message id and expected sequence, JetStream refuses the repeat (the expected sequence
no longer holds), and the writer finds its own event as the last on the table's filter.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.room_queue import BUCKET as ROOM_QUEUE_BUCKET
from ddz.adapters.messaging.room_queue import RoomQueueKV
from ddz.adapters.messaging.server import MSG_ID
from ddz.adapters.messaging.subjects import stream_filter
from ddz.adapters.messaging.table_stream import JetStreamTableLog, table_stream_id
from ddz.adapters.runtime.nats_server import NatsServer
from ddz.application.room_tickets import QueuedTicket
from ddz.application.table_history import TableCursor
from ddz.domain.hand import SeatInfo
from ddz.domain.ruleset import CLASSIC
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import SeatReady, TableOpened
from signing_kit import KEYRING, TABLE

SEATS = (SeatInfo("ann"), SeatInfo("bea"), SeatInfo("cai"))


class LossyLink:
    """A TCP relay to a nats-server that passes everything, except that after
    ``lose_next_ack()`` it drops the next publish acknowledgement (``{"stream":...``)
    the server sends to a client."""

    def __init__(self, server: NatsServer) -> None:
        self.server = server
        self.losing = False
        self.lost = 0
        self._listener: asyncio.Server | None = None
        self._pumps: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._listener is not None
        port = self._listener.sockets[0].getsockname()[1]
        return f"nats://127.0.0.1:{port}"

    def lose_next_ack(self) -> None:
        self.losing = True

    async def __aenter__(self) -> LossyLink:
        self._listener = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._listener is not None
        self._listener.close()
        for pump in self._pumps:
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)

    async def _accept(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        server_in, server_out = await asyncio.open_connection(self.server.host, self.server.port)
        for pump in (
            self._upstream(client_in, server_out),
            self._downstream(server_in, client_out),
        ):
            task = asyncio.ensure_future(pump)
            self._pumps.add(task)

    async def _upstream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _downstream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The server's protocol, a line at a time; a message's payload (its size is the
        last token of its ``MSG``/``HMSG`` line) read whole, and dropped when it is the
        acknowledgement to lose."""
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while line := await reader.readline():
                frame = line
                if line.startswith((b"MSG ", b"HMSG ")):
                    payload = await reader.readexactly(int(line.split()[-1]) + 2)
                    frame += payload
                    if self.losing and payload.startswith(b'{"stream":'):
                        self.losing = False
                        self.lost += 1
                        continue
                writer.write(frame)
                await writer.drain()
        writer.close()


@contextlib.asynccontextmanager
async def table_writer(link: LossyLink) -> AsyncIterator[JetStreamTableLog]:
    writer = await EventBus.connect(link.url, name="table")
    try:
        yield JetStreamTableLog(writer, keyring=KEYRING, signer=TABLE, timeout=1.0)
    finally:
        await writer.close()


async def test_a_table_write_stored_but_unanswered_is_asked_again_and_stored_once(
    nats_server: NatsServer, bus: EventBus
) -> None:
    async with LossyLink(nats_server) as link, table_writer(link) as table_log:
        link.lose_next_ack()
        opened = TableOpened("t-lost", CLASSIC, RoomSettings(), SEATS)
        cursor = await table_log.append("t-lost", TableCursor(), [opened])
        assert link.lost == 1

        link.lose_next_ack()
        after = await table_log.append("t-lost", cursor, [SeatReady(0, 1, 0.0)])
        assert link.lost == 2
        # The next write goes on from the cursor the lost answers left: no conflict.
        last = await table_log.append("t-lost", after, [SeatReady(1, 1, 0.0)])

    assert (cursor.version, after.version, last.version) == (1, 2, 3)
    history = await JetStreamTableLog(bus, keyring=KEYRING).read("t-lost")
    assert history is not None and history.cursor == last
    assert history.state.seats == SEATS
    info = await bus.js.stream_info(
        bus.stream, subjects_filter=stream_filter(table_stream_id("t-lost"))
    )
    assert sum((info.state.subjects or {}).values()) == 3
    stored = [await bus.js.get_msg(bus.stream, c.seq) for c in (cursor, after, last)]
    assert len({(m.headers or {}).get(MSG_ID) for m in stored}) == 3


async def test_a_queued_ticket_stored_but_unanswered_is_written_once(
    nats_server: NatsServer, bus: EventBus
) -> None:
    """The room queue's write asked again carries the same message id: the bucket keeps
    one entry, written once (the repeat is dropped as a duplicate)."""
    async with LossyLink(nats_server) as link:
        writer = await EventBus.connect(link.url, name="table")
        try:
            queue = RoomQueueKV(writer, timeout=1.0)
            await queue.open()
            link.lose_next_ack()
            ticket = QueuedTicket("classic", "ann", 1_700_000_000.0, 500)
            queue.keep(ticket, ttl=60)
            await queue.settle()
            assert link.lost == 1
        finally:
            await writer.close()

    assert await RoomQueueKV(bus).tickets() == [ticket]
    info = await bus.js.stream_info(f"KV_{ROOM_QUEUE_BUCKET}")
    assert info.state.last_seq == 1  # one write stored: the repeat was not a second
