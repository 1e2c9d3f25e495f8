"""The players' web front, as one ASGI app: the player's page (``/``, its script and
style under ``/static/``) and the TableService over gRPC-Web and Connect
(``/ddz.v1.TableService/<Method>``, ``gateway``).

The page is a static file and a script built ahead (``tools/build_play_web.py``),
nothing rendered per player: everything a player sees comes through the TableService
calls the script makes with the player's own token. The Content-Security-Policy is
the desk's: scripts and styles from this origin only, none inline; calls to this
origin only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .gateway import PATH, TableGateway

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Strict-Transport-Security": "max-age=31536000",
}


async def page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={**HEADERS, "Cache-Control": "no-store"})


class _Static(StaticFiles):
    async def get_response(self, path: str, scope: Any) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update({**HEADERS, "Cache-Control": "no-cache"})
        return response


class PlayWeb:
    """``/ddz.v1.TableService/*`` to the gateway, everything else to the page's routes."""

    def __init__(self, gateway: TableGateway) -> None:
        self.gateway = gateway
        self.pages = Starlette(routes=[
            Route("/", page), Route("/play", page),
            Mount("/static", app=_Static(directory=STATIC), name="static"),
        ])  # fmt: skip

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(f"{PATH}/"):
            await self.gateway(scope, receive, send)
        else:
            await self.pages(scope, receive, send)
