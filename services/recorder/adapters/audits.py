"""The checks of ``ddz audit`` on the recorder's own store (docs/AUDIT.md), as the
recorder's ``AuditService`` answers them: the audit package (``ddz.audit``) reads the
store, and what it finds is counted in the process's metrics."""

from __future__ import annotations

import asyncio

from ddz.adapters.store import EventStore
from ddz.adapters.store.keys import Keyring
from ddz.adapters.telemetry import metrics
from ddz.application.errors import Reason, Refusal
from ddz.audit import AuditReport, audit_hand
from ddz.audit.store.bulk import AllReport, audit_all
from ddz.audit.store.source import load_hand
from ddz.domain import ids


class Audits:
    """The checks of ``ddz audit`` on the recorder's own store (docs/AUDIT.md). Audits
    run in a worker thread: a replay is CPU work, and the event loop keeps serving and
    consuming meanwhile."""

    def __init__(
        self, store: EventStore, database_url: str, keys: Keyring | bytes, key_id: str = "k1"
    ) -> None:
        self.store = store
        self.database_url = database_url
        self.keys = Keyring.of_hmac(keys, key_id) if isinstance(keys, bytes) else keys

    async def hand(self, hand_id: str) -> AuditReport:
        if hand_id and not ids.is_hand_id(hand_id):  # none at all: no such hand, as before
            raise Refusal.invalid(f"a hand id is {ids.HAND_RULE}", Reason.UNKNOWN_HAND)
        report = await asyncio.to_thread(self._audit, hand_id)
        if report is None:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id!r} in the event store")
        metrics.hands_audited(report.verdict.value)
        return report

    def _audit(
        self, hand_id: str, verified_through: tuple[int, str] | None = None
    ) -> AuditReport | None:
        """``verified_through``: the head up to which the caller verified the events'
        signatures as it stored them (``VerifiedChains``), not verified again."""
        if not hand_id:
            return None
        record = load_hand(self.store, hand_id)
        if record is None:
            return None
        return audit_hand(
            record.events, self.keys, record.signatures, verified_through=verified_through
        )

    async def all(self, limit: int | None) -> AllReport:
        """Every hand of the store (the oldest ``limit``; None: all of them)."""
        report = await asyncio.to_thread(
            audit_all, self.database_url, self.keys,
            limit=limit, open_store=self.store,
        )  # fmt: skip
        failed = report.hands - report.clean - report.incomplete
        for verdict, count in (("clean", report.clean), ("incomplete", report.incomplete),
                               ("failed", failed)):  # fmt: skip
            metrics.hands_audited(verdict, count)
        return report
