"""The rules service, wired: the hands' log on the NATS bus, the dealer's seeds over a
channel, the ``Rules`` use cases on them, and the servicer in front."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import grpc
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_stream import JetStreamHandLog
from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.rpc.grpc_server import full_service_name
from ddz.adapters.runtime.service_runner import connect_bus, producer_name
from ddz.adapters.security.event_signing import ensure_signer, event_keyring
from ddz.adapters.telemetry.health import Check
from ddz.config import Settings
from ddz.v1 import dealer_pb2_grpc, rules_pb2, rules_pb2_grpc

from .adapters.clients import DealerSeeds
from .servicer import RulesServicer
from .use_cases.cache import HandCache, KeyedLocks
from .use_cases.handlers import Rules

NAME = "rules"
CACHE_SIZE = 2000  # hands in play kept folded; the rest are rebuilt from the bus


class RulesApp:
    full_names: Sequence[str] = (full_service_name(rules_pb2, "RulesService"),)

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.bus: EventBus | None = None
        self.channel: grpc.aio.Channel | None = None
        self.servicer: RulesServicer | None = None

    async def start(self) -> None:
        self.bus = await connect_bus(self.settings, NAME)
        self.channel = make_channel(self.settings, "dealer")
        dealer = dealer_pb2_grpc.DealerServiceStub(self.channel)  # type: ignore[no-untyped-call]
        rules = Rules(
            JetStreamHandLog(
                self.bus, ensure_signer(self.settings, NAME), event_keyring(self.settings)
            ),
            DealerSeeds(dealer),
            HandCache(CACHE_SIZE),
            KeyedLocks(),
            producer_name(NAME),
        )
        self.servicer = RulesServicer(rules)

    def checks(self) -> Mapping[str, Check]:
        bus = self.bus
        assert bus is not None, "start() first"
        return {"nats": lambda: bus.connected}

    def add_to_server(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None, "start() first"
        rules_pb2_grpc.add_RulesServiceServicer_to_server(self.servicer, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close()
        if self.bus is not None:
            await self.bus.close()


async def build(settings: Settings) -> RulesApp:
    return RulesApp(settings)
