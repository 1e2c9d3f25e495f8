"""The desk's sessions, kept beside its access log so that every console instance sees
the same ones: opened at sign-in, looked up on every page, ended at sign-out, and all of
one staff member's ended at once by the operator (``ddz desk end-sessions STAFF``).

Rows are keyed by the SHA-256 of the cookie's session secret (the console hashes it
before it leaves the process), so reading this table opens no session. An ended or
expired row is kept for a day (each sign-in drops older ones): a copied cookie of an
ended session finds its row ended, not missing.

Synchronous and thread-safe (call it through ``asyncio.to_thread``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ddz.adapters.service_db.schema import desk_sessions

DIGEST = re.compile(r"[0-9a-f]{64}")
KEEP_EXPIRED = 24 * 3600.0  # seconds an expired row is kept before ``purge``


@dataclass(frozen=True, slots=True)
class DeskSession:
    staff: str
    role: str
    expires_at: float


def check_digest(digest: str) -> str:
    if not DIGEST.fullmatch(digest):
        raise ValueError("a session digest is 64 lowercase hex digits (a SHA-256)")
    return digest


class DeskSessions:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def open(self, digest: str, staff: str, role: str, expires_at: float) -> None:
        """Record a new session; ``ValueError`` for a digest that is no SHA-256 or is one
        of a session recorded already (the console makes a fresh secret per sign-in)."""
        now = time.time()
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    sa.delete(desk_sessions).where(desk_sessions.c.expires_at < now - KEEP_EXPIRED)
                )
                conn.execute(
                    sa.insert(desk_sessions),
                    {"digest": check_digest(digest), "staff": staff[:200], "role": role[:32],
                     "opened_at": now, "expires_at": expires_at, "ended_at": None},
                )  # fmt: skip
        except sa.exc.IntegrityError:
            raise ValueError("this session was opened already: sign in again") from None

    def find(self, digest: str, now: float | None = None) -> DeskSession | None:
        """The open session of ``digest``; None when there is none, it ended or expired."""
        if not DIGEST.fullmatch(digest):
            return None
        s = desk_sessions.c
        query = sa.select(s.staff, s.role, s.expires_at).where(
            s.digest == digest, s.ended_at.is_(None),
            s.expires_at > (time.time() if now is None else now),
        )  # fmt: skip
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else DeskSession(row.staff, row.role, row.expires_at)

    def end(self, digest: str) -> int:
        """End one session (sign-out); how many were open (0 or 1)."""
        s = desk_sessions.c
        return self._end(s.digest == check_digest(digest))

    def end_staff(self, staff: str) -> int:
        """End every open session of one staff member; how many there were."""
        return self._end(desk_sessions.c.staff == staff)

    def _end(self, which: sa.ColumnElement[bool]) -> int:
        s = desk_sessions.c
        now = time.time()
        with self.engine.begin() as conn:
            done = conn.execute(
                sa.update(desk_sessions)
                .where(which, s.ended_at.is_(None), s.expires_at > now)
                .values(ended_at=now)
            )
        return int(done.rowcount or 0)
