"""Disconnects (RULES.md §10.2: the bot plays on, the first to drop is the escapee) and
escapes (§10.3: leaving a bean-room hand ends it, every bomb held counts)."""

from __future__ import annotations

from ddz.domain.cards import Rank, parse_ranks
from ddz.domain.hand import (
    Disconnect,
    DisconnectReason,
    Escape,
    Pass,
    Play,
    Reconnect,
    RejectReason,
)
from ddz.domain.hand import unplayed_bombs as held_bombs
from ddz.domain.hand.events import (
    HandEnded,
    HandSettled,
    PlayerDisconnected,
    PlayerEscaped,
    PlayerReconnected,
    SeedRevealed,
)
from ddz.domain.readings import ComboType
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI
from ddz.domain.settlement import RoomSettings
from hand_kit import of_type, ok, refused, rigged


def play(seat: int, text: str) -> Play:
    return Play(seat, parse_ranks(text))


def test_first_disconnect_is_the_escapee_section_10_2() -> None:
    h = rigged(CT, ["3456", "KK", "AA"], "", landlord=0)
    first = ok(h, Disconnect(2))
    second = ok(h, Disconnect(1))
    assert first == [PlayerDisconnected(2, escapee=True)]
    assert second == [PlayerDisconnected(1, escapee=False)]
    assert h.state.escapee == 2 and h.state.disconnected == {1, 2}
    assert ok(h, Reconnect(2)) == [PlayerReconnected(2)]
    assert h.state.escapee == 2 and h.state.disconnected == {1}  # still the escapee


def test_disconnect_and_reconnect_are_checked() -> None:
    h = rigged(CT, ["3456", "KK", "AA"], "", landlord=0)
    assert refused(h, Reconnect(1)) is RejectReason.NOT_ALLOWED
    ok(h, Disconnect(1))
    assert refused(h, Disconnect(1)) is RejectReason.NOT_ALLOWED
    assert refused(h, Disconnect(3)) is RejectReason.UNKNOWN_SEAT


def test_the_bot_plays_on_for_a_disconnected_seat_section_10_2() -> None:
    h = rigged(CT, ["3456", "KK", "AA"], "", landlord=0)
    ok(h, Disconnect(1))
    ok(h, play(0, "3"))
    ok(h, play(1, "K"))  # the table's bot sends the seat's commands
    assert h.state.plays_made[1] == 1


def test_ct_landlord_wins_a_farmer_escaped_section_10_2() -> None:
    room = RoomSettings(initial_multiplier=2)
    h = rigged(CT, ["33", "KK", "AA"], "", landlord=0, room=room)
    ok(h, Disconnect(1))
    ok(h, Disconnect(2))  # only the first is the escapee
    ok(h, Reconnect(1))  # coming back does not undo it
    events = ok(h, play(0, "33"))
    # bm = 1 x (initial 2 x spring 2) = 4: landlord +2·bm; the escaped farmer -2·bm
    # - 10 x initial (20); the other farmer 0; the system the penalty
    ledger = of_type(events, HandSettled)[0].ledger
    assert ledger.deltas == (8, -28, 0) and ledger.system == 20


def test_classic_has_no_escape_penalty_section_10_1() -> None:
    h = rigged(CLASSIC, ["33", "KK", "AA"], "", landlord=0)
    ok(h, Disconnect(1))
    events = ok(h, play(0, "33"))
    assert of_type(events, HandSettled)[0].ledger.deltas == (4, -2, -2)


def test_escape_outside_bean_rooms_is_a_disconnect_that_stays_section_10_2() -> None:
    h = rigged(CT, ["3456", "KK", "AA"], "", landlord=0)
    assert ok(h, Escape(2)) == [PlayerDisconnected(2, True, DisconnectReason.LEFT)]
    assert h.state.left == {2}  # the bot's moves for the seat say so (bot_left)
    assert h.state.phase.value == "playing"
    assert h.execute(Escape(2)) == []  # already gone: nothing more happens


def test_bean_escape_ends_the_hand_counting_unplayed_bombs_section_10_3() -> None:
    """Seat 1 holds a hard bomb (x4) and the rocket (x4): 16 >= 10, so the escaped
    farmer pays 2 x the actual amount: X = 1 x 32 x 1 x 0.25 = 8, x N 100 = 800, shared
    2:1 by the landlord and the other farmer (533 + 266, 1 to the system)."""
    room = RoomSettings(coefficient=100)
    h = rigged(LAIZI, ["345", "9999BR3", "JQ"], "", landlord=0, wild=[Rank.SEVEN], room=room)
    ok(h, play(0, "3"))
    events = ok(h, Escape(2))
    assert [type(e) for e in events] == [PlayerEscaped, HandEnded, HandSettled, SeedRevealed]
    escaped = events[0]
    assert [(f.reason, f.factor, f.seat) for f in escaped.escape_multiplier.factors] == [
        ("initial", 1, None),
        ("bomb", 4, 1),
        ("rocket", 4, 1),
    ]
    assert events[1].winner is None
    assert h.state.multiplier.total == 1  # nothing was played: the hand's own multiplier
    ledger = events[2].ledger
    assert ledger.deltas == (533, 266, -800) and ledger.system == 1
    assert h.state.phase.value == "ended"


def test_bean_landlord_escape_below_10_pays_as_if_20x_section_10_3() -> None:
    """X = 1 x 20 x 2 (landlord) x 0.25 = 10, x N 100 = 1000, shared 1:1 by the farmers."""
    room = RoomSettings(coefficient=100)
    h = rigged(
        TIANDI, ["345", "JK", "JQ"], "", landlord=0, wild=[Rank.SEVEN, Rank.EIGHT], room=room
    )
    ledger = of_type(ok(h, Escape(0)), HandSettled)[0].ledger
    assert ledger.deltas == (-1000, 500, 500) and ledger.system == 0


def test_bean_escape_during_bidding_section_10_3_11() -> None:
    """Before a landlord is known the escapee settles as a farmer and the next seat takes
    the landlord's share (docs/RULE_DECISIONS.md, §10.3 "Escape"): 10x -> X = 2.5,
    x N 100 = 250 -> 166 / 83."""
    room = RoomSettings(coefficient=100)
    h = rigged(LAIZI, ["345", "JK", "JQ"], "", first_bidder=0, room=room)
    assert h.state.phase.value == "bidding"
    ledger = of_type(ok(h, Escape(1)), HandSettled)[0].ledger
    assert ledger.deltas == (83, -250, 166) and ledger.system == 1


def test_unplayed_bombs_one_per_rank_and_the_rocket_section_10_3() -> None:
    h = rigged(CT, ["777777" + "8888" + "BBRR", "99999", "333"], "", landlord=0)
    found = {(seat, r.type, r.main, r.size) for seat, r in held_bombs(h.state)}
    assert found == {
        (0, ComboType.BOMB, Rank.EIGHT, 4),
        (0, ComboType.SKY_BOMB, Rank.SEVEN, 6),
        (0, ComboType.ROCKET, Rank.RED_JOKER, 4),
        (1, ComboType.BOMB, Rank.NINE, 5),
    }


def test_after_pass_the_disconnected_seat_can_still_pass() -> None:
    h = rigged(CLASSIC, ["3456", "KK", "AA"], "", landlord=0)
    ok(h, Disconnect(1))
    ok(h, play(0, "3"))
    ok(h, Pass(1))
