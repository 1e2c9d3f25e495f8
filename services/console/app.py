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

import asyncio
import contextlib
from collections.abc import Generator, Mapping, Sequence

import grpc
import structlog
import uvicorn
from ddz.adapters.security.token_keys import LoginKeys, login_jwks_path
from ddz.adapters.telemetry.health import Check
from ddz.config import WILDCARD_HOSTS, Settings

from .clients import RecorderClient, SettlementClient, connect
from .handlers import Desk
from .servicer import Console
from .session import Sessions, session_key

NAME = "console"
START_PATIENCE = 10.0  # seconds the web server has to bind its port

log = structlog.get_logger("ddz.console")


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the service runner owns SIGTERM."""

    def install_signal_handlers(self) -> None:  # uvicorn < 0.29
        pass

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:  # uvicorn >= 0.29
        yield


class ConsoleApp:
    full_names: Sequence[str] = ()  # health and reflection only

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.recorder: RecorderClient | None = None
        self.settlement: SettlementClient | None = None
        self.server: _Server | None = None
        self.serving: asyncio.Task[None] | None = None

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
        host, port = settings.console_web_address.rsplit(":", 1)
        tls: dict[str, str] = {}
        if not settings.insecure:
            tls = {"ssl_certfile": str(settings.tls_cert_path),
                   "ssl_keyfile": str(settings.tls_key_path)}  # fmt: skip
        else:
            log.warning("console_plaintext", why="DDZ_INSECURE: the desk serves plain HTTP")
        config = uvicorn.Config(
            console, host=host.strip("[]"), port=int(port), log_config=None, access_log=False,
            lifespan="off", server_header=False, proxy_headers=False, **tls,  # type: ignore[arg-type]
        )  # fmt: skip
        self.server = _Server(config)
        self.serving = asyncio.create_task(self.server.serve())
        async with asyncio.timeout(START_PATIENCE):
            while not self.server.started:
                if self.serving.done():
                    self.serving.result()  # its error, if it failed
                    raise OSError(f"the console could not serve on {host}:{port}")
                await asyncio.sleep(0.02)
        shown = "127.0.0.1" if host in WILDCARD_HOSTS else host
        scheme = "http" if settings.insecure else "https"
        log.info("console_serving", url=f"{scheme}://{shown}:{port}")

    def checks(self) -> Mapping[str, Check]:
        return {"web": lambda: self.serving is not None and not self.serving.done()}

    def add_to_server(self, server: grpc.aio.Server) -> None:
        pass  # no RPCs of its own: health (and reflection) only

    async def close(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        if self.serving is not None:
            with contextlib.suppress(Exception):
                await self.serving
        for client in (self.recorder, self.settlement):
            if client is not None:
                await client.channel.close()


async def build(settings: Settings) -> ConsoleApp:
    return ConsoleApp(settings)
