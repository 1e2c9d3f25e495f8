"""TableService on gRPC: each call's request becomes the use case's arguments
(``handlers.TableHandlers``), its result the response (``translate``). The caller's
token is read here, the only place that sees the call's metadata; whatever a use case
refuses is a ``Refusal``, which the server's interceptor turns into the rich status.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, TypeAlias

import grpc
from ddz.access.tokens import bearer
from ddz.v1 import table_pb2, table_pb2_grpc

from .adapters import translate
from .use_cases.handlers import TableHandlers

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]

VIEW_WAIT = 2.0
"""Longest wait for the feed to reach a version a caller asked for (capped by the
call's own deadline)."""


def token_of(context: Context) -> str | None:
    """The call's bearer token (None: none sent; "" when not a bearer token)."""
    return bearer(context.invocation_metadata())


def wait_budget(context: Context) -> float:
    remaining: float | None = context.time_remaining()
    if remaining is None:
        return VIEW_WAIT
    return max(0.0, min(VIEW_WAIT, remaining - 0.05))


class TableServicer(table_pb2_grpc.TableServiceServicer):
    def __init__(self, handlers: TableHandlers) -> None:
        self.handlers = handlers
        self.dealing = handlers.dealing
        self.joining = handlers.joining
        self.moves = handlers.moves
        self.watching = handlers.watching

    # -- tables (operators) ------------------------------------------------------------

    async def OpenTable(
        self, request: table_pb2.OpenTableRequest, context: Context
    ) -> table_pb2.OpenTableResponse:
        shown = self.dealing.open_table(token_of(context), translate.table_spec(request))
        shown = await self.dealing.opened(shown)
        return table_pb2.OpenTableResponse(table=translate.table_pb(shown))

    async def GetTable(
        self, request: table_pb2.GetTableRequest, context: Context
    ) -> table_pb2.GetTableResponse:
        shown = self.dealing.get_table(token_of(context), request.table_id)
        return table_pb2.GetTableResponse(table=translate.table_pb(shown))

    async def StartHand(
        self, request: table_pb2.StartHandRequest, context: Context
    ) -> table_pb2.StartHandResponse:
        started = await self.dealing.start_hand(
            token_of(context), request.table_id, request.client_seeds, request.show_before_deal
        )
        response = table_pb2.StartHandResponse(
            hand_id=started.hand_id,
            table_id=started.table_id,
            commitment=started.dealt.commitment,
            version=started.dealt.version,
        )
        if started.first_bidder is not None:
            response.first_bidder = started.first_bidder
        return response

    # -- rooms -------------------------------------------------------------------------

    async def ListRooms(
        self, request: table_pb2.ListRoomsRequest, context: Context
    ) -> table_pb2.ListRoomsResponse:
        return table_pb2.ListRoomsResponse(
            rooms=[translate.room_pb(room) for room in self.joining.list_rooms()],
            opening_balance=self.joining.rooms.opening_balance,
        )

    async def JoinRoom(
        self, request: table_pb2.JoinRoomRequest, context: Context
    ) -> table_pb2.JoinRoomResponse:
        joined = await self.joining.join_room(token_of(context), request.room_id, request.player_id)
        response = table_pb2.JoinRoomResponse(
            room_id=joined.room.room_id,
            table=translate.table_pb(joined.table),
            seat=joined.seat,
            token=joined.seat_pass.token,
            token_expires=joined.seat_pass.expires,
            hand_id=joined.table.table.last_hand_id or "",
            rejoined=joined.rejoined,
        )
        if joined.balance is not None:
            response.balance = joined.balance
        return response

    async def LeaveRoom(
        self, request: table_pb2.LeaveRoomRequest, context: Context
    ) -> table_pb2.LeaveRoomResponse:
        left = await self.joining.leave_room(token_of(context), request.room_id, request.player_id)
        response = table_pb2.LeaveRoomResponse(
            dequeued=left.dequeued, table_id=left.table_id, escaped_hand_id=left.escaped_hand_id
        )
        if left.seat is not None:
            response.seat = left.seat
        return response

    async def RefreshSeatToken(
        self, request: table_pb2.RefreshSeatTokenRequest, context: Context
    ) -> table_pb2.RefreshSeatTokenResponse:
        refreshed = self.joining.refresh(token_of(context))
        return table_pb2.RefreshSeatTokenResponse(
            token=refreshed.seat_pass.token, token_expires=refreshed.seat_pass.expires,
            table_id=refreshed.table_id, seat=refreshed.seat,
        )  # fmt: skip

    async def NextHand(
        self, request: table_pb2.NextHandRequest, context: Context
    ) -> table_pb2.NextHandResponse:
        hand_id, first_bidder = await self.joining.next_hand(token_of(context), request.table_id)
        response = table_pb2.NextHandResponse(hand_id=hand_id)
        if first_bidder is not None:
            response.first_bidder = first_bidder
        return response

    # -- a seat's moves ------------------------------------------------------------------

    async def Bid(self, request: table_pb2.BidRequest, context: Context) -> table_pb2.BidResponse:
        command = translate.bid_command(request)
        moved = await self.moves.move(
            token_of(context), request.hand_id, command, wait_budget(context)
        )
        return table_pb2.BidResponse(outcome=translate.outcome_pb(moved))

    async def ShowCards(
        self, request: table_pb2.ShowCardsRequest, context: Context
    ) -> table_pb2.ShowCardsResponse:
        command = translate.show_command(request)
        moved = await self.moves.move(
            token_of(context), request.hand_id, command, wait_budget(context)
        )
        return table_pb2.ShowCardsResponse(outcome=translate.outcome_pb(moved))

    async def Play(
        self, request: table_pb2.PlayRequest, context: Context
    ) -> table_pb2.PlayResponse:
        command = translate.play_command(request)
        moved = await self.moves.move(
            token_of(context), request.hand_id, command, wait_budget(context)
        )
        return table_pb2.PlayResponse(outcome=translate.outcome_pb(moved))

    async def Pass(
        self, request: table_pb2.PassRequest, context: Context
    ) -> table_pb2.PassResponse:
        command = translate.pass_command(request)
        moved = await self.moves.move(
            token_of(context), request.hand_id, command, wait_budget(context)
        )
        return table_pb2.PassResponse(outcome=translate.outcome_pb(moved))

    async def Resume(
        self, request: table_pb2.ResumeRequest, context: Context
    ) -> table_pb2.ResumeResponse:
        moved = await self.moves.resume(
            token_of(context), request.hand_id, request.seat, wait_budget(context)
        )
        return table_pb2.ResumeResponse(outcome=translate.outcome_pb(moved))

    # -- views ---------------------------------------------------------------------------

    async def GetView(
        self, request: table_pb2.GetViewRequest, context: Context
    ) -> table_pb2.GetViewResponse:
        seen = await self.watching.view(
            token_of(context), request.hand_id, request.seat, request.min_version,
            wait_budget(context),
        )  # fmt: skip
        return table_pb2.GetViewResponse(view=translate.view_pb(seen))

    async def WatchHand(
        self, request: table_pb2.WatchHandRequest, context: Context
    ) -> AsyncIterator[table_pb2.WatchHandResponse]:
        updates = self.watching.watch(
            token_of(context), request.hand_id, request.seat,
            after=request.after_position, events_only=request.events_only,
        )  # fmt: skip
        # Closed here, not by the collector: a dropped stream ends the seat's presence now.
        async with aclosing(updates):
            async for update in updates:
                yield translate.update_pb(update)

    # -- hints ---------------------------------------------------------------------------

    async def Suggest(
        self, request: table_pb2.TableSuggestRequest, context: Context
    ) -> table_pb2.TableSuggestResponse:
        move = await self.watching.suggest(token_of(context), request.hand_id, request.seat)
        return table_pb2.TableSuggestResponse(move=move)

    async def Hint(
        self, request: table_pb2.HintRequest, context: Context
    ) -> table_pb2.TableSuggestResponse:
        seat = request.seat if request.HasField("seat") else None
        move = await self.watching.hint(token_of(context), request.hand_id, seat)
        return table_pb2.TableSuggestResponse(move=move)

    # -- evidence ------------------------------------------------------------------------

    async def GetHandEvidence(
        self, request: table_pb2.GetHandEvidenceRequest, context: Context
    ) -> table_pb2.GetHandEvidenceResponse:
        found = await self.handlers.evidence.evidence(token_of(context), request.hand_id)
        return table_pb2.GetHandEvidenceResponse(file=found.data, file_name=found.name)
