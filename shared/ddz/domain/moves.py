"""Every legal play of a hand, leading or following (RULES.md §3-§5).

Natural plays come from one small generator per combination type working on rank
counts. Their ``Move`` objects are interned per rule set: a play with no kickers (a
single, a chain, a bomb) is one object made once, and a kicker play is made the first
time it is seen and then shared; so a call mostly appends existing objects to a list.
Plays that use wildcards come from ``ddz.domain.wild``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from itertools import chain, combinations
from typing import Any

from ddz.domain.cards import Rank, RankCounts
from ddz.domain.compare import beats
from ddz.domain.lookup import (
    ACE,
    BJ,
    CHAIN_TYPES,
    RJ,
    TWO,
    Lookup,
    code_of,
    lookup_for,
)
from ddz.domain.move import Move
from ddz.domain.readings import ComboType, Reading
from ddz.domain.ruleset import RuleSet
from ddz.domain.wild import wild_moves

_S = ComboType.SINGLE
_P = ComboType.PAIR
_T = ComboType.TRIPLE
_TS = ComboType.TRIPLE_SINGLE
_TP = ComboType.TRIPLE_PAIR
_PS = ComboType.PLANE_SINGLES
_PP = ComboType.PLANE_PAIRS
_FS = ComboType.FOUR_TWO_SINGLES
_FP = ComboType.FOUR_TWO_PAIRS

# (type, copies of each main rank, kickers are pairs) for the types with kickers.
_KICKER_TYPES: dict[ComboType, tuple[int, bool]] = {
    _TS: (3, False),
    _TP: (3, True),
    _FS: (4, False),
    _FP: (4, True),
    _PS: (3, False),
    _PP: (3, True),
}
_KICKERS_PER_RANK = {_TS: 1, _TP: 1, _FS: 2, _FP: 2, _PS: 1, _PP: 1}


def _code(spec: Iterable[tuple[int, int]]) -> int:
    counts = [0] * 15
    for rank, n in spec:
        counts[rank] += n
    return code_of(counts)


class _NaturalMoves:
    """Interned natural moves of one rule set."""

    def __init__(self, tb: Lookup) -> None:
        self.tb = tb
        types = tb.types

        def simple(ctype: ComboType, copies: int, top: int) -> list[Move | None]:
            if ctype not in types:
                return [None] * 15
            return [
                Move(_code([(r, copies)]), tb.natural(ctype, r, 1, copies)) if r <= top else None
                for r in range(15)
            ]

        self.single = simple(_S, 1, RJ)
        self.pair = simple(_P, 2, RJ)
        self.triple = simple(_T, 3, TWO)
        # Bombs of one rank, ladder order (low tier first).
        self.bombs: list[tuple[int, list[Move]]] = [
            (size, [Move(_code([(r, size)]), tb.natural(btype, r, 1, size)) for r in range(13)])
            for btype, size in tb.rank_bombs
        ]
        half = tb.rocket_half
        self.rocket = (
            Move(_code([(BJ, half), (RJ, half)]), tb.natural(ComboType.ROCKET, RJ, 1, 2 * half))
            if half
            else None
        )
        # chains[copies][lo][length]
        self.chains: dict[int, list[dict[int, Move]]] = {}
        for copies, minimum in tb.chain_min.items():
            ctype = CHAIN_TYPES[copies]
            per_lo: list[dict[int, Move]] = []
            for lo in range(ACE + 1):
                per_lo.append(
                    {
                        length: Move(
                            _code((r, copies) for r in range(lo, lo + length)),
                            tb.natural(ctype, lo + length - 1, length, copies * length),
                        )
                        for length in range(minimum, ACE + 2 - lo)
                    }
                )
            self.chains[copies] = per_lo
        # Kicker plays, made when first seen: (type, lo, length) -> kickers -> Move.
        self.kicked: dict[tuple[ComboType, int, int], dict[tuple[int, ...], Move]] = {}
        self.caps: dict[tuple[ComboType, int, int], list[int]] = {}
        # Under the default kicker rules, every triple and four with its kickers is a
        # table cell: ts/tp[main][kicker], fs/fp[main][kicker][kicker].
        self.fast = not (tb.kicker_of_main_rank or tb.four_as_kickers)
        # Chains and plane bodies depend only on which ranks a hand holds enough of:
        # (copies, ranks held) -> chain moves; ranks held in threes -> (lo, length) spans.
        self.chain_sets: dict[tuple[int, tuple[int, ...]], list[Move]] = {}
        self.plane_spans: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        self.ts = self._kicker_table(_TS, 1)
        self.tp = self._kicker_table(_TP, 1)
        self.fs = self._kicker_table(_FS, 2)
        self.fp = self._kicker_table(_FP, 2)

    def chains_of(self, copies: int, ranks: tuple[int, ...]) -> list[Move]:
        """Every chain of ``copies`` per rank that the ranks held (ascending) allow."""
        found = self.chain_sets.get((copies, ranks))
        if found is None:
            table = self.chains[copies]
            minimum = self.tb.chain_min[copies]
            found = [table[lo][length] for lo, length in _runs(ranks, minimum)]
            self.chain_sets[(copies, ranks)] = found
        return found

    def spans_of(self, triples: tuple[int, ...]) -> list[tuple[int, int]]:
        """Every (lowest rank, length) of a plane body the ranks held in threes allow."""
        found = self.plane_spans.get(triples)
        if found is None:
            found = self.plane_spans[triples] = _runs(triples, self.tb.plane_min)
        return found

    def _kicker_table(self, ctype: ComboType, kickers: int) -> list[Any]:
        """Nested lists of moves, index main rank then kicker ranks (ascending)."""
        if not self.fast or ctype not in self.tb.types:
            return []
        _, pairs = _KICKER_TYPES[ctype]
        table: list[Any] = []
        for main in range(TWO + 1):
            if kickers == 1:
                table.append(
                    [
                        self.kicked_move(ctype, main, 1, (k,)) if k != main else None
                        for k in range(15)
                    ]
                )
            else:
                table.append(
                    [
                        [
                            self.kicked_move(ctype, main, 1, (k1, k2))
                            if main not in (k1, k2) and k1 <= k2 and not (pairs and k1 == k2)
                            else None
                            for k2 in range(15)
                        ]
                        for k1 in range(15)
                    ]
                )
        return table

    def kicker_caps(self, ctype: ComboType, lo: int, length: int) -> list[int]:
        key = (ctype, lo, length)
        caps = self.caps.get(key)
        if caps is None:
            copies, pairs = _KICKER_TYPES[ctype]
            main = range(lo, lo + length)
            caps = (
                self.tb.pair_caps(main, copies)
                if pairs
                else self.tb.single_caps(main, copies, length > 1)
            )
            self.caps[key] = caps
        return caps

    def kicked_move(self, ctype: ComboType, lo: int, length: int, kick: tuple[int, ...]) -> Move:
        table = self.kicked.get((ctype, lo, length))
        if table is None:
            table = self.kicked[(ctype, lo, length)] = {}
        move = table.get(kick)
        if move is None:
            copies, pairs = _KICKER_TYPES[ctype]
            counts = [0] * 15
            for r in range(lo, lo + length):
                counts[r] = copies
            unit = 2 if pairs else 1
            for r in kick:
                counts[r] += unit
            size = copies * length + unit * len(kick)
            move = Move(code_of(counts), self.tb.natural(ctype, lo + length - 1, length, size))
            table[kick] = move
        return move


def _runs(ranks: tuple[int, ...], minimum: int) -> list[tuple[int, int]]:
    """(lo, length) of every window of consecutive chain ranks (3..A), at least
    ``minimum`` long, inside the given ascending ranks."""
    held = [r for r in ranks if r <= ACE]
    windows = []
    i = 0
    while i < len(held):
        j = i
        while j + 1 < len(held) and held[j + 1] == held[j] + 1:
            j += 1
        for a in range(i, j + 1):
            for b in range(a + minimum - 1, j + 1):
                windows.append((held[a], b - a + 1))
        i = j + 1
    return windows


@cache
def _natural_moves_for(rules: RuleSet) -> _NaturalMoves:
    return _NaturalMoves(lookup_for(rules))


def legal_moves(
    hand: RankCounts,
    rules: RuleSet,
    wild: frozenset[Rank] = frozenset(),
    over: Reading | None = None,
) -> list[Move]:
    """All plays (each (cards, reading) pair once) the hand can make: leading when
    ``over`` is None, else only those that beat ``over``. Pass is not a Move."""
    nm = _natural_moves_for(rules)
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


def _lead(h: RankCounts, nm: _NaturalMoves, out: list[Move]) -> None:
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
    _kicked(h, nm, None, -1, 0, present, pairs, triples, out)
    _bombs(h, nm, None, out, [r for r in triples if h[r] >= 4])


def _follow(h: RankCounts, nm: _NaturalMoves, over: Reading, out: list[Move]) -> None:
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
    elif ctype in _KICKER_TYPES:
        present = [r for r in range(15) if h[r]]
        pairs = [r for r in present if h[r] >= 2]
        triples = [r for r in pairs if h[r] >= 3 and r <= TWO]
        _kicked(h, nm, ctype, above, over.length, present, pairs, triples, out)
    else:
        for copies, chain_type in CHAIN_TYPES.items():
            if chain_type is ctype and copies in nm.chains:
                _chains(h, nm, copies, above, over.length, out)


def _chains(
    h: RankCounts, nm: _NaturalMoves, copies: int, above: int, length: int, out: list[Move]
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
    nm: _NaturalMoves,
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


def _kicked(
    h: RankCounts,
    nm: _NaturalMoves,
    only: ComboType | None,
    above: int,
    length: int,
    present: list[int],
    pairs: list[int],
    triples: list[int],
    out: list[Move],
) -> None:
    """Plays with kickers: every type (``only`` None) or one type of one length, with a
    main rank above ``above``."""
    tb = nm.tb
    types = tb.types
    if nm.fast:
        # Default kicker rules: tables of every triple/four with its kickers.
        mains = [t for t in triples if t > above]
        if _TS in types and only in (None, _TS):
            for t in mains:
                row = nm.ts[t]
                out.extend([row[k] for k in present if k != t])
        if _TP in types and only in (None, _TP):
            for t in mains:
                row = nm.tp[t]
                out.extend([row[k] for k in pairs if k != t])
        fours = [f for f in mains if h[f] >= 4]
        if fours and _FS in types and only in (None, _FS):
            for f in fours:
                rows = nm.fs[f]
                ks = [k for k in present if k != f]
                for i, k1 in enumerate(ks):
                    row = rows[k1]
                    if h[k1] >= 2:
                        out.append(row[k1])
                    if k1 != BJ or tb.jokers_as_kickers:  # B with R: never (§3)
                        out.extend([row[k2] for k2 in ks[i + 1 :]])
        if fours and _FP in types and only in (None, _FP):
            for f in fours:
                rows = nm.fp[f]
                ks = [k for k in pairs if k != f]
                for i, k1 in enumerate(ks):
                    if k1 != BJ or tb.jokers_as_kickers:
                        row = rows[k1]
                        out.extend([row[k2] for k2 in ks[i + 1 :]])
    else:
        for ctype in (_TS, _TP, _FS, _FP):
            if ctype in types and only in (None, ctype):
                copies, pair_kickers = _KICKER_TYPES[ctype]
                wanted = _KICKERS_PER_RANK[ctype]
                for r in triples:
                    if r > above and h[r] >= copies:
                        _with_kickers(h, nm, ctype, r, 1, copies, pair_kickers, wanted, out)
    if len(triples) > 1:
        held = tuple(triples)
        for ctype in (_PS, _PP):
            if ctype in types and only in (None, ctype):
                _planes(h, nm, ctype, above, length, held, out)


def _planes(
    h: RankCounts,
    nm: _NaturalMoves,
    ctype: ComboType,
    above: int,
    length: int,
    triples: tuple[int, ...],
    out: list[Move],
) -> None:
    copies, pairs = _KICKER_TYPES[ctype]
    most = sum(h) // (copies + (2 if pairs else 1))
    spans = [
        (lo, n)
        for lo, n in nm.spans_of(triples)
        if n <= most and lo + n - 1 > above and (not length or n == length)
    ]
    if not spans:
        return
    if not nm.fast:
        for lo, n in spans:
            pool = _kicker_pool(h, nm, ctype, lo, n, copies, pairs)
            _emit_kicked(nm, ctype, lo, n, pool, n, out)
        return
    # Default kicker rules: wings are any cards beside the body, at most three of a
    # rank, at most two of a rank next to the body (§3). The hand's cards, three at
    # most per rank, are laid out once; each body cuts its wings out by slicing.
    if pairs:
        units = [r for r in range(15) if h[r] >= 2]
        for lo, n in spans:
            hi = lo + n
            _emit_kicked(nm, ctype, lo, n, [r for r in units if r < lo or r >= hi], n, out)
        return
    flat: list[int] = []
    offsets = [0] * 16
    for r in range(15):
        offsets[r] = len(flat)
        c = h[r]
        if c:
            flat.extend([r] * (c if c < 3 else 3))
    offsets[15] = len(flat)
    for lo, n in spans:
        hi = lo + n
        cut = offsets[lo]
        if lo and cut - offsets[lo - 1] == 3:
            cut -= 1
        resume = offsets[hi]
        if hi <= ACE and offsets[hi + 1] - resume == 3:
            resume += 1
        _emit_kicked(nm, ctype, lo, n, flat[:cut] + flat[resume:], n, out)


def _with_kickers(
    h: RankCounts,
    nm: _NaturalMoves,
    ctype: ComboType,
    lo: int,
    length: int,
    copies: int,
    pairs: bool,
    wanted: int,
    out: list[Move],
) -> None:
    """One main part with every legal choice of kickers from the rest of the hand."""
    pool = _kicker_pool(h, nm, ctype, lo, length, copies, pairs)
    _emit_kicked(nm, ctype, lo, length, pool, wanted, out)


def _kicker_pool(
    h: RankCounts,
    nm: _NaturalMoves,
    ctype: ComboType,
    lo: int,
    length: int,
    copies: int,
    pairs: bool,
) -> list[int]:
    """The kicker units (cards, or pairs) the hand has beside a main part, one entry
    per unit, ascending, within the rule set's caps (§3 Kickers)."""
    caps = nm.kicker_caps(ctype, lo, length)
    hi = lo + length
    pool: list[int] = []
    for r in range(15):
        cap = caps[r]
        if cap:
            have = h[r] - copies if lo <= r < hi else h[r]
            if pairs:
                have //= 2
            if have > 0:
                pool.extend([r] * (have if have < cap else cap))
    return pool


def _emit_kicked(
    nm: _NaturalMoves,
    ctype: ComboType,
    lo: int,
    length: int,
    pool: list[int],
    wanted: int,
    out: list[Move],
) -> None:
    """Every choice of ``wanted`` kicker units from ``pool``, as moves."""
    if len(pool) < wanted:
        return
    picks: Iterable[tuple[int, ...]]
    if wanted == 1:
        picks = dict.fromkeys((r,) for r in pool)
    elif nm.tb.jokers_as_kickers or BJ not in pool or RJ not in pool:
        picks = dict.fromkeys(combinations(pool, wanted))
    else:
        # Both jokers are never kickers together (§3): choose without one or the other.
        no_red = [r for r in pool if r != RJ]
        no_black = [r for r in pool if r != BJ]
        picks = dict.fromkeys(chain(combinations(no_red, wanted), combinations(no_black, wanted)))
    table = nm.kicked.get((ctype, lo, length))
    if table is None:
        table = nm.kicked[(ctype, lo, length)] = {}
    get = table.get
    out.extend([get(kick) or nm.kicked_move(ctype, lo, length, kick) for kick in picks])
