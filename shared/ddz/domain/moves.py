"""Every legal play of a hand, leading or following (RULES.md §3-§5).

Natural plays come from one small generator per combination type working on rank
counts. Their ``Move`` objects are interned per rule set: a play with no kickers (a
single, a chain, a bomb) is one object made once, and a kicker play is made the first
time it is seen and then shared; so a call mostly appends existing objects to a list
(``natural_moves``; the plays with kickers: ``kicked_moves``).
Plays that use wildcards come from ``ddz.domain.wild``.
"""

from __future__ import annotations

from ddz.domain.cards import Rank, RankCounts
from ddz.domain.compare import beats
from ddz.domain.kicked_moves import kicked
from ddz.domain.lookup import ACE, BJ, CHAIN_TYPES, RJ, TWO
from ddz.domain.move import Move
from ddz.domain.natural_moves import KICKER_TYPES, NaturalMoves, natural_moves_for
from ddz.domain.readings import ComboType, Reading
from ddz.domain.ruleset import RuleSet
from ddz.domain.wild import wild_moves

_S, _P, _T = ComboType.SINGLE, ComboType.PAIR, ComboType.TRIPLE


def legal_moves(
    hand: RankCounts,
    rules: RuleSet,
    wild: frozenset[Rank] = frozenset(),
    over: Reading | None = None,
) -> list[Move]:
    """All plays (each (cards, reading) pair once) the hand can make: leading when
    ``over`` is None, else only those that beat ``over``. Pass is not a Move."""
    nm = natural_moves_for(rules)
    wild_held = None
    if wild:
        if max(wild) > TWO:
            raise ValueError("a wildcard rank must be 3..2, never a joker (§5)")
        wild_held = [int(w) for w in sorted(wild) if hand[w]]
    natural = hand
    if wild_held:
        spare = list(hand)
        for w in wild_held:
            spare[w] = 0
        natural = tuple(spare)
    out: list[Move] = []
    if over is None:
        _lead(natural, nm, out)
    elif over.is_bomb:
        _bombs(natural, nm, over, out)
    else:
        _follow(natural, nm, over, out)
        _bombs(natural, nm, None, out)
    if wild_held:
        out += wild_moves(hand, nm.tb, tuple(wild_held), over)
    return out


# -- natural plays ---------------------------------------------------------------------


def _lead(h: RankCounts, nm: NaturalMoves, out: list[Move]) -> None:
    types = nm.tb.types
    present = [r for r in range(15) if h[r]]
    pairs = [r for r in present if h[r] >= 2]
    triples = [r for r in pairs if h[r] >= 3 and r <= TWO]
    if _S in types:
        single = nm.single
        out.extend([single[r] for r in present])  # type: ignore[misc]
    if _P in types:
        pair = nm.pair
        out.extend([pair[r] for r in pairs])  # type: ignore[misc]
    if _T in types:
        triple = nm.triple
        out.extend([triple[r] for r in triples])  # type: ignore[misc]
    chains = nm.chains
    if 1 in chains:
        out.extend(nm.chains_of(1, tuple(present)))
    if 2 in chains:
        out.extend(nm.chains_of(2, tuple(pairs)))
    if 3 in chains and len(triples) > 1:
        out.extend(nm.chains_of(3, tuple(triples)))
    kicked(h, nm, None, -1, 0, present, pairs, triples, out)
    _bombs(h, nm, None, out, [r for r in triples if h[r] >= 4])


def _follow(h: RankCounts, nm: NaturalMoves, over: Reading, out: list[Move]) -> None:
    ctype = over.type
    if ctype not in nm.tb.types:
        return
    above = int(over.main)
    if ctype is _S:
        single = nm.single
        out.extend([single[r] for r in range(above + 1, 15) if h[r]])  # type: ignore[misc]
    elif ctype is _P:
        pair = nm.pair
        out.extend([pair[r] for r in range(above + 1, 15) if h[r] >= 2])  # type: ignore[misc]
    elif ctype is _T:
        triple = nm.triple
        out.extend([triple[r] for r in range(above + 1, 13) if h[r] >= 3])  # type: ignore[misc]
    elif ctype in KICKER_TYPES:
        present = [r for r in range(15) if h[r]]
        pairs = [r for r in present if h[r] >= 2]
        triples = [r for r in pairs if h[r] >= 3 and r <= TWO]
        kicked(h, nm, ctype, above, over.length, present, pairs, triples, out)
    else:
        for copies, chain_type in CHAIN_TYPES.items():
            if chain_type is ctype and copies in nm.chains:
                _chains(h, nm, copies, above, over.length, out)


def _chains(
    h: RankCounts, nm: NaturalMoves, copies: int, above: int, length: int, out: list[Move]
) -> None:
    """Chains of ``copies`` per rank; all lengths (``length`` 0) or one, main > ``above``."""
    minimum = nm.tb.chain_min[copies]
    table = nm.chains[copies]
    lo = 0
    while lo <= ACE:
        if h[lo] < copies:
            lo += 1
            continue
        hi = lo
        while hi < ACE and h[hi + 1] >= copies:
            hi += 1
        # Run lo..hi: every window of at least the minimum length.
        for start in range(lo, hi - minimum + 2):
            row = table[start]
            if length:
                top = start + length - 1
                if above < top <= hi:
                    out.append(row[length])
            else:
                out.extend([row[n] for n in range(minimum, hi - start + 2)])
        lo = hi + 1


def _bombs(
    h: RankCounts,
    nm: NaturalMoves,
    over: Reading | None,
    out: list[Move],
    fours: list[int] | None = None,
) -> None:
    """Bomb-class plays; all of them, or those that beat ``over``. ``fours``: the ranks
    held four times or more, when the caller knows them."""
    most = max(h[:13])  # most hands hold no bomb: one C-level look instead of a scan
    for size, moves in nm.bombs:
        if size > most:
            continue
        for r in range(13) if fours is None or size < 4 else fours:
            if h[r] >= size and (over is None or beats(moves[r].reading, over)):
                out.append(moves[r])
    rocket = nm.rocket
    if rocket is not None:
        half = nm.tb.rocket_half
        if h[BJ] >= half and h[RJ] >= half and (over is None or beats(rocket.reading, over)):
            out.append(rocket)
