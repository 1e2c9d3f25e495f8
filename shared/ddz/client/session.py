"""One player's conversation with the table service, over gRPC only.

The player's login token (a player token: the operator's login vouches for the name)
joins rooms; the seat token ``JoinRoom`` answers with is sent on every call for the
seat from then on (``authorization: Bearer <token>``). Seat tokens are short-lived: a
task of the session exchanges the token for a new one (``RefreshSeatToken``) before it
expires, for as long as the player sits.

Joining and asking for the next hand ride through a restart of the table service: a
call cut on the way (UNAVAILABLE) is made again once the service answers, within
``RESUME_PATIENCE`` seconds (``Unreachable`` says why when it does not). The service
keeps what they asked for across its restart (the place in the queue, the readiness),
so asking again waits on the same place; a next hand dealt before the answer was lost
is found on the table (``GetTable``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from ddz.access.tokens import refresh_delay
from ddz.adapters.rpc.bearer import bearer_channel, bearer_metadata
from ddz.adapters.rpc.grpc_client import resumed
from ddz.application.tasks import cancel_and_wait
from ddz.config.calling import CallSettings
from ddz.v1 import hand_events_pb2, table_pb2, table_pb2_grpc

JOIN_TIMEOUT_MARGIN = 30.0
"""Seconds a JoinRoom may take beyond the room's bot fill wait (the first deal)."""
NEXT_HAND_TIMEOUT = 600.0
"""A NextHand call waits for the other people at the table (the server bounds it)."""
RESUME_PATIENCE = 60.0
"""Seconds a cut stream waits for the table service to answer again (a restart)."""
REFRESH_RETRY = 5.0
"""Seconds before a refresh that failed on the way (not refused) is tried again."""
REFUSED_FOR_GOOD = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
"""A refresh refused so: the seat is no longer the player's (or the token expired);
the next call of the seat says why, and joining again gives a new token."""
CUT = grpc.StatusCode.UNAVAILABLE
"""A call cut on the way (the table service went away with it): asked again."""
AGAIN_PAUSE = (0.2, 2.0)
"""Seconds before asking again after a cut: the first pause, doubling up to the last."""

T = TypeVar("T")


class Unreachable(Exception):
    """The table service did not answer again within ``RESUME_PATIENCE`` after a call
    was cut; the message says which call and why, in one line."""


class Session:
    def __init__(self, settings: CallSettings, address: str, login_token: str) -> None:
        self.settings = settings
        self.login_token = login_token
        self.seat_token = ""
        self.seat_expires = 0  # Unix seconds
        self._received = 0.0  # when the seat token came (the client's clock)
        self._refresher: asyncio.Task[None] | None = None
        self.joined: table_pb2.JoinRoomResponse | None = None
        # One connection: the seat's calls carry the seat token, the lobby's (rooms,
        # joining) name the login token themselves.
        self._seat = bearer_channel(settings, lambda: self.seat_token or login_token,
                                    target=address)  # fmt: skip
        self._as_player = bearer_metadata(login_token)
        self.table = table_pb2_grpc.TableServiceStub(self._seat)  # type: ignore[no-untyped-call]

    @property
    def seat(self) -> int:
        assert self.joined is not None
        return int(self.joined.seat)

    @property
    def table_id(self) -> str:
        assert self.joined is not None
        return str(self.joined.table.table_id)

    async def rooms(self) -> table_pb2.ListRoomsResponse:
        answer: table_pb2.ListRoomsResponse = await self.table.ListRooms(
            table_pb2.ListRoomsRequest(), metadata=self._as_player
        )
        return answer

    async def join(
        self, room: table_pb2.Room, on_cut: Callable[[grpc.StatusCode], None] | None = None
    ) -> table_pb2.JoinRoomResponse:
        """Join the room; a call cut by a restart joins again, into the same place
        (ALREADY_EXISTS after a cut: the service has not yet seen the first call go)."""

        async def call() -> table_pb2.JoinRoomResponse:
            answer: table_pb2.JoinRoomResponse = await self.table.JoinRoom(
                table_pb2.JoinRoomRequest(room_id=room.room_id),
                timeout=room.bot_fill_wait_s + JOIN_TIMEOUT_MARGIN,
                metadata=self._as_player,
            )
            return answer

        answer = await through_cuts(
            call, f"joining room {room.room_id}", self._seat,
            after_cut=(grpc.StatusCode.ALREADY_EXISTS,), on_cut=on_cut,
        )  # fmt: skip
        self.joined = answer
        self._seated(answer.token, answer.token_expires)
        return answer

    def _seated(self, token: str, expires: int) -> None:
        self.seat_token, self.seat_expires, self._received = token, expires, time.time()
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.create_task(self._keep_fresh(), name="seat-token")

    async def _keep_fresh(self) -> None:
        """Refresh the seat token whenever a quarter of its life is left."""
        while True:
            await asyncio.sleep(refresh_delay(self.seat_expires, self._received))
            try:
                answer = await self.table.RefreshSeatToken(table_pb2.RefreshSeatTokenRequest())
            except grpc.aio.AioRpcError as exc:
                if exc.code() in REFUSED_FOR_GOOD:
                    return
                await asyncio.sleep(REFRESH_RETRY)
                continue
            self.seat_token, self.seat_expires = answer.token, answer.token_expires
            self._received = time.time()

    async def leave(self) -> table_pb2.LeaveRoomResponse:
        answer: table_pb2.LeaveRoomResponse = await self.table.LeaveRoom(
            table_pb2.LeaveRoomRequest()
        )
        return answer

    async def next_hand(
        self, after: str = "", on_cut: Callable[[grpc.StatusCode], None] | None = None
    ) -> str:
        """Ask for the hand after ``after`` (the hand just played); a call cut by a
        restart asks again (the seat's readiness was kept), and a hand dealt before the
        answer was lost is the one the table has in play."""
        request = table_pb2.NextHandRequest(table_id=self.table_id)

        async def call() -> str:
            answer = await self.table.NextHand(request, timeout=NEXT_HAND_TIMEOUT)
            return str(answer.hand_id)

        async def dealt_meanwhile(exc: grpc.aio.AioRpcError) -> str | None:
            if exc.code() is not grpc.StatusCode.FAILED_PRECONDITION:
                return None
            try:
                got = await self.table.GetTable(table_pb2.GetTableRequest(table_id=self.table_id))
            except grpc.aio.AioRpcError:  # the refusal stands
                return None
            hands = list(got.table.hand_ids)
            return hands[-1] if hands and hands[-1] != after else None

        return await through_cuts(
            call, "asking for the next hand", self._seat, found=dealt_meanwhile, on_cut=on_cut
        )

    def watch(self, hand_id: str, after: int) -> AsyncIterator[table_pb2.WatchHandResponse]:
        stream: AsyncIterator[table_pb2.WatchHandResponse] = self.table.WatchHand(
            table_pb2.WatchHandRequest(hand_id=hand_id, seat=self.seat, after_position=after)
        )
        return stream

    def follow(
        self,
        hand_id: str,
        after: int,
        on_cut: Callable[[grpc.StatusCode], None] | None = None,
    ) -> AsyncIterator[table_pb2.WatchHandResponse]:
        """The seat's stream after position ``after``, resumed from the last position
        seen whenever the connection is cut: every update once, none missed. A table
        service not back within ``RESUME_PATIENCE`` s, or one that refuses the stream
        (a restarted one has forgotten its tables, so the seat token), is a Refusal."""
        return resumed(
            "table", self._seat, lambda position: self.watch(hand_id, position),
            lambda update: int(update.position), after=after, patience=RESUME_PATIENCE,
            on_cut=on_cut,
        )  # fmt: skip

    async def view(self, hand_id: str) -> table_pb2.PlayerView:
        answer = await self.table.GetView(table_pb2.GetViewRequest(hand_id=hand_id, seat=self.seat))
        view: table_pb2.PlayerView = answer.view
        return view

    async def bid(self, hand_id: str, action: str, score: int) -> Any:
        value = hand_events_pb2.BidAction.Value("BID_ACTION_" + action.upper())
        return await self.table.Bid(
            table_pb2.BidRequest(hand_id=hand_id, seat=self.seat, action=value, score=score)
        )

    async def play(self, hand_id: str, cards: str, declared: Any = None) -> Any:
        request = table_pb2.PlayRequest(hand_id=hand_id, seat=self.seat, cards=cards)
        if declared is not None:
            request.declared.CopyFrom(declared)
        return await self.table.Play(request)

    async def pass_(self, hand_id: str) -> Any:
        return await self.table.Pass(table_pb2.PassRequest(hand_id=hand_id, seat=self.seat))

    async def show(self, hand_id: str) -> Any:
        return await self.table.ShowCards(
            table_pb2.ShowCardsRequest(hand_id=hand_id, seat=self.seat)
        )

    async def resume(self, hand_id: str) -> Any:
        return await self.table.Resume(table_pb2.ResumeRequest(hand_id=hand_id, seat=self.seat))

    async def hint(self, hand_id: str) -> table_pb2.SuggestedMove:
        answer = await self.table.Hint(table_pb2.HintRequest(hand_id=hand_id))
        move: table_pb2.SuggestedMove = answer.move
        return move

    async def evidence(self, hand_id: str) -> table_pb2.GetHandEvidenceResponse:
        request = table_pb2.GetHandEvidenceRequest(hand_id=hand_id)
        answer: table_pb2.GetHandEvidenceResponse = await self.table.GetHandEvidence(request)
        return answer

    async def close(self) -> None:
        await cancel_and_wait([self._refresher])
        await self._seat.close()


async def through_cuts(
    call: Callable[[], Awaitable[T]],
    what: str,
    channel: grpc.aio.Channel,
    *,
    after_cut: tuple[grpc.StatusCode, ...] = (),
    found: Callable[[grpc.aio.AioRpcError], Awaitable[T | None]] | None = None,
    on_cut: Callable[[grpc.StatusCode], None] | None = None,
) -> T:
    """``call()``, made again while it is cut (UNAVAILABLE), each time once the
    service answers again, for ``RESUME_PATIENCE`` s after the first cut. After a
    cut, ``after_cut`` refusals are asked again too, and ``found`` may find what
    the lost answer was (else the refusal stands)."""
    deadline: float | None = None
    pause = AGAIN_PAUSE[0]
    while True:
        try:
            return await call()
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            if deadline is not None and found is not None:
                answer = await found(exc)
                if answer is not None:
                    return answer
            if code is not CUT and (deadline is None or code not in after_cut):
                raise
            if deadline is None:
                deadline = time.monotonic() + RESUME_PATIENCE
            if on_cut is not None:
                on_cut(code)
            left = deadline - time.monotonic()
            if left <= pause:
                raise Unreachable(
                    f"{what}: the table service did not answer again within "
                    f"{RESUME_PATIENCE:g} s ({code.name}: {refusal(exc)})"
                ) from None
            await asyncio.sleep(pause)
            pause = min(2 * pause, AGAIN_PAUSE[1])
            try:  # the call itself would wait for the service up to its own deadline
                async with asyncio.timeout(deadline - time.monotonic()):
                    await channel.channel_ready()
            except TimeoutError:
                raise Unreachable(
                    f"{what}: the table service did not answer again within {RESUME_PATIENCE:g} s"
                ) from None


def refusal(exc: grpc.aio.AioRpcError) -> str:
    """A failed call in one line: the server's own words (the domain's reason)."""
    details = str(exc.details() or exc.code().name)
    for prefix in ("rules: ", "bot: "):
        details = details.removeprefix(prefix)
    return details
