"""Readings of natural cards: what a multiset of cards is when no card is wild (§3, §4).

The shape of a play decides almost everything: how many ranks, how many of each, and
the total. Kicker types are tried main part first (a triple, a four, a run of triples);
whatever is left over must be legal kickers by the rule set's caps (§3 Kickers).
"""

from __future__ import annotations

from ddz.domain.cards import RankCounts
from ddz.domain.lookup import ACE, BJ, CHAIN_TYPES, RJ, TWO, Lookup
from ddz.domain.readings import ComboType, Reading

_BY_COPIES = {1: ComboType.SINGLE, 2: ComboType.PAIR, 3: ComboType.TRIPLE}


def singles_ok(kick: list[int], caps: list[int], tb: Lookup) -> bool:
    """Are these single kickers legal under these per-rank caps (§3 Kickers)?"""
    for r in range(15):
        if kick[r] > caps[r]:
            return False
    return tb.jokers_as_kickers or not (kick[BJ] and kick[RJ])


def pairs_ok(kick: list[int], caps: list[int], pairs: int, tb: Lookup) -> bool:
    """Are these cards exactly ``pairs`` legal pair kickers (§3 Kickers)?"""
    found = 0
    for r in range(15):
        n = kick[r]
        if n:
            if n % 2 or n // 2 > caps[r]:
                return False
            found += n // 2
    return found == pairs and (tb.jokers_as_kickers or not (kick[BJ] and kick[RJ]))


def natural_readings(play: RankCounts, tb: Lookup) -> list[Reading]:
    """Every reading of ``play`` with no card wild (unsorted)."""
    total = sum(play)
    if not total:
        return []
    types = tb.types
    present = [r for r in range(15) if play[r]]
    out: list[Reading] = []
    if len(present) == 1:
        r = present[0]
        copies = play[r]
        ctype = _BY_COPIES.get(copies)
        # A pair of one joker is a pair (§1 Decision, ct); no triple or bomb of jokers.
        if ctype is not None and ctype in types and (copies < 3 or r <= TWO):
            out.append(tb.natural(ctype, r, 1, copies))
        if r <= TWO:
            for btype, size in tb.rank_bombs:
                if size == copies:
                    out.append(tb.natural(btype, r, 1, size))
    half = tb.rocket_half
    if half and play[BJ] == half and play[RJ] == half and total == 2 * half:
        out.append(tb.natural(ComboType.ROCKET, RJ, 1, total))
    if len(present) >= 2:
        copies = play[present[0]]
        minimum = tb.chain_min.get(copies)
        if (
            minimum is not None
            and len(present) >= minimum
            and present[-1] <= ACE
            and present[-1] - present[0] + 1 == len(present)
            and all(play[r] == copies for r in present)
        ):
            out.append(tb.natural(CHAIN_TYPES[copies], present[-1], len(present), total))
    if len(present) >= 2 or tb.kicker_of_main_rank:
        _kicker_readings(play, total, tb, out)
    return out


def _kicker_readings(play: RankCounts, total: int, tb: Lookup, out: list[Reading]) -> None:
    types = tb.types
    if total == 4 and ComboType.TRIPLE_SINGLE in types:
        _with_kickers(play, ComboType.TRIPLE_SINGLE, 3, 1, 1, False, tb, out)
    if total == 5 and ComboType.TRIPLE_PAIR in types:
        _with_kickers(play, ComboType.TRIPLE_PAIR, 3, 1, 1, True, tb, out)
    if total == 6 and ComboType.FOUR_TWO_SINGLES in types:
        _with_kickers(play, ComboType.FOUR_TWO_SINGLES, 4, 1, 2, False, tb, out)
    if total == 8 and ComboType.FOUR_TWO_PAIRS in types:
        _with_kickers(play, ComboType.FOUR_TWO_PAIRS, 4, 1, 2, True, tb, out)
    if ComboType.PLANE_SINGLES in types and total % 4 == 0 and total // 4 >= tb.plane_min:
        length = total // 4
        _with_kickers(play, ComboType.PLANE_SINGLES, 3, length, length, False, tb, out)
    if ComboType.PLANE_PAIRS in types and total % 5 == 0 and total // 5 >= tb.plane_min:
        length = total // 5
        _with_kickers(play, ComboType.PLANE_PAIRS, 3, length, length, True, tb, out)


def _with_kickers(
    play: RankCounts,
    ctype: ComboType,
    copies: int,
    length: int,
    kickers: int,
    pairs: bool,
    tb: Lookup,
    out: list[Reading],
) -> None:
    """Try every main part of ``length`` consecutive ranks with ``copies`` each."""
    top = TWO if length == 1 else ACE
    size = sum(play)
    for lo in range(top - length + 2):
        main = range(lo, lo + length)
        if any(play[r] < copies for r in main):
            continue
        kick = list(play)
        for r in main:
            kick[r] -= copies
        if pairs:
            ok = pairs_ok(kick, tb.pair_caps(main, copies), kickers, tb)
        else:
            ok = singles_ok(kick, tb.single_caps(main, copies, length > 1), tb)
        if ok:
            out.append(tb.natural(ctype, main.stop - 1, length, size))
