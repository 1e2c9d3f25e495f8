"""The desk's sessions: a staff token is taken once at ``/signin`` and exchanged for a
short-lived session, kept by the recorder (``DeskService.OpenSession``, the services'
database) so that every console instance sees it and signing out ends it everywhere,
a console restart included. The browser holds only a cookie, HttpOnly, Secure,
SameSite=Strict, named with the ``__Host-`` prefix (this host only, path ``/``), so the
token itself never sits in the browser.

The cookie is ``<claims>.<mac>``: the base64url of a compact JSON object (name, role,
expiry, the session's secret) and its HMAC-SHA256 under the console's session key. The
recorder knows a session by the SHA-256 of its secret only, so its table opens no
session; the key is a file of the data directory (``keys/console-session.key``, 0600,
made by the first instance that needs it), so no cookie is forged without it, and
removing it signs everyone out.

The sign-in form carries a token of its own (``SignInGuard``): a page elsewhere cannot
sign a browser in as someone else (login CSRF).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from ddz.access.callers import ROLES, Role

from .ports import SessionBook

COOKIE = "__Host-ddz_desk"
SIGNIN_COOKIE = "__Host-ddz_signin"
PLAIN_PREFIX = "__Host-"  # dropped over plain HTTP (DDZ_INSECURE): the prefix needs Secure
KEY_FILE = "console-session.key"
SIGNIN_TTL = 3600  # seconds a sign-in form stays usable


def cookie_name(name: str, secure: bool) -> str:
    return name if secure else name.removeprefix(PLAIN_PREFIX)


@dataclass(frozen=True, slots=True)
class Staff:
    name: str
    role: Role
    expires: int
    session: str = ""  # the SHA-256 of the session's secret: what the recorder knows

    @property
    def auditor(self) -> bool:
        return self.role == "auditor"


def session_key(data_dir: Path) -> bytes:
    """The session key, made once: written whole to a file of its own, then linked to its
    name (instances starting together make one, and none reads a half-written key)."""
    path = data_dir / "keys" / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(32) + "\n")
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another instance's key came first: use it
        finally:
            draft.unlink()
    key = path.read_text(encoding="ascii").strip()
    if len(key) < 32:
        raise ValueError(f"{path}: the console's session key is too short; delete it")
    return key.encode("ascii")


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    def __init__(self, key: bytes, ttl: float, book: SessionBook) -> None:
        self._key = key
        self.ttl = ttl
        self.book = book

    def __repr__(self) -> str:
        return f"Sessions(ttl={self.ttl})"

    def _mac(self, body: str, purpose: bytes = b"session") -> str:
        mac = hmac.new(self._key, purpose + b"\0" + body.encode("ascii"), hashlib.sha256)
        return _b64(mac.digest())

    async def open(self, name: str, role: Role, token_expires: int) -> tuple[str, int]:
        """A new session, recorded: its cookie value and lifetime in seconds (the session
        TTL, or less when the token it came from expires sooner)."""
        expires = int(min(time.time() + self.ttl, token_expires))
        secret = secrets.token_urlsafe(32)
        await self.book.open_session(digest(secret), name, role, expires)
        claims = {"n": name, "r": role, "e": expires, "s": secret}
        body = _b64(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
        return f"{body}.{self._mac(body)}", max(0, expires - int(time.time()))

    def _claims(self, cookie: str | None) -> tuple[str, int] | None:
        """The session's secret and expiry of a cookie this console signed, unexpired."""
        if not cookie or len(cookie) > 1024 or cookie.count(".") != 1:
            return None
        body, mac = cookie.split(".")
        if not hmac.compare_digest(mac, self._mac(body)):
            return None
        try:
            claims = json.loads(_unb64(body))
            secret, expires = claims["s"], claims["e"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(secret, str) or not secret.isascii() or not isinstance(expires, int):
            return None
        if expires <= time.time():
            return None
        return secret, expires

    async def read(self, cookie: str | None) -> Staff | None:
        """The staff member of a valid cookie whose session is still open (not signed out,
        not ended by the operator, not expired); None for anything else."""
        claims = self._claims(cookie)
        if claims is None:
            return None
        secret, expires = claims
        found = await self.book.check_session(digest(secret))
        if found is None:
            return None
        name, role = found
        if role not in ROLES:
            return None
        return Staff(name, role, expires, digest(secret))

    async def end(self, cookie: str | None) -> None:
        """Sign-out: the cookie's session ends for every console instance."""
        claims = self._claims(cookie)
        if claims is not None:
            await self.book.end_session(digest(claims[0]))

    # -- the sign-in form's token ----------------------------------------------------------

    def signin_pair(self) -> tuple[str, str]:
        """A fresh (cookie value, form token) for one sign-in form: the form's token is
        the cookie's MAC, so only a page of this origin, which read the form, has both."""
        nonce = f"{int(time.time()) + SIGNIN_TTL}:{secrets.token_urlsafe(18)}"
        return nonce, self._mac(nonce, b"signin")

    def signin_allowed(self, cookie: str | None, form_token: object) -> bool:
        if not cookie or not isinstance(form_token, str) or len(cookie) > 100:
            return False
        expires, _, _ = cookie.partition(":")
        if not expires.isascii() or not expires.isdigit() or int(expires) <= time.time():
            return False
        return hmac.compare_digest(form_token, self._mac(cookie, b"signin"))
