"""Staff tokens (``ddz.access.staff_tokens``) and the desk's sessions
(``services.console.use_cases.session``): who may open the desk, and what a player's token, an
expired one, a stranger's key or a forged cookie get instead."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from console_kit import Recorder
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.access.staff_tokens import TokenError, issue_staff, verify_staff
from ddz.access.token_keys import LoginKey, LoginKeys
from ddz.access.tokens import TokenKeys, issue, verify
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.store import make_engine

from services.console.use_cases.session import Sessions, session_key

LOGIN = LoginKey.of(Ed25519PrivateKey.generate())
STRANGER = LoginKey.of(Ed25519PrivateKey.generate())
KEYS = LoginKeys(None, {LOGIN.kid: LOGIN.private.public_key()})


def test_a_staff_token_carries_its_name_and_role() -> None:
    claims = verify_staff(issue_staff(LOGIN, "sam", "support"), KEYS)
    assert (claims.name, claims.role) == ("sam", "support")
    assert claims.expires > time.time()
    assert verify_staff(issue_staff(LOGIN, "ada", "auditor"), KEYS).role == "auditor"


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: issue(LOGIN, "player", "ann", 60), "player's or operator's token"),
        (lambda: issue(LOGIN, "operator", "tools", 60), "player's or operator's token"),
        (lambda: issue_staff(STRANGER, "mallory", "auditor"), "unknown key id"),
        (lambda: issue_staff(LOGIN, "sam", "support", ttl=-10), "expired"),
        (lambda: "", "no token"),
        (lambda: "not.a.jwt", "not a staff token"),
        (lambda: "x" * 5000, "not a staff token"),
    ],
)
def test_the_desk_refuses_any_other_token(make: Callable[[], str], why: str) -> None:
    # made as the test runs: a token made at collection may have expired by then
    with pytest.raises(TokenError, match=why):
        verify_staff(make(), KEYS)


def test_the_table_refuses_a_staff_token() -> None:
    with pytest.raises(ValueError):
        verify(issue_staff(LOGIN, "sam", "auditor"), TokenKeys(b"seat-key" * 4, KEYS))


def test_a_staff_token_needs_a_known_role() -> None:
    with pytest.raises(ValueError, match="role"):
        issue_staff(LOGIN, "sam", "admin")


def test_a_session_cookie_is_signed_and_short_lived(tmp_path: Path) -> None:
    key = session_key(tmp_path)
    assert session_key(tmp_path) == key  # made once, kept
    assert (tmp_path / "keys" / "console-session.key").stat().st_mode & 0o077 == 0
    engine = make_engine(f"sqlite:///{tmp_path / 'ddz.sqlite3'}")
    upgrade_service_db(engine)
    book = Recorder(engine)
    sessions = Sessions(key, ttl=60, book=book)

    async def check() -> None:
        cookie, max_age = await sessions.open("sam", "support", int(time.time()) + 3600)
        assert 58 <= max_age <= 60  # the session's, not the token's, lifetime
        staff = await sessions.read(cookie)
        assert staff is not None
        assert (staff.name, staff.role, staff.auditor) == ("sam", "support", False)
        body, mac = cookie.split(".")
        forged = body.replace(body[5], "A" if body[5] != "A" else "B") + "." + mac
        assert await sessions.read(forged) is None
        assert await Sessions(b"another key" * 4, ttl=60, book=book).read(cookie) is None
        assert await sessions.read(None) is None and await sessions.read("") is None
        # a token about to expire gives a session that ends with it
        _, short = await sessions.open("sam", "support", int(time.time()) + 5)
        assert short <= 5
        expired, _ = await sessions.open("sam", "support", int(time.time()) - 1)
        assert await sessions.read(expired) is None
        # the cookie names the session; the table holds only its digest
        await sessions.end(cookie)
        assert await sessions.read(cookie) is None
        with engine.connect() as conn:
            digests = [row[0] for row in conn.exec_driver_sql("SELECT digest FROM desk_sessions")]
        assert digests and all(d not in cookie for d in digests)

    try:
        asyncio.run(check())
    finally:
        engine.dispose()


def test_ddz_token_prints_a_token_alone_and_refuses_a_staff_token_without_a_role(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ddz.access.token_keys import login_jwks_path
    from ddz.config import Settings
    from ddz.entrypoints.cli import main

    monkeypatch.setenv("DDZ_DATA_DIR", str(tmp_path))
    assert main(["token", "staff", "sam", "--role", "auditor"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1
    keys = LoginKeys(login_jwks_path(Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)}).keys))
    assert verify_staff(printed.strip(), keys).role == "auditor"
    assert main(["token", "staff", "sam"]) == 2
    assert "needs --role support or --role auditor" in capsys.readouterr().err
    assert main(["token", "player", "ann", "--role", "support"]) == 2
    assert main(["token", "player", "ann"]) == 0
    with pytest.raises(TokenError, match="player's or operator's token"):
        verify_staff(capsys.readouterr().out.strip(), keys)
