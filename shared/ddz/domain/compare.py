"""Whether a play beats the play on the table (§3, §4)."""

from __future__ import annotations

from ddz.domain.readings import Reading


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
