"""Play (RULES.md §2 order, §3 readings, §4 bombs, §7 bomb limits, §9 bomb factors)."""

from __future__ import annotations

from ddz.domain.cards import Rank, format_cards, parse_ranks
from ddz.domain.hand import Pass, Play, RejectReason, view_for
from ddz.domain.hand.events import PlayMade
from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.ruleset import CLASSIC, CT, LAIZI
from hand_kit import of_type, ok, refused, rigged, start


def play(seat: int, text: str, declared: Reading | None = None) -> Play:
    return Play(seat, parse_ranks(text), declared)


def classic_hand():
    # seat 0 is the landlord and leads (§6/§2); play goes 0 -> 1 -> 2 -> 0
    return rigged(
        CLASSIC,
        ["3345678999", "4455KKA", "667788QQ2"],
        "TJ",
        landlord=0,
    )


def test_the_landlord_leads_and_turns_go_s_to_s_plus_1_section_2() -> None:
    h = classic_hand()
    assert h.state.turn == 0
    assert refused(h, play(1, "4")) is RejectReason.NOT_YOUR_TURN
    ok(h, play(0, "3"))
    assert h.state.turn == 1
    ok(h, play(1, "4"))
    assert h.state.turn == 2
    ok(h, Pass(2))
    assert h.state.turn == 0


def test_a_play_records_its_physical_cards_and_reading_section_3() -> None:
    h = classic_hand()
    events = ok(h, play(0, "34567"))
    made = of_type(events, PlayMade)[0]
    assert format_cards(made.cards) == "S3 S4 S5 S6 S7"  # of each rank, the first in hand order
    assert (made.reading.type, made.reading.main, made.reading.length) == (
        ComboType.SOLO_CHAIN,
        Rank.SEVEN,
        5,
    )
    assert not set(made.cards) & set(h.state.cards[0])
    assert h.state.counts[0] == parse_ranks("3899 9TJ")


def test_follow_must_beat_same_type_and_size_section_3() -> None:
    h = classic_hand()
    ok(h, play(0, "33"))
    assert refused(h, play(1, "A")) is RejectReason.DOES_NOT_BEAT  # a single on a pair
    assert refused(h, play(1, "KKA")) is RejectReason.NOT_A_COMBINATION
    assert refused(h, play(1, "22")) is RejectReason.CARDS_NOT_IN_HAND
    ok(h, play(1, "44"))
    assert refused(h, play(2, "44")) is RejectReason.CARDS_NOT_IN_HAND
    ok(h, play(2, "66"))
    assert refused(h, play(0, "33")) is RejectReason.CARDS_NOT_IN_HAND


def test_an_equal_play_does_not_beat_section_3() -> None:
    h = rigged(CLASSIC, ["55", "55", "6"], "", landlord=0)
    ok(h, play(0, "5"))
    assert refused(h, play(1, "5")) is RejectReason.DOES_NOT_BEAT


def test_two_passes_give_the_lead_to_the_last_player_section_2() -> None:
    h = classic_hand()
    ok(h, play(0, "9"))
    ok(h, Pass(1))
    assert h.state.trick is not None  # one pass: the 9 still stands
    ok(h, Pass(2))
    assert h.state.trick is None and h.state.turn == 0
    assert refused(h, Pass(0)) is RejectReason.LEADER_CANNOT_PASS
    ok(h, play(0, "3"))  # a new trick: anything may lead
    ok(h, play(1, "K"))
    ok(h, Pass(2))
    ok(h, Pass(0))
    assert h.state.turn == 1 and h.state.trick is None  # seat 1 played last: it leads


def test_the_leader_cannot_pass_issue_3() -> None:
    h = classic_hand()
    assert refused(h, Pass(0)) is RejectReason.LEADER_CANNOT_PASS


def test_bomb_beats_anything_and_multiplies_with_its_event_index_section_4_9() -> None:
    h = rigged(CLASSIC, ["AAA34", "7777B5", "R"], "", landlord=0)
    ok(h, play(0, "AAA3"))
    index = h.state.version  # the bomb's event will have this index
    ok(h, play(1, "7777"))
    bombs = [f for f in h.state.multiplier.factors if f.reason == "bomb"]
    assert [(f.factor, f.seat, f.event) for f in bombs] == [(2, 1, index)]
    assert h.state.multiplier.total == 2


def test_rocket_beats_a_bomb_and_doubles_section_4_9() -> None:
    h = rigged(CLASSIC, ["34", "77775", "BR3"], "", landlord=0)
    ok(h, play(0, "3"))
    ok(h, play(1, "7777"))
    ok(h, play(2, "BR"))
    assert [f.reason for f in h.state.multiplier.factors] == ["initial", "bomb", "rocket"]
    assert h.state.multiplier.total == 4


def test_ct_4_card_bomb_is_x1_and_5_card_bomb_x2_section_9() -> None:
    h = rigged(CT, ["34", "77778", "999995"], "", landlord=0)
    ok(h, play(0, "3"))
    ok(h, play(1, "7777"))
    assert h.state.multiplier.total == 1  # ct: a 4-card bomb has no effect
    ok(h, play(2, "99999"))
    assert h.state.multiplier.total == 2


def test_ct_bomb_limit_reached_is_its_own_rejection_section_7() -> None:
    h = rigged(
        CT,
        ["3456", "77778888BBRRK", "99"],
        "",
        landlord=0,
        bomb_limits=(None, 1, 1),
    )
    ok(h, play(0, "3"))
    ok(h, play(1, "7777"))  # the one bomb seat 1 may play
    ok(h, Pass(2))
    ok(h, Pass(0))
    # seat 1 leads again; a second bomb-class play is over the limit, rocket included
    assert refused(h, play(1, "8888")) is RejectReason.BOMB_LIMIT_REACHED
    assert refused(h, play(1, "BBRR")) is RejectReason.BOMB_LIMIT_REACHED
    assert view_for(h.state, 1).bombs_left == (None, 0, 1)
    assert all(not m.reading.is_bomb for m in view_for(h.state, 1).legal_moves())
    ok(h, play(1, "88"))  # the same cards as a non-bomb are fine


def test_ct_landlord_has_no_bomb_limit_section_7() -> None:
    h = rigged(CT, ["333344445555K", "6", "7"], "", landlord=0, bomb_limits=(None, 1, 1))
    for text in ("3333", "4444", "5555"):
        ok(h, play(0, text))
        ok(h, Pass(1))
        ok(h, Pass(2))
    assert h.state.bombs_made[0] == 3


def test_wildcard_play_takes_the_highest_reading_unless_declared_section_3_5() -> None:
    """§3: 6789 + wild 7 reads as 56789 or 6789T; undeclared, the highest is taken."""
    h = rigged(LAIZI, ["677893", "3", "4"], "", landlord=0, wild=[Rank.SEVEN])
    made = of_type(ok(h, play(0, "67789")), PlayMade)[0]
    # both 7s are wildcards: one stands for 7, the other for T
    assert made.reading.main == Rank.TEN
    assert made.reading.substitutes == (Rank.SEVEN, Rank.TEN)
    h = rigged(LAIZI, ["677893", "3", "4"], "", landlord=0, wild=[Rank.SEVEN])
    low = Reading(ComboType.SOLO_CHAIN, Rank.NINE, 5, 5)
    made = of_type(ok(h, play(0, "67789", declared=low)), PlayMade)[0]
    assert made.reading.main == Rank.NINE
    assert made.reading.substitutes == (Rank.FIVE, Rank.SEVEN)


def test_declared_reading_that_the_cards_cannot_make_section_3() -> None:
    h = rigged(LAIZI, ["677893", "3", "4"], "", landlord=0, wild=[Rank.SEVEN])
    wrong = Reading(ComboType.PAIR_CHAIN, Rank.NINE, 3, 6)
    assert refused(h, play(0, "67789", declared=wrong)) is RejectReason.NOT_A_COMBINATION


def test_laizi_soft_bomb_x2_hard_bomb_x4_section_4_9() -> None:
    h = rigged(LAIZI, ["33374", "KKKK5", "5"], "", landlord=0, wild=[Rank.SEVEN])
    made = of_type(ok(h, play(0, "3337")), PlayMade)[0]
    assert made.reading.type is ComboType.BOMB and made.reading.bomb_class is BombClass.SOFT
    ok(h, play(1, "KKKK"))
    assert [f.factor for f in h.state.multiplier.factors if f.reason == "bomb"] == [2, 4]


def test_playing_out_of_phase_is_refused() -> None:
    h = start(CLASSIC, first_bidder=0)
    assert refused(h, play(0, "3")) is RejectReason.WRONG_PHASE
    assert refused(h, Pass(0)) is RejectReason.WRONG_PHASE


def test_malformed_and_empty_plays_are_refused() -> None:
    h = classic_hand()
    assert refused(h, Play(0, (1, 2))) is RejectReason.INVALID_COMMAND
    assert refused(h, Play(0, (0,) * 15)) is RejectReason.NOT_A_COMBINATION
    assert refused(h, Play(4, parse_ranks("3"))) is RejectReason.UNKNOWN_SEAT


def test_replay_of_stored_events_with_equal_but_new_card_objects() -> None:
    """Events read back from a store hold equal, not identical, cards: same state."""
    import copy

    from ddz.domain.hand import replay

    h = classic_hand()
    ok(h, play(0, "34567"))
    ok(h, Pass(1))
    ok(h, Pass(2))
    ok(h, play(0, "99"))
    stored = copy.deepcopy(h.events)
    assert stored[-1].cards[0] is not h.events[-1].cards[0]
    assert replay(stored) == h.state
