"""The desk's pages in-process (Starlette's TestClient over ``services.console``), on a
fake recorder and settlement but the real sessions table (``desk_sessions``, SQLite):
sign-out ends a session for every console instance, a form from another site is refused,
a bad number is a 400 page, every page showing hands or players is in the access log, and
the security headers and the trailing-slash redirect do not trust the request's host."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from console_kit import Recorder, Settlement
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.access.staff_tokens import issue_staff
from ddz.access.token_keys import LoginKey, LoginKeys
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.service_db.desk_sessions import DeskSessions
from ddz.adapters.store import make_engine
from ddz.audit import audited_report
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from services.console.servicer import HEADERS, Console
from services.console.use_cases.handlers import Desk
from services.console.use_cases.session import COOKIE, SIGNIN_COOKIE, Sessions

LOGIN = LoginKey.of(Ed25519PrivateKey.generate())
KEYS = LoginKeys(None, {LOGIN.kid: LOGIN.private.public_key()})
ORIGIN = "https://testserver"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'ddz.sqlite3'}")
    upgrade_service_db(engine)
    yield engine
    engine.dispose()


def console_client(engine: Engine) -> tuple[TestClient, Recorder]:
    """One console instance over the shared database (its own recorder client)."""
    recorder = Recorder(engine)
    sessions = Sessions(b"k" * 64, ttl=1800, book=recorder)
    console = Console(Desk(recorder, Settlement(), audited_report), sessions, KEYS)
    return TestClient(console, base_url=ORIGIN, follow_redirects=False), recorder


def holding(cookie: str) -> dict[str, str]:
    """The request headers of a browser holding (a copy of) this session cookie."""
    return {"Cookie": f"{COOKIE}={cookie}"}


def sign_in(client: TestClient, name: str = "sam", role: str = "support") -> str:
    """Sign in as a browser does from the desk's own form; the session cookie's value."""
    form = client.get("/signin")
    assert form.status_code == 200
    csrf = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    done = client.post(
        "/signin", data={"token": issue_staff(LOGIN, name, role), "csrf": csrf},
        headers={"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"},
    )  # fmt: skip
    assert done.status_code == 303, done.text
    cookie = client.cookies.get(COOKIE)
    assert cookie
    return cookie


def test_signing_out_ends_the_session_for_a_copied_cookie_on_every_instance(
    engine: Engine,
) -> None:
    browser, _ = console_client(engine)
    other_instance, _ = console_client(engine)
    cookie = sign_in(browser)
    assert other_instance.get("/hands", headers=holding(cookie)).status_code == 200
    out = browser.post("/signout", headers={"Origin": ORIGIN})
    assert out.status_code == 303 and out.headers["location"] == "/signin"
    for client in (browser, other_instance):
        again = client.get("/hands", headers=holding(cookie))
        assert again.status_code == 401, "a copy of a signed-out cookie still opens the desk"
        assert "Sign in to the dispute desk" in again.text


def test_a_session_survives_a_console_restart_and_the_operator_ends_one_staffs_at_once(
    engine: Engine,
) -> None:
    first, _ = console_client(engine)
    sams = [sign_in(first, "sam"), sign_in(first, "sam")]
    adas = sign_in(first, "ada", "auditor")
    restarted, _ = console_client(engine)  # a new process: nothing kept in memory
    for cookie in (*sams, adas):
        assert restarted.get("/hands", headers=holding(cookie)).status_code == 200
    assert DeskSessions(engine).end_staff("sam") == 2
    for cookie in sams:
        assert restarted.get("/hands", headers=holding(cookie)).status_code == 401
    assert restarted.get("/hands", headers=holding(adas)).status_code == 200


def test_the_session_cookie_is_host_only_http_only_and_strict(engine: Engine) -> None:
    client, _ = console_client(engine)
    form = client.get("/signin")
    csrf = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    done = client.post("/signin", data={"token": issue_staff(LOGIN, "sam", "support"),
                                        "csrf": csrf}, headers={"Origin": ORIGIN})  # fmt: skip
    set_cookie = [v for k, v in done.headers.multi_items() if k == "set-cookie"]
    session = next(v for v in set_cookie if v.startswith(f"{COOKIE}="))
    assert COOKIE.startswith("__Host-")
    lowered = session.lower()
    assert "httponly" in lowered and "secure" in lowered and "samesite=strict" in lowered
    assert "path=/" in lowered and "domain" not in lowered


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
        {"Origin": "https://evil.example"},
        {"Origin": ORIGIN, "Sec-Fetch-Site": "same-site"},  # a sibling subdomain
        {"Origin": "null"},
        {},  # no Origin at all
    ],
    ids=["cross-site", "other-origin", "same-site", "null-origin", "no-origin"],
)
def test_a_sign_in_or_out_posted_from_another_site_is_refused(
    engine: Engine, headers: dict[str, str]
) -> None:
    attacker, _ = console_client(engine)
    victim, _ = console_client(engine)
    form = attacker.get("/signin")  # the attacker's own form, token and cookie
    csrf = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    signin = {"token": issue_staff(LOGIN, "mallory", "support"), "csrf": csrf}
    form_cookie = f"{SIGNIN_COOKIE}={attacker.cookies[SIGNIN_COOKIE]}"
    refused = victim.post("/signin", data=signin, headers={**headers, "Cookie": form_cookie})
    assert refused.status_code == 403
    assert COOKIE not in refused.cookies and "from another site" in refused.text
    cookie = sign_in(victim, "sam")
    out = victim.post("/signout", headers=headers)
    assert out.status_code == 403
    assert victim.get("/hands", headers=holding(cookie)).status_code == 200  # still signed in


def test_a_sign_in_without_the_forms_own_token_is_refused(engine: Engine) -> None:
    client, _ = console_client(engine)
    token = issue_staff(LOGIN, "mallory", "support")
    same_site = {"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"}
    assert client.post("/signin", data={"token": token}, headers=same_site).status_code == 403
    client.get("/signin")  # a form's cookie, but another form's token
    forged = client.post("/signin", data={"token": token, "csrf": "x" * 43}, headers=same_site)
    assert forged.status_code == 403 and COOKIE not in forged.cookies


@pytest.mark.parametrize(
    "path",
    ["/hands/h1?at=²", "/hands/h1?view=²", "/access?before=²", "/hands/h1?at=١",
     "/hands/h1?at=-1", "/hands/h1?at=1e3", "/hands?before=²|h1", "/hands?before=nan|h1"],
)  # fmt: skip
def test_a_bad_number_in_a_page_address_is_a_400_page(engine: Engine, path: str) -> None:
    client, _ = console_client(engine)
    cookie = sign_in(client, "ada", "auditor")
    response = client.get(path, headers=holding(cookie))
    assert response.status_code == 400, response.text
    assert "Cannot show this page" in response.text


def test_every_page_showing_hands_or_players_is_in_the_access_log(engine: Engine) -> None:
    client, recorder = console_client(engine)
    cookie = sign_in(client, "sam", "support")
    for path in ("/hands?player=carol&room=&outcome=landlord", "/hands", "/live",
                 "/hands/h1?at=3&view=1", "/hands/h1", "/players/carol"):  # fmt: skip
        client.get(path, headers=holding(cookie))
    assert [what for _, _, what in recorder.logged] == [
        "/hands?player=carol&outcome=landlord", "/hands", "/live", "/hands/h1?at=3&view=1",
        "/hands/h1", "/players/carol",
    ]  # fmt: skip
    assert {(who, role) for who, role, _ in recorder.logged} == {("sam", "support")}


def test_the_trailing_slash_redirect_names_no_host(engine: Engine) -> None:
    client, _ = console_client(engine)
    for path, target in (("/hands/", "/hands"), ("/hands/?player=x", "/hands?player=x"),
                         ("/hands//", "/hands"), ("/evil.example/", "/evil.example")):  # fmt: skip
        response = client.get(path, headers={"Host": "evil.example"})
        assert response.status_code in (307, 308), path
        assert response.headers["location"] == target


def test_every_response_carries_the_security_headers(engine: Engine) -> None:
    client, _ = console_client(engine)
    cross_site = client.post("/signout", headers={"Origin": "https://evil.example"})
    for response in (client.get("/signin"), client.get("/hands"), client.get("/nowhere"),
                     cross_site):  # fmt: skip
        for name, value in HEADERS.items():
            assert response.headers[name] == value
    assert HEADERS["Cross-Origin-Opener-Policy"] == "same-origin"
    assert HEADERS["Cross-Origin-Resource-Policy"] == "same-origin"


def test_an_expired_session_is_not_found(engine: Engine) -> None:
    sessions = DeskSessions(engine)
    sessions.open("a" * 64, "sam", "support", time.time() + 60)
    assert sessions.find("a" * 64) is not None
    assert sessions.find("a" * 64, now=time.time() + 61) is None
    assert sessions.find("a" * 63 + "\n") is None
