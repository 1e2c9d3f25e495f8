"""Every legal reading of a multiset of cards, and which one a play is taken as
(RULES.md §3-§5)."""

from __future__ import annotations

from functools import lru_cache

from ddz.domain.cards import Rank, RankCounts
from ddz.domain.compare import beats
from ddz.domain.lookup import TWO, lookup_for, sort_key
from ddz.domain.natural import natural_readings
from ddz.domain.readings import ComboType, Reading
from ddz.domain.ruleset import RuleSet
from ddz.domain.wild import wild_readings


def classify(
    play: RankCounts, rules: RuleSet, wild: frozenset[Rank] = frozenset()
) -> list[Reading]:
    """Every legal reading of the multiset (deduplicated by ``Reading.key()``), sorted
    highest first (bomb-class above non-bomb; then by ladder tier, then main rank), each
    with ``tier`` set from ``rules.bomb_ladder`` (-1 for non-bombs) and ``substitutes``
    = sorted ranks the wildcards stand for. An empty list: not a legal play."""
    return list(readings_of(play, rules, wild))


def readings_of(
    play: RankCounts, rules: RuleSet, wild: frozenset[Rank] = frozenset()
) -> tuple[Reading, ...]:
    """``classify`` as the shared, immutable tuple (no copy): for the hot paths."""
    return _classify(play if type(play) is tuple else tuple(play), rules, wild)


def declared_reading(
    play: RankCounts, rules: RuleSet, wild: frozenset[Rank], declared: Reading
) -> Reading | None:
    """The reading of ``play`` whose ``key()`` is ``declared``'s (the very object
    ``classify`` lists), or None when the cards cannot be read so.

    With wildcards in the play only readings of the declared shape are built: checking
    a declared wildcard play (the rules service, the audit) need not enumerate every
    other reading of it first."""
    play = play if type(play) is tuple else tuple(play)
    if wild and any(play[w] for w in wild):
        readings = _classify(play, rules, wild, (declared.type, declared.length, declared.size))
    else:
        readings = _classify(play, rules, wild)
    for reading in readings:
        if reading is declared:  # a reading taken from legal_moves: same interned object
            return reading
    wanted = declared.key()
    for reading in readings:
        if reading.key() == wanted:
            return reading
    return None


def choose_reading(
    play: RankCounts,
    rules: RuleSet,
    wild: frozenset[Rank],
    over: Reading | None,
    declared: Reading | None = None,
) -> Reading | None:
    """The reading a play is taken as (§3 Readings).

    With a declared reading: that reading, if it is a legal reading of the cards (matched
    by ``Reading.key()``) and beats ``over``; else None. Without one: the highest legal
    reading that beats ``over`` (any bomb class above any non-bomb, then the higher main
    rank); None if there is none.
    """
    if declared is not None:
        chosen = declared_reading(play, rules, wild, declared)
        if chosen is None:
            return None
        return chosen if over is None or beats(chosen, over) else None
    readings = readings_of(play, rules, wild)
    for reading in readings:  # highest first
        if over is None or beats(reading, over):
            return reading
    return None


READINGS_KEPT = 4096
"""Plays whose readings are kept (least recently used first out). Common plays recur
(three in four look-ups hit with 4,096 kept, 0.78 with 30,000); a larger cache filled
for tens of minutes under a steady crowd, growing the memory of every service that
reads plays, and cost more than it saved: the collector walks every kept tuple, and
strong self-play of all four variants was 7-10% slower with 65,536 kept than with 4,096."""


@lru_cache(maxsize=READINGS_KEPT)
def _classify(
    play: RankCounts,
    rules: RuleSet,
    wild: frozenset[Rank],
    shape: tuple[ComboType, int, int] | None = None,
) -> tuple[Reading, ...]:
    if wild and max(wild) > TWO:
        raise ValueError("a wildcard rank must be 3..2, never a joker (§5)")
    tb = lookup_for(rules)
    held = tuple(int(w) for w in sorted(wild) if play[w])
    found = wild_readings(play, tb, held, shape) if held else natural_readings(play, tb)
    unique: dict[object, Reading] = {}
    for reading in found:
        unique.setdefault(reading.key(), reading)
    return tuple(sorted(unique.values(), key=sort_key, reverse=True))
