"""The players' web front, wired: the player's page and the TableService over gRPC-Web
and Connect, over HTTPS (uvicorn, the stack's certificate of the ``play`` identity), each
call forwarded to the table's gRPC port with the caller's own token (``gateway``).

Started like every service (``service_runner``): its gRPC port answers health only, and
it is SERVING while its web server runs. It holds no key, has no NATS connection, and
keeps nothing: a reload or a second instance finds everything at the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import grpc
import structlog
from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.runtime.web_server import WebServer
from ddz.adapters.security.token_keys import login_key
from ddz.adapters.security.tokens import issue
from ddz.adapters.telemetry.health import Check
from ddz.config import Settings

from .adapters.gateway import TableForward, TableGateway
from .servicer import PlayWeb
from .use_cases.handlers import Guests

NAME = "play"

log = structlog.get_logger("ddz.play")


class PlayApp:
    full_names: Sequence[str] = ()  # health and reflection only

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.channel: grpc.aio.Channel | None = None
        self.web: WebServer | None = None

    async def start(self) -> None:
        settings = self.settings
        self.channel = make_channel(settings, "table")
        guests = None
        if settings.play_guests:  # the login's key signs guests' tokens: a local suite's
            key = login_key(settings)
            guests = Guests(lambda name, ttl: issue(key, "player", name, ttl))
            log.warning("play_guests", why="DDZ_PLAY_GUESTS: anyone may play as a guest")
        app = PlayWeb(TableGateway(TableForward(self.channel)), guests)
        self.web = await WebServer.start(
            app, settings, settings.listen_address("play", settings.play_web_port), NAME
        )

    def checks(self) -> Mapping[str, Check]:
        return {"web": lambda: self.web is not None and self.web.running()}

    def add_to_server(self, server: grpc.aio.Server) -> None:
        pass  # no RPCs of its own: health (and reflection) only

    async def close(self) -> None:
        if self.web is not None:
            await self.web.stop()
        if self.channel is not None:
            await self.channel.close()


async def build(settings: Settings) -> PlayApp:
    return PlayApp(settings)
