"""AuditService over gRPC: the checks of ``ddz audit`` (``audits.Audits``), answered
by the recorder from its store. What each check proves: docs/AUDIT.md."""

from __future__ import annotations

from typing import Any, TypeAlias

import grpc
from ddz.audit import Verdict
from ddz.v1 import audit_pb2, audit_pb2_grpc

from .adapters.audits import Audits

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]

_VERDICTS = {
    Verdict.CLEAN: audit_pb2.AUDIT_VERDICT_CLEAN,
    Verdict.FAILED: audit_pb2.AUDIT_VERDICT_FAILED,
    Verdict.INCOMPLETE: audit_pb2.AUDIT_VERDICT_INCOMPLETE,
}


class AuditServicer(audit_pb2_grpc.AuditServiceServicer):
    def __init__(self, audits: Audits) -> None:
        self.audits = audits

    async def AuditHand(
        self, request: audit_pb2.AuditHandRequest, context: Context
    ) -> audit_pb2.AuditHandResponse:
        report = await self.audits.hand(request.hand_id)
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
            key_id=report.key_id,
        )

    async def AuditAll(
        self, request: audit_pb2.AuditAllRequest, context: Context
    ) -> audit_pb2.AuditAllResponse:
        report = await self.audits.all(request.limit or None)
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
