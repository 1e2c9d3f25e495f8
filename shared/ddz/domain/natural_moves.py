"""The interned natural moves of one rule set (RULES.md §3-§4): a play with no kickers (a
single, a chain, a bomb) is one ``Move`` made once, a kicker play is made the first time
it is seen and then shared; so a call of ``legal_moves`` mostly appends existing objects
to a list."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from ddz.domain.lookup import ACE, BJ, CHAIN_TYPES, RJ, TWO, Lookup, code_of, lookup_for
from ddz.domain.move import Move
from ddz.domain.readings import ComboType
from ddz.domain.ruleset import RuleSet

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
KICKER_TYPES: dict[ComboType, tuple[int, bool]] = {
    _TS: (3, False),
    _TP: (3, True),
    _FS: (4, False),
    _FP: (4, True),
    _PS: (3, False),
    _PP: (3, True),
}


def _code(spec: Iterable[tuple[int, int]]) -> int:
    counts = [0] * 15
    for rank, n in spec:
        counts[rank] += n
    return code_of(counts)


class NaturalMoves:
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
        _, pairs = KICKER_TYPES[ctype]
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
            copies, pairs = KICKER_TYPES[ctype]
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
            copies, pairs = KICKER_TYPES[ctype]
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
def natural_moves_for(rules: RuleSet) -> NaturalMoves:
    return NaturalMoves(lookup_for(rules))
