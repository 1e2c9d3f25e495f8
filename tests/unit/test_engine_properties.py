"""Properties of the rules engine over random hands of every variant (RULES.md §3-§5).

- every generated move comes from the hand, is a reading of its cards, and beats the
  play it follows (§3 Comparison, §4);
- the moves of a small hand are exactly its sub-multisets' readings that beat the play
  (nothing missing, nothing extra);
- classification does not depend on the order the cards are written in (§1);
- a wildcard reading is a natural reading of its substitution (§5), and every natural
  reading of a substitution is a reading of the wildcard play;
under the default kicker rules and under each kicker flag of §3.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations_with_replacement, product

from ddz.domain.cards import RANK_SYMBOLS, Rank, RankCounts, contains, format_counts, parse_ranks
from ddz.domain.classify import choose_reading, classify
from ddz.domain.compare import beats
from ddz.domain.moves import legal_moves
from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI, KickerRules, RuleSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Key = tuple[ComboType, Rank, int, int, BombClass | None]


def deck(rules: RuleSet) -> list[int]:
    return [r for r in range(15) for _ in range(rules.max_copies[r])]


# §3 Kickers: the defaults, and each platform flag (all together too).
FLAGS = [
    KickerRules(),
    KickerRules(four_as_kickers=True),
    KickerRules(jokers_as_kickers=True),
    KickerRules(kicker_of_main_rank=True),
    KickerRules(True, True, True),
]


@st.composite
def game(draw: st.DrawFn) -> tuple[RuleSet, frozenset[Rank]]:
    rules = draw(st.sampled_from([CLASSIC, CT, LAIZI, TIANDI]))
    flags = draw(st.sampled_from(FLAGS))
    if flags != rules.kickers:
        rules = replace(rules, kickers=flags)
    wild_count = rules.wildcard_count if draw(st.booleans()) else 0
    wild = draw(st.lists(st.integers(0, 12), min_size=wild_count, max_size=wild_count, unique=True))
    return rules, frozenset(Rank(r) for r in wild)


@st.composite
def cards(
    draw: st.DrawFn, rules: RuleSet, most: int, wild: frozenset[Rank] = frozenset()
) -> RankCounts:
    """A random part of the deck; with wildcards in force, often holding several."""
    pool = deck(rules)
    picks = draw(st.lists(st.integers(0, len(pool) - 1), max_size=most, unique=True))
    counts = [0] * 15
    for i in picks:
        counts[pool[i]] += 1
    for w in sorted(wild):
        if sum(counts) < most and draw(st.booleans()):
            counts[w] = max(counts[w], draw(st.integers(0, min(4, most - sum(counts) + counts[w]))))
    return tuple(counts)


@st.composite
def position(
    draw: st.DrawFn, most: int
) -> tuple[RuleSet, frozenset[Rank], RankCounts, Reading | None]:
    """A game, a hand, and a play to follow (a legal play of another hand) or None."""
    rules, wild = draw(game())
    hand = draw(cards(rules, most, wild))
    over = None
    if draw(st.booleans()):
        other = draw(cards(rules, 10, wild))
        plays = legal_moves(other, rules, wild) if sum(other) else []
        if plays:
            over = draw(st.sampled_from(plays)).reading
    return rules, wild, hand, over


def wildcards_in(play: RankCounts, wild: frozenset[Rank]) -> int:
    return sum(play[w] for w in wild)


def without_class(key: Key) -> tuple[object, ...]:
    return key[:4]


@FAST
@given(position(12))
def test_s3_s4_moves_come_from_the_hand_and_beat_the_play(
    pos: tuple[RuleSet, frozenset[Rank], RankCounts, Reading | None],
) -> None:
    rules, wild, hand, over = pos
    moves = legal_moves(hand, rules, wild, over)
    pairs = [(m.cards, m.reading.key()) for m in moves]
    assert len(pairs) == len(set(pairs)), "a (cards, reading) pair listed twice"
    for move in moves[:: max(1, len(moves) // 40)]:
        assert contains(hand, move.cards)
        assert over is None or beats(move.reading, over)
        assert move.reading in classify(move.cards, rules, wild)


@SLOW
@given(position(7))
def test_s3_s5_moves_of_a_small_hand_are_exactly_its_readings(
    pos: tuple[RuleSet, frozenset[Rank], RankCounts, Reading | None],
) -> None:
    rules, wild, hand, over = pos
    found = {(m.cards, m.reading.key()) for m in legal_moves(hand, rules, wild, over)}
    expected = set()
    for part in product(*(range(n + 1) for n in hand)):
        if sum(part):
            for reading in classify(part, rules, wild):
                if over is None or beats(reading, over):
                    expected.add((part, reading.key()))
    assert found == expected


@FAST
@given(st.data())
def test_s1_classification_does_not_depend_on_card_order(data: st.DataObject) -> None:
    rules, wild = data.draw(game())
    play = data.draw(cards(rules, 12, wild))
    symbols = [RANK_SYMBOLS[r] for r in range(15) for _ in range(play[r])]
    shuffled = data.draw(st.permutations(symbols))
    spaced = " ".join("10" if s == "T" and data.draw(st.booleans()) else s for s in shuffled)
    assert parse_ranks(spaced) == play
    assert classify(parse_ranks(spaced), rules, wild) == classify(
        parse_ranks(format_counts(play)), rules, wild
    )


@FAST
@given(st.data())
def test_s5_a_wildcard_reading_is_a_natural_reading_of_its_substitution(
    data: st.DataObject,
) -> None:
    rules = replace(
        data.draw(st.sampled_from([LAIZI, TIANDI])), kickers=data.draw(st.sampled_from(FLAGS))
    )
    wild = frozenset(
        Rank(r)
        for r in data.draw(
            st.lists(
                st.integers(0, 12),
                min_size=rules.wildcard_count,
                max_size=rules.wildcard_count,
                unique=True,
            )
        )
    )
    play = data.draw(cards(rules, 10, wild))
    for reading in classify(play, rules, wild):
        assert len(reading.substitutes) == wildcards_in(play, wild)
        natural = list(play)
        for w in wild:
            natural[w] = 0
        for r in reading.substitutes:
            assert r <= Rank.TWO  # never a joker
            natural[r] += 1
        keys = {without_class(n.key()) for n in classify(tuple(natural), rules, frozenset())}
        assert without_class(reading.key()) in keys
        if reading.is_bomb and reading.type is not ComboType.ROCKET:
            made = (
                BombClass.HARD
                if not reading.substitutes
                else BombClass.SOFT
                if wildcards_in(play, wild) < sum(play)
                else reading.bomb_class
            )
            assert reading.bomb_class == made


def substitution_oracle(play: RankCounts, rules: RuleSet, wild: frozenset[Rank]) -> set[Key]:
    """§5 by brute force: the readings of a play with wildcards, from the natural readings
    of every substitution (wildcards alone: their own ranks, plus tiandi's mixed bomb)."""
    natural = list(play)
    for w in wild:
        natural[w] = 0
    count = wildcards_in(play, wild)
    found: set[Key] = set()
    if not any(natural):
        for reading in classify(play, rules, frozenset()):
            cls = BombClass.PURE if reading.type is ComboType.BOMB else None
            found.add((reading.type, reading.main, reading.length, reading.size, cls))
        used = [w for w in wild if play[w]]
        if len(used) == 2 and count == 4:
            found.add((ComboType.BOMB, max(used), 1, 4, BombClass.MIXED))
        return found
    natural_class = BombClass.SOFT if count else BombClass.HARD  # §89: hard is 4 natural
    for ranks in combinations_with_replacement(range(13), count):
        filled = list(natural)
        for r in ranks:
            filled[r] += 1
        for reading in classify(tuple(filled), rules, frozenset()):
            cls = natural_class if reading.type is ComboType.BOMB else None
            found.add((reading.type, reading.main, reading.length, reading.size, cls))
    return found


@SLOW
@given(st.data())
def test_s5_every_substitution_reading_is_listed(data: st.DataObject) -> None:
    rules = replace(
        data.draw(st.sampled_from([LAIZI, TIANDI])), kickers=data.draw(st.sampled_from(FLAGS))
    )
    wild_ranks = data.draw(
        st.lists(
            st.integers(0, 12),
            min_size=rules.wildcard_count,
            max_size=rules.wildcard_count,
            unique=True,
        )
    )
    wild = frozenset(Rank(r) for r in wild_ranks)
    play = list(data.draw(cards(rules, 7)))
    for w in wild_ranks:  # at most three wildcards keep the brute force small
        play[w] = 0
    for w in wild_ranks:
        play[w] = data.draw(st.integers(0, 3 - wildcards_in(tuple(play), wild)))
    assert {r.key() for r in classify(tuple(play), rules, wild)} == substitution_oracle(
        tuple(play), rules, wild
    )


def test_s5_a_bomb_without_wildcards_is_hard_when_a_rank_is_wild() -> None:
    """RULES.md "Bombs" (laizi): four natural cards are a hard bomb, also in a hand that
    has a wild rank, and the brute-force oracle above reads them so too."""
    play = (0, 4) + (0,) * 13  # four FOURs, THREE wild, no THREE played
    wild = frozenset({Rank(0)})
    hard = (ComboType.BOMB, Rank(1), 1, 4, BombClass.HARD)
    assert {r.key() for r in classify(play, LAIZI, wild)} == {hard}
    assert substitution_oracle(play, LAIZI, wild) == {hard}


@FAST
@given(position(10))
def test_s3_choose_reading_takes_the_highest_that_beats(
    pos: tuple[RuleSet, frozenset[Rank], RankCounts, Reading | None],
) -> None:
    rules, wild, play, over = pos
    readings = classify(play, rules, wild)
    beating = [r for r in readings if over is None or beats(r, over)]
    assert choose_reading(play, rules, wild, over) == (beating[0] if beating else None)
    for reading in readings:
        declared = choose_reading(play, rules, wild, over, declared=reading)
        assert declared == (reading if reading in beating else None)


@FAST
@given(st.data())
def test_s3_a_declared_reading_is_taken_only_when_the_cards_can_be_read_so(
    data: st.DataObject,
) -> None:
    """Any declared reading (here the readings of other random plays, rebuilt without
    their substitutes as a client would send them) is matched by key against every
    reading of the cards: the same one ``classify`` lists, or none."""
    rules, wild = data.draw(game())
    play = data.draw(cards(rules, 8, wild))
    listed = {r.key(): r for r in classify(play, rules, wild)}
    for other in (play, data.draw(cards(rules, 8, wild)), data.draw(cards(rules, 8, wild))):
        for reading in classify(other, rules, wild):
            declared = replace(reading, substitutes=())
            expected = listed.get(declared.key())
            assert choose_reading(play, rules, wild, None, declared=declared) == expected
