"""The players' web front, wired: the player's page and the TableService over gRPC-Web
and Connect, over HTTPS (uvicorn, the stack's certificate of the ``play`` identity), each
call forwarded to the table's gRPC port with the caller's own token (``gateway``).

Started like every service (``service_runner``): its gRPC port answers health only, and
it is SERVING while its web server runs. It holds no key, has no NATS connection, and
keeps nothing: a reload or a second instance finds everything at the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack

import grpc
import structlog
from ddz.access.token_keys import login_key
from ddz.access.tokens import issue
from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.runtime.web_server import WebServer
from ddz.adapters.telemetry.health import Check
from ddz.config import Settings

from .adapters.gateway import TableForward, TableGateway
from .servicer import PlayWeb
from .use_cases.handlers import Guests

NAME = "play"

log = structlog.get_logger("ddz.play")


class PlayApp:
    """The players' front built whole (``build``): its channel to the table and its
    running web server."""

    full_names: Sequence[str] = ()  # health and reflection only

    def __init__(self, web: WebServer, resources: AsyncExitStack) -> None:
        self.web = web
        self.resources = resources

    async def start(self) -> None:
        pass  # the web server was started by ``build``

    def checks(self) -> Mapping[str, Check]:
        web = self.web
        return {"web": web.running}

    def add_to_server(self, server: grpc.aio.Server) -> None:
        pass  # no RPCs of its own: health (and reflection) only

    async def close(self) -> None:
        await self.resources.aclose()  # the web server, then the table's channel


async def build(settings: Settings) -> PlayApp:
    """The front with the table's channel open and its page served; what was opened is
    closed again if a later step fails."""
    resources = AsyncExitStack()
    try:
        channel = make_channel(settings.calling, "table")
        resources.push_async_callback(channel.close)
        guests = None
        if settings.play.play_guests:  # the login's key signs guests' tokens: a local suite's
            key = login_key(settings.keys)
            guests = Guests(lambda name, ttl: issue(key, "player", name, ttl))
            log.warning("play_guests", why="DDZ_PLAY_GUESTS: anyone may play as a guest")
        app = PlayWeb(TableGateway(TableForward(channel)), guests)
        web = await WebServer.start(
            app,
            settings.tls,
            settings.network.listen_address("play", settings.network.play_web_port),
            NAME,
        )
        resources.push_async_callback(web.stop)
        return PlayApp(web, resources)
    except BaseException:
        await resources.aclose()
        raise
