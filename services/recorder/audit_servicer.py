"""AuditService: the checks of ``ddz audit``, answered by the recorder from its store.

Audits run in a worker thread (``asyncio.to_thread``): the store reads are blocking and
a replay is CPU work, so the event loop keeps serving and consuming meanwhile. What
each check proves: docs/AUDIT.md.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeAlias

import grpc
from ddz.adapters.grpc_server import abort
from ddz.adapters.store import EventStore
from ddz.audit import AuditReport, Verdict, audit_hand
from ddz.audit.bulk import AllReport, audit_all
from ddz.audit.source import load_hand
from ddz.v1 import audit_pb2, audit_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]

_VERDICTS = {
    Verdict.CLEAN: audit_pb2.AUDIT_VERDICT_CLEAN,
    Verdict.FAILED: audit_pb2.AUDIT_VERDICT_FAILED,
    Verdict.INCOMPLETE: audit_pb2.AUDIT_VERDICT_INCOMPLETE,
}


class AuditServicer(audit_pb2_grpc.AuditServiceServicer):
    def __init__(self, store: EventStore, database_url: str, key: bytes, key_id: str) -> None:
        self.store = store
        self.database_url = database_url
        self.key = key
        self.key_id = key_id

    async def AuditHand(
        self, request: audit_pb2.AuditHandRequest, context: Context
    ) -> audit_pb2.AuditHandResponse:
        report = await asyncio.to_thread(self._audit, request.hand_id)
        if report is None:
            await abort(
                context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND",
                f"no hand {request.hand_id!r} in the event store",
            )  # fmt: skip
        assert report is not None
        return audit_pb2.AuditHandResponse(
            hand_id=report.hand_id,
            verdict=_VERDICTS[report.verdict],
            failed_check=report.failed_check or "",
            message=report.message,
            checks=[
                audit_pb2.AuditCheck(name=c.name, passed=c.passed, detail=c.detail)
                for c in report.checks
            ],
            transcript=report.transcript(),
            events=report.event_count,
        )

    def _audit(self, hand_id: str) -> AuditReport | None:
        if not hand_id:
            return None
        record = load_hand(self.store, hand_id)
        if record is None:
            return None
        return audit_hand(record.events, self.key, record.signatures, key_id=self.key_id)

    async def AuditAll(
        self, request: audit_pb2.AuditAllRequest, context: Context
    ) -> audit_pb2.AuditAllResponse:
        report: AllReport = await asyncio.to_thread(
            audit_all, self.database_url, self.key, self.key_id,
            limit=request.limit or None, open_store=self.store,
        )  # fmt: skip
        return audit_pb2.AuditAllResponse(
            hands=report.hands,
            clean=report.clean,
            incomplete=report.incomplete,
            failed_by_check={name: n for name, n in report.failed_by_check.items() if n},
            failures=[
                audit_pb2.AuditFailure(
                    hand_id=f.hand_id, failed_check=f.failed_check or "", message=f.message
                )
                for f in report.failures
            ],
            seconds=report.seconds,
        )
