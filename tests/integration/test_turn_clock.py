"""Time at the table, through the real services with a short clock: the view says whose
turn it is and when it runs out, a missed turn is one bot move and never an escape,
timeouts in a row are auto-play that ``Resume`` ends, and a stream dropped past the
grace period is the escape path of §10.2 as before (docs/RULE_DECISIONS.md §10.2)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import pytest
from ddz.application.table_history import occurred_at
from ddz.domain.hand.events import (
    AutoPlayEnd,
    AutoPlayEnded,
    AutoPlayStarted,
    BidMade,
    MoveBy,
    Passed,
    PlayerDisconnected,
    PlayMade,
    TurnTimedOut,
)
from ddz.v1 import table_pb2
from suite_kit import Suite
from table_kit import (
    BIDDING,
    PLAYING,
    Watcher,
    act,
    ddz_audit,
    event_of,
    hint,
    join,
    settled_ledger,
    stored,
    typed,
    view_of,
)

TURN = 2.0
AUTO = 1.0
MOVES = (BidMade, PlayMade, Passed)
pytestmark = pytest.mark.suite(
    turn_timeout=TURN, autoplay_turn_timeout=AUTO, timeouts_to_autoplay=2, reconnect_grace=1.0
)


def events(watcher: Watcher) -> list[Any]:
    return [e for e in (event_of(u) for u in watcher.updates) if e is not None]


def deadline_s(view: Any) -> float:
    return float(view.turn_deadline.ToNanoseconds()) / 1e9


def check_clock(update: Any, event_time: float) -> None:
    """A stream update's clock: the deadline is the turn's start (the hand's last event)
    plus the turn's seconds, as of the update's own time (its position's event)."""
    view = update.view
    assert view.HasField("turn_deadline") and view.turn_seconds in (TURN, AUTO), view
    # (the turn starts at the hand's last event: a hidden deal may follow the one seen)
    assert -1e-3 <= deadline_s(view) - (event_time + view.turn_seconds) < 0.5
    at = float(view.server_time.ToNanoseconds()) / 1e9
    assert abs(view.turn_seconds_left - (deadline_s(view) - at)) < 1e-3


def check_live_clock(view: Any, asked_at: float) -> None:
    """A view asked for now (GetView): its deadline is within a second of the server
    clock plus the seconds left, and of this machine's (the same host) too."""
    assert view.HasField("turn_deadline") and view.my_turn, view
    server_now = float(view.server_time.ToNanoseconds()) / 1e9
    assert abs(deadline_s(view) - (server_now + view.turn_seconds_left)) < 1e-3
    assert abs(deadline_s(view) - (asked_at + view.turn_seconds_left)) < 1.0
    assert 0 < view.turn_seconds_left <= view.turn_seconds


async def play_out(
    stub: Any, watcher: Watcher, seat: int, *, skip: int = 0, live: list[Any] | None = None
) -> None:
    """Play the seat with hints, letting its first ``skip`` turns run out; each turn's
    view asked for at once goes to ``live``."""
    hand_id, seen, skipped = watcher.hand_id, 0, 0
    while True:
        await watcher.until(lambda u, seen=seen: u.position > seen)
        latest = watcher.updates[-1]
        seen = latest.position
        view = latest.view
        if view.phase not in (BIDDING, PLAYING):
            await watcher.finished()
            return
        if not view.my_turn or not view.HasField("turn_deadline"):
            continue
        if live is not None:
            asked_at = time.time()
            now = await view_of(stub, hand_id, seat)
            if now.my_turn and now.HasField("turn_deadline"):
                live.append((asked_at, now))
        if skipped < skip:
            skipped += 1
            await watcher.until(lambda u, s=seen: u.position > s and typed(u, "turn_timed_out"))
            continue
        try:
            await act(stub, hand_id, seat, await hint(stub, hand_id, seat))
        except grpc.aio.AioRpcError as exc:  # the clock won the race: the bot moved
            assert exc.code() is grpc.StatusCode.FAILED_PRECONDITION, exc


@pytest.mark.parametrize("room", ["ct", "laizi"])
async def test_a_missed_turn_is_one_bot_move_no_escapee_no_penalty(suite: Suite, room: str) -> None:
    """ct (points, escape penalty) and laizi (beans): the player lets one turn run out;
    the bot makes that one move (recorded with its deadline and why), the player plays
    on, and the hand settles with no escapee and no penalty. Every view on the player's
    turn carries the clock, in bidding and in play."""
    joined = await join(suite.player("tao"), room)
    stub = suite.table_as(joined.token)
    seat, hand_id = joined.seat, joined.hand_id
    watcher = Watcher(stub, hand_id, seat).start()
    live: list[Any] = []
    await asyncio.wait_for(play_out(stub, watcher, seat, skip=1, live=live), 120)

    got = events(watcher)
    timed = [e for e in got if isinstance(e, TurnTimedOut)]
    assert len(timed) >= 1 and timed[0].seat == seat and timed[0].timeouts == 1
    assert timed[0].turn_seconds == TURN and not timed[0].on_auto_play
    after = got[got.index(timed[0]) + 1]  # the bot's one move for the player
    assert isinstance(after, MOVES) and after.seat == seat
    assert after.acted_by is MoveBy.BOT_TURN_TIMEOUT
    own = [e for e in got if isinstance(e, MOVES) and e.seat == seat]
    assert any(e.acted_by is MoveBy.PLAYER for e in own[own.index(after) :])
    assert not [e for e in got if isinstance(e, PlayerDisconnected | AutoPlayStarted)]

    # the deadline recorded is the one the player's view showed for that turn
    shown = [u for u in watcher.updates if u.view.my_turn and u.view.HasField("turn_deadline")]
    assert any(round(deadline_s(u.view) * 1000) == timed[0].deadline_ms for u in shown)
    for update in shown:
        check_clock(update, occurred_at(last_event_envelope(watcher, update.position)))
    for asked_at, view in live:
        check_live_clock(view, asked_at)
    # every turn kind the player met (bidding unless a bot called 3 first, and play)
    met = {u.view.phase for u in watcher.updates if u.view.my_turn}
    assert PLAYING in met and {view.phase for _at, view in live} == met
    # nobody's clock runs for a bot's seat
    assert all(
        not u.view.HasField("turn_deadline")
        for u in watcher.updates
        if u.view.HasField("turn") and u.view.seats[u.view.turn].is_bot
    )

    final = watcher.updates[-1].view
    recorded = await settled_ledger(suite, hand_id)
    assert list(recorded.ledger.deltas) == list(final.ledger.deltas)
    assert not [line for line in recorded.ledger.lines if "escape" in line.reason]
    await stored(suite, hand_id, watcher.updates[-1].position)
    audited = await asyncio.to_thread(ddz_audit, suite, hand_id)  # the services share the loop
    assert audited.returncode == 0, audited.stdout + audited.stderr


def last_event_envelope(watcher: Watcher, position: int) -> Any:
    """The envelope of the last event (not a refusal) at or before ``position``."""
    for update in reversed(watcher.updates):
        event = update.event
        if (
            update.position <= position
            and update.HasField("event")
            and event.type != "command_rejected"
        ):
            return event
    raise AssertionError("no event before the view")


async def test_two_timeouts_are_auto_play_with_the_short_clock_and_resume_ends_it(
    suite: Suite,
) -> None:
    joined = await join(suite.player("uma"), "classic")
    stub = suite.table_as(joined.token)
    seat, hand_id = joined.seat, joined.hand_id
    watcher = Watcher(stub, hand_id, seat).start()
    started = await watcher.until(
        lambda u: typed(u, "auto_play_started") and event_of(u).seat == seat
    )
    assert event_of(started).timeouts == 2 and seat in started.view.auto_play
    timed = [e for e in events(watcher) if isinstance(e, TurnTimedOut)]
    assert [(e.timeouts, e.on_auto_play) for e in timed] == [(1, False), (2, False)]
    # In auto-play each turn gets the short clock, then a bot move (auto-play).
    short = await watcher.until(
        lambda u: (
            u.view.my_turn and u.view.HasField("turn_deadline") and u.position > started.position
        )
    )
    assert short.view.turn_seconds == AUTO
    # Resume: the player's alone (the operator may act for a seat, not press it).
    resume = table_pb2.ResumeRequest(hand_id=hand_id, seat=seat)
    with pytest.raises(grpc.aio.AioRpcError) as denied:
        await suite.table.Resume(resume)
    assert denied.value.code() is grpc.StatusCode.PERMISSION_DENIED
    answer = await stub.Resume(resume)
    assert seat not in answer.outcome.view.auto_play
    ended = await watcher.until(lambda u: typed(u, "auto_play_ended"))
    assert event_of(ended) == AutoPlayEnded(seat, AutoPlayEnd.RESUMED)
    with pytest.raises(grpc.aio.AioRpcError) as again:
        await stub.Resume(resume)
    assert again.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    # The full clock again on the player's next turn; they play the hand out.
    full = await watcher.until(
        lambda u: (
            u.position > ended.position and u.view.my_turn and u.view.HasField("turn_deadline")
        )
    )
    assert full.view.turn_seconds == TURN
    await asyncio.wait_for(play_out(stub, watcher, seat), 120)
    assert not [e for e in events(watcher) if isinstance(e, PlayerDisconnected)]


async def test_a_stream_dropped_past_the_grace_period_makes_the_escapee(suite: Suite) -> None:
    """A stream dropped and open again within the grace period is nothing; dropped for
    longer, the connection is lost: the first disconnect, the escapee of §10.2 (ct pays
    the escape penalty), its reason recorded, the bot's moves for the seat saying why."""
    joined = await join(suite.player("vic"), "ct")
    stub = suite.table_as(joined.token)
    seat, hand_id = joined.seat, joined.hand_id
    watcher = Watcher(stub, hand_id, seat).start()
    await watcher.until(lambda u: u.position >= 1)
    await watcher.drop()
    await asyncio.sleep(0.2)
    watcher.start()  # back within the grace period
    operator = Watcher(suite.table, hand_id, seat).start()  # the operator's: no presence
    await asyncio.sleep(1.5)
    assert not [e for e in events(operator) if isinstance(e, PlayerDisconnected)]
    await watcher.drop()
    dropped_at = time.time()
    gone = await operator.until(lambda u: typed(u, "player_disconnected"))
    lost = event_of(gone)
    assert (lost.seat, lost.escapee) == (seat, True)
    assert lost.reason is not None and lost.reason.value == "connection_lost"
    assert occurred_at(gone.event) - dropped_at >= 0.9  # not before the grace period
    final = (await operator.finished())[-1].view
    bot_moves = [e for e in events(operator) if isinstance(e, MOVES) and e.seat == seat]
    assert bot_moves[-1].acted_by is MoveBy.BOT_CONNECTION_LOST
    penalty = [line for line in final.ledger.lines if line.reason == "escape_penalty"]
    assert penalty and penalty[0].seat == seat
