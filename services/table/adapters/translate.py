"""TableService messages <-> the use cases' values: requests become domain commands and
table specs, results become responses. A request that does not decode is refused as
invalid here, before any use case runs."""

from __future__ import annotations

from dataclasses import replace

from ddz.adapters import codec
from ddz.application.errors import Refusal
from ddz.domain.hand import Bid, Pass, Play, SeatCommand, ShowCards
from ddz.domain.settlement import RoomSettings
from ddz.v1 import hand_events_pb2, rules_pb2, table_pb2

from ..use_cases.dealing import Shown, TableSpec
from ..use_cases.joining import RoomShown
from ..use_cases.moves import Moved, Seen
from ..use_cases.watching import Update

NO_BID_ACTION = "a bid needs an action: pass, call or grab"


def _room(msg: hand_events_pb2.RoomSettings) -> RoomSettings:
    """A caller's room: an empty ``bean_rounding`` is today's default, not the rule of
    the hands recorded before the field (which is what the codec reads it as)."""
    room = codec.room_from_pb(msg)
    if not msg.bean_rounding:
        room = replace(room, bean_rounding=RoomSettings().bean_rounding)
    return room


def table_spec(request: table_pb2.OpenTableRequest) -> TableSpec:
    try:
        rules = codec.ruleset_from_pb(request.rules) if request.HasField("rules") else None
        room = _room(request.room) if request.HasField("room") else None
        seats = [codec.seat_from_pb(seat) for seat in request.seats]
    except Refusal:
        raise
    except ValueError as exc:  # a value the domain refuses (a room setting out of range)
        raise Refusal.invalid(str(exc)) from None
    return TableSpec(request.table_id, request.variant, rules, room, seats)


def bid_command(request: table_pb2.BidRequest) -> SeatCommand:
    if request.action == 0:
        raise Refusal.invalid(NO_BID_ACTION)
    bid = hand_events_pb2.BidCommand(action=request.action, score=request.score)
    command = codec.command_from_pb(request.seat, rules_pb2.DecideRequest(bid=bid))
    assert isinstance(command, Bid)
    return command


def show_command(request: table_pb2.ShowCardsRequest) -> SeatCommand:
    held = request.cards_held if request.HasField("cards_held") else None
    return ShowCards(request.seat, held)


def play_command(request: table_pb2.PlayRequest) -> SeatCommand:
    counts = codec.play_counts(request.cards)  # MalformedCards for no cards, too
    declared = codec.reading_from_pb(request.declared) if request.HasField("declared") else None
    return Play(request.seat, counts, declared)


def pass_command(request: table_pb2.PassRequest) -> SeatCommand:
    return Pass(request.seat)


def table_pb(shown: Shown) -> table_pb2.Table:
    table = shown.table
    return table_pb2.Table(
        table_id=table.table_id,
        variant=table.rules.name,
        rules=codec.ruleset_to_pb(table.rules),
        room=codec.room_to_pb(table.room),
        seats=[codec.seat_to_pb(seat) for seat in table.seats],
        hand_ids=list(table.hand_ids),
        current_hand_id=shown.hand_in_play,
        room_id=table.room_id,
        closed=table.closed,
        closed_reason=table.closed_reason,
        left=sorted(table.left),
    )


def room_pb(shown: RoomShown) -> table_pb2.Room:
    room = shown.room
    return table_pb2.Room(
        room_id=room.room_id,
        name=room.name,
        variant=room.rules.name,
        rules=codec.ruleset_to_pb(room.rules),
        settings=codec.room_to_pb(room.settings),
        bot_fill_wait_s=room.bot_fill_wait,
        queued=shown.queued,
        tables=shown.tables,
    )


def view_pb(seen: Seen) -> table_pb2.PlayerView:
    return codec.view_to_pb(
        seen.view, version=seen.version, table_id=seen.table_id, clock=seen.clock, now=seen.at
    )


def outcome_pb(moved: Moved) -> table_pb2.MoveOutcome:
    return table_pb2.MoveOutcome(
        version=moved.version, events=list(moved.events), view=view_pb(moved.seen)
    )


def update_pb(update: Update) -> table_pb2.WatchHandResponse:
    response = table_pb2.WatchHandResponse(position=update.position)
    if update.seen is not None:
        response.view.CopyFrom(view_pb(update.seen))
    if update.event is not None:
        response.event.CopyFrom(update.event)
    return response
