"""RULES.md §3 (Comparison, Readings), §4 (bombs) and §5 (ties with wildcards)."""

from __future__ import annotations

import pytest
from ddz.domain.cards import Rank, parse_ranks
from ddz.domain.classify import choose_reading, classify
from ddz.domain.compare import beats
from ddz.domain.readings import ComboType, Reading
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI, RuleSet


def wild_of(symbols: str) -> frozenset[Rank]:
    return frozenset(Rank.from_symbol(s) for s in symbols)


def top(cards: str, rules: RuleSet = CLASSIC, wild: str = "") -> Reading:
    """The reading the cards are taken as when nothing is declared: the highest."""
    found = classify(parse_ranks(cards), rules, wild_of(wild))
    assert found, f"{cards} is not a combination"
    return found[0]


@pytest.mark.parametrize(
    ("play", "prev", "expected"),
    [
        # same type, same size, higher main rank
        ("4", "3", True),
        ("3", "4", False),
        ("3", "3", False),
        ("R", "B", True),
        ("2", "A", True),
        ("44", "33", True),
        ("44", "3", False),  # another type
        ("45678", "34567", True),
        ("456789", "34567", False),  # another chain length
        ("3456789", "45678", False),
        ("445566", "334455", True),
        ("444555", "333444", True),
        # kickers never count: the triple or four decides
        ("4443", "3335", True),
        ("3335", "3334", False),
        ("3334", "3335", False),
        ("44433", "333AA", True),
        ("4443", "333AA", False),  # triple + single vs triple + pair
        ("44455566", "33344478", True),
        ("4445556677", "33344478", False),  # plane + pairs vs plane + singles
        ("44443A", "333322", True),
        ("44443355", "3333AAKK", True),
        # §4: any bomb beats any non-bomb; higher bomb; rocket on top
        ("3333", "2", True),
        ("3333", "3456789TJQKA", True),
        ("3333", "QQQKKKAAA222", True),
        ("4444", "3333", True),
        ("3333", "4444", False),
        ("BR", "2222", True),
        ("2222", "BR", False),
        ("2", "3333", False),
    ],
)
def test_s3_s4_classic_comparison(play: str, prev: str, expected: bool) -> None:
    assert beats(top(play), top(prev)) is expected


@pytest.mark.parametrize(
    ("play", "prev", "expected"),
    [
        # §1: RR > BB > 22 as pairs
        ("BB", "22", True),
        ("RR", "BB", True),
        ("22", "BB", False),
        # §4: 4-card < 5-card < sky bomb < 4-joker rocket; by cards first, then rank
        ("33333", "2222", True),
        ("2222", "33333", False),
        ("44444", "33333", True),
        ("333333", "22222", True),
        ("BBRR", "222222", True),
        ("222222", "BBRR", False),
        ("3333", "RR", True),
    ],
)
def test_s1_s4_ct_comparison(play: str, prev: str, expected: bool) -> None:
    assert beats(top(play, CT), top(prev, CT)) is expected


@pytest.mark.parametrize(
    ("play", "prev", "expected"),
    [
        # §4 laizi: soft < hard < pure < rocket; within a class, higher rank
        ("3333", "2227", True),  # hard 3s beat soft 2s
        ("2227", "3333", False),
        ("7777", "2222", True),  # pure beats hard
        ("BR", "7777", True),
        ("4447", "3337", True),
        ("4777", "3337", True),  # soft with three wildcards = soft with one: rank decides
        ("3337", "4777", False),
        ("3777", "3337", False),  # same rank, same class: a tie
        ("3337", "2", True),
    ],
)
def test_s4_laizi_ladder(play: str, prev: str, expected: bool) -> None:
    assert beats(top(play, LAIZI, "7"), top(prev, LAIZI, "7")) is expected


@pytest.mark.parametrize(
    ("play", "prev", "expected"),
    [
        # §4 tiandi: 4 cards soft < hard < mixed < pure; more cards beat fewer
        ("3333", "2227", True),
        ("7799", "2222", True),
        ("7777", "7799", True),
        ("9999", "7777", True),  # two pure bombs: higher rank
        ("33337", "7777", True),  # 5 cards beat any 4-card bomb
        ("AAAA7", "33337", True),  # same length: higher rank
        ("333377", "AAAA9", True),
        ("BR", "333377779999", True),
        ("7799", "7779", False),  # both mixed: a tie
    ],
)
def test_s4_tiandi_ladder(play: str, prev: str, expected: bool) -> None:
    assert beats(top(play, TIANDI, "79"), top(prev, TIANDI, "79")) is expected


def test_s5_completed_combination_ties_the_natural_one() -> None:
    completed = top("445567", LAIZI, "7")  # 44556+7 read as 445566
    natural = top("445566", LAIZI)
    assert not beats(completed, natural)
    assert not beats(natural, completed)
    assert beats(top("556677", LAIZI), completed)


def test_s3_choose_the_highest_legal_reading() -> None:
    cards, wild = parse_ranks("67789"), wild_of("7")
    chain_t, chain_9 = classify(cards, LAIZI, wild)
    assert (chain_t.main, chain_9.main) == (Rank.TEN, Rank.NINE)
    assert choose_reading(cards, LAIZI, wild, None) == chain_t
    # Over 45678 both beat: the highest is taken.
    assert choose_reading(cards, LAIZI, wild, top("45678")) == chain_t
    # Over 56789 only 6789T beats (56789 ties).
    assert choose_reading(cards, LAIZI, wild, top("56789")) == chain_t
    # Over 6789T nothing beats.
    assert choose_reading(cards, LAIZI, wild, top("6789T")) is None


def test_s3_a_declared_reading_is_taken_if_legal_and_beating() -> None:
    cards, wild = parse_ranks("67789"), wild_of("7")
    _, chain_9 = classify(cards, LAIZI, wild)
    assert choose_reading(cards, LAIZI, wild, None, declared=chain_9) == chain_9
    assert choose_reading(cards, LAIZI, wild, top("45678"), declared=chain_9) == chain_9
    # Declared, but it does not beat: no fallback to another reading.
    assert choose_reading(cards, LAIZI, wild, top("56789"), declared=chain_9) is None
    # Declared, but not a reading of these cards.
    other = Reading(ComboType.SOLO_CHAIN, Rank.JACK, 5, 5)
    assert choose_reading(cards, LAIZI, wild, None, declared=other) is None


def test_s3_declared_reading_matches_by_key_not_by_substitutes() -> None:
    cards, wild = parse_ranks("3777"), wild_of("7")
    declared = Reading(ComboType.TRIPLE_SINGLE, Rank.KING, 1, 4)  # no substitutes given
    taken = choose_reading(cards, LAIZI, wild, None, declared=declared)
    assert taken is not None and taken.key() == declared.key()
    assert taken.substitutes == (Rank.KING,) * 3
    # Undeclared: the soft bomb is the highest reading (any bomb above any non-bomb).
    undeclared = choose_reading(cards, LAIZI, wild, None)
    assert undeclared is not None and undeclared.type is ComboType.BOMB


def test_s3_choose_reading_of_an_illegal_play_is_none() -> None:
    assert choose_reading(parse_ranks("34"), CLASSIC, frozenset(), None) is None
    assert choose_reading(parse_ranks("3"), CLASSIC, frozenset(), top("BR")) is None
