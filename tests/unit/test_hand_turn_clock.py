"""A timed-out turn is not a disconnect (docs/RULE_DECISIONS.md §10.2): the bot moves
once for the person, recorded with the deadline and why; timeouts in a row put the seat
in auto-play until its person moves or resumes; no escapee, no penalty (§10.2, §10.3).
And the record says who moved: old events without the new fields read and fold the same."""

from __future__ import annotations

import dataclasses

from ddz.adapters import codec
from ddz.audit.checks.context import Audit
from ddz.audit.checks.decisions import check_decisions
from ddz.audit.checks.results import AuditedEvent
from ddz.domain.cards import parse_ranks
from ddz.domain.hand import (
    AutoPlayEnd,
    Bid,
    Disconnect,
    DisconnectReason,
    Event,
    Hand,
    MoveBy,
    Pass,
    Play,
    RejectReason,
    Resume,
    TimeOut,
    replay,
    view_for,
)
from ddz.domain.hand.events import (
    AutoPlayEnded,
    AutoPlayStarted,
    BidMade,
    HandSettled,
    HandStarted,
    Passed,
    PlayerDisconnected,
    PlayMade,
    TurnTimedOut,
)
from ddz.domain.ruleset import CLASSIC, CT
from ddz.domain.settlement import RoomSettings
from ddz.v1 import envelope_pb2, rules_pb2
from hand_kit import SEED, of_type, ok, refused, rigged, start

DEADLINE_MS = 1_800_000_000_000


def play(seat: int, text: str, *, by_bot: bool = False) -> Play:
    return Play(seat, parse_ranks(text), by_bot=by_bot)


def time_out(seat: int, after: int = 2) -> TimeOut:
    return TimeOut(seat, DEADLINE_MS, 20.0, after)


def test_a_timed_out_turn_gets_one_bot_move_and_no_escapee_section_10_2() -> None:
    """ct, a farmer lets the clock run out: recorded with its deadline; the bot's move
    says why; the hand settles with no escapee and no escape penalty."""
    h = rigged(CT, ["33", "KK4", "AA5"], "", landlord=0)
    ok(h, play(0, "3"))
    assert refused(h, Pass(1, by_bot=True)) is RejectReason.NOT_YOUR_TURN  # clock still runs
    assert ok(h, time_out(1)) == [TurnTimedOut(1, DEADLINE_MS, 20.0, 1, False, 2)]
    assert refused(h, time_out(1)) is RejectReason.NOT_ALLOWED  # once per turn
    assert ok(h, Pass(1, by_bot=True)) == [Passed(1, MoveBy.BOT_TURN_TIMEOUT)]
    assert h.state.timed_out is None and h.state.timeouts == (0, 1, 0)
    assert ok(h, Pass(2, by_bot=True)) == [Passed(2, MoveBy.BOT_SEAT)]  # seat 2 is a bot's
    events = ok(h, play(0, "3"))
    settled = of_type(events, HandSettled)[0]
    assert h.state.escapee is None and h.state.disconnected == frozenset()
    assert not any(line.reason == "escape_penalty" for line in settled.ledger.lines)


def test_timeouts_in_a_row_start_auto_play_and_a_move_of_ones_own_ends_it() -> None:
    h = rigged(CLASSIC, ["3456789", "TTJQ", "KKA2"], "", landlord=0)

    def round_(lead: str) -> None:
        ok(h, play(0, lead))

    round_("3")
    ok(h, time_out(1))
    assert ok(h, Pass(1, by_bot=True))[0].acted_by is MoveBy.BOT_TURN_TIMEOUT
    ok(h, Pass(2, by_bot=True))
    round_("4")  # seat 0 leads again after two passes
    assert ok(h, time_out(1)) == [
        TurnTimedOut(1, DEADLINE_MS, 20.0, 2, False, 2),
        AutoPlayStarted(1, 2),
    ]
    assert ok(h, Pass(1, by_bot=True))[0].acted_by is MoveBy.BOT_TURN_TIMEOUT
    assert h.state.auto_play == {1}
    ok(h, Pass(2, by_bot=True))
    round_("5")
    timed = ok(h, time_out(1))  # the short clock of auto-play ran out
    assert timed == [TurnTimedOut(1, DEADLINE_MS, 20.0, 3, True, 2)]
    assert ok(h, Pass(1, by_bot=True))[0].acted_by is MoveBy.BOT_AUTO_PLAY
    ok(h, Pass(2, by_bot=True))
    round_("6")
    own = ok(h, play(1, "T"))  # the person plays for themselves again
    assert own[0] == PlayMade(1, own[0].cards, own[0].reading, MoveBy.PLAYER)
    assert own[1:] == [AutoPlayEnded(1, AutoPlayEnd.ACTED)]
    assert h.state.auto_play == frozenset() and h.state.timeouts == (0, 0, 0)


def test_resume_ends_auto_play_and_only_auto_play() -> None:
    h = rigged(CT, ["345", "KK4", "AA5"], "", landlord=0)
    assert refused(h, Resume(1)) is RejectReason.NOT_ALLOWED
    ok(h, play(0, "3"))
    ok(h, time_out(1, after=1))  # one timeout is enough in this room
    assert h.state.auto_play == {1}
    assert ok(h, Resume(1)) == [AutoPlayEnded(1, AutoPlayEnd.RESUMED)]
    assert h.state.auto_play == frozenset() and h.state.timeouts == (0, 0, 0)
    # the turn had timed out before the resume: the bot still makes that one move
    assert ok(h, Pass(1, by_bot=True)) == [Passed(1, MoveBy.BOT_TURN_TIMEOUT)]


def test_never_auto_play_when_it_is_off_and_no_time_out_for_the_bot() -> None:
    h = rigged(CT, ["3456789", "KK4", "AA5"], "", landlord=0)
    for lead in ("3", "4", "5"):
        ok(h, play(0, lead))
        assert len(ok(h, time_out(1, after=0))) == 1  # no AutoPlayStarted
        ok(h, Pass(1, by_bot=True))
        assert refused(h, time_out(2)) is RejectReason.NOT_ALLOWED  # a bot's seat
        ok(h, Pass(2, by_bot=True))
    assert h.state.auto_play == frozenset() and h.state.timeouts == (0, 3, 0)
    assert refused(h, time_out(1)) is RejectReason.NOT_YOUR_TURN


def test_the_bot_says_why_it_moves_for_a_person_away() -> None:
    h = rigged(CT, ["3456", "KK4", "AA5"], "", landlord=0)
    ok(h, Disconnect(1, DisconnectReason.CONNECTION_LOST))
    ok(h, play(0, "3"))
    assert ok(h, play(1, "K", by_bot=True))[0].acted_by is MoveBy.BOT_CONNECTION_LOST
    assert ok(h, Pass(2, by_bot=True)) == [Passed(2, MoveBy.BOT_SEAT)]  # seat 2: a bot
    assert refused(h, time_out(1)) is RejectReason.NOT_YOUR_TURN
    assert h.state.escapee == 1  # a lost connection is the escape path, as before


def test_bids_say_who_made_them() -> None:
    h = start(CLASSIC, first_bidder=0)
    ok(h, time_out(0))
    assert ok(h, Bid.pass_(0))[0] == BidMade(0, Bid.pass_(0).action, 0, MoveBy.PLAYER)
    assert refused(h, time_out(0)) is RejectReason.NOT_YOUR_TURN
    ok(h, time_out(1))
    made = ok(h, dataclasses.replace(Bid.pass_(1), by_bot=True))
    assert made[0] == BidMade(1, Bid.pass_(1).action, 0, MoveBy.BOT_TURN_TIMEOUT)


def _old_bytes(event: Event) -> tuple[str, int, bytes]:
    """The event as a writer before this change wrote it: without the new fields."""
    type_, version, _payload = codec.encode_event(event)
    message = codec.event_to_pb(event)
    for name in ("acted_by", "reason"):
        if name in message.DESCRIPTOR.fields_by_name and type(event).__name__ != "AutoPlayEnded":
            message.ClearField(name)
    return type_, version, message.SerializeToString()


def _played_hand() -> Hand:
    """A whole classic hand of the kinds of events written before: person and bot-seat
    moves, a disconnect and a reconnect (now with reasons and acted_by)."""
    h = start(CLASSIC, first_bidder=0)
    ok(h, Bid.call(0, 3))
    ok(h, Disconnect(1, DisconnectReason.CONNECTION_LOST))
    while h.state.phase.value != "ended":
        seat = h.state.turn
        view_moves = view_for(h.state, seat).legal_moves()
        bot = seat == 2 or seat in h.state.disconnected
        if h.state.trick is not None and seat != h.state.landlord:
            ok(h, Pass(seat, by_bot=bot))
        else:
            move = view_moves[0]
            ok(h, Play(seat, move.cards, move.reading, by_bot=bot))
    return h


def test_events_written_without_the_new_fields_decode_and_fold_the_same() -> None:
    h = _played_hand()
    old = [codec.decode_event(*_old_bytes(event)) for event in h.events]
    assert any(isinstance(e, PlayMade) for e in old)
    assert all(getattr(e, "acted_by", None) is None for e in old)
    assert all(e.reason is None for e in old if isinstance(e, PlayerDisconnected))
    then, now = replay(old), replay(h.events)
    for name in ("phase", "cards", "turn", "landlord", "multiplier", "ledger", "escapee",
                 "disconnected", "winner", "seed", "version", "timeouts", "auto_play"):  # fmt: skip
        assert getattr(then, name) == getattr(now, name), name
    # and the audit replays both records to the same decisions
    for events in (old, h.events):
        audit = _audit(events)
        check_decisions(audit)
        assert audit.settled is not None


def test_new_events_round_trip_through_the_codec() -> None:
    for event in (
        TurnTimedOut(1, DEADLINE_MS, 2.5, 2, True, 2),
        AutoPlayStarted(1, 2),
        AutoPlayEnded(2, AutoPlayEnd.RESUMED),
        PlayerDisconnected(0, True, DisconnectReason.LEFT),
        Passed(0, MoveBy.BOT_LEFT),
    ):
        assert codec.decode_event(*codec.encode_event(event)) == event
    for command in (time_out(2), Resume(1), Disconnect(0, DisconnectReason.CONNECTION_LOST),
                    Pass(1, by_bot=True)):  # fmt: skip
        name, message = codec.command_to_pb(command)
        request = rules_pb2.DecideRequest()
        getattr(request, name).CopyFrom(message)
        assert codec.command_from_request(command.seat, request) == command


def _audit(events: list[Event]) -> Audit:
    started = events[0]
    assert isinstance(started, HandStarted)
    decoded = [
        AuditedEvent(number, f"e{number}", event, envelope_pb2.EventEnvelope())
        for number, event in enumerate(events, start=1)
    ]
    return Audit(
        rows=[], keys=None, signatures=[], stream_id=f"hand-{started.hand_id}",  # type: ignore[arg-type]
        decoded=decoded, started=started, seed=SEED,
    )  # fmt: skip


def test_the_audit_replays_timeouts_auto_play_and_resumes() -> None:
    h = start(CT, first_bidder=0, room=RoomSettings())
    ok(h, time_out(0, after=1))
    ok(h, dataclasses.replace(Bid.pass_(0), by_bot=True))
    assert h.state.auto_play == {0}
    ok(h, Resume(0))
    ok(h, Bid.call(1, 3))
    while h.state.phase.value != "ended":
        seat = h.state.turn
        moves = view_for(h.state, seat).legal_moves()
        if h.state.trick is not None and seat != h.state.landlord:
            if seat != 2:  # seat 2 is a bot's: no clock
                ok(h, time_out(seat))
            ok(h, Pass(seat, by_bot=True))
        else:
            ok(h, Play(seat, moves[0].cards, moves[0].reading, by_bot=seat == 2))
    audit = _audit(h.events)
    check_decisions(audit)
    assert audit.settled is not None
    assert h.state.escapee is None


def test_the_transcript_marks_each_move_the_bot_made_for_a_person_and_why() -> None:
    """What a support person reads (docs/AUDIT.md): a timed-out turn's move, an auto-play
    move and the person's own move told apart, and a bot seat's moves as a bot seat's."""
    from ddz.audit.account.marks import Marker

    h = rigged(CLASSIC, ["3456789", "TTJQ", "KKA2"], "", landlord=0)
    seats = h.state.seats
    bots = frozenset(i for i, seat in enumerate(seats) if seat.is_bot)
    before = len(h.events)
    ok(h, play(0, "3"))
    ok(h, time_out(1))
    ok(h, Pass(1, by_bot=True))  # the turn that timed out
    ok(h, Pass(2, by_bot=True))
    ok(h, play(0, "4"))
    ok(h, time_out(1))
    ok(h, Pass(1, by_bot=True))  # the second in a row: auto-play starts
    ok(h, Pass(2, by_bot=True))
    ok(h, play(0, "5"))
    ok(h, time_out(1))
    ok(h, Pass(1, by_bot=True))  # on auto-play's short clock
    ok(h, Pass(2, by_bot=True))
    ok(h, play(0, "6"))
    ok(h, play(1, "T"))  # the person again
    marker = Marker()
    marker.start(tuple(seat.player_id for seat in seats), bots)
    marks = [
        (event.seat, actor.mark)
        for version, event in enumerate(h.events[before:], start=before + 1)
        if (actor := marker.see(version, event)) is not None
    ]
    one = seats[1].player_id
    seat_2 = "bot seat" if 2 in bots else f"bot for {seats[2].player_id}"
    ones = [mark for seat, mark in marks if seat == 1]
    assert [m.split(" at #")[0] for m in ones] == [
        f"bot for {one}: turn timed out",
        f"bot for {one}: turn timed out",
        f"bot for {one}: auto-play",
        "",  # the person's own play: no mark
    ]
    assert all(mark.startswith(seat_2) for seat, mark in marks if seat == 2)
    assert all(mark == "" for seat, mark in marks if seat == 0)
