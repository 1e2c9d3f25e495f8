"""The console service, wired: the desk's pages over HTTPS (uvicorn, the stack's TLS
certificate of the ``console`` identity) and its clients of the recorder and the
settlement, as ``console`` (mTLS, least rights: ``ddz.adapters.security.rights``).

Started like every service (``service_runner``): its gRPC port answers health only (the
stack, Docker and Kubernetes probe it as they probe the others), and it is SERVING
while its web server runs. It holds no signing key, publishes nothing and has no NATS
connection: everything it shows comes through the recorder and the settlement, and its
sessions are the recorder's too (``session.py``), so any instance serves any of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import grpc
import structlog
from ddz.adapters.runtime.web_server import WebServer
from ddz.adapters.security.token_keys import LoginKeys, login_jwks_path
from ddz.adapters.telemetry.health import Check
from ddz.config import Settings

from .adapters.clients import RecorderClient, SettlementClient, connect
from .servicer import Console
from .use_cases.handlers import Desk
from .use_cases.session import Sessions, session_key

NAME = "console"

log = structlog.get_logger("ddz.console")


class ConsoleApp:
    full_names: Sequence[str] = ()  # health and reflection only

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.recorder: RecorderClient | None = None
        self.settlement: SettlementClient | None = None
        self.web: WebServer | None = None

    async def start(self) -> None:
        settings = self.settings
        self.recorder, self.settlement = connect(settings)
        sessions = Sessions(
            session_key(settings.data_dir), settings.console_session_ttl, self.recorder
        )
        console = Console(
            Desk(self.recorder, self.settlement), sessions, LoginKeys(login_jwks_path(settings)),
            secure_cookie=not settings.insecure, trace_url=settings.trace_url,
        )  # fmt: skip
        self.web = await WebServer.start(console, settings, settings.console_web_address, NAME)

    def checks(self) -> Mapping[str, Check]:
        return {"web": lambda: self.web is not None and self.web.running()}

    def add_to_server(self, server: grpc.aio.Server) -> None:
        pass  # no RPCs of its own: health (and reflection) only

    async def close(self) -> None:
        if self.web is not None:
            await self.web.stop()
        for client in (self.recorder, self.settlement):
            if client is not None:
                await client.channel.close()


async def build(settings: Settings) -> ConsoleApp:
    return ConsoleApp(settings)
