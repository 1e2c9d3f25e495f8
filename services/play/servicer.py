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

from ddz.application.errors import Refusal
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .adapters.gateway import PATH, TableGateway
from .use_cases.handlers import Guests

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


GUEST_HEADER = "x-ddz-guest"
"""Asked of a guest's sign-in: a header no other site's form can send (a cross-site
fetch with it needs a CORS preflight, which this front never answers)."""


class PlayWeb:
    """``/ddz.v1.TableService/*`` to the gateway, everything else to the page's routes.
    ``guests``: the page may make guests' player tokens (None: it may not)."""

    def __init__(self, gateway: TableGateway, guests: Guests | None = None) -> None:
        self.gateway = gateway
        self.guests = guests
        self.pages = Starlette(routes=[
            Route("/", page), Route("/play", page),
            Route("/guest", self.guest, methods=["GET", "POST"]),
            Mount("/static", app=_Static(directory=STATIC), name="static"),
        ])  # fmt: skip

    async def guest(self, request: Request) -> Response:
        """GET: whether guests may play here. POST (with ``x-ddz-guest: 1``): a player
        token of a fresh name, as JSON."""
        headers = {**HEADERS, "Cache-Control": "no-store"}
        if request.method == "GET":
            return JSONResponse({"guests": self.guests is not None}, headers=headers)
        if self.guests is None:
            return JSONResponse({"error": "guests may not play here: ask the operator for "
                                 "a player token"}, status_code=404, headers=headers)  # fmt: skip
        if request.headers.get(GUEST_HEADER) != "1":
            return JSONResponse({"error": f"send {GUEST_HEADER}: 1"}, 400, headers=headers)
        try:
            name, token = self.guests.token()
        except Refusal as refused:
            return JSONResponse({"error": refused.message}, status_code=429, headers=headers)
        return JSONResponse({"player": name, "token": token}, headers=headers)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(f"{PATH}/"):
            await self.gateway(scope, receive, send)
        else:
            await self.pages(scope, receive, send)
