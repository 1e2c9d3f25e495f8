"""The table's fold (``ddz.domain.table``): what its stream's events make of it, and
that the table events survive their protobuf form unchanged."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from ddz.adapters.codec import CodecError
from ddz.adapters.messaging.table_stream import decode, encode, envelope_for
from ddz.application.table_history import TableCursor, TableHistory, occurred_at
from ddz.domain.hand import SeatInfo
from ddz.domain.ruleset import ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import (
    HandAssigned,
    PlayerLeft,
    TableClosed,
    TableEvent,
    TableHistoryError,
    TableOpened,
    evolve,
    replay,
)

from services.table.use_cases.tables import Tables

SEATS = (SeatInfo("alice"), SeatInfo("bob"), SeatInfo("bot-t1-2", is_bot=True))
OPENED = TableOpened("t1", ruleset_for("classic"), RoomSettings(), SEATS, "room-a", (100, 200, 300))


def test_an_opened_table_has_its_seats_and_no_hand() -> None:
    state = replay([OPENED])
    assert (state.table_id, state.room_id, state.seats) == ("t1", "room-a", SEATS)
    assert state.balances == (100, 200, 300)
    assert state.last_hand_id is None and not state.closed
    assert state.people == [0, 1] and state.version == 1


def test_hands_are_kept_in_order_with_their_first_bidders_and_balances() -> None:
    state = replay([OPENED, HandAssigned("h1"), HandAssigned("h2", 1, (90, 210, 300))])
    assert state.hand_ids == ("h1", "h2") and state.first_bidders == (None, 1)
    assert state.last_hand_id == "h2" and state.balances == (90, 210, 300)
    assert state.version == 3


def test_a_player_who_leaves_holds_no_seat_and_their_escape_is_named() -> None:
    state = replay(
        [OPENED, HandAssigned("h1"), PlayerLeft(1, "bob", "h1"), TableClosed("bob left")]
    )
    assert state.left_seats == {1: "bob"} and state.people == [0]
    assert state.escaped == ("h1",)
    assert state.closed and state.closed_reason == "bob left"


def test_the_first_reason_to_close_stands() -> None:
    state = replay([OPENED, TableClosed("bob left"), TableClosed("alice left")])
    assert state.closed_reason == "bob left"


def test_leaving_twice_is_one_leave() -> None:
    state = replay([OPENED, PlayerLeft(0, "alice"), PlayerLeft(0, "alice")])
    assert state.left == ((0, "alice"),) and state.escaped == ()


@pytest.mark.parametrize(
    "events",
    [[], [HandAssigned("h1")], [OPENED, OPENED], [OPENED, PlayerLeft(3, "nobody")]],
    ids=["empty", "no-opening", "opened-twice", "no-such-seat"],
)
def test_a_stream_that_is_no_table_is_refused(events: list[object]) -> None:
    with pytest.raises(TableHistoryError):
        replay(events)  # type: ignore[arg-type]


def test_evolve_does_not_change_the_state_it_is_given() -> None:
    before = replay([OPENED])
    after = evolve(before, HandAssigned("h1"))
    assert before.hand_ids == () and after.hand_ids == ("h1",)


@pytest.mark.parametrize(
    "event",
    [OPENED, TableOpened("t2", ruleset_for("classic"), RoomSettings(), SEATS),
     HandAssigned("h1"), HandAssigned("h2", 0, (1, 2, 3)), HandAssigned("h3", 2),
     PlayerLeft(2, "carol", "h9"), PlayerLeft(0, "alice"), TableClosed("done")],
)  # fmt: skip
def test_table_events_survive_their_envelope(event: object) -> None:
    envelope = envelope_for("t1", 4, event, producer="test")  # type: ignore[arg-type]
    assert envelope.stream_id == "table-t1" and envelope.stream_version == 4
    assert occurred_at(envelope) > 0
    assert decode(envelope.type, envelope.type_version, envelope.payload) == event
    assert encode(event).SerializeToString() == envelope.payload  # type: ignore[arg-type]


def test_an_unknown_table_event_is_a_codec_error() -> None:
    with pytest.raises(CodecError):
        decode("table_moved", 1, b"")
    with pytest.raises(CodecError):
        decode(TableClosed.TYPE, 2, b"")


class MemoryLog:
    """The ``TableLog`` port in memory: every table's events, as written."""

    def __init__(self) -> None:
        self.streams: dict[str, list[object]] = {}

    async def append(
        self, table_id: str, after: TableCursor, events: Sequence[TableEvent]
    ) -> TableCursor:
        stream = self.streams.setdefault(table_id, [])
        assert after.version == len(stream), "written out of order"
        stream.extend(events)
        return TableCursor(len(stream), len(stream))


async def test_the_registry_writes_each_change_in_order_and_a_restore_folds_it_back() -> None:
    log = MemoryLog()
    tables = Tables(log)
    table = tables.open(OPENED.rules, OPENED.room, list(SEATS), "t1", room_id="room-a")
    tables.add_hand(table, HandAssigned("h1", None, (100, 200, 300)))
    tables.leave(table, 1, "h1")
    tables.close(table, "bob left")
    tables.close(table, "again")  # closed once
    await tables.recorded(table)
    written = log.streams["t1"]
    assert [type(e) for e in written] == [TableOpened, HandAssigned, PlayerLeft, TableClosed]
    state = replay(written)  # type: ignore[arg-type]
    assert state == table.state

    again = Tables().restore(TableHistory(state, table.cursor))
    assert (again.table_id, again.seats, again.hand_ids) == ("t1", SEATS, ["h1"])
    assert again.left == {1: "bob"} and again.closed_reason == "bob left"
    assert again.balances == (100, 200, 300) and again.room_id == "room-a"
