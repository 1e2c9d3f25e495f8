"""The desk's servicer: HTTP in, a use case of ``handlers.Desk`` called, a page out
(Starlette + Jinja2, server-rendered; htmx only speeds the pages up).

Stable addresses a support ticket can link: ``/hands`` (filters in the query),
``/hands/<id>`` (``?at=N``, ``?view=0|1|2``), ``/hands/<id>/evidence``,
``/players/<id>``, ``/live``, ``/access`` (auditors). Everything but ``/signin`` and
``/static`` needs a session; without one a page answers 401 with the sign-in form.
A refusal from a service is a page in the staff's words with the HTTP status of its
kind; a number a page takes is read by ``whole`` alone, and a bad one is a 400 page.
Templates autoescape everything (a search may hold ``<script>``); the
Content-Security-Policy allows scripts from this origin only, none inline. Every
response carries ``HEADERS``; every POST must come from a page of this origin
(``same_origin``), and the sign-in form carries a token of its own.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
import structlog
from ddz.access.staff_tokens import TokenError, verify_staff
from ddz.access.token_keys import LoginKeys
from ddz.application.errors import Kind, Refusal
from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from .use_cases import present
from .use_cases.handlers import Desk, HandQuery, check_hand_id
from .use_cases.session import COOKIE, SIGNIN_COOKIE, SIGNIN_TTL, Sessions, Staff, cookie_name

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
    # same-origin, not no-referrer: under no-referrer a browser sends ``Origin: null`` on
    # the desk's own form posts, and ``same_origin`` could not tell them from a forgery.
    # Nothing of the desk's addresses leaves for another site either way.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Strict-Transport-Security": "max-age=31536000",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
"""Every response's security headers, added in one place (``Console.__call__``)."""
WHOLE = re.compile(r"[0-9]{1,9}")
CURSOR = re.compile(r"([0-9]{1,12}(?:\.[0-9]{1,9})?)\|(.{1,200})")
SAME_ORIGIN_FETCHES = ("same-origin", "none")  # Sec-Fetch-Site values of our own pages

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
    before, before_hand = 0.0, ""
    if cursor := text("before"):
        found = CURSOR.fullmatch(cursor)
        if found is None:
            raise Refusal.invalid("before: a page cursor from a 'next page' link")
        before, before_hand = float(found.group(1)), found.group(2)
    return HandQuery(
        player=text("player"), table_id=text("table"), room=text("room"),
        variant=text("variant"), since=parse_time(text("from"), "from"),
        until=parse_time(text("to"), "to"), outcome=outcome,
        bot_for_person=params.get("bot") == "1", failed_audit=params.get("failed") == "1",
        before_started_at=before, before_hand_id=before_hand,
    )  # fmt: skip


def whole(params: QueryParams, name: str) -> int | None:
    """The whole number a page takes as ``name`` (ASCII digits only: ``str.isdigit``
    also passes ``²``, which ``int`` refuses); None when absent or ``all``."""
    raw = params.get(name, "").strip()
    if not raw or raw == "all":
        return None
    if not WHOLE.fullmatch(raw):
        raise Refusal.invalid(f"{name} is a whole number, such as 3")
    return int(raw)


def address(request: Request) -> str:
    """The page as asked, its empty fields left out: what the access log records."""
    asked = [(k, v) for k, v in request.query_params.multi_items() if v]
    return request.url.path + (f"?{urlencode(asked)}" if asked else "")


def same_origin(request: Request, secure: bool) -> bool:
    """A POST from a page of this desk: ``Origin`` is this origin and ``Sec-Fetch-Site``,
    where the browser sends it, says same-origin. A form elsewhere that posts here
    (signing a browser in as someone else, or out) fails both."""
    fetched = request.headers.get("sec-fetch-site")
    if fetched is not None and fetched not in SAME_ORIGIN_FETCHES:
        return False
    origin = request.headers.get("origin")
    host = request.headers.get("host")
    scheme = "https" if secure else "http"
    return bool(origin and host and origin == f"{scheme}://{host}")


def templates(trace_url: str = "") -> jinja2.Environment:
    """The pages' templates (autoescaped), with the words of ``present`` and the
    operator's trace link template (``DDZ_TRACE_URL``)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
    env.globals.update(
        utc=utc, outcomes=OUTCOMES, when=present.when, since=present.since, who=present.who,
        seat_kind=present.seat_kind, sections=present.sections,
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
        self.cookie = cookie_name(COOKIE, secure_cookie)
        self.signin_cookie = cookie_name(SIGNIN_COOKIE, secure_cookie)
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
            Route("/{path:path}", self.elsewhere),
        ])  # fmt: skip
        # Starlette's own trailing-slash redirect names the Host header's host: ``elsewhere``
        # redirects by the path alone.
        self.app.router.redirect_slashes = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] += [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
            await send(message)

        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            request = Request(scope, receive)
            if not same_origin(request, self.secure_cookie):
                log.info("desk_cross_site_post", path=request.url.path,
                         fetch_site=request.headers.get("sec-fetch-site", ""))  # fmt: skip
                refused = self.render(
                    request, "error.html", 403, staff=None,
                    message="This form was sent from another site, so the desk did not act "
                    "on it. Open the desk's own page and try again.",
                )  # fmt: skip
                await refused(scope, receive, with_headers)
                return
        await self.app(scope, receive, with_headers)

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        response: Response = self.templates.TemplateResponse(
            request, name, context, status_code=status
        )
        return response

    def signin_page(self, request: Request, status: int = 200, why: str = "") -> Response:
        """The sign-in form, with a fresh token for it (its pair in a cookie)."""
        cookie, form_token = self.sessions.signin_pair()
        response = self.render(request, "signin.html", status, staff=None, why=why,
                               csrf=form_token)  # fmt: skip
        response.set_cookie(
            self.signin_cookie, cookie, max_age=SIGNIN_TTL, httponly=True,
            secure=self.secure_cookie, samesite="strict", path="/",
        )  # fmt: skip
        return response

    def _page(self, page: Page) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            staff: Staff | None = None
            try:
                staff = await self.sessions.read(request.cookies.get(self.cookie))
                if staff is None:
                    return self.signin_page(
                        request, 401, "Sign in with a staff token to open the desk."
                    )
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

    async def elsewhere(self, request: Request) -> Response:
        """No such page; ``/hands/`` and the like are redirected to the page without the
        slash, by a path alone (never a host, nor ``//host``)."""
        path = request.url.path
        if len(path) > 1 and path.endswith("/"):
            target = "/" + path.strip("/")
            if request.url.query:
                target += "?" + request.url.query
            return RedirectResponse(target, status_code=308)
        return HTMLResponse("Not Found", status_code=404)

    async def signin_form(self, request: Request) -> Response:
        return self.signin_page(request)

    async def signin(self, request: Request) -> Response:
        form = await request.form(max_files=0, max_fields=4)
        if not self.sessions.signin_allowed(request.cookies.get(self.signin_cookie),
                                            form.get("csrf")):  # fmt: skip
            log.info("desk_signin_refused", why="no or a stale sign-in form token")
            return self.signin_page(
                request, 403, "This sign-in form has expired or was not the desk's own: "
                "sign in again here.",
            )  # fmt: skip
        token = form.get("token")
        try:
            claims = verify_staff(token if isinstance(token, str) else "", self.login)
        except TokenError as exc:
            log.info("desk_signin_refused", why=str(exc))
            return self.signin_page(request, 401, str(exc))
        try:
            value, max_age = await self.sessions.open(claims.name, claims.role, claims.expires)
        except Refusal as refusal:
            log.info("desk_signin_refused", why=refusal.message)
            return self.signin_page(request, STATUS.get(refusal.kind, 500), refusal.message)
        log.info("desk_signed_in", staff=claims.name, role=claims.role)
        response = RedirectResponse("/hands", status_code=303)
        response.set_cookie(
            self.cookie, value, max_age=max_age, httponly=True, secure=self.secure_cookie,
            samesite="strict", path="/",
        )  # fmt: skip
        response.delete_cookie(self.signin_cookie, path="/", secure=self.secure_cookie,
                               httponly=True, samesite="strict")  # fmt: skip
        return response

    async def signout(self, request: Request) -> Response:
        """Ends the session for every console instance, then forgets the cookie: a copy
        of it opens nothing any more."""
        try:
            await self.sessions.end(request.cookies.get(self.cookie))
        except Refusal as refusal:
            log.warning("desk_signout_failed", kind=refusal.kind.value, message=refusal.message)
            return self.render(
                request, "error.html", STATUS.get(refusal.kind, 500), staff=None,
                message="The desk could not end your session: " + refusal.message
                + " Sign out again in a moment.",
            )  # fmt: skip
        response = RedirectResponse("/signin", status_code=303)
        response.delete_cookie(self.cookie, path="/", secure=self.secure_cookie, httponly=True,
                               samesite="strict")  # fmt: skip
        return response

    # -- pages ---------------------------------------------------------------------------

    async def hands(self, request: Request, staff: Staff) -> Response:
        query = hand_query(request.query_params)
        hands = await self.desk.hands(staff, query, address(request))
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
        params = request.query_params
        found = await self.desk.hand(staff, hand_id, at=whole(params, "at"),
                                     view=whole(params, "view"))  # fmt: skip
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
        live = await self.desk.live(staff)
        return self.render(request, "live.html", staff=staff, live=live)

    async def access(self, request: Request, staff: Staff) -> Response:
        before = whole(request.query_params, "before") or 0
        entries = await self.desk.access(staff, before)
        return self.render(request, "access.html", staff=staff, entries=entries)
