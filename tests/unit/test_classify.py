"""RULES.md §3-§5 as a table: every legal reading of a set of cards, in every variant.

Each row is (variant, cards, wildcard ranks, readings highest first), worked out by hand
from RULES.md. A reading is written ``"type main length size [bomb_class]"``; an empty
list means the cards are not a legal play. Order: bomb class first, then ladder tier,
then main rank (§3 Readings).
"""

from __future__ import annotations

from dataclasses import fields, replace

import pytest
from ddz.domain.cards import Rank, parse_ranks
from ddz.domain.classify import classify
from ddz.domain.lookup import lookup_for
from ddz.domain.readings import Reading
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI, KickerRules, RuleSet

VARIANTS = {"classic": CLASSIC, "ct": CT, "laizi": LAIZI, "tiandi": TIANDI}


def wild_of(symbols: str) -> frozenset[Rank]:
    return frozenset(Rank.from_symbol(s) for s in symbols)


def text(reading: Reading) -> str:
    parts = [reading.type.value, reading.main.symbol, str(reading.length), str(reading.size)]
    if reading.bomb_class is not None:
        parts.append(reading.bomb_class.value)
    return " ".join(parts)


def readings(cards: str, rules: RuleSet = CLASSIC, wild: str = "") -> list[str]:
    return [text(r) for r in classify(parse_ranks(cards), rules, wild_of(wild))]


def subs(reading: Reading) -> str:
    return "".join(r.symbol for r in reading.substitutes)


# fmt: off
CLASSIC_ROWS = [
    # §3 single / pair / triple
    ("3", ["single 3 1 1"]),
    ("R", ["single R 1 1"]),
    ("33", ["pair 3 1 2"]),
    ("22", ["pair 2 1 2"]),
    ("34", []),
    ("333", ["triple 3 1 3"]),
    # triple + single; the kicker never has the main rank
    ("3334", ["triple_single 3 1 4"]),
    ("4333", ["triple_single 3 1 4"]),
    ("333B", ["triple_single 3 1 4"]),
    ("33334", []),
    # triple + pair
    ("33344", ["triple_pair 3 1 5"]),
    ("22233", ["triple_pair 2 1 5"]),
    ("33345", []),
    ("333BR", []),  # B and R are never a pair (§1)
    # solo chain: >= 5, never 2/B/R, highest card A
    ("34567", ["solo_chain 7 5 5"]),
    ("TJQKA", ["solo_chain A 5 5"]),
    ("3456789TJQKA", ["solo_chain A 12 12"]),
    ("3456", []),
    ("34568", []),
    ("JQKA2", []),
    ("QKA2B", []),
    # pair chain: >= 3 pairs
    ("334455", ["pair_chain 5 3 6"]),
    ("QQKKAA", ["pair_chain A 3 6"]),
    ("33445566778899TTJJ", ["pair_chain J 9 18"]),
    ("3344", []),
    ("KKAA22", []),
    ("334456", []),
    # triple chain (plane): >= 2 triples
    ("333444", ["triple_chain 4 2 6"]),
    ("333444555666", ["triple_chain 6 4 12"]),  # not a plane of 3 with 666 as wings
    ("KKKAAA222", []),  # 2 is never in a chain
    ("AAA222", []),
    # plane + singles; a pair may serve as two singles; 222 may be wings
    ("33344456", ["plane_singles 4 2 8"]),
    ("33344455", ["plane_singles 4 2 8"]),
    ("QQQKKKAAA222", ["plane_singles A 3 12"]),
    ("333444555777", ["plane_singles 5 3 12"]),  # 777 is not next to the plane
    ("3334445556667779", []),  # 777 next to the plane: a longer chain
    ("3334445556668777", []),
    ("333444BR", []),  # both jokers never kickers together
    ("3334445", []),
    # plane + pairs
    ("3334445566", ["plane_pairs 4 2 10"]),
    ("3334445555", []),  # four of a kind is never kickers
    # four + two singles (a pair may be the two singles) / four + two pairs
    ("333345", ["four_two_singles 3 1 6"]),
    ("333344", ["four_two_singles 3 1 6"]),
    ("22223B", ["four_two_singles 2 1 6"]),
    ("3333BR", []),
    ("33334455", ["four_two_pairs 3 1 8"]),
    ("33334444", []),
    ("3333445", []),
    # §4 bombs and the rocket
    ("3333", ["bomb 3 1 4"]),
    ("2222", ["bomb 2 1 4"]),
    ("BR", ["rocket R 1 2"]),
    ("3333B", []),
    ("", []),
]
# fmt: on


@pytest.mark.parametrize(("cards", "expected"), CLASSIC_ROWS)
def test_s3_s4_classic(cards: str, expected: list[str]) -> None:
    assert readings(cards, CLASSIC) == expected


FLAG_ROWS = [
    # §3 Kickers: each platform difference is a flag, off by default.
    (
        KickerRules(four_as_kickers=True),
        "33334444",
        ["four_two_pairs 4 1 8", "four_two_pairs 3 1 8"],
    ),
    (KickerRules(four_as_kickers=True), "3334445555", ["plane_pairs 4 2 10"]),
    (KickerRules(jokers_as_kickers=True), "3333BR", ["four_two_singles 3 1 6"]),
    (KickerRules(jokers_as_kickers=True), "333444BR", ["plane_singles 4 2 8"]),
    (KickerRules(kicker_of_main_rank=True), "3333", ["bomb 3 1 4", "triple_single 3 1 4"]),
    (KickerRules(kicker_of_main_rank=True), "33334444", ["plane_singles 4 2 8"]),
]


@pytest.mark.parametrize(("flags", "cards", "expected"), FLAG_ROWS)
def test_s3_kicker_flags(flags: KickerRules, cards: str, expected: list[str]) -> None:
    assert readings(cards, replace(CLASSIC, kickers=flags)) == expected
    assert readings(cards, CLASSIC) != expected  # the default rules differ


# fmt: off
CT_ROWS = [
    # §3: ct allows exactly the listed types (no solo chain, triple + single, plane +
    # singles, four-with-two).
    ("3334", []),
    ("34567", []),
    ("33344456", []),
    ("333345", []),
    ("33334455", []),
    ("33344", ["triple_pair 3 1 5"]),
    ("334455", ["pair_chain 5 3 6"]),
    ("333444", ["triple_chain 4 2 6"]),
    ("3334445566", ["plane_pairs 4 2 10"]),
    # §1 Decision: two copies of one joker are a pair, above 22; BR never a pair.
    ("BB", ["pair B 1 2"]),
    ("RR", ["pair R 1 2"]),
    ("BR", []),
    ("BBR", []),
    ("333BB", ["triple_pair 3 1 5"]),
    ("333444BB55", ["plane_pairs 4 2 10"]),
    ("333444BBRR", []),  # both jokers never kickers together
    # §4: 4- and 5-card bombs, the sky bomb, the 4-joker rocket
    ("3333", ["bomb 3 1 4"]),
    ("33333", ["bomb 3 1 5"]),
    ("333333", ["sky_bomb 3 1 6"]),
    ("BBRR", ["rocket R 1 4"]),
]
# fmt: on


@pytest.mark.parametrize(("cards", "expected"), CT_ROWS)
def test_s1_s3_s4_ct(cards: str, expected: list[str]) -> None:
    assert readings(cards, CT) == expected


# fmt: off
LAIZI_ROWS = [
    # natural cards: the classic types; a natural bomb is hard (§4)
    ("3334", "", ["triple_single 3 1 4"]),
    ("33344455", "", ["plane_singles 4 2 8"]),
    ("3333", "", ["bomb 3 1 4 hard"]),
    ("BR", "", ["rocket R 1 2"]),
    ("33333", "", []),  # Decision: a laizi bomb is exactly 4 cards
    # §5: wildcards of one rank alone read as that rank
    ("7", "7", ["single 7 1 1"]),
    ("77", "7", ["pair 7 1 2"]),
    ("777", "7", ["triple 7 1 3"]),
    ("7777", "7", ["bomb 7 1 4 pure"]),
    # a wildcard stands for any rank 3..2, its own included
    ("37", "7", ["pair 3 1 2"]),
    ("337", "7", ["triple 3 1 3"]),
    ("3337", "7", ["bomb 3 1 4 soft", "triple_single 3 1 4"]),
    ("67789", "7", ["solo_chain T 5 5", "solo_chain 9 5 5"]),  # 6789+W: 56789 or 6789T
    ("445567", "7", ["pair_chain 6 3 6"]),
    ("33447", "7", ["triple_pair 4 1 5", "triple_pair 3 1 5"]),
    ("33377", "7", ["triple_pair 3 1 5"]),
    ("333377", "7", ["four_two_singles 3 1 6"]),
    ("33344457", "7", ["plane_singles 4 2 8"]),
    # the only completion would put a kicker on the main rank (or a 5-card bomb)
    ("33337", "7", []),
    # never a joker, never part of a rocket
    ("7B", "7", []),
    ("7BR", "7", []),
    ("77BR", "7", []),
    ("3337B", "7", []),
]
# fmt: on


@pytest.mark.parametrize(("cards", "wild", "expected"), LAIZI_ROWS)
def test_s4_s5_laizi(cards: str, wild: str, expected: list[str]) -> None:
    assert readings(cards, LAIZI, wild) == expected


def test_s5_laizi_three_wildcards_and_a_natural_card() -> None:
    # 3 + 777 (7 wild): a soft bomb of 3s (777 as 333), or a triple of ANY rank with the 3
    # as its kicker: 777 as XXX for X != 3, or 3 + 77 as 333 with the last 7 as kicker.
    expected = ["bomb 3 1 4 soft"] + [f"triple_single {s} 1 4" for s in "2AKQJT9876543"]
    assert readings("3777", LAIZI, "7") == expected


def test_s5_wild_rank_as_main_rank_sends_the_kicker_elsewhere() -> None:
    # 4 wild: 333 + 444 (three wildcards as 4s) + 5 + W. The kicker W may not be a 4 (a
    # main rank), so it stands for the lowest allowed rank, 5 (3 and 4 are main ranks):
    # 33344455. Also 333+W = 3333 with pairs 5+W = 55 and WW = 44.
    found = classify(parse_ranks("33344445"), LAIZI, wild_of("4"))
    assert [text(r) for r in found] == ["plane_singles 4 2 8", "four_two_pairs 3 1 8"]
    assert subs(found[0]) == "4445"
    assert subs(found[1]) == "3445"


# fmt: off
TIANDI_ROWS = [
    ("3333", "79", ["bomb 3 1 4 hard"]),
    ("7777", "79", ["bomb 7 1 4 pure"]),
    ("9999", "79", ["bomb 9 1 4 pure"]),
    # four wildcards of both ranks: the mixed bomb (Decision: any split of the two
    # ranks; also read by its own ranks when that is a combination)
    ("7799", "79", ["bomb 9 1 4 mixed"]),
    ("7779", "79", ["bomb 9 1 4 mixed", "triple_single 7 1 4"]),
    # any other all-wildcard play of two ranks: by its own ranks
    ("79", "79", []),
    ("779", "79", []),
    ("77799", "79", ["triple_pair 7 1 5"]),
    ("3337", "79", ["bomb 3 1 4 soft", "triple_single 3 1 4"]),
    # bombs of 5 to 12 cards (naturals + wildcards)
    ("33337", "79", ["bomb 3 1 5 soft"]),
    ("333377", "79", ["bomb 3 1 6 soft", "four_two_singles 3 1 6"]),
    ("33337799", "79", ["bomb 3 1 8 soft", "four_two_pairs 3 1 8"]),
    ("333377779999", "79", ["bomb 3 1 12 soft"]),
    ("445567", "79", ["pair_chain 6 3 6"]),
    ("BR", "79", ["rocket R 1 2"]),
]
# fmt: on


@pytest.mark.parametrize(("cards", "wild", "expected"), TIANDI_ROWS)
def test_s4_s5_tiandi(cards: str, wild: str, expected: list[str]) -> None:
    assert readings(cards, TIANDI, wild) == expected


@pytest.mark.parametrize(
    ("rules", "cards", "wild", "tier"),
    [
        # §4 ladders, low to high (the rocket on top)
        (CLASSIC, "3333", "", 0),
        (CLASSIC, "BR", "", 1),
        (CT, "2222", "", 0),
        (CT, "33333", "", 1),
        (CT, "333333", "", 2),
        (CT, "BBRR", "", 3),
        (LAIZI, "3337", "7", 0),  # soft
        (LAIZI, "3333", "7", 1),  # hard
        (LAIZI, "7777", "7", 2),  # pure
        (LAIZI, "BR", "7", 3),
        (TIANDI, "3337", "79", 0),  # soft
        (TIANDI, "3333", "79", 1),  # hard
        (TIANDI, "7799", "79", 2),  # mixed
        (TIANDI, "7777", "79", 3),  # pure
        (TIANDI, "33337", "79", 4),  # 5 cards
        (TIANDI, "3333777", "79", 6),  # 7 cards
        (TIANDI, "333377779999", "79", 11),  # 12 cards
        (TIANDI, "BR", "79", 12),
    ],
)
def test_s4_bomb_tiers(rules: RuleSet, cards: str, wild: str, tier: int) -> None:
    top = classify(parse_ranks(cards), rules, wild_of(wild))[0]
    assert top.is_bomb and top.tier == tier


def test_s3_non_bombs_have_no_tier_and_no_class() -> None:
    for rules, cards, wild in ((CLASSIC, "3334", ""), (LAIZI, "3337", "7"), (CT, "BB", "")):
        for reading in classify(parse_ranks(cards), rules, wild_of(wild)):
            if not reading.is_bomb:
                assert reading.tier == -1 and reading.bomb_class is None


def test_s4_classic_and_ct_bombs_have_no_class() -> None:
    assert classify(parse_ranks("3333"), CLASSIC)[0].bomb_class is None
    assert classify(parse_ranks("33333"), CT)[0].bomb_class is None


def test_s5_substitutes_record_what_each_wildcard_stands_for() -> None:
    soft, triple = classify(parse_ranks("3337"), LAIZI, wild_of("7"))
    assert subs(soft) == "3"
    assert subs(triple) == "7"  # a kicker wildcard stands for its own rank (Decision)
    high, low = classify(parse_ranks("67789"), LAIZI, wild_of("7"))
    assert subs(high) == "7T" and subs(low) == "57"
    assert subs(classify(parse_ranks("7"), LAIZI, wild_of("7"))[0]) == "7"
    assert subs(classify(parse_ranks("7799"), TIANDI, wild_of("79"))[0]) == "9999"
    assert subs(classify(parse_ranks("3334"), CLASSIC)[0]) == ""  # natural: none


def test_s5_completed_combination_equals_the_natural_one() -> None:
    (completed,) = classify(parse_ranks("445567"), LAIZI, wild_of("7"))
    (natural,) = classify(parse_ranks("445566"), LAIZI, frozenset())
    assert completed.key() == natural.key()


def test_s5_cards_of_a_wild_rank_are_natural_without_wildcards() -> None:
    # Without wildcards in force, 7s are ordinary cards.
    assert readings("3337", LAIZI) == ["triple_single 3 1 4"]
    assert readings("7777", LAIZI) == ["bomb 7 1 4 hard"]


def test_classification_does_not_depend_on_card_order() -> None:
    assert readings("45673", CLASSIC) == readings("34567", CLASSIC) == ["solo_chain 7 5 5"]
    assert readings("7 9 7 7", TIANDI, "97") == readings("7779", TIANDI, "79")


def test_wildcard_readings_made_by_the_generator_equal_those_of_the_dataclass() -> None:
    # ddz.domain.lookup makes a wildcard hand's readings field by field (_new_reading);
    # they must be the Reading the class would make, every field set.
    made = 0
    for reading in classify(parse_ranks("34567"), LAIZI, frozenset({Rank.SEVEN})):
        copy = Reading(**{f.name: getattr(reading, f.name) for f in fields(Reading)})
        assert copy == reading and hash(copy) == hash(reading) and repr(copy) == repr(reading)
        made += 1
    assert made
    coded = lookup_for(LAIZI).coded
    assert coded and all(
        all(hasattr(r, f.name) for f in fields(Reading)) for r in list(coded.values())[:500]
    )
