"""TableService: players' calls -> dealer and rules calls; hands -> per-seat views.

No rules here. A seat's bid or play becomes a ``RulesService.Decide`` call; the rules'
refusal becomes a rich status for the player (FAILED_PRECONDITION or INVALID_ARGUMENT
with the ``ddz.v1.Reason``). Views come from the hand's state as folded from its
events (``HandFeed``), through ``view_for(state, seat)``: one seat's cards and what
everybody sees.

Every call that acts for a seat or reads its cards is checked against the caller's
token (``auth.Gate``); rooms, queues and tables' next hands are ``seating.Seating``; a
player's stream is their presence (``presence.Presence``): a drop mid-hand disconnects
the seat (the bot plays it), a new stream or any call of theirs brings them back.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any, NoReturn, TypeAlias

import grpc
import structlog
from ddz.adapters import codec
from ddz.adapters.bus import stream_parts
from ddz.adapters.grpc_client import error_reason
from ddz.adapters.grpc_server import abort
from ddz.adapters.hand_feed import Entry, HandFeed, HandFold
from ddz.adapters.hand_stream import hand_stream_id
from ddz.adapters.tokens import SEAT_TOKEN_TTL, new_claims, sign
from ddz.adapters.views import view_to_pb
from ddz.domain.hand import HandState, Phase, RejectReason, evolve, view_for
from ddz.domain.hand.state import SEATS
from ddz.domain.ruleset import Scoring, ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.v1 import (
    bot_pb2,
    bot_pb2_grpc,
    dealer_pb2,
    dealer_pb2_grpc,
    errors_pb2,
    hand_events_pb2,
    rules_pb2,
    rules_pb2_grpc,
    settlement_pb2,
    settlement_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)

from .auth import Caller, Gate, deny
from .lobby import Seat
from .presence import Presence
from .rooms import Room, Rooms
from .seating import RoomError, Seating
from .tables import Table, TableError, Tables, check_id

log = structlog.get_logger("ddz.table")

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]

VIEW_WAIT = 2.0
"""Longest wait for the feed to reach a version a caller asked for (capped by the
call's own deadline)."""
IN_PLAY = (Phase.BIDDING, Phase.PLAYING)

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
BOT_PREFIX = "bot-"  # seats the rooms fill with bots are named so; people may not be


class HandInPlay(Exception):
    """The table's last hand is not over: no next hand yet."""


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
        *,
        settlement: settlement_pb2_grpc.SettlementServiceStub,
        rooms: Rooms,
        gate: Gate,
        table_key: bytes,
        ready_wait: float,
    ) -> None:
        self.tables = tables
        self.feed = feed
        self.dealer = dealer
        self.rules = rules
        self.bot = bot
        self.settlement = settlement
        self.rooms = rooms
        self.gate = gate
        self.table_key = table_key
        self.seating = Seating(
            rooms, tables, deal=self._deal, escape=self._escape,
            hand_over=self._hand_over, ready_wait=ready_wait,
        )  # fmt: skip
        self.presence = Presence(on_drop=self._stream_dropped, on_back=self._stream_back)

    async def close(self) -> None:
        await self.presence.close()
        await self.seating.close()

    # -- tables (operators) ------------------------------------------------------------

    async def OpenTable(
        self, request: table_pb2.OpenTableRequest, context: Context
    ) -> table_pb2.OpenTableResponse:
        await self.gate.operator(context)
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
        await self.gate.at_table(context, table)
        return table_pb2.GetTableResponse(table=self._table_pb(table))

    async def StartHand(
        self, request: table_pb2.StartHandRequest, context: Context
    ) -> table_pb2.StartHandResponse:
        await self.gate.operator(context)
        table = await self._table(request.table_id, context)
        async with table.lock:  # one deal at a time per table
            try:
                hand_id, first_bidder, dealt = await self._deal_hand(
                    table, request.client_seeds, request.show_before_deal
                )
            except HandInPlay as exc:
                await abort(context, grpc.StatusCode.FAILED_PRECONDITION, "WRONG_PHASE", str(exc))
            except grpc.aio.AioRpcError as exc:
                await _forward(context, "dealer", exc)
        response = table_pb2.StartHandResponse(
            hand_id=hand_id,
            table_id=table.table_id,
            commitment=dealt.commitment,
            version=dealt.version,
        )
        if first_bidder is not None:
            response.first_bidder = first_bidder
        return response

    async def _deal(self, table: Table) -> tuple[str, int | None]:
        hand_id, first_bidder, _dealt = await self._deal_hand(table)
        return hand_id, first_bidder

    async def _deal_hand(
        self,
        table: Table,
        client_seeds: Sequence[bytes] = (),
        show_before_deal: Sequence[int] = (),
    ) -> tuple[str, int | None, dealer_pb2.DealResponse]:
        """Deal the table's next hand (the caller holds ``table.lock``)."""
        previous = await self._previous_hand(table)
        state = previous.state if previous is not None else None
        first_bidder = table.first_bidder_after(state.first_bidder if state is not None else None)
        hand_id = uuid.uuid4().hex
        deal = dealer_pb2.DealRequest(
            hand_id=hand_id,
            table_id=table.table_id,
            variant=table.rules.name,
            rules=codec.ruleset_to_pb(table.rules),
            room=codec.room_to_pb(table.room),
            seats=[codec.seat_to_pb(seat) for seat in table.seats],
            client_seeds=list(client_seeds),
            show_before_deal=list(show_before_deal),
            request_id=_request_id(),
        )
        if first_bidder is not None:
            deal.first_bidder = first_bidder
        balances = _balances_after(table, state)
        if balances is not None:
            deal.balances.values.extend(balances)
        # Known as this table's before its first event can arrive (turn deadlines).
        self.tables.add_hand(table, hand_id)
        try:
            dealt: dealer_pb2.DealResponse = await self.dealer.Deal(deal)
        except BaseException:
            self.tables.drop_hand(table, hand_id)
            raise
        table.balances = balances
        await self._learn(hand_id, dealt.events)
        log.info("hand_started", table_id=table.table_id, hand_id=hand_id,
                 first_bidder=first_bidder)  # fmt: skip
        return hand_id, first_bidder, dealt

    async def _previous_hand(self, table: Table) -> HandFold | None:
        """The table's last hand, which must be over before the next is dealt."""
        last = table.last_hand_id
        if last is None:
            return None
        fold = self.feed.get(last) or await self.feed.load(last)
        if fold is None or not fold.over:
            raise HandInPlay(f"hand {last} is still in play at table {table.table_id}")
        return fold

    async def _hand_over(self, table: Table) -> bool:
        try:
            await self._previous_hand(table)
        except HandInPlay:
            return False
        return True

    # -- rooms (§11) -------------------------------------------------------------------------

    async def ListRooms(
        self, request: table_pb2.ListRoomsRequest, context: Context
    ) -> table_pb2.ListRoomsResponse:
        return table_pb2.ListRoomsResponse(
            rooms=[self._room_pb(room) for room in self.rooms.rooms],
            opening_balance=self.rooms.opening_balance,
        )

    async def JoinRoom(
        self, request: table_pb2.JoinRoomRequest, context: Context
    ) -> table_pb2.JoinRoomResponse:
        caller = await self.gate.caller(context)
        player_id = await self._who_joins(caller, request.player_id, context)
        room = self.rooms.get(request.room_id)
        if room is None:
            known = ", ".join(r.room_id for r in self.rooms.rooms)
            await abort(context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_ROOM",
                        f"no room {request.room_id!r} (rooms: {known})")  # fmt: skip
        try:
            held = self.seating.seat_held(player_id, room)
            if held is not None and not await self.seating.release_if_done(player_id, held):
                table = self.tables.get(held.table_id)
                assert table is not None
                return self._joined(room, table, held.seat, player_id, None, rejoined=True)
            self.seating.reserve(player_id, room)
            try:
                balance = await self._balance(player_id, room)
            except BaseException:
                if self.seating.lobby.place_of(player_id) == room.room_id:
                    self.seating.lobby.release(player_id)
                raise
            minimum = room.settings.min_balance
            if balance is not None and balance < minimum:
                self.seating.lobby.release(player_id)
                await abort(context, grpc.StatusCode.FAILED_PRECONDITION, "BALANCE_TOO_LOW",
                            f"{player_id} has {balance}; room {room.room_id} needs at least "
                            f"{minimum} to join")  # fmt: skip
            seat = await self.seating.join(room, player_id, balance)
        except RoomError as exc:
            await abort(context, exc.code, exc.reason, str(exc))
        except grpc.aio.AioRpcError as exc:
            await _forward(context, "settlement or dealer", exc)
        table = self.tables.get(seat.table_id)
        assert table is not None
        return self._joined(room, table, seat.seat, player_id, balance, rejoined=False)

    async def _who_joins(self, caller: Caller, asked: str, context: Context) -> str:
        if caller.kind == "seat":
            await deny(context, "JoinRoom takes a player token (the operator's login), "
                                "not a seat token")  # fmt: skip
        if caller.operator and not asked:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT",
                        "an operator joins a room for a player: give player_id")  # fmt: skip
        player_id = asked if caller.operator else caller.player_id
        if asked and asked != player_id:
            await deny(context, f"this token is {player_id}'s, not {asked}'s")
        try:
            check_id("player id", player_id)
        except TableError as exc:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", str(exc))
        if player_id.startswith(BOT_PREFIX):
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT",
                        f"player ids starting with {BOT_PREFIX!r} are the bots'")  # fmt: skip
        return player_id

    async def _balance(self, player_id: str, room: Room) -> int | None:
        """The player's balance for the room's minimum and for bean limits: the opening
        balance plus every settled ledger (None when the room needs neither)."""
        if room.settings.min_balance == 0 and room.rules.scoring is not Scoring.BEANS:
            return None
        ask = settlement_pb2.GetBalanceRequest(player_id=player_id)
        answer: settlement_pb2.GetBalanceResponse = await self.settlement.GetBalance(ask)
        return self.rooms.opening_balance + int(answer.balance)

    def _joined(
        self, room: Room, table: Table, seat: int, player_id: str, balance: int | None,
        *, rejoined: bool,
    ) -> table_pb2.JoinRoomResponse:  # fmt: skip
        claims = new_claims("seat", player_id, SEAT_TOKEN_TTL, table=table.table_id, seat=seat)
        response = table_pb2.JoinRoomResponse(
            room_id=room.room_id,
            table=self._table_pb(table),
            seat=seat,
            token=sign(claims, self.table_key),
            token_expires=claims.expires,
            hand_id=table.last_hand_id or "",
            rejoined=rejoined,
        )
        if balance is not None:
            response.balance = balance
        log.info("player_seated", room=room.room_id, table_id=table.table_id, seat=seat,
                 player=player_id, rejoined=rejoined)  # fmt: skip
        return response

    async def LeaveRoom(
        self, request: table_pb2.LeaveRoomRequest, context: Context
    ) -> table_pb2.LeaveRoomResponse:
        caller = await self.gate.caller(context)
        if caller.operator:
            if not request.player_id:
                await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT",
                            "an operator takes a player out: give player_id")  # fmt: skip
            player_id = request.player_id
        else:
            player_id = caller.player_id
            if request.player_id and request.player_id != player_id:
                await deny(context, f"this token is {player_id}'s, not {request.player_id}'s")
        only = None
        if caller.kind == "seat":
            only = Seat(caller.table_id, caller.seat or 0)
            table = self.tables.get(caller.table_id)
            if table is not None and table.left.get(only.seat) == player_id:
                await deny(context, f"{player_id} has left table {table.table_id}")
        try:
            left = await self.seating.leave(player_id, only=only, room_id=request.room_id)
        except RoomError as exc:
            await abort(context, exc.code, exc.reason, str(exc))
        response = table_pb2.LeaveRoomResponse(
            dequeued=left.dequeued, table_id=left.table_id, escaped_hand_id=left.escaped_hand_id
        )
        if left.seat is not None:
            response.seat = left.seat
        return response

    async def _escape(self, table: Table, seat: int) -> str:
        """The seat's player left: if a hand is in play it is an escape (§10.3 in bean
        rooms: the hand ends; §10.2: the bot plays on and the first to go pays)."""
        last = table.last_hand_id
        fold = None if last is None else self.feed.get(last) or await self.feed.load(last)
        if fold is None or fold.state.phase not in IN_PLAY:
            return ""
        escape = rules_pb2.DecideRequest(escape=hand_events_pb2.EscapeCommand())
        await self._command(fold.hand_id, seat, escape)
        return fold.hand_id

    async def NextHand(
        self, request: table_pb2.NextHandRequest, context: Context
    ) -> table_pb2.NextHandResponse:
        table = await self._table(request.table_id, context)
        _caller, seat = await self.gate.at_table(context, table)
        try:
            hand_id, first_bidder = await self.seating.next_hand(table, seat)
        except RoomError as exc:
            await abort(context, exc.code, exc.reason, str(exc))
        except grpc.aio.AioRpcError as exc:
            await _forward(context, "dealer", exc)
        response = table_pb2.NextHandResponse(hand_id=hand_id)
        if first_bidder is not None:
            response.first_bidder = first_bidder
        return response

    # -- a seat's moves --------------------------------------------------------------------

    async def Bid(self, request: table_pb2.BidRequest, context: Context) -> table_pb2.BidResponse:
        if request.action == 0:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT",
                        "a bid needs an action: pass, call or grab")  # fmt: skip
        decide = rules_pb2.DecideRequest(
            bid=hand_events_pb2.BidCommand(action=request.action, score=request.score)
        )
        outcome = await self._move(request.hand_id, request.seat, decide, context)
        return table_pb2.BidResponse(outcome=outcome)

    async def ShowCards(
        self, request: table_pb2.ShowCardsRequest, context: Context
    ) -> table_pb2.ShowCardsResponse:
        show = hand_events_pb2.ShowCardsCommand()
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
        play = hand_events_pb2.PlayCommand(cards=codec.format_rank_counts(counts))
        if request.HasField("declared"):
            play.declared.CopyFrom(request.declared)
        decide = rules_pb2.DecideRequest(play=play)
        outcome = await self._move(request.hand_id, request.seat, decide, context)
        return table_pb2.PlayResponse(outcome=outcome)

    async def Pass(
        self, request: table_pb2.PassRequest, context: Context
    ) -> table_pb2.PassResponse:
        decide = rules_pb2.DecideRequest(**{"pass": hand_events_pb2.PassCommand()})
        outcome = await self._move(request.hand_id, request.seat, decide, context)
        return table_pb2.PassResponse(outcome=outcome)

    async def _move(
        self, hand_id: str, seat: int, decide: rules_pb2.DecideRequest, context: Context
    ) -> table_pb2.MoveOutcome:
        fold = await self._seat_call(hand_id, seat, context)
        # Whoever moves for the seat is its player, back: a disconnected seat is
        # reconnected first (托管 ends), also when an operator's tool plays it.
        if seat in fold.state.disconnected and not fold.state.seats[seat].is_bot:
            await self._reconnect(fold, seat)
        decide.hand_id = hand_id
        decide.seat = seat
        decide.request_id = _request_id()
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

    async def _seat_call(
        self, hand_id: str, seat: int, context: Context, *, comes_back: bool = False
    ) -> HandFold:
        """The hand, once the caller may act for ``seat`` and read its cards. With
        ``comes_back``, a call of the seat's own player ends their disconnect."""
        fold = await self._hand(hand_id, context)
        if not _check_seat(seat):
            await _unknown_seat(context, seat)
        caller = await self.gate.seat(context, fold, seat)
        if comes_back and not caller.operator:
            await self._stream_back(hand_id, seat)
        return fold

    async def _command(
        self, hand_id: str, seat: int, request: rules_pb2.DecideRequest
    ) -> rules_pb2.DecideResponse | None:
        """A command the service sends on its own (reconnect, disconnect, escape); a
        failure is logged, not raised (the hand goes on without it)."""
        request.hand_id = hand_id
        request.seat = seat
        request.request_id = request.request_id or str(uuid.uuid4())
        kind = request.WhichOneof("command")
        try:
            answer: rules_pb2.DecideResponse = await self.rules.Decide(request)
        except grpc.aio.AioRpcError as exc:
            # ABORTED on a disconnect with a version: the seat acted at the last moment.
            log.info("command_not_sent", command=kind, hand_id=hand_id, seat=seat,
                     code=exc.code().name)  # fmt: skip
            return None
        await self._learn(hand_id, answer.events)
        log.info("seat_command", command=kind, hand_id=hand_id, seat=seat,
                 accepted=answer.accepted, reason=answer.reason)  # fmt: skip
        return answer

    async def _reconnect(self, fold: HandFold, seat: int) -> None:
        """A player back from a disconnect takes their seat over from the bot (托管 ends)."""
        reconnect = rules_pb2.DecideRequest(
            reconnect=hand_events_pb2.ReconnectCommand(), request_id=_request_id()
        )
        await self._command(fold.hand_id, seat, reconnect)

    async def disconnect(self, hand_id: str, seat: int, expected_version: int) -> None:
        """The turn clock's action: the seat missed its turn; the bot takes over."""
        request = rules_pb2.DecideRequest(
            disconnect=hand_events_pb2.DisconnectCommand(), expected_version=expected_version
        )
        await self._command(hand_id, seat, request)

    async def _stream_dropped(self, hand_id: str, seat: int) -> None:
        """The player's last stream on the seat dropped mid-hand: the bot takes over."""
        fold = self.feed.get(hand_id)
        if fold is None or not self._person_in_play(fold, seat):
            return
        if seat in fold.state.disconnected:
            return
        disconnect = rules_pb2.DecideRequest(disconnect=hand_events_pb2.DisconnectCommand())
        await self._command(hand_id, seat, disconnect)

    async def _stream_back(self, hand_id: str, seat: int) -> None:
        """The seat's player is here (a stream, a call): end their disconnect, if any."""
        fold = self.feed.get(hand_id)
        if fold is None or not self._person_in_play(fold, seat):
            return
        if seat in fold.state.disconnected:
            await self._reconnect(fold, seat)

    def _person_in_play(self, fold: HandFold, seat: int) -> bool:
        """A person (not a bot) still holds the seat of a hand in play."""
        state = fold.state
        if state.phase not in IN_PLAY or state.seats[seat].is_bot:
            return False
        table = self.tables.table_of(fold.hand_id)
        return table is None or seat not in table.left

    # -- views ------------------------------------------------------------------------------

    async def GetView(
        self, request: table_pb2.GetViewRequest, context: Context
    ) -> table_pb2.GetViewResponse:
        fold = await self._seat_call(request.hand_id, request.seat, context, comes_back=True)
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
        caller = await self.gate.seat(context, fold, seat)
        # The player's own stream is their presence at the seat (an operator's is not).
        present = not caller.operator and self._person_in_play(fold, seat)
        if present:
            await self.presence.opened(fold.hand_id, seat)
        finished = False
        try:
            async for update in self._updates(fold, request):
                yield update
            finished = True
        finally:
            if present:
                self.presence.closed(fold.hand_id, seat, dropped=not finished)

    async def _updates(
        self, fold: HandFold, request: table_pb2.WatchHandRequest
    ) -> AsyncIterator[table_pb2.WatchHandResponse]:
        seat = request.seat
        table_id = self._table_id(request.hand_id)
        # The watcher folds its own copy of the state, so each update shows the view
        # exactly as of its position (the shared fold may already be further on). With
        # events_only only the hand's last update has a view: the fold's own, at its end.
        replica = HandState()
        position = 0
        while True:
            for entry in fold.entries_after(position):
                position = entry.version
                if not request.events_only and not isinstance(entry.event, codec.CommandRejected):
                    replica = evolve(replica, entry.event)
                if position <= request.after_position:
                    continue
                update = table_pb2.WatchHandResponse(position=position)
                last = fold.over and position >= fold.version
                if last or not request.events_only:
                    state = fold.state if request.events_only else replica
                    view = view_to_pb(view_for(state, seat), version=position, table_id=table_id)
                    update.view.CopyFrom(view)
                event = visible_event(entry, seat)
                if event is not None:
                    update.event.CopyFrom(event)
                yield update
            if fold.over and position >= fold.version:
                return
            await fold.wait_for(position + 1, timeout=60.0)

    # -- hints ---------------------------------------------------------------------------------

    async def Suggest(
        self, request: table_pb2.TableSuggestRequest, context: Context
    ) -> table_pb2.TableSuggestResponse:
        fold = await self._seat_call(request.hand_id, request.seat, context, comes_back=True)
        return await self._suggest(fold, request.seat, context)

    async def Hint(
        self, request: table_pb2.HintRequest, context: Context
    ) -> table_pb2.TableSuggestResponse:
        fold = await self._hand(request.hand_id, context)
        if request.HasField("seat"):
            seat = request.seat
        else:
            caller = await self.gate.caller(context)
            seats = [s.player_id for s in fold.state.seats]
            seat = (
                caller.seat
                if caller.kind == "seat" and caller.seat is not None
                else (seats.index(caller.player_id) if caller.player_id in seats else -1)
            )
            if caller.operator or seat < 0:
                await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_SEAT",
                            "which seat? the token holds none of this hand")  # fmt: skip
        fold = await self._seat_call(request.hand_id, seat, context, comes_back=True)
        return await self._suggest(fold, seat, context)

    async def _suggest(
        self, fold: HandFold, seat: int, context: Context
    ) -> table_pb2.TableSuggestResponse:
        ask = bot_pb2.SuggestRequest(hand_id=fold.hand_id, seat=seat, min_version=fold.version)
        try:
            answer: bot_pb2.SuggestResponse = await self.bot.Suggest(ask)
        except grpc.aio.AioRpcError as exc:
            await _forward(context, "bot", exc)
        return table_pb2.TableSuggestResponse(move=answer.move)

    # -- helpers ------------------------------------------------------------------------------

    def hand_changed(self, fold: HandFold) -> None:
        """The feed's news (from the app): an ended hand needs no presence any more."""
        if fold.over:
            self.presence.hand_over(fold.hand_id)

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
        await self.feed.learn(
            hand_id, [e for e in envelopes if stream_parts(e.stream_id)[1] == hand_id]
        )

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
            room_id=table.room_id,
            closed=table.closed,
            closed_reason=table.closed_reason,
            left=sorted(table.left),
        )

    def _room_pb(self, room: Room) -> table_pb2.Room:
        return table_pb2.Room(
            room_id=room.room_id,
            name=room.name,
            variant=room.rules.name,
            rules=codec.ruleset_to_pb(room.rules),
            settings=codec.room_to_pb(room.settings),
            bot_fill_wait_s=room.bot_fill_wait,
            queued=self.seating.lobby.queued(room.room_id),
            tables=self.tables.in_room(room.room_id),
        )


def _balances_after(table: Table, previous: HandState | None) -> tuple[int, int, int] | None:
    """Bean balances at the next hand's start (§10.3 limits): the table's balances for
    its first hand, then the last hand's balances plus its ledger."""
    if table.rules.scoring is not Scoring.BEANS or table.balances is None:
        return None
    if previous is None or previous.balances is None or previous.ledger is None:
        return table.balances
    after = [max(0, b + d) for b, d in zip(previous.balances, previous.ledger.deltas, strict=True)]
    return (after[0], after[1], after[2])


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
