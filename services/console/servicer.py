"""The desk's servicer: HTTP in, a use case of ``handlers.Desk`` called, a page out
(Starlette + Jinja2, server-rendered; htmx only speeds the pages up).

Stable addresses a support ticket can link: ``/hands`` (filters in the query),
``/hands/<id>`` (``?at=N``, ``?view=0|1|2``), ``/hands/<id>/evidence``,
``/players/<id>``, ``/live``, ``/access`` (auditors). Everything but ``/signin`` and
``/static`` needs a session; without one a page answers 401 with the sign-in form.
A refusal from a service is a page in the staff's words with the HTTP status of its
kind. Templates autoescape everything (a player may be named ``<script>``); the
Content-Security-Policy allows scripts from this origin only, none inline.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
import structlog
from ddz.adapters.security.staff_tokens import TokenError, verify_staff
from ddz.adapters.security.token_keys import LoginKeys
from ddz.application.errors import Kind, Refusal
from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from . import present
from .handlers import Desk, HandQuery, check_hand_id
from .session import COOKIE, Sessions, Staff

HERE = Path(__file__).resolve().parent
OUTCOMES = {"": "any outcome", "landlord": "landlord won", "farmers": "farmers won",
            "no_winner": "no winner", "in_play": "in play"}  # fmt: skip
STATUS = {
    Kind.INVALID: 400, Kind.NOT_FOUND: 404, Kind.DENIED: 403, Kind.UNAUTHENTICATED: 401,
    Kind.UNAVAILABLE: 503, Kind.TIMEOUT: 504, Kind.EXHAUSTED: 429, Kind.PRECONDITION: 412,
}  # fmt: skip
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Strict-Transport-Security": "max-age=31536000",
}

log = structlog.get_logger("ddz.console")

Page = Callable[[Request, Staff], Awaitable[Response]]


def utc(seconds: float) -> str:
    if not seconds:
        return ""
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def parse_time(text: str, name: str) -> float:
    """``2026-12-04T18:00`` (a datetime-local field), a date, or ISO 8601, as UTC."""
    text = text.strip()
    if not text:
        return 0.0
    try:
        when = dt.datetime.fromisoformat(text.replace(" ", "T").removesuffix("Z"))
    except ValueError:
        raise Refusal.invalid(f"{name}: a time such as 2026-12-04T18:00 (UTC)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


def hand_query(params: QueryParams) -> HandQuery:
    def text(name: str) -> str:
        value = params.get(name, "").strip()
        if len(value) > 200:
            raise Refusal.invalid(f"{name} is too long")
        return value

    outcome = text("outcome")
    if outcome not in OUTCOMES:
        raise Refusal.invalid(f"outcome is one of {', '.join(o for o in OUTCOMES if o)}")
    before_at, _, before_hand = text("before").partition("|")
    try:
        before = float(before_at) if before_at else 0.0
    except ValueError:
        raise Refusal.invalid("before: a page cursor from a 'next page' link") from None
    return HandQuery(
        player=text("player"), table_id=text("table"), room=text("room"),
        variant=text("variant"), since=parse_time(text("from"), "from"),
        until=parse_time(text("to"), "to"), outcome=outcome,
        bot_for_person=params.get("bot") == "1", failed_audit=params.get("failed") == "1",
        before_started_at=before, before_hand_id=before_hand,
    )  # fmt: skip


def _int(params: QueryParams, name: str) -> int | None:
    raw = params.get(name, "").strip()
    if not raw or raw == "all":
        return None
    if not raw.isdigit() or len(raw) > 6:
        raise Refusal.invalid(f"{name} is a number")
    return int(raw)


def templates(trace_url: str = "") -> jinja2.Environment:
    """The pages' templates (autoescaped), with the words of ``present`` and the
    operator's trace link template (``DDZ_TRACE_URL``)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
    env.globals.update(
        utc=utc, outcomes=OUTCOMES, when=present.when, since=present.since, who=present.who,
        seat_kind=present.seat_kind,
        trace_link=lambda trace_id: present.trace_link(trace_id, trace_url),
    )  # fmt: skip
    return env


class Console:
    """The web application: routes over a ``Desk``, sessions and the login's keys."""

    def __init__(
        self, desk: Desk, sessions: Sessions, login: LoginKeys, *, secure_cookie: bool = True,
        trace_url: str = "",
    ) -> None:  # fmt: skip
        self.desk = desk
        self.sessions = sessions
        self.login = login
        self.secure_cookie = secure_cookie
        self.templates = Jinja2Templates(env=templates(trace_url))
        self.app = Starlette(routes=[
            Route("/", self.home),
            Route("/signin", self.signin_form, methods=["GET"]),
            Route("/signin", self.signin, methods=["POST"]),
            Route("/signout", self.signout, methods=["POST"]),
            Route("/hands", self._page(self.hands)),
            Route("/hands/{hand_id}", self._page(self.hand)),
            Route("/hands/{hand_id}/evidence", self._page(self.evidence)),
            Route("/players/{player_id:path}", self._page(self.player)),
            Route("/live", self._page(self.live)),
            Route("/access", self._page(self.access)),
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        ])  # fmt: skip

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] += [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
            await send(message)

        await self.app(scope, receive, with_headers)

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        response: Response = self.templates.TemplateResponse(
            request, name, context, status_code=status
        )
        return response

    def _page(self, page: Page) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            staff = self.sessions.read(request.cookies.get(COOKIE))
            if staff is None:
                return self.render(
                    request, "signin.html", 401, staff=None,
                    why="Sign in with a staff token to open the desk.",
                )  # fmt: skip
            try:
                return await page(request, staff)
            except Refusal as refusal:
                log.info("desk_refused", kind=refusal.kind.value, message=refusal.message)
                return self.render(
                    request, "error.html", STATUS.get(refusal.kind, 500), staff=staff,
                    message=refusal.message,
                )  # fmt: skip

        return guarded

    # -- sign-in -------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        return RedirectResponse("/hands", status_code=303)

    async def signin_form(self, request: Request) -> Response:
        return self.render(request, "signin.html", staff=None, why="")

    async def signin(self, request: Request) -> Response:
        form = await request.form(max_files=0, max_fields=4)
        token = form.get("token")
        try:
            claims = verify_staff(token if isinstance(token, str) else "", self.login)
        except TokenError as exc:
            log.info("desk_signin_refused", why=str(exc))
            return self.render(request, "signin.html", 401, staff=None, why=str(exc))
        value, max_age = self.sessions.open(claims.name, claims.role, claims.expires)
        log.info("desk_signed_in", staff=claims.name, role=claims.role)
        response = RedirectResponse("/hands", status_code=303)
        response.set_cookie(
            COOKIE, value, max_age=max_age, httponly=True, secure=self.secure_cookie,
            samesite="strict", path="/",
        )  # fmt: skip
        return response

    async def signout(self, request: Request) -> Response:
        response = RedirectResponse("/signin", status_code=303)
        response.delete_cookie(COOKIE, path="/", secure=self.secure_cookie, httponly=True,
                               samesite="strict")  # fmt: skip
        return response

    # -- pages ---------------------------------------------------------------------------

    async def hands(self, request: Request, staff: Staff) -> Response:
        query = hand_query(request.query_params)
        hands = await self.desk.hands(query)
        next_link = ""
        if len(hands) == 50:
            params = {k: v for k, v in request.query_params.items() if k != "before"}
            last = hands[-1]
            params["before"] = f"{last.started_at!r}|{last.hand_id}"
            next_link = "/hands?" + urlencode(params)
        return self.render(
            request, "hands.html", staff=staff, hands=hands, q=request.query_params,
            next_link=next_link, query=query,
        )  # fmt: skip

    async def hand(self, request: Request, staff: Staff) -> Response:
        hand_id = check_hand_id(request.path_params["hand_id"])
        view = _int(request.query_params, "view")
        found = await self.desk.hand(staff, hand_id, at=_int(request.query_params, "at"),
                                     view=view)  # fmt: skip
        return self.render(request, "hand.html", staff=staff, hand=found, account=found.timeline,
                           table=found.table, summary=found.summary)  # fmt: skip

    async def evidence(self, request: Request, staff: Staff) -> Response:
        hand_id = check_hand_id(request.path_params["hand_id"])
        found = await self.desk.evidence(staff, hand_id)
        return Response(
            found.file, media_type="application/json",
            headers={"Content-Disposition": f'attachment; filename="{found.file_name}"'},
        )  # fmt: skip

    async def player(self, request: Request, staff: Staff) -> Response:
        found = await self.desk.player(staff, request.path_params["player_id"])
        return self.render(request, "player.html", staff=staff, player=found)

    async def live(self, request: Request, staff: Staff) -> Response:
        live = await self.desk.live()
        return self.render(request, "live.html", staff=staff, live=live)

    async def access(self, request: Request, staff: Staff) -> Response:
        before = _int(request.query_params, "before") or 0
        entries = await self.desk.access(staff, before)
        return self.render(request, "access.html", staff=staff, entries=entries)
