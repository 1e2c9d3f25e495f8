"""One way to serve a service's web pages: an ASGI app on uvicorn over HTTPS with the
stack's certificate of the service's identity, inside the service's own process (the
service runner owns the process, its signals and its gRPC health port).

    server = await WebServer.start(app, settings.tls, address, "console")
    ...; server.running()  # a health check
    await server.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator
from typing import Any

import structlog
import uvicorn

from ddz.config.network import WILDCARD_HOSTS
from ddz.config.security import TlsSettings

START_PATIENCE = 10.0  # seconds a web server has to bind its port

log = structlog.get_logger("ddz.web")


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the service runner owns SIGTERM."""

    def install_signal_handlers(self) -> None:  # uvicorn < 0.29
        pass

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:  # uvicorn >= 0.29
        yield


class WebServer:
    """A running uvicorn server and the task that serves it."""

    def __init__(self, server: _Server, serving: asyncio.Task[None], url: str) -> None:
        self.server = server
        self.serving = serving
        self.url = url

    @classmethod
    async def start(cls, app: Any, tls: TlsSettings, address: str, name: str) -> WebServer:
        """Serve ``app`` on ``address`` (``host:port``); returns once the port is bound,
        or raises ``OSError`` saying it could not be."""
        host, port = address.rsplit(":", 1)
        files: dict[str, str] = {}
        if not tls.insecure:
            files = {"ssl_certfile": str(tls.tls_cert_path),
                     "ssl_keyfile": str(tls.tls_key_path)}  # fmt: skip
        else:
            log.warning(f"{name}_plaintext", why=f"DDZ_INSECURE: {name} serves plain HTTP")
        config = uvicorn.Config(
            app, host=host.strip("[]"), port=int(port), log_config=None, access_log=False,
            lifespan="off", server_header=False, proxy_headers=False, **files,  # type: ignore[arg-type]
        )  # fmt: skip
        server = _Server(config)
        serving = asyncio.create_task(server.serve())
        async with asyncio.timeout(START_PATIENCE):
            while not server.started:
                if serving.done():
                    serving.result()  # its error, if it failed
                    raise OSError(f"{name} could not serve on {host}:{port}")
                await asyncio.sleep(0.02)
        shown = "127.0.0.1" if host in WILDCARD_HOSTS else host
        scheme = "http" if tls.insecure else "https"
        url = f"{scheme}://{shown}:{port}"
        log.info(f"{name}_serving", url=url)
        return cls(server, serving, url)

    def running(self) -> bool:
        return not self.serving.done()

    async def stop(self) -> None:
        self.server.should_exit = True
        with contextlib.suppress(Exception):
            await self.serving
