"""The table service, wired: NATS bus + hand feed (durable consumer, with each hand's
log for streams) + the tables' streams + turn clock + rooms + channels to the dealer,
rules, bot and settlement services.

On start the open tables are folded back from their streams before anything is served:
their seat tokens, moves and room places work again, and every hand in play at them
gets its turn clock back, running from the hand's last event."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import grpc
import structlog
from ddz.adapters.bus import EventBus
from ddz.adapters.event_signing import ensure_signer, event_keyring
from ddz.adapters.grpc_client import make_channel
from ddz.adapters.grpc_server import full_service_name
from ddz.adapters.hand_feed import HandFeed, HandFold
from ddz.adapters.health import Check
from ddz.adapters.routing import RoutedRules, rules_service
from ddz.adapters.service_runner import connect_bus
from ddz.adapters.table_stream import JetStreamTableLog, occurred_at
from ddz.adapters.tokens import table_token_key, verification_keys
from ddz.config import Settings
from ddz.v1 import (
    bot_pb2_grpc,
    dealer_pb2_grpc,
    settlement_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)

from .clients import BotClient, DealerClient, RulesClient, SettlementClient
from .clock import TurnClock
from .credentials import SignedTokens
from .handlers import TableHandlers
from .limits import Limits
from .rooms import load_rooms
from .servicer import TableServicer
from .tables import Tables

NAME = "table"
log = structlog.get_logger("ddz.table.app")
KEEP_ENDED = 1000
"""Finished hands kept in memory for late views and streams (older ones are read back
from the bus on demand)."""


class TableApp:
    full_names: Sequence[str] = (full_service_name(table_pb2, "TableService"),)

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # Read now: a bad rooms file or key stops the service before it serves.
        self.rooms = load_rooms(settings.rooms_file)
        self.keys = verification_keys(settings)
        self.table_key = table_token_key(settings)
        self.tables = Tables()
        self.bus: EventBus | None = None
        self.feed: HandFeed | None = None
        self.clock: TurnClock | None = None
        self.channels: list[grpc.aio.Channel] = []
        self.rules: RoutedRules | None = None
        self.handlers: TableHandlers | None = None
        self.servicer: TableServicer | None = None

    def _channel(self, service: str) -> grpc.aio.Channel:
        channel = make_channel(self.settings, service)
        self.channels.append(channel)
        return channel

    async def start(self) -> None:
        self.bus = await connect_bus(self.settings, NAME)
        self.rules = rules_service(self.settings)  # each hand's calls to one instance
        keyring = event_keyring(self.settings)  # every event folded or read is verified
        self.feed = HandFeed(
            self.bus, keyring=keyring, keep_log=True, keep_ended=KEEP_ENDED,
            on_change=self._changed,
        )  # fmt: skip
        self.handlers = TableHandlers(
            tables=self.tables,
            hands=self.feed,
            rooms=self.rooms,
            dealer=DealerClient(dealer_pb2_grpc.DealerServiceStub(self._channel("dealer"))),  # type: ignore[no-untyped-call]
            rules=RulesClient(self.rules),
            bot=BotClient(bot_pb2_grpc.BotServiceStub(self._channel("bot"))),  # type: ignore[no-untyped-call]
            settlement=SettlementClient(
                settlement_pb2_grpc.SettlementServiceStub(self._channel("settlement"))  # type: ignore[no-untyped-call]
            ),
            tokens=SignedTokens(self.keys, self.table_key, self.settings.seat_token_ttl),
            ready_wait=self.settings.turn_timeout,
            limits=Limits.of(self.settings),
        )
        self.servicer = TableServicer(self.handlers)
        self.clock = TurnClock(self.settings.turn_timeout, self.handlers.disconnect)
        table_log = JetStreamTableLog(
            self.bus, producer=NAME, keyring=keyring, signer=ensure_signer(self.settings, NAME)
        )
        await self._rebuild(table_log)
        await self.feed.follow(NAME)

    async def _rebuild(self, table_log: JetStreamTableLog) -> None:
        """Fold the open tables back from their streams, then write to them."""
        assert self.feed is not None and self.clock is not None and self.handlers is not None
        for table_id in await table_log.open_table_ids():
            try:
                history = await table_log.read(table_id)
            except ValueError:  # CodecError too: a table this version cannot read
                log.exception("table_not_restored", table_id=table_id)
                continue
            if history is None or history.state.closed:
                continue
            table = self.tables.restore(history)
            self.handlers.seating.restore(table)
            last = table.last_hand_id
            fold = await self.feed.load(last) if last is not None else None
            if last is not None and fold is None:
                self.tables.drop_hand(table, last)  # assigned, never dealt
            elif fold is not None and not fold.over and fold.log:
                self.clock.resume(fold, since=occurred_at(fold.log[-1].envelope))
            log.info("table_restored", table_id=table_id, hands=len(table.hand_ids),
                     hand_in_play=self.handlers.floor.hand_in_play(table))  # fmt: skip
        self.tables.log = table_log

    def checks(self) -> Mapping[str, Check]:
        bus, feed = self.bus, self.feed
        assert bus is not None and feed is not None, "start() first"
        return {"nats": lambda: bus.connected, "feed": lambda: feed.healthy}

    def _changed(self, fold: HandFold, applied: object) -> None:
        # Deadlines apply to the hands dealt at this service's tables.
        if self.clock is not None and self.tables.table_of(fold.hand_id) is not None:
            self.clock.update(fold)
        if self.handlers is not None:
            self.handlers.hand_changed(fold)

    def add_to_server(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None, "start() first"
        table_pb2_grpc.add_TableServiceServicer_to_server(self.servicer, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self.handlers is not None:
            await self.handlers.close()
        if self.clock is not None:
            await self.clock.close()
        await self.tables.settle()  # the tables' last events, before the bus closes
        if self.feed is not None:
            await self.feed.close()  # acks what it handled: before the connection closes
        if self.bus is not None:
            await self.bus.close()
        for channel in self.channels:
            await channel.close()
        if self.rules is not None:
            await self.rules.close()


async def build(settings: Settings) -> TableApp:
    return TableApp(settings)
