"""The bot service, wired: NATS bus + hand feed (durable consumer) + the rules client +
autoplay + the stall watchdog + the Suggest/GetStats handlers behind the servicer.

As it starts, once the feed follows the bus, it reads back the hands still in play
(``hands.resume_hands``), in the background: a hand waiting on one of its seats from
before it started is played.

``build(settings, player=..., partition=i, partitions=n)``: the player kind
(``ddz.player_kinds``; default ``settings.bot_player``, the strong bot) and this instance's
share of the hands (see ``autoplay`` on scaling out; one instance plays every hand by
default).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence

import grpc
from ddz.adapters.bus import EventBus
from ddz.adapters.grpc_client import make_channel
from ddz.adapters.grpc_server import full_service_name
from ddz.adapters.hand_feed import Entry, HandFeed, HandFold
from ddz.adapters.health import Check
from ddz.adapters.service_runner import connect_bus
from ddz.config import Settings
from ddz.player_kinds import make_player
from ddz.v1 import bot_pb2, bot_pb2_grpc, rules_pb2_grpc

from .autoplay import AutoPlay, in_partition
from .clients import RulesClient
from .handlers import GetStats, Suggest
from .hands import FeedLookup, resume_hands
from .servicer import BotServicer
from .watchdog import Watchdog

NAME = "bot"


class BotApp:
    full_names: Sequence[str] = (full_service_name(bot_pb2, "BotService"),)

    def __init__(
        self,
        settings: Settings,
        *,
        player: str | None = None,
        partition: int = 0,
        partitions: int = 1,
    ) -> None:
        if not 0 <= partition < max(1, partitions):
            raise ValueError(f"partition {partition} is not one of 0..{partitions - 1}")
        self.settings = settings
        self.player_kind = player or settings.bot_player
        self.player = make_player(self.player_kind, max_ms=settings.bot_max_ms)
        self.partition = partition
        self.partitions = partitions
        self.durable = NAME if partitions <= 1 else f"{NAME}-{partition}-of-{partitions}"
        self.bus: EventBus | None = None
        self.channel: grpc.aio.Channel | None = None
        self.autoplay: AutoPlay | None = None
        self.feed: HandFeed | None = None
        self.watchdog: Watchdog | None = None
        self.servicer: BotServicer | None = None
        self._resuming: asyncio.Task[int] | None = None

    async def start(self) -> None:
        self.bus = await connect_bus(self.settings, NAME)
        self.channel = make_channel(self.settings, "rules")
        stub = rules_pb2_grpc.RulesServiceStub(self.channel)  # type: ignore[no-untyped-call]
        rules = RulesClient(stub, timeout=self.settings.rpc_timeout)
        self.autoplay = AutoPlay(rules, self.player)
        self.feed = HandFeed(
            self.bus,
            keep_ended=0,
            on_change=self._changed,
            accept=lambda hand_id: in_partition(hand_id, self.partition, self.partitions),
        )
        self.autoplay.attach(self.feed)
        self.watchdog = Watchdog(
            self.feed,
            self.autoplay.moves,
            self.autoplay.kick,
            stall_after=self.settings.turn_timeout + self.settings.stall_margin,
        )
        self.servicer = BotServicer(
            Suggest(FeedLookup(self.feed), self.player), GetStats(self.autoplay, self.player_kind)
        )
        await self.feed.follow(self.durable)
        self.watchdog.start()
        self._resuming = asyncio.create_task(resume_hands(self.feed), name="bot:resume")

    def _changed(self, fold: HandFold, applied: list[Entry]) -> None:
        if self.watchdog is not None:
            self.watchdog.seen(fold)
        if self.autoplay is not None:
            self.autoplay.on_change(fold, applied)

    def checks(self) -> Mapping[str, Check]:
        """NOT_SERVING while NATS or the hand feed is down."""
        bus, feed = self.bus, self.feed
        assert bus is not None and feed is not None, "start() first"
        return {"nats": lambda: bus.connected, "feed": lambda: feed.healthy}

    def add_to_server(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None, "start() first"
        bot_pb2_grpc.add_BotServiceServicer_to_server(self.servicer, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self._resuming is not None:
            self._resuming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._resuming
        if self.watchdog is not None:
            await self.watchdog.close()
        if self.autoplay is not None:
            await self.autoplay.close()
        if self.feed is not None:
            await self.feed.close()  # finishes and acks its batch: before the connection closes
        if self.bus is not None:
            await self.bus.close()
        if self.channel is not None:
            await self.channel.close()


async def build(settings: Settings, **overrides: object) -> BotApp:
    return BotApp(settings, **overrides)  # type: ignore[arg-type]
