"""RULES.md §3-§5: every legal play of a hand, leading and following.

Expected move lists are written out by hand from the rules; a move is written
``"cards=type main"`` (cards in rank order, wildcards as their own rank).
"""

from __future__ import annotations

import pytest
from ddz.domain.cards import Rank, format_counts, parse_ranks
from ddz.domain.classify import classify
from ddz.domain.move import Move
from ddz.domain.moves import legal_moves
from ddz.domain.readings import Reading
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI, RuleSet


def wild_of(symbols: str) -> frozenset[Rank]:
    return frozenset(Rank.from_symbol(s) for s in symbols)


def top(cards: str, rules: RuleSet = CLASSIC) -> Reading:
    return classify(parse_ranks(cards), rules)[0]


def moves(
    hand: str, rules: RuleSet = CLASSIC, wild: str = "", over: Reading | None = None
) -> list[str]:
    found = legal_moves(parse_ranks(hand), rules, wild_of(wild), over)
    return [
        f"{format_counts(m.cards)}={m.reading.type.value} {m.reading.main.symbol}" for m in found
    ]


def same(found: list[str], expected: list[str]) -> None:
    assert len(found) == len(set(found)), "a (cards, reading) pair listed twice"
    assert sorted(found) == sorted(expected)


def test_s3_lead_small_hand() -> None:
    same(
        moves("3334"),
        ["3=single 3", "4=single 4", "33=pair 3", "333=triple 3", "3334=triple_single 3"],
    )


def test_s3_lead_with_planes_and_pairs() -> None:
    same(
        moves("33344455"),
        [
            "3=single 3", "4=single 4", "5=single 5",
            "33=pair 3", "44=pair 4", "55=pair 5",
            "333=triple 3", "444=triple 4",
            "3334=triple_single 3", "3335=triple_single 3",
            "3444=triple_single 4", "4445=triple_single 4",
            "33344=triple_pair 3", "33355=triple_pair 3",
            "33444=triple_pair 4", "44455=triple_pair 4",
            "334455=pair_chain 5",
            "333444=triple_chain 4",
            "33344455=plane_singles 4",  # 55 as two singles; one pair only, so no plane_pairs
        ],
    )  # fmt: skip


def test_s3_lead_four_with_kickers_and_bomb() -> None:
    same(
        moves("333345"),
        [
            "3=single 3", "4=single 4", "5=single 5",
            "33=pair 3", "333=triple 3",
            "3334=triple_single 3", "3335=triple_single 3",
            "333345=four_two_singles 3",
            "3333=bomb 3",
        ],
    )  # fmt: skip


def test_s3_rocket_and_no_joker_pair_kickers_together() -> None:
    same(
        moves("3333BR"),
        [
            "3=single 3", "B=single B", "R=single R",
            "33=pair 3", "333=triple 3",
            "333B=triple_single 3", "333R=triple_single 3",
            "3333=bomb 3",  # no four + two singles: its only two kickers would be B and R
            "BR=rocket R",
        ],
    )  # fmt: skip


def test_s3_follow_same_type_and_length_only() -> None:
    same(
        moves("3456789TJQKA2", over=top("34567")),
        [
            "45678=solo_chain 8", "56789=solo_chain 9", "6789T=solo_chain T",
            "789TJ=solo_chain J", "89TJQ=solo_chain Q", "9TJQK=solo_chain K",
            "TJQKA=solo_chain A",
        ],
    )  # fmt: skip


def test_s3_follow_kicker_types_by_main_rank() -> None:
    same(
        moves("44433355", over=top("3339")),
        ["3444=triple_single 4", "4445=triple_single 4"],
    )
    same(moves("44433355", over=top("33399")), ["33444=triple_pair 4", "44455=triple_pair 4"])


def test_s4_bombs_follow_anything_and_each_other() -> None:
    same(moves("33334", over=top("22")), ["3333=bomb 3"])
    same(moves("66663333BR", over=top("5555")), ["6666=bomb 6", "BR=rocket R"])
    same(moves("66663333BR", over=top("BR")), [])


def test_s1_s4_ct_jokers_and_bombs() -> None:
    same(
        moves("BBRR", CT),
        ["B=single B", "R=single R", "BB=pair B", "RR=pair R", "BBRR=rocket R"],
    )
    same(
        moves("333333", CT),
        [
            "3=single 3", "33=pair 3", "333=triple 3",
            "3333=bomb 3", "33333=bomb 3", "333333=sky_bomb 3",
        ],
    )  # fmt: skip
    same(moves("3333334444", CT, over=top("22222", CT)), ["333333=sky_bomb 3"])


def test_s5_laizi_wildcard_plays() -> None:
    # 7 wild: 3; 7 (its own rank); 3+7 as 33.
    same(moves("37", LAIZI, "7"), ["3=single 3", "7=single 7", "37=pair 3"])
    same(
        moves("377", LAIZI, "7"),
        ["3=single 3", "7=single 7", "77=pair 7", "37=pair 3", "377=triple 3"],
    )


def test_s5_tiandi_each_way_of_taking_the_wildcards_is_a_play() -> None:
    # 7 and 9 wild: 3+7 and 3+9 are both a pair of 3s, from different cards.
    same(
        moves("379", TIANDI, "79"),
        ["3=single 3", "7=single 7", "9=single 9", "37=pair 3", "39=pair 3", "379=triple 3"],
    )
    same(moves("79", TIANDI, "79"), ["7=single 7", "9=single 9"])


def test_s5_follow_with_wildcards() -> None:
    same(
        moves("67789", LAIZI, "7", over=top("34567")), ["67789=solo_chain T", "67789=solo_chain 9"]
    )
    # Over 56789 only 6789T beats (56789 ties, §5).
    same(moves("67789", LAIZI, "7", over=top("56789")), ["67789=solo_chain T"])


def test_moves_carry_the_readings_of_their_cards() -> None:
    hand = parse_ranks("3334445556667778889BR")
    for move in legal_moves(hand, CLASSIC):
        assert move.reading in classify(move.cards, CLASSIC)


def test_move_is_immutable_and_compares_by_value() -> None:
    move = legal_moves(parse_ranks("3"), CLASSIC)[0]
    assert move == Move.of(parse_ranks("3"), top("3"))
    assert hash(move) == hash(Move.of(parse_ranks("3"), top("3")))
    assert move.cards == parse_ranks("3")
    assert move != Move.of(parse_ranks("4"), top("3"))
    assert repr(move).startswith("Move('3', ")
    with pytest.raises(AttributeError):
        move.cards = parse_ranks("4")  # type: ignore[misc]


def test_worst_case_hand_is_complete() -> None:
    # 333444555666777888BR: RLCard lists 348 distinct plays for it (its judger).
    assert len(legal_moves(parse_ranks("333444555666777888BR"), CLASSIC)) == 348
