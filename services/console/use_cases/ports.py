"""What the desk's use cases need: the recorder's reads, verdicts and index, and the
settlement's balances and ledgers (``clients.py`` over gRPC; fakes in unit tests), and
the audit's account of a hand written from what the recorder gave (``HandReports``:
``ddz.audit.audited_report``, passed in by the app)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ddz.audit.account.sight import Sight
from ddz.audit.account.snapshot import HandAt
from ddz.audit.account.timeline import Timeline
from ddz.audit.checks.results import CheckResult
from ddz.v1 import audit_pb2, desk_pb2, envelope_pb2, settlement_pb2


class HandReport(Protocol):
    """The audit's account of one hand (``ddz.audit.AuditReport``)."""

    @property
    def event_count(self) -> int: ...

    @property
    def key_id(self) -> str:
        """The key id the head's signature verified under ("" when none did)."""
        ...

    @property
    def producer_keys(self) -> tuple[tuple[str, str], ...]:
        """(producer, key id) the events name."""
        ...

    def timeline(self, sight: Sight | None = None) -> Timeline: ...

    def state_at(self, version: int, sight: Sight | None = None) -> HandAt:
        """The table after event ``version``; ``NoSuchEvent`` when it cannot be rebuilt."""
        ...


class HandReports(Protocol):
    def __call__(
        self,
        stream_id: str,
        envelopes: Sequence[bytes],
        checks: Sequence[CheckResult],
        key_id: str = "",
        trace_ids: Sequence[str | None] = (),
    ) -> HandReport:
        """The account of a hand whose audit the recorder ran: its stored envelopes (in
        stream order) and the checks the audit gave them."""
        ...


class Records(Protocol):
    async def read_stream(self, stream_id: str) -> Sequence[envelope_pb2.StoredEvent]:
        """A stream's stored events, in order (a Refusal NOT_FOUND when it has none)."""
        ...

    async def audit(self, hand_id: str) -> audit_pb2.AuditHandResponse: ...

    async def find_hands(
        self, request: desk_pb2.FindHandsRequest
    ) -> desk_pb2.FindHandsResponse: ...

    async def summary(self, hand_id: str) -> desk_pb2.HandSummary: ...

    async def log_access(self, staff: str, role: str, what: str) -> None: ...

    async def access(self, limit: int, before_id: int) -> desk_pb2.ListAccessResponse: ...

    async def evidence(self, hand_id: str) -> desk_pb2.GetEvidenceResponse: ...

    async def open_tables(self, limit: int) -> desk_pb2.ListTablesResponse: ...


class Ledgers(Protocol):
    async def balance(self, player_id: str) -> settlement_pb2.GetBalanceResponse: ...

    async def ledgers(self, player_id: str, limit: int) -> settlement_pb2.ListLedgersResponse: ...


class SessionBook(Protocol):
    """The desk's sessions, where every console instance sees them (the recorder's
    ``DeskService``); a session is named by the SHA-256 of its secret."""

    async def open_session(self, digest: str, staff: str, role: str, expires_at: float) -> None: ...

    async def check_session(self, digest: str) -> tuple[str, str] | None:
        """The (staff, role) of an open session; None once it ended or expired."""
        ...

    async def end_session(self, digest: str) -> None: ...
