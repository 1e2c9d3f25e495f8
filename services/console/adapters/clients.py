"""The desk's ports over gRPC, as the ``console`` identity (mTLS; rights in
``ddz.access.rights``): the recorder's reads, audits and index, the settlement's
balances and ledgers."""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from ddz.adapters.rpc.grpc_client import ask, make_channel
from ddz.config.calling import CallSettings
from ddz.v1 import (
    audit_pb2,
    audit_pb2_grpc,
    desk_pb2,
    desk_pb2_grpc,
    envelope_pb2,
    recorder_pb2,
    recorder_pb2_grpc,
    settlement_pb2,
    settlement_pb2_grpc,
)


class RecorderClient:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        self.reads = recorder_pb2_grpc.RecorderServiceStub(channel)  # type: ignore[no-untyped-call]
        self.audits = audit_pb2_grpc.AuditServiceStub(channel)  # type: ignore[no-untyped-call]
        self.desk = desk_pb2_grpc.DeskServiceStub(channel)  # type: ignore[no-untyped-call]

    async def read_stream(self, stream_id: str) -> Sequence[envelope_pb2.StoredEvent]:
        request = recorder_pb2.ReadStreamRequest(stream_id=stream_id)
        response: recorder_pb2.ReadStreamResponse = await ask(
            "recorder", self.reads.ReadStream, request
        )
        return list(response.events)

    async def audit(self, hand_id: str) -> audit_pb2.AuditHandResponse:
        request = audit_pb2.AuditHandRequest(hand_id=hand_id)
        response: audit_pb2.AuditHandResponse = await ask(
            "recorder", self.audits.AuditHand, request
        )
        return response

    async def find_hands(self, request: desk_pb2.FindHandsRequest) -> desk_pb2.FindHandsResponse:
        response: desk_pb2.FindHandsResponse = await ask("recorder", self.desk.FindHands, request)
        return response

    async def summary(self, hand_id: str) -> desk_pb2.HandSummary:
        request = desk_pb2.GetHandSummaryRequest(hand_id=hand_id)
        response: desk_pb2.HandSummary = await ask("recorder", self.desk.GetHandSummary, request)
        return response

    async def log_access(self, staff: str, role: str, what: str) -> None:
        request = desk_pb2.LogAccessRequest(staff=staff, role=role, what=what)
        await ask("recorder", self.desk.LogAccess, request)

    async def access(self, limit: int, before_id: int) -> desk_pb2.ListAccessResponse:
        request = desk_pb2.ListAccessRequest(limit=limit, before_id=before_id)
        response: desk_pb2.ListAccessResponse = await ask("recorder", self.desk.ListAccess, request)
        return response

    async def evidence(self, hand_id: str) -> desk_pb2.GetEvidenceResponse:
        request = desk_pb2.GetEvidenceRequest(hand_id=hand_id)
        response: desk_pb2.GetEvidenceResponse = await ask(
            "recorder", self.desk.GetEvidence, request
        )
        return response

    async def open_tables(self, limit: int) -> desk_pb2.ListTablesResponse:
        request = desk_pb2.ListTablesRequest(limit=limit)
        response: desk_pb2.ListTablesResponse = await ask("recorder", self.desk.ListTables, request)
        return response

    async def open_session(self, digest: str, staff: str, role: str, expires_at: float) -> None:
        request = desk_pb2.OpenSessionRequest(
            digest=digest, staff=staff, role=role, expires_at=expires_at
        )
        await ask("recorder", self.desk.OpenSession, request)

    async def check_session(self, digest: str) -> tuple[str, str] | None:
        request = desk_pb2.CheckSessionRequest(digest=digest)
        found: desk_pb2.CheckSessionResponse = await ask(
            "recorder", self.desk.CheckSession, request
        )
        return (found.staff, found.role) if found.open else None

    async def end_session(self, digest: str) -> None:
        await ask("recorder", self.desk.EndSessions, desk_pb2.EndSessionsRequest(digest=digest))


class SettlementClient:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        self.stub = settlement_pb2_grpc.SettlementServiceStub(channel)  # type: ignore[no-untyped-call]

    async def balance(self, player_id: str) -> settlement_pb2.GetBalanceResponse:
        request = settlement_pb2.GetBalanceRequest(player_id=player_id)
        response: settlement_pb2.GetBalanceResponse = await ask(
            "settlement", self.stub.GetBalance, request
        )
        return response

    async def ledgers(self, player_id: str, limit: int) -> settlement_pb2.ListLedgersResponse:
        request = settlement_pb2.ListLedgersRequest(player_id=player_id, limit=limit)
        response: settlement_pb2.ListLedgersResponse = await ask(
            "settlement", self.stub.ListLedgers, request
        )
        return response


def connect(settings: CallSettings) -> tuple[RecorderClient, SettlementClient]:
    """The two clients, on channels of their own (closed by the app)."""
    return (
        RecorderClient(make_channel(settings, "recorder")),
        SettlementClient(make_channel(settings, "settlement")),
    )
