"""Whether a play beats the play on the table, and which reading a play is taken as (§3, §4)."""

from __future__ import annotations

from ddz.domain.cards import Rank, RankCounts
from ddz.domain.readings import Reading
from ddz.domain.ruleset import RuleSet


def beats(play: Reading, prev: Reading) -> bool:
    """Does ``play`` beat ``prev``?

    Any bomb-class play beats any non-bomb (§4); bomb-class plays compare by ladder tier,
    then main rank. A non-bomb beats only the same type with the same number of cards
    and the same chain length, by a higher main rank (§3 Comparison). Kickers and the
    substitutes of wildcards never count, so equal keys tie (§5): neither beats.
    """
    if play.is_bomb:
        if not prev.is_bomb:
            return True
        if play.tier != prev.tier:
            return play.tier > prev.tier
        return play.main > prev.main
    return (
        not prev.is_bomb
        and play.type is prev.type
        and play.size == prev.size
        and play.length == prev.length
        and play.main > prev.main
    )


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
    from ddz.domain.classify import declared_reading, readings_of

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
