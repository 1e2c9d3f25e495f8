"""The bot service, wired: NATS bus + hand feed (durable consumer) + the rules client +
autoplay + the Suggest/GetStats handlers behind the servicer.

``build(settings, player=..., partition=i, partitions=n)``: the player kind
(``ddz.player_kinds``; default ``settings.bot_player``, the strong bot) and this instance's
share of the hands (see ``autoplay`` on scaling out; one instance plays every hand by
default).
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from ddz.adapters.bus import EventBus
from ddz.adapters.grpc_client import make_channel
from ddz.adapters.grpc_server import full_service_name
from ddz.adapters.hand_feed import HandFeed
from ddz.adapters.service_runner import connect_bus
from ddz.config import Settings
from ddz.player_kinds import make_player
from ddz.v1 import bot_pb2, bot_pb2_grpc, rules_pb2_grpc

from .autoplay import AutoPlay, in_partition
from .clients import RulesClient
from .handlers import GetStats, Suggest
from .hands import FeedLookup
from .servicer import BotServicer

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
        self.servicer: BotServicer | None = None

    async def start(self) -> None:
        self.bus = await connect_bus(self.settings, NAME)
        self.channel = make_channel(self.settings, "rules")
        stub = rules_pb2_grpc.RulesServiceStub(self.channel)  # type: ignore[no-untyped-call]
        rules = RulesClient(stub, timeout=self.settings.rpc_timeout)
        self.autoplay = AutoPlay(rules, self.player)
        self.feed = HandFeed(
            self.bus,
            keep_ended=0,
            on_change=self.autoplay.on_change,
            accept=lambda hand_id: in_partition(hand_id, self.partition, self.partitions),
        )
        self.autoplay.attach(self.feed)
        self.servicer = BotServicer(
            Suggest(FeedLookup(self.feed), self.player), GetStats(self.autoplay, self.player_kind)
        )
        await self.feed.follow(self.durable)

    def add_to_server(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None, "start() first"
        bot_pb2_grpc.add_BotServiceServicer_to_server(self.servicer, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self.autoplay is not None:
            await self.autoplay.close()
        if self.feed is not None:
            await self.feed.close()  # acks what it handled: before the connection closes
        if self.bus is not None:
            await self.bus.close()
        if self.channel is not None:
            await self.channel.close()


async def build(settings: Settings, **overrides: object) -> BotApp:
    return BotApp(settings, **overrides)  # type: ignore[arg-type]
