"""The desk's sessions: a staff token is taken once at ``/signin`` and exchanged for a
short-lived cookie, HttpOnly, Secure, SameSite=Strict, so the token itself never sits
in the browser.

The cookie is ``<claims>.<mac>``: the base64url of a compact JSON object (name, role,
expiry, a nonce) and its HMAC-SHA256 under the console's session key. The key is a file
of the data directory (``keys/console-session.key``, 0600, made by the first instance
that needs it), so every console instance of a deployment accepts the others'
sessions; removing it signs everyone out. Nothing but the staff member's name and role
is in it: it grants no more than the token it came from, for less time.
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

from ddz.adapters.security.staff_tokens import ROLES, Role

COOKIE = "ddz_desk"
KEY_FILE = "console-session.key"


@dataclass(frozen=True, slots=True)
class Staff:
    name: str
    role: Role
    expires: int

    @property
    def auditor(self) -> bool:
        return self.role == "auditor"


def session_key(data_dir: Path) -> bytes:
    """The session key, made once (O_EXCL: instances starting together make one)."""
    path = data_dir / "keys" / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w", encoding="ascii") as out:
                out.write(secrets.token_hex(32) + "\n")
    key = path.read_text(encoding="ascii").strip()
    if len(key) < 32:
        raise ValueError(f"{path}: the console's session key is too short; delete it")
    return key.encode("ascii")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    def __init__(self, key: bytes, ttl: float) -> None:
        self._key = key
        self.ttl = ttl

    def __repr__(self) -> str:
        return f"Sessions(ttl={self.ttl})"

    def _mac(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode("ascii"), hashlib.sha256).digest())

    def open(self, name: str, role: Role, token_expires: int) -> tuple[str, int]:
        """A cookie value and its lifetime in seconds: the session TTL, or less when the
        token it came from expires sooner."""
        expires = int(min(time.time() + self.ttl, token_expires))
        claims = {"n": name, "r": role, "e": expires, "x": secrets.token_hex(8)}
        body = _b64(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
        return f"{body}.{self._mac(body)}", max(0, expires - int(time.time()))

    def read(self, cookie: str | None) -> Staff | None:
        """The staff member of a valid, unexpired cookie; None for anything else."""
        if not cookie or len(cookie) > 1024 or cookie.count(".") != 1:
            return None
        body, mac = cookie.split(".")
        if not hmac.compare_digest(mac, self._mac(body)):
            return None
        try:
            claims = json.loads(_unb64(body))
            name, role, expires = claims["n"], claims["r"], claims["e"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(name, str) or role not in ROLES or not isinstance(expires, int):
            return None
        if expires <= time.time():
            return None
        return Staff(name, role, expires)
