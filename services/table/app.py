"""The table service, wired: NATS bus + hand feed (durable consumer, with each hand's
log for streams) + the tables' streams + turn clock + rooms + channels to the dealer,
rules, bot and settlement services.

One instance is active: the holder of the lease ``table`` (``instances``). It alone
holds the tables, room queues, next-hand rounds and turn clocks, and follows the hand
feed, so matchmaking and each turn's clock have one owner. Every other instance is a
standby that forwards each call to it (``forwarding``). The instance that takes the
lease (the first to start, at once; after a holder died, one ``DDZ_LEASE_TTL`` later)
folds the open tables back from their streams before it serves a call itself: their
seat tokens, moves and room places work again, every hand in play at them gets its
turn clock back, running from the hand's last event, and a table's last hand that was
assigned but is not on the bus (its dealer's answer never came) is asked for again,
under the request the assignment recorded, so it is dealt once whatever became of the
first request.

An active instance that loses the lease (it could not renew it) stops acting at once
and exits (``LEASE_LOST_EXIT``): it may already have a successor that folded the tables
without what it would write next, and the supervisor (``ddz up``, Docker, Kubernetes)
starts it again as a standby. Turning back into a standby in place would mean undoing
its in-memory tables, queues and clocks piece by piece; a restart undoes them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence

import grpc
import nats.errors
import structlog
from ddz.access.table_tokens import SignedTokens
from ddz.access.tokens import TokenKeys, table_token_key, verification_keys
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_feed import HandFeed
from ddz.adapters.messaging.lease import Lease, instance_id
from ddz.adapters.messaging.room_queue import RoomQueueKV
from ddz.adapters.messaging.table_stream import JetStreamTableLog
from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.rpc.grpc_server import full_service_name
from ddz.adapters.rpc.routing import RoutedRules, rules_service
from ddz.adapters.runtime.memory import GiveBack
from ddz.adapters.runtime.service_runner import connect_bus
from ddz.adapters.security.event_signing import ensure_signer, event_keyring
from ddz.adapters.telemetry import metrics
from ddz.adapters.telemetry.health import ACTIVE_TABLE, Check
from ddz.application.hand_fold import HandFold
from ddz.application.tasks import cancel_and_wait
from ddz.config import Settings
from ddz.domain.table import HandAssigned
from ddz.v1 import (
    bot_pb2_grpc,
    dealer_pb2_grpc,
    desk_pb2_grpc,
    settlement_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)

from .adapters.clients import BotClient, DealerClient, EvidenceClient, RulesClient, SettlementClient
from .adapters.forwarding import Forwarder, Switch, servicer_handlers
from .adapters.instances import LEASE, Active, ActiveWatch, advertised, holder_id
from .servicer import TableServicer
from .use_cases.clock import TurnClock
from .use_cases.handlers import TableHandlers
from .use_cases.limits import Limits
from .use_cases.rooms import Rooms, check_turn_seconds, load_rooms
from .use_cases.tables import Table, Tables

NAME = "table"
log = structlog.get_logger("ddz.table.app")
KEEP_ENDED = 1000
"""Finished hands kept in memory for late views and streams (older ones are read back
from the bus on demand)."""
LEASE_LOST_EXIT = 3
"""The exit code of an active instance that lost its lease."""
STEP_DOWN_WAIT = 2.0
"""Seconds an instance that lost its lease gives its feed to stop (NATS may be gone)."""
TAKE_OVER_ATTEMPTS = 8
"""Tries at folding the tables back before an instance that took the lease gives up (0.5
s, 1 s ... 5 s apart: about half a minute of NATS not answering)."""


class Role(enum.Enum):
    STANDBY = "standby"  # forwards every call to the active instance
    TAKING_OVER = "taking over"  # holds the lease, folding the open tables back
    ACTIVE = "active"  # holds the lease and the tables: serves every call itself
    STEPPED_DOWN = "stepped down"  # lost the lease: acts no more, exiting


def exit_process() -> None:
    """An active instance's end when it lost its lease: its logs flushed, then out at
    once (no graceful stop: calls in flight could no longer be served correctly)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(LEASE_LOST_EXIT)


class TableApp:
    full_names: Sequence[str] = (full_service_name(table_pb2, "TableService"),)

    def __init__(
        self,
        settings: Settings,
        bus: EventBus,
        rules: RoutedRules,
        *,
        rooms: Rooms,
        keys: TokenKeys,
        table_key: bytes,
        lease_lost: Callable[[], None] = exit_process,
    ) -> None:
        self.settings = settings
        self.bus = bus
        self.rules = rules  # each hand's calls to one instance
        self.rooms = rooms
        self.keys = keys
        self.table_key = table_key
        self.tables = Tables()
        self.channels: list[grpc.aio.Channel] = []
        self.advertised = advertised(settings.table, settings.network)
        self.holder = holder_id(instance_id(NAME), self.advertised)
        self.role = Role.STANDBY
        self.forwarder = Forwarder(settings.calling, self.holder)
        # What a crowd held is freed when it leaves; the allocator is asked to give it back.
        self.memory = GiveBack()
        self.lease_lost = lease_lost
        self._activation: asyncio.Task[None] | None = None
        self._serving = False  # start() has returned: the server may take calls
        self._closing = False
        self._stopped_acting = False
        # Restored tables whose last hand is assigned but not on the bus: its deal is
        # asked for again once this instance is active.
        self._undealt: list[tuple[Table, HandAssigned]] = []
        keyring = event_keyring(settings.keys)  # every event folded or read is verified
        self.feed = HandFeed(
            bus, keyring=keyring, keep_log=True, keep_ended=KEEP_ENDED, on_change=self._changed
        )
        self.handlers = TableHandlers(
            tables=self.tables,
            hands=self.feed,
            rooms=rooms,
            dealer=DealerClient(dealer_pb2_grpc.DealerServiceStub(self._channel("dealer"))),  # type: ignore[no-untyped-call]
            rules=RulesClient(rules),
            bot=BotClient(bot_pb2_grpc.BotServiceStub(self._channel("bot"))),  # type: ignore[no-untyped-call]
            settlement=SettlementClient(
                settlement_pb2_grpc.SettlementServiceStub(self._channel("settlement"))  # type: ignore[no-untyped-call]
            ),
            tokens=SignedTokens(keys, table_key, settings.table.seat_token_ttl),
            ready_wait=settings.clocks.turn_timeout,
            limits=Limits.of(settings.table),
            turn_seconds=settings.clocks.turn_timeout,
            auto_play_seconds=settings.clocks.autoplay_turn_timeout,
            auto_play_after=settings.clocks.timeouts_to_autoplay,
            reconnect_grace=settings.clocks.reconnect_grace,
            evidence=EvidenceClient(desk_pb2_grpc.DeskServiceStub(self._channel("recorder"))),  # type: ignore[no-untyped-call]
        )
        self.servicer = TableServicer(self.handlers)
        self.clock = TurnClock(self.handlers.timing, self.handlers.moves.time_out)
        self.table_log = JetStreamTableLog(
            bus, producer=NAME, keyring=keyring, signer=ensure_signer(settings.keys, NAME)
        )
        self.lease = Lease(
            bus, LEASE, self.holder, service=NAME, ttl=settings.bus.lease_ttl,
            replicas=settings.bus.stream_replicas, on_taken=self._taken, on_lost=self._lost,
            want=lambda: self.role is not Role.STEPPED_DOWN,
        )  # fmt: skip
        self.watch = ActiveWatch(bus, replicas=settings.bus.stream_replicas, on_change=self._saw)
        self._watching = False

    def _channel(self, service: str) -> grpc.aio.Channel:
        channel = make_channel(self.settings.calling, service)
        self.channels.append(channel)
        return channel

    async def start(self) -> None:
        try:
            await self.lease.start()  # a free lease is taken at once: no wait on a fresh stack
            if self._activation is not None:
                await self._activation  # the first instance is active before it serves
            self._watching = True
            await self.watch.start()
        except BaseException:
            await self.lease.stop()
            raise
        if self.role is Role.STANDBY:
            log.info("table_standby", holder=self.holder, lease=LEASE)
        self._serving = True
        self.memory.start()

    # -- the lease ---------------------------------------------------------------------

    def _taken(self) -> None:
        """The lease is ours: fold the tables back and serve, in a task of its own so
        the lease goes on being renewed meanwhile (many tables take a while)."""
        self.role = Role.TAKING_OVER
        self.forwarder.hold("this table instance is taking over as the active one")
        self._activation = asyncio.create_task(self._activate(), name="table:take-over")

    async def _activate(self) -> None:
        try:
            for attempt in range(1, TAKE_OVER_ATTEMPTS + 1):
                try:
                    await self._rebuild(self.table_log)  # again: only the tables not yet known
                    await self.handlers.restore_queues(
                        RoomQueueKV(self.bus, self.settings.bus.stream_replicas)
                    )
                    await self.feed.follow(NAME)
                    break
                except (nats.errors.Error, TimeoutError) as exc:
                    # NATS not answering (a node died, a leader being elected): the lease
                    # is still ours until its deadline, so try again rather than leave
                    # the players without an active instance.
                    if attempt == TAKE_OVER_ATTEMPTS or not self._still_ours():
                        raise
                    log.warning("table_take_over_retry", attempt=attempt, error=repr(exc))
                    await asyncio.sleep(min(5.0, 0.5 * 2 ** (attempt - 1)))
        except Exception:
            if not self._serving:
                raise  # start() fails with it, as before
            log.exception("table_take_over_failed", holder=self.holder)
            await self._step_down("its take-over failed")
            return
        self.role = Role.ACTIVE
        for table, assigned in self._undealt:  # the feed follows: their events reach it
            self.handlers.finish_deal(table, assigned)
        self._undealt.clear()
        self.forwarder.release()  # the calls that waited are served here now
        metrics.TABLE_ACTIVE.inc()
        log.info("table_active", holder=self.holder, tables=len(self.tables.all()))

    def _still_ours(self) -> bool:
        return self.lease.held

    async def _lost(self) -> None:
        if not self._closing:
            await self._step_down("it lost the lease")

    async def _step_down(self, why: str) -> None:
        """Stop acting at once (no call served, no clock, no queue, no feed), then
        ``lease_lost`` (exit the process)."""
        if self.role is Role.STEPPED_DOWN:
            return
        if self.role is Role.ACTIVE:
            metrics.TABLE_ACTIVE.dec()
        self.role = Role.STEPPED_DOWN
        self.forwarder.refuse(f"this table instance stepped down ({why}) and is exiting")
        log.error("table_stepped_down", holder=self.holder, why=why,
                  then="exiting, to be started again as a standby")  # fmt: skip
        activation = self._activation
        if activation is not None and activation is not asyncio.current_task():
            await _cancelled(activation)
        await self._stop_acting(settle=False)
        self.lease_lost()

    async def _stop_acting(self, *, settle: bool) -> None:
        """Clocks, queues, rounds and the feed stopped; with ``settle``, the tables' last
        events written first (a clean stop: the next active one folds them)."""
        if self._stopped_acting:
            return
        self._stopped_acting = True
        await self.handlers.close()
        await self.clock.close()
        if settle:
            await self.tables.settle()  # the tables' last events, before the bus closes
        # Acks what it handled; bounded, as NATS may be what is gone.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(None if settle else STEP_DOWN_WAIT):
                await self.feed.close()

    def _saw(self, active: Active | None) -> None:
        """The lease changed hands: a standby forwards to its holder from now on."""
        if self.role is not Role.STANDBY:
            return
        if active is None:
            self.forwarder.refuse(
                "no table instance is active: the lease is free (an instance takes it "
                "within a second)",
                for_now=True,
            )
        elif active.holder == self.holder:
            return  # ours: _taken comes next
        elif active.address is None:
            self.forwarder.refuse(
                f"the active table instance ({active.holder}) advertises no address to "
                "forward to (it listens on port 0 and DDZ_TABLE_ADVERTISE is not set)"
            )
        elif active.address == self.advertised:
            self.forwarder.refuse(
                f"the active table instance ({active.holder}) advertises {active.address}, "
                "this instance's own address: set DDZ_TABLE_ADVERTISE on each instance to "
                "an address the others reach"
            )
        else:
            self.forwarder.point_at(active.address, active.holder)

    async def _rebuild(self, table_log: JetStreamTableLog) -> None:
        """Fold the open tables back from their streams, then write to them."""
        for table_id in await table_log.open_table_ids():
            if self.tables.get(table_id) is not None:
                continue  # restored by an earlier try of this take-over
            try:
                history = await table_log.read(table_id)
            except ValueError:  # CodecError too: a table this version cannot read
                log.exception("table_not_restored", table_id=table_id)
                continue
            if history is None or history.state.closed:
                continue
            hand_ids = history.state.hand_ids
            last = hand_ids[-1] if hand_ids else None
            # Read before the table is known here: a read NATS does not answer leaves
            # nothing half restored for the next try.
            fold = await self.feed.load(last) if last is not None else None
            table = self.tables.restore(history)
            self.handlers.seating.restore(table)
            assigned = history.state.last_assigned
            if last is not None and fold is None:
                if assigned is not None and assigned.hand_id == last:
                    self._undealt.append((table, assigned))  # asked for once active
                else:
                    self.tables.drop_hand(table, last)  # assigned, never dealt
            elif fold is not None and not fold.over and fold.log:
                self.clock.resume(fold)
            log.info("table_restored", table_id=table_id, hands=len(table.hand_ids),
                     hand_in_play=self.handlers.floor.hand_in_play(table))  # fmt: skip
        self.tables.log = table_log

    def checks(self) -> Mapping[str, Check]:
        """The active instance serves while it follows the feed; a standby while it
        knows an active one to forward to (so the load balancer may send it calls)."""
        bus, feed, lease = self.bus, self.feed, self.lease
        return {
            "nats": lambda: bus.connected,
            "feed": lambda: self.role is not Role.ACTIVE or feed.healthy,
            "lease": lambda: lease.running,
            "active": lambda: (
                self.role is Role.ACTIVE
                or (self.role is Role.STANDBY and self.forwarder.target is not None)
            ),
        }

    def roles(self) -> Mapping[str, Check]:
        """SERVING for ``ACTIVE_TABLE`` on the active instance only: players' channels
        balance by it, so their calls skip the standbys' forwarding hop."""
        return {ACTIVE_TABLE: lambda: self.role is Role.ACTIVE}

    def _changed(self, fold: HandFold, applied: object) -> None:
        if self.role is Role.STEPPED_DOWN:
            return  # acting no more: the feed is being stopped
        # Deadlines apply to the hands dealt at this service's tables.
        if self.tables.table_of(fold.hand_id) is not None:
            self.clock.update(fold)
        self.handlers.hand_changed(fold)

    def add_to_server(self, server: grpc.aio.Server) -> None:
        """One generic handler for every method: this instance's servicer while it is
        the active one, the forwarder while it stands by (``forwarding.Switch``)."""
        local = servicer_handlers(table_pb2_grpc.add_TableServiceServicer_to_server, self.servicer)
        switch = Switch(local, self.forwarder, lambda: self.role is Role.ACTIVE)
        server.add_generic_rpc_handlers((switch,))

    async def close(self) -> None:
        self._closing = True
        await self.memory.stop()
        if self._watching:
            await self.watch.stop()
        if self._activation is not None:
            await _cancelled(self._activation)
        await self._stop_acting(settle=True)
        await self.lease.stop()  # after the last writes: the next active one folds them
        if self.role is Role.ACTIVE:
            metrics.TABLE_ACTIVE.dec()
        self.role = Role.STEPPED_DOWN
        await self.forwarder.close()
        await self.bus.close()
        for channel in self.channels:
            await channel.close()
        await self.rules.close()


async def _cancelled(task: asyncio.Task[None]) -> None:
    with contextlib.suppress(Exception):  # logged where it ended
        await cancel_and_wait([task])


async def build(settings: Settings, *, lease_lost: Callable[[], None] | None = None) -> TableApp:
    """``lease_lost``: what an active instance that lost its lease does once it has stopped
    acting (default: exit the process; tests that run instances in one process record it)."""
    # Read first: a bad rooms file or key stops the service before it connects.
    rooms = load_rooms(settings.table.rooms_file)
    check_turn_seconds(rooms, settings.clocks.turn_timeout)
    keys = verification_keys(settings.keys)
    table_key = table_token_key(settings.keys)
    bus = await connect_bus(settings.bus, NAME)
    rules = rules_service(settings.calling, settings.bot.bot_partitions)
    try:
        return TableApp(
            settings, bus, rules, rooms=rooms, keys=keys, table_key=table_key,
            lease_lost=lease_lost or exit_process,
        )  # fmt: skip
    except BaseException:
        await rules.close()
        await bus.close()
        raise
