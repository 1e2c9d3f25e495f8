"""TableService: players' calls -> dealer and rules calls; hands -> per-seat views.

No rules here. A seat's bid or play becomes a ``RulesService.Decide`` call; the rules'
refusal becomes a rich status for the player (FAILED_PRECONDITION or INVALID_ARGUMENT
with the ``ddz.v1.Reason``). Views come from the hand's state as folded from its
events (``HandFeed``), through ``view_for(state, seat)``: one seat's cards and what
everybody sees.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any, NoReturn

import grpc
import structlog
from ddz.adapters import codec
from ddz.adapters.bus import stream_parts
from ddz.adapters.grpc_client import error_reason
from ddz.adapters.grpc_server import abort
from ddz.adapters.hand_feed import Entry, HandFeed, HandFold, entry_of
from ddz.adapters.hand_stream import hand_stream_id
from ddz.adapters.views import view_to_pb
from ddz.domain.hand import HandState, RejectReason, evolve, view_for
from ddz.domain.hand.state import SEATS
from ddz.domain.ruleset import ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.v1 import (
    bot_pb2,
    bot_pb2_grpc,
    dealer_pb2,
    dealer_pb2_grpc,
    errors_pb2,
    rules_pb2,
    rules_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from ddz.v1 import (
    hand_events_pb2 as pb,
)

from .tables import Table, TableError, Tables

log = structlog.get_logger("ddz.table")

Context = Any  # grpc.aio.ServicerContext (untyped)

VIEW_WAIT = 2.0
"""Longest wait for the feed to reach a version a caller asked for (capped by the
call's own deadline)."""

# Refusals that say the request is wrong in itself, whatever the hand's state.
INVALID_REQUESTS = frozenset(
    {
        RejectReason.NOT_A_COMBINATION,
        RejectReason.UNKNOWN_SEAT,
        RejectReason.INVALID_BID,
        RejectReason.INVALID_COMMAND,
    }
)
REASON_NAMES = frozenset(errors_pb2.Reason.keys())


def refusal_status(reason: str) -> tuple[grpc.StatusCode, str]:
    """The status code and ``ddz.v1.Reason`` name of a rules refusal (``not_your_turn``)."""
    try:
        code = RejectReason(reason)
    except ValueError:
        return grpc.StatusCode.FAILED_PRECONDITION, "REASON_UNSPECIFIED"
    invalid = code in INVALID_REQUESTS
    name = code.name if code.name in REASON_NAMES else None
    if name is None:  # reasons the wire enum groups: a bad bid, a show not allowed now
        name = "INVALID_ARGUMENT" if invalid else "WRONG_PHASE"
    status = grpc.StatusCode.INVALID_ARGUMENT if invalid else grpc.StatusCode.FAILED_PRECONDITION
    return status, name


def visible_event(entry: Entry, seat: int) -> Any:
    """The envelope ``seat`` may receive for ``entry``, or None: hidden events (every
    seat's cards) never; another seat's refused command neither (it may name cards
    that seat holds)."""
    if entry.hidden:
        return None
    rejected = entry.rejected_seat
    if rejected is not None and rejected != seat:
        return None
    return entry.envelope


class TableServicer(table_pb2_grpc.TableServiceServicer):
    def __init__(
        self,
        tables: Tables,
        feed: HandFeed,
        dealer: dealer_pb2_grpc.DealerServiceStub,
        rules: rules_pb2_grpc.RulesServiceStub,
        bot: bot_pb2_grpc.BotServiceStub,
    ) -> None:
        self.tables = tables
        self.feed = feed
        self.dealer = dealer
        self.rules = rules
        self.bot = bot

    # -- tables ------------------------------------------------------------------------

    async def OpenTable(
        self, request: table_pb2.OpenTableRequest, context: Context
    ) -> table_pb2.OpenTableResponse:
        try:
            if request.HasField("rules"):
                rules = codec.ruleset_from_pb(request.rules)
            else:
                rules = ruleset_for(request.variant)
            room = codec.room_from_pb(request.room) if request.HasField("room") else RoomSettings()
            seats = [codec.seat_from_pb(seat) for seat in request.seats]
            table = self.tables.open(rules, room, seats, request.table_id)
        except KeyError:
            await abort(context, grpc.StatusCode.ALREADY_EXISTS, "INVALID_ARGUMENT",
                        f"table {request.table_id!r} is already open")  # fmt: skip
        except (TableError, ValueError) as exc:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", str(exc))
        log.info("table_opened", table_id=table.table_id, rules=table.rules.name)
        return table_pb2.OpenTableResponse(table=self._table_pb(table))

    async def GetTable(
        self, request: table_pb2.GetTableRequest, context: Context
    ) -> table_pb2.GetTableResponse:
        table = await self._table(request.table_id, context)
        return table_pb2.GetTableResponse(table=self._table_pb(table))

    async def StartHand(
        self, request: table_pb2.StartHandRequest, context: Context
    ) -> table_pb2.StartHandResponse:
        table = await self._table(request.table_id, context)
        async with table.lock:  # one deal at a time per table
            previous = await self._previous_hand(table, context)
            first_bidder = table.first_bidder_after(
                previous.state.first_bidder if previous is not None else None
            )
            hand_id = uuid.uuid4().hex
            deal = dealer_pb2.DealRequest(
                hand_id=hand_id,
                table_id=table.table_id,
                variant=table.rules.name,
                rules=codec.ruleset_to_pb(table.rules),
                room=codec.room_to_pb(table.room),
                seats=[codec.seat_to_pb(seat) for seat in table.seats],
                client_seeds=list(request.client_seeds),
                show_before_deal=list(request.show_before_deal),
                request_id=_request_id(),
            )
            if first_bidder is not None:
                deal.first_bidder = first_bidder
            # Known as this table's before its first event can arrive (turn deadlines).
            self.tables.add_hand(table, hand_id)
            try:
                dealt: dealer_pb2.DealResponse = await self.dealer.Deal(deal)
            except grpc.aio.AioRpcError as exc:
                self.tables.drop_hand(table, hand_id)
                await _forward(context, "dealer", exc)
        await self._learn(hand_id, dealt.events)
        log.info("hand_started", table_id=table.table_id, hand_id=hand_id,
                 first_bidder=first_bidder)  # fmt: skip
        response = table_pb2.StartHandResponse(
            hand_id=hand_id,
            table_id=table.table_id,
            commitment=dealt.commitment,
            version=dealt.version,
        )
        if first_bidder is not None:
            response.first_bidder = first_bidder
        return response

    async def _previous_hand(self, table: Table, context: Context) -> HandFold | None:
        """The table's last hand, which must be over before the next is dealt."""
        last = table.last_hand_id
        if last is None:
            return None
        fold = self.feed.get(last) or await self.feed.load(last)
        if fold is None or not fold.over:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, "WRONG_PHASE",
                        f"hand {last} is still in play at table {table.table_id}")  # fmt: skip
        return fold

    # -- a seat's moves --------------------------------------------------------------------

    async def Bid(self, request: table_pb2.BidRequest, context: Context) -> table_pb2.BidResponse:
        if request.action == 0:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT",
                        "a bid needs an action: pass, call or grab")  # fmt: skip
        decide = rules_pb2.DecideRequest(
            bid=pb.BidCommand(action=request.action, score=request.score)
        )
        outcome = await self._move(request.hand_id, request.seat, decide, context)
        return table_pb2.BidResponse(outcome=outcome)

    async def ShowCards(
        self, request: table_pb2.ShowCardsRequest, context: Context
    ) -> table_pb2.ShowCardsResponse:
        show = pb.ShowCardsCommand()
        if request.HasField("cards_held"):
            show.cards_held = request.cards_held
        decide = rules_pb2.DecideRequest(show_cards=show)
        outcome = await self._move(request.hand_id, request.seat, decide, context)
        return table_pb2.ShowCardsResponse(outcome=outcome)

    async def Play(
        self, request: table_pb2.PlayRequest, context: Context
    ) -> table_pb2.PlayResponse:
        try:
            counts = codec.parse_rank_counts(request.cards)
        except codec.MalformedCards as exc:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_CARDS", str(exc))
        if not any(counts):
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_CARDS",
                        "no cards given: to pass, call Pass")  # fmt: skip
        play = pb.PlayCommand(cards=codec.format_rank_counts(counts))
        if request.HasField("declared"):
            play.declared.CopyFrom(request.declared)
        decide = rules_pb2.DecideRequest(play=play)
        outcome = await self._move(request.hand_id, request.seat, decide, context)
        return table_pb2.PlayResponse(outcome=outcome)

    async def Pass(
        self, request: table_pb2.PassRequest, context: Context
    ) -> table_pb2.PassResponse:
        decide = rules_pb2.DecideRequest(**{"pass": pb.PassCommand()})
        outcome = await self._move(request.hand_id, request.seat, decide, context)
        return table_pb2.PassResponse(outcome=outcome)

    async def _move(
        self, hand_id: str, seat: int, decide: rules_pb2.DecideRequest, context: Context
    ) -> table_pb2.MoveOutcome:
        fold = await self._hand(hand_id, context)
        if not _check_seat(seat):
            await _unknown_seat(context, seat)
        decide.hand_id = hand_id
        decide.seat = seat
        decide.request_id = _request_id()
        if seat in fold.state.disconnected and not fold.state.seats[seat].is_bot:
            await self._reconnect(fold, seat)
        try:
            answer: rules_pb2.DecideResponse = await self.rules.Decide(decide)
        except grpc.aio.AioRpcError as exc:
            await _forward(context, "rules", exc)
        await self._learn(hand_id, answer.events)
        if not answer.accepted:
            code, reason = refusal_status(answer.reason)
            await abort(context, code, reason, answer.message or answer.reason)
        await fold.wait_for(answer.version, _wait_budget(context))
        view = view_for(fold.state, seat)
        return table_pb2.MoveOutcome(
            version=answer.version,
            events=list(answer.events),
            view=view_to_pb(view, version=fold.version, table_id=self._table_id(hand_id)),
        )

    async def _reconnect(self, fold: HandFold, seat: int) -> None:
        """A player back from a disconnect takes their seat over from the bot (托管 ends)."""
        request = rules_pb2.DecideRequest(
            hand_id=fold.hand_id, seat=seat, reconnect=pb.ReconnectCommand(),
            request_id=_request_id(),
        )  # fmt: skip
        try:
            answer: rules_pb2.DecideResponse = await self.rules.Decide(request)
        except grpc.aio.AioRpcError as exc:
            log.warning("reconnect_failed", hand_id=fold.hand_id, seat=seat, code=exc.code().name)
            return
        await self._learn(fold.hand_id, answer.events)
        log.info("player_reconnected", hand_id=fold.hand_id, seat=seat, accepted=answer.accepted)

    async def disconnect(self, hand_id: str, seat: int, expected_version: int) -> None:
        """The turn clock's action: the seat missed its turn; the bot takes over."""
        request = rules_pb2.DecideRequest(
            hand_id=hand_id, seat=seat, disconnect=pb.DisconnectCommand(),
            expected_version=expected_version, request_id=str(uuid.uuid4()),
        )  # fmt: skip
        try:
            answer: rules_pb2.DecideResponse = await self.rules.Decide(request)
        except grpc.aio.AioRpcError as exc:
            # ABORTED: the seat acted at the last moment; nothing to do.
            log.info("disconnect_not_sent", hand_id=hand_id, seat=seat, code=exc.code().name)
            return
        await self._learn(hand_id, answer.events)

    # -- views ------------------------------------------------------------------------------

    async def GetView(
        self, request: table_pb2.GetViewRequest, context: Context
    ) -> table_pb2.GetViewResponse:
        fold = await self._hand(request.hand_id, context)
        if not _check_seat(request.seat):
            await _unknown_seat(context, request.seat)
        if request.min_version:
            await fold.wait_for(request.min_version, _wait_budget(context))
        view = view_for(fold.state, request.seat)
        return table_pb2.GetViewResponse(
            view=view_to_pb(view, version=fold.version, table_id=self._table_id(request.hand_id))
        )

    async def WatchHand(
        self, request: table_pb2.WatchHandRequest, context: Context
    ) -> AsyncIterator[table_pb2.WatchHandResponse]:
        fold = await self._hand(request.hand_id, context)
        seat = request.seat
        if not _check_seat(seat):
            await _unknown_seat(context, seat)
        table_id = self._table_id(request.hand_id)
        # The watcher folds its own copy of the state, so each update shows the view
        # exactly as of its position (the shared fold may already be further on).
        state = HandState()
        position = 0
        while True:
            for entry in fold.entries_after(position):
                if not isinstance(entry.event, codec.CommandRejected):
                    state = evolve(state, entry.event)
                position = entry.version
                if position <= request.after_position:
                    continue
                update = table_pb2.WatchHandResponse(position=position)
                last = fold.over and position >= fold.version
                if last or not request.events_only:
                    view = view_for(state, seat)
                    update.view.CopyFrom(view_to_pb(view, version=position, table_id=table_id))
                event = visible_event(entry, seat)
                if event is not None:
                    update.event.CopyFrom(event)
                yield update
            if fold.over and position >= fold.version:
                return
            await fold.wait_for(position + 1, timeout=60.0)

    async def Suggest(
        self, request: table_pb2.TableSuggestRequest, context: Context
    ) -> table_pb2.TableSuggestResponse:
        fold = await self._hand(request.hand_id, context)
        if not _check_seat(request.seat):
            await _unknown_seat(context, request.seat)
        ask = bot_pb2.SuggestRequest(
            hand_id=request.hand_id, seat=request.seat, min_version=fold.version
        )
        try:
            answer: bot_pb2.SuggestResponse = await self.bot.Suggest(ask)
        except grpc.aio.AioRpcError as exc:
            await _forward(context, "bot", exc)
        return table_pb2.TableSuggestResponse(move=answer.move)

    # -- helpers ------------------------------------------------------------------------------

    async def _table(self, table_id: str, context: Context) -> Table:
        table = self.tables.get(table_id)
        if table is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_TABLE",
                        f"no table {table_id!r}")  # fmt: skip
        return table

    async def _hand(self, hand_id: str, context: Context) -> HandFold:
        fold = self.feed.get(hand_id)
        if fold is None:
            try:
                hand_stream_id(hand_id)
            except ValueError:
                await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_HAND",
                            f"{hand_id!r} is not a hand id")  # fmt: skip
            fold = await self.feed.load(hand_id)
        if fold is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND",
                        f"no hand {hand_id!r}")  # fmt: skip
        return fold

    async def _learn(self, hand_id: str, envelopes: Any) -> None:
        """Fold the events a call returned now (the consumer's copies come later and
        are ignored as duplicates), so the caller's view already includes them."""
        entries = [entry_of(e) for e in envelopes if stream_parts(e.stream_id)[1] == hand_id]
        await self.feed.learn(hand_id, entries)

    def _table_id(self, hand_id: str) -> str:
        table = self.tables.table_of(hand_id)
        return table.table_id if table is not None else ""

    def _table_pb(self, table: Table) -> table_pb2.Table:
        last = table.last_hand_id
        fold = self.feed.get(last) if last is not None else None
        in_play = last is not None and (fold is None or not fold.over)
        return table_pb2.Table(
            table_id=table.table_id,
            variant=table.rules.name,
            rules=codec.ruleset_to_pb(table.rules),
            room=codec.room_to_pb(table.room),
            seats=[codec.seat_to_pb(seat) for seat in table.seats],
            hand_ids=list(table.hand_ids),
            current_hand_id=last if in_play and last is not None else "",
        )


def _check_seat(seat: int) -> bool:
    return seat in SEATS


async def _unknown_seat(context: Context, seat: int) -> NoReturn:
    await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_SEAT",
                f"no seat {seat} (seats are 0, 1, 2)")  # fmt: skip


async def _forward(context: Context, service: str, exc: grpc.aio.AioRpcError) -> NoReturn:
    """End the call with what the downstream service answered (its reason kept)."""
    reason = error_reason(exc)
    details = f"{service}: {exc.details()}"
    if reason is not None:
        await abort(context, exc.code(), reason, details)
    await context.abort(exc.code(), details)
    raise AssertionError("unreachable")  # pragma: no cover


def _request_id() -> str:
    bound = structlog.contextvars.get_contextvars().get("request_id")
    return str(bound) if bound else str(uuid.uuid4())


def _wait_budget(context: Context) -> float:
    remaining: float | None = context.time_remaining()
    if remaining is None:
        return VIEW_WAIT
    return max(0.0, min(VIEW_WAIT, remaining - 0.05))

