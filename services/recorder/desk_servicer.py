"""DeskService over gRPC: the dispute desk's hand index and access log
(``ddz.adapters.service_db.hand_index``), for the console."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeAlias

import grpc
from ddz.adapters.service_db.desk_sessions import DeskSessions
from ddz.adapters.service_db.hand_index import HandFilter, HandIndex, HandSummary, TableSummary
from ddz.application.errors import Reason, Refusal
from ddz.application.staff import ROLES
from ddz.audit.evidence import Evidence, NotEvidence
from ddz.domain import ids
from ddz.v1 import desk_pb2, desk_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]
MAX_TEXT = 200


class DeskServicer(desk_pb2_grpc.DeskServiceServicer):
    def __init__(
        self, index: HandIndex, evidence: Callable[[str], Evidence | None] | None = None,
        sessions: DeskSessions | None = None,
    ) -> None:  # fmt: skip
        self.index = index
        self.sessions = sessions or DeskSessions(index.engine)
        # A hand's evidence file from the store (None: no such hand); ``NotEvidence``
        # for a hand still in play.
        self.evidence = evidence

    async def FindHands(
        self, request: desk_pb2.FindHandsRequest, context: Context
    ) -> desk_pb2.FindHandsResponse:
        for name in ("player", "table_id", "room", "variant", "outcome", "before_hand_id"):
            if len(getattr(request, name)) > MAX_TEXT:
                raise Refusal.invalid(f"{name} is too long")
        try:
            wanted = HandFilter(
                player=request.player, table_id=request.table_id, room=request.room,
                variant=request.variant, since=request.since or None,
                until=request.until or None, outcome=request.outcome,
                bot_for_person=request.bot_for_person, failed_audit=request.failed_audit,
            )  # fmt: skip
        except ValueError as exc:
            raise Refusal.invalid(str(exc)) from None
        before = None
        if request.before_hand_id:
            before = (request.before_started_at, request.before_hand_id)
        hands = await asyncio.to_thread(
            self.index.find, wanted, limit=request.limit or 50, before=before
        )
        return desk_pb2.FindHandsResponse(hands=[summary_pb(h) for h in hands])

    async def GetHandSummary(
        self, request: desk_pb2.GetHandSummaryRequest, context: Context
    ) -> desk_pb2.HandSummary:
        if not ids.is_hand_id(request.hand_id):
            raise Refusal.invalid(f"a hand id is {ids.HAND_RULE}", Reason.UNKNOWN_HAND)
        found = await asyncio.to_thread(self.index.get, request.hand_id)
        if found is None:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {request.hand_id!r} indexed")
        return summary_pb(found)

    async def LogAccess(
        self, request: desk_pb2.LogAccessRequest, context: Context
    ) -> desk_pb2.LogAccessResponse:
        if not ids.is_staff_name(request.staff) or not request.what:
            raise Refusal.invalid(f"an access names who ({ids.STAFF_RULE}) and what")
        await asyncio.to_thread(self.index.log_access, request.staff, request.role, request.what)
        return desk_pb2.LogAccessResponse()

    async def ListAccess(
        self, request: desk_pb2.ListAccessRequest, context: Context
    ) -> desk_pb2.ListAccessResponse:
        entries = await asyncio.to_thread(
            self.index.access, request.limit or 100, request.before_id or None
        )
        return desk_pb2.ListAccessResponse(
            entries=[
                desk_pb2.AccessEntry(id=e.id, at=e.at, staff=e.staff, role=e.role, what=e.what)
                for e in entries
            ]
        )

    async def GetEvidence(
        self, request: desk_pb2.GetEvidenceRequest, context: Context
    ) -> desk_pb2.GetEvidenceResponse:
        hand_id = request.hand_id
        if not ids.is_hand_id(hand_id):
            raise Refusal.invalid(f"a hand id is {ids.HAND_RULE}", Reason.UNKNOWN_HAND)
        if self.evidence is None:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id!r} in the store")
        try:
            found = await asyncio.to_thread(self.evidence, hand_id)
        except NotEvidence as exc:
            raise Refusal.precondition(Reason.WRONG_PHASE, str(exc)) from None
        if found is None:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id!r} in the store")
        return desk_pb2.GetEvidenceResponse(file=found.to_bytes(), file_name=found.file_name)

    async def ListTables(
        self, request: desk_pb2.ListTablesRequest, context: Context
    ) -> desk_pb2.ListTablesResponse:
        tables = await asyncio.to_thread(self.index.open_tables, request.limit or 200)
        return desk_pb2.ListTablesResponse(tables=[table_pb(t) for t in tables])

    async def OpenSession(
        self, request: desk_pb2.OpenSessionRequest, context: Context
    ) -> desk_pb2.OpenSessionResponse:
        if not ids.is_staff_name(request.staff) or request.role not in ROLES:
            raise Refusal.invalid(f"a session is a staff member's ({ids.STAFF_RULE}) in a role")
        try:
            await asyncio.to_thread(self.sessions.open, request.digest, request.staff,
                                    request.role, request.expires_at)  # fmt: skip
        except ValueError as exc:
            raise Refusal.invalid(str(exc)) from None
        return desk_pb2.OpenSessionResponse()

    async def CheckSession(
        self, request: desk_pb2.CheckSessionRequest, context: Context
    ) -> desk_pb2.CheckSessionResponse:
        found = await asyncio.to_thread(self.sessions.find, request.digest)
        if found is None:
            return desk_pb2.CheckSessionResponse(open=False)
        return desk_pb2.CheckSessionResponse(
            open=True, staff=found.staff, role=found.role, expires_at=found.expires_at
        )

    async def EndSessions(
        self, request: desk_pb2.EndSessionsRequest, context: Context
    ) -> desk_pb2.EndSessionsResponse:
        if bool(request.digest) == bool(request.staff):
            raise Refusal.invalid("end one session (digest) or one staff member's (staff)")
        try:
            if request.digest:
                ended = await asyncio.to_thread(self.sessions.end, request.digest)
            else:
                ended = await asyncio.to_thread(self.sessions.end_staff, request.staff[:MAX_TEXT])
        except ValueError as exc:
            raise Refusal.invalid(str(exc)) from None
        return desk_pb2.EndSessionsResponse(ended=ended)


def table_pb(table: TableSummary) -> desk_pb2.TableSummary:
    return desk_pb2.TableSummary(
        table_id=table.table_id, room=table.room, variant=table.variant,
        opened_at=table.opened_at or 0.0, hands=table.hands, last_hand_id=table.last_hand_id,
        seats=[desk_pb2.TableSeat(player_id=s.player_id, is_bot=s.is_bot, left=s.left)
               for s in table.seats],
    )  # fmt: skip


def summary_pb(hand: HandSummary) -> desk_pb2.HandSummary:
    return desk_pb2.HandSummary(
        hand_id=hand.hand_id, table_id=hand.table_id, room=hand.room, variant=hand.variant,
        started_at=hand.started_at or 0.0, ended_at=hand.ended_at or 0.0, outcome=hand.outcome,
        landlord=-1 if hand.landlord is None else hand.landlord,
        multiplier=hand.multiplier or 0, bot_for_person=hand.bot_for_person,
        audit=hand.audit, audit_detail=hand.audit_detail, events=hand.events,
        seats=[
            desk_pb2.HandSeat(
                player_id=s.player_id, is_bot=s.is_bot, settled=s.delta is not None,
                delta=s.delta or 0,
            )
            for s in hand.seats
        ],
    )  # fmt: skip
