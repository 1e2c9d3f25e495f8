"""The natural plays with kickers (RULES.md §3): trios and fours with their kickers, and
planes, for ``legal_moves``: each main part, then every choice of kickers for it, as
interned ``Move`` objects."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain, combinations

from ddz.domain.cards import RankCounts
from ddz.domain.lookup import ACE, BJ, RJ
from ddz.domain.move import Move
from ddz.domain.natural_moves import KICKER_TYPES, NaturalMoves
from ddz.domain.readings import ComboType

_TS, _TP = ComboType.TRIPLE_SINGLE, ComboType.TRIPLE_PAIR
_FS, _FP = ComboType.FOUR_TWO_SINGLES, ComboType.FOUR_TWO_PAIRS
_PS, _PP = ComboType.PLANE_SINGLES, ComboType.PLANE_PAIRS
_KICKERS_PER_RANK = {_TS: 1, _TP: 1, _FS: 2, _FP: 2, _PS: 1, _PP: 1}


def kicked(
    h: RankCounts,
    nm: NaturalMoves,
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
                copies, pair_kickers = KICKER_TYPES[ctype]
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
    nm: NaturalMoves,
    ctype: ComboType,
    above: int,
    length: int,
    triples: tuple[int, ...],
    out: list[Move],
) -> None:
    copies, pairs = KICKER_TYPES[ctype]
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
    nm: NaturalMoves,
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
    nm: NaturalMoves,
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
    nm: NaturalMoves,
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
