"""The desk's ports for in-process tests of the console: a recorder that keeps the
access log in a list and the sessions in the real table (``DeskSessions``, as the
recorder's ``DeskService`` keeps them), and a settlement with no ledgers."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ddz.adapters.service_db.desk_sessions import DeskSessions
from ddz.application.errors import Reason, Refusal
from ddz.v1 import audit_pb2, desk_pb2, envelope_pb2, settlement_pb2
from sqlalchemy.engine import Engine


class Recorder:
    """The recorder as the desk sees it: the access log in a list, no hand stored, and
    the sessions in the real table (``DeskSessions``), as ``DeskService`` keeps them."""

    def __init__(self, engine: Engine) -> None:
        self.sessions = DeskSessions(engine)
        self.logged: list[tuple[str, str, str]] = []

    async def read_stream(self, stream_id: str) -> Sequence[envelope_pb2.StoredEvent]:
        raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no stream {stream_id}")

    async def audit(self, hand_id: str) -> audit_pb2.AuditHandResponse:
        raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id}")

    async def find_hands(self, request: desk_pb2.FindHandsRequest) -> desk_pb2.FindHandsResponse:
        return desk_pb2.FindHandsResponse()

    async def summary(self, hand_id: str) -> desk_pb2.HandSummary:
        raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id}")

    async def log_access(self, staff: str, role: str, what: str) -> None:
        self.logged.append((staff, role, what))

    async def access(self, limit: int, before_id: int) -> desk_pb2.ListAccessResponse:
        return desk_pb2.ListAccessResponse()

    async def evidence(self, hand_id: str) -> desk_pb2.GetEvidenceResponse:
        raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id}")

    async def open_tables(self, limit: int) -> desk_pb2.ListTablesResponse:
        return desk_pb2.ListTablesResponse()

    async def open_session(self, digest: str, staff: str, role: str, expires_at: float) -> None:
        await asyncio.to_thread(self.sessions.open, digest, staff, role, expires_at)

    async def check_session(self, digest: str) -> tuple[str, str] | None:
        found = await asyncio.to_thread(self.sessions.find, digest)
        return None if found is None else (found.staff, found.role)

    async def end_session(self, digest: str) -> None:
        await asyncio.to_thread(self.sessions.end, digest)


class Settlement:
    async def balance(self, player_id: str) -> settlement_pb2.GetBalanceResponse:
        return settlement_pb2.GetBalanceResponse(player_id=player_id)

    async def ledgers(self, player_id: str, limit: int) -> settlement_pb2.ListLedgersResponse:
        return settlement_pb2.ListLedgersResponse()
