"""RULES.md §1: ranks, notation, physical cards and the two decks."""

from __future__ import annotations

import pytest
from ddz.domain.cards import (
    CHAIN_RANKS,
    SUITED_RANKS,
    Card,
    CardNotationError,
    Rank,
    add_counts,
    card_counts,
    contains,
    counts_of,
    format_cards,
    format_counts,
    parse_cards,
    parse_ranks,
    ranks_of,
    sub_counts,
)
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI


def counts(**by_symbol: int) -> tuple[int, ...]:
    """Counts from keyword ranks: ``counts(r3=2, T=1)``."""
    out = [0] * 15
    for key, n in by_symbol.items():
        out[Rank.from_symbol(key.removeprefix("r"))] = n
    return tuple(out)


def test_s1_ranks_low_to_high() -> None:
    order = [Rank.from_symbol(s) for s in "3456789TJQKA2BR"]
    assert order == sorted(order)
    assert Rank.TWO > Rank.ACE and Rank.BLACK_JOKER > Rank.TWO
    assert Rank.RED_JOKER > Rank.BLACK_JOKER
    assert [r.symbol for r in order] == list("3456789TJQKA2BR")
    assert Rank.BLACK_JOKER.is_joker and Rank.RED_JOKER.is_joker and not Rank.TWO.is_joker


def test_s1_rank_sets() -> None:
    # §5: a wildcard stands for 3..2 (never a joker); §3: chains run 3..A.
    assert "".join(r.symbol for r in SUITED_RANKS) == "3456789TJQKA2"
    assert "".join(r.symbol for r in CHAIN_RANKS) == "3456789TJQKA"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("33344456", counts(r3=3, r4=3, r5=1, r6=1)),
        ("6 5 4 4 4 3 3 3", counts(r3=3, r4=3, r5=1, r6=1)),  # any order, spaces ignored
        ("10JQKA", counts(T=1, J=1, Q=1, K=1, A=1)),  # 10 for T
        ("tjqka", counts(T=1, J=1, Q=1, K=1, A=1)),
        ("B R", counts(B=1, R=1)),
        ("3,3", counts(r3=2)),
        ("", counts()),
    ],
)
def test_s1_parse_rank_notation(text: str, expected: tuple[int, ...]) -> None:
    assert parse_ranks(text) == expected


@pytest.mark.parametrize("text", ["3X", "1", "11", "Z", "3*"])
def test_s1_unknown_rank_is_an_error(text: str) -> None:
    with pytest.raises(CardNotationError):
        parse_ranks(text)


def test_s1_format_counts_in_rank_order_with_t_for_ten() -> None:
    assert format_counts(parse_ranks("2 10 3 B 3")) == "33T2B"
    assert format_counts(counts()) == ""


def test_counts_helpers() -> None:
    a = parse_ranks("3345")
    b = parse_ranks("35")
    assert add_counts(a, b) == parse_ranks("333455")
    assert sub_counts(a, b) == parse_ranks("34")
    assert contains(a, b) and not contains(b, a)
    with pytest.raises(ValueError):
        sub_counts(b, a)
    assert counts_of([Rank.FIVE, Rank.THREE, Rank.FIVE]) == parse_ranks("355")
    assert ranks_of(parse_ranks("533")) == (Rank.THREE, Rank.THREE, Rank.FIVE)


@pytest.mark.parametrize(
    ("text", "rank", "suit", "copy"),
    [
        ("S7", Rank.SEVEN, "S", 0),
        ("H7", Rank.SEVEN, "H", 0),
        ("*7", Rank.SEVEN, "*", 0),  # ct's red star
        ("S7'", Rank.SEVEN, "S", 1),  # ct's second spade
        ("H10", Rank.TEN, "H", 0),
        ("B", Rank.BLACK_JOKER, "", 0),
        ("R'", Rank.RED_JOKER, "", 1),
    ],
)
def test_s1_physical_card_identity(text: str, rank: Rank, suit: str, copy: int) -> None:
    card = Card.parse(text)
    assert (card.rank, card.suit, card.copy) == (rank, suit, copy)
    assert Card.parse(str(card)) == card


def test_s1_physical_cards_text() -> None:
    cards = parse_cards("S7 H7 *7 S7' B R'")
    assert len(set(cards)) == 6  # six distinct physical cards
    assert card_counts(cards) == parse_ranks("7777BR")
    assert str(Card.parse("HT")) == "HT"
    assert format_cards(parse_cards("R S3")) == "S3 R"
    with pytest.raises(CardNotationError):
        Card.parse("X7")


def test_s1_decks() -> None:
    # classic / laizi / tiandi: 54 cards, 17 each + 3; ct: 82 cards, 6 of each rank, 26 + 4.
    for rules in (CLASSIC, LAIZI, TIANDI):
        assert rules.deck_size == 54
        assert (rules.hand_size, rules.bottom_size) == (17, 3)
        assert rules.max_copies == (4,) * 13 + (1, 1)
    assert CT.deck_size == 82
    assert (CT.hand_size, CT.bottom_size) == (26, 4)
    assert CT.max_copies == (6,) * 13 + (2, 2)
    for rules in (CLASSIC, CT, LAIZI, TIANDI):
        assert 3 * rules.hand_size + rules.bottom_size == rules.deck_size
