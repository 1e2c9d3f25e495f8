"""The console service, wired: the desk's pages over HTTPS (uvicorn, the stack's TLS
certificate of the ``console`` identity) and its clients of the recorder and the
settlement, as ``console`` (mTLS, least rights: ``ddz.access.rights``).

Started like every service (``service_runner``): its gRPC port answers health only (the
stack, Docker and Kubernetes probe it as they probe the others), and it is SERVING
while its web server runs. It holds no signing key, publishes nothing and has no NATS
connection: everything it shows comes through the recorder and the settlement, and its
sessions are the recorder's too (``session.py``), so any instance serves any of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack

import grpc
import structlog
from ddz.access.token_keys import LoginKeys, login_jwks_path
from ddz.adapters.runtime.web_server import WebServer
from ddz.adapters.telemetry.health import Check
from ddz.audit import audited_report
from ddz.config import Settings

from .adapters.clients import connect
from .servicer import Console
from .use_cases.handlers import Desk
from .use_cases.session import Sessions, session_key

NAME = "console"

log = structlog.get_logger("ddz.console")


class ConsoleApp:
    """The console built whole (``build``): its clients and its running web server."""

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
        await self.resources.aclose()  # the web server, then the clients' channels


async def build(settings: Settings) -> ConsoleApp:
    """The console with its clients connected and its pages served; what was opened is
    closed again if a later step fails."""
    resources = AsyncExitStack()
    try:
        recorder, settlement = connect(settings.calling)
        resources.push_async_callback(recorder.channel.close)
        resources.push_async_callback(settlement.channel.close)
        sessions = Sessions(
            session_key(settings.data_dir), settings.console.console_session_ttl, recorder
        )
        console = Console(
            Desk(recorder, settlement, audited_report), sessions,
            LoginKeys(login_jwks_path(settings.keys)),
            secure_cookie=not settings.tls.insecure, trace_url=settings.console.trace_url,
        )  # fmt: skip
        web = await WebServer.start(
            console, settings.tls, settings.network.console_web_address, NAME
        )
        resources.push_async_callback(web.stop)
        return ConsoleApp(web, resources)
    except BaseException:
        await resources.aclose()
        raise
