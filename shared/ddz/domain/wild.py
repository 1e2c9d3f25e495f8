"""Plays that use wildcards, with every reading they allow (RULES.md §5).

A wildcard stands for any rank 3..2 (its own included), never for a joker. For each
combination type and main part the generator chooses which main cards are natural and
which are wildcards (every split is a different play: the hand keeps different cards),
then the kickers: natural ones, and wildcards. In tiandi the wildcards come in two
ranks; each way of taking them from the hand is its own play, with the same reading.

Plays made only of wildcards follow their own rule (§5): one rank reads as that rank
(``77`` is a pair of 7s, ``7777`` the pure bomb); in tiandi four wildcards of both ranks
are the mixed bomb, and any other two-rank play reads by its own ranks.

Kicker wildcards (**Decision**, docs/DECISIONS.md): a wildcard used as a kicker stands
for its own rank when the kicker rules allow it, otherwise for the lowest rank that
they allow; the reading's ``substitutes`` record that choice. A kicker's rank never
changes the reading, so this only fixes which substitution is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain, combinations, product
from typing import Generic, TypeVar

from ddz.domain.cards import RankCounts
from ddz.domain.compare import beats
from ddz.domain.natural import natural_readings
from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.tables import ACE, BJ, CHAIN_TYPES, RJ, TWO, Tables

_KICKED: tuple[tuple[ComboType, int, bool, int], ...] = (
    # (type, copies per main rank, pair kickers, kickers per main rank)
    (ComboType.TRIPLE_SINGLE, 3, False, 1),
    (ComboType.TRIPLE_PAIR, 3, True, 1),
    (ComboType.FOUR_TWO_SINGLES, 4, False, 2),
    (ComboType.FOUR_TWO_PAIRS, 4, True, 2),
    (ComboType.PLANE_SINGLES, 3, False, 1),
    (ComboType.PLANE_PAIRS, 3, True, 1),
)
_PLANES = (ComboType.PLANE_SINGLES, ComboType.PLANE_PAIRS)
_SIMPLE = {2: ComboType.PAIR, 3: ComboType.TRIPLE}
_SOFT = BombClass.SOFT

T = TypeVar("T")
# A kicker choice: the natural kickers as counts and as ranks (one entry per card),
# wildcards whose rank is forced (a natural card completed to a pair), free places for
# wildcards (singles, or pairs of two wildcards), cards per free place, places the
# natural kickers already took from ranks 3..2, and the wildcards it uses in all.
_Kick = tuple[list[int], tuple[int, ...], tuple[int, ...], int, int, int, int]


def wild_moves(
    hand: RankCounts,
    tb: Tables,
    wild_ranks: tuple[int, ...],
    over: Reading | None,
    size: int | None,
    make: Callable[[RankCounts, Reading], T],
) -> list[T]:
    """``make(cards, reading)`` for every play that uses at least one of the hand's
    wildcards: all of them (``over`` None) or those that beat ``over``; all sizes or
    only ``size``."""
    natural = list(hand)
    for w in wild_ranks:
        natural[w] = 0
    counts = [hand[w] for w in wild_ranks]
    out: list[T] = []
    if not sum(counts):
        return out
    _all_wild(tb, wild_ranks, counts, over, size, make, out)
    if any(natural):
        _Mixed(tb, natural, wild_ranks, counts, over, size, make, out).run()
    return out


def _all_wild(
    tb: Tables,
    wild_ranks: tuple[int, ...],
    counts: list[int],
    over: Reading | None,
    size: int | None,
    make: Callable[[RankCounts, Reading], T],
    out: list[T],
) -> None:
    for split in product(*(range(n + 1) for n in counts)):
        total = sum(split)
        if not total or (size is not None and total != size):
            continue
        cards_list = [0] * 15
        for w, n in zip(wild_ranks, split, strict=True):
            cards_list[w] = n
        cards = tuple(cards_list)
        own = tuple(r for r in range(15) for _ in range(cards[r]))
        readings: list[Reading | None] = []
        for natural in natural_readings(cards, tb):
            cls = BombClass.PURE if natural.type is ComboType.BOMB else None
            readings.append(
                tb.reading(natural.type, natural.main, natural.length, natural.size, cls, own)
            )
        used = [w for w, n in zip(wild_ranks, split, strict=True) if n]
        if len(used) >= 2 and total == 4:
            top = max(used)
            readings.append(tb.reading(ComboType.BOMB, top, 1, 4, BombClass.MIXED, (top,) * 4))
        for reading in readings:
            if reading is not None and (over is None or beats(reading, over)):
                out.append(make(cards, reading))


Fill = tuple[tuple[int, ...], int, tuple[int, ...]]


def _fills(natural: list[int], lo: int, hi: int, copies: int, budget: int) -> list[Fill]:
    """Every way to make ``copies`` cards of each rank lo..hi-1 from natural cards and at
    most ``budget`` wildcards: (natural cards per rank, wildcards used, the ranks they
    stand for), naturals first."""
    ways: list[Fill] = [((), 0, ())]
    for r in range(lo, hi):
        ways = _grow(ways, natural[r], r, copies, budget)
        if not ways:
            break
    return ways


def _grow(ways: list[Fill], have: int, rank: int, copies: int, budget: int) -> list[Fill]:
    """``ways`` extended by one more rank, of which ``have`` natural cards are held."""
    have = min(copies, have)
    grown = []
    for nats, used, subs in ways:
        least = copies - (budget - used)
        for a in range(have, (least if least > 0 else 0) - 1, -1):
            wild = copies - a
            grown.append(((*nats, a), used + wild, (*subs, *(rank,) * wild) if wild else subs))
    return grown


def _place(room: list[int], free: int, unit: int, order: list[int]) -> list[int]:
    """Ranks for ``free`` kicker places of wildcards, taken in ``order`` (their own ranks
    first, then low to high) where the caps in ``room`` allow."""
    left = list(room)
    placed: list[int] = []
    for _ in range(free):
        for r in order:
            if left[r] > 0:
                left[r] -= 1
                placed.extend([r] * unit)
                break
    return placed


class _Mixed(Generic[T]):
    """Plays of natural cards and wildcards together."""

    def __init__(
        self,
        tb: Tables,
        natural: list[int],
        wild_ranks: tuple[int, ...],
        counts: list[int],
        over: Reading | None,
        size: int | None,
        make: Callable[[RankCounts, Reading], T],
        out: list[T],
    ) -> None:
        self.tb = tb
        self.make = make
        self.natural = natural
        self.wild_ranks = wild_ranks
        self.budget = sum(counts)
        self.over = over
        self.size = size
        self.out = out
        self.above = int(over.main) if over is not None and not over.is_bomb else -1
        # Per number of wildcards: each way to take them from the hand, as
        # (counts per wild rank added to a card list, wild ranks used).
        self.splits: list[list[tuple[tuple[tuple[int, int], ...], tuple[int, ...]]]] = []
        for k in range(self.budget + 1):
            ways = []
            for split in product(*(range(min(n, k) + 1) for n in counts)):
                if sum(split) == k:
                    pairs = tuple((w, n) for w, n in zip(wild_ranks, split, strict=True) if n)
                    ways.append((pairs, tuple(w for w, _ in pairs)))
            self.splits.append(ways)
        # Kicker wildcards stand for their own rank first, then the lowest allowed.
        self.orders = {
            present: [*present, *(r for r in range(TWO + 1) if r not in present)]
            for ways in self.splits
            for _, present in ways
        }
        self.seen: set[tuple[RankCounts, object]] | None = set() if tb.may_repeat else None

    def wants(self, ctype: ComboType, length: int, size: int) -> bool:
        if self.size is not None and size != self.size:
            return False
        over = self.over
        if over is None or over.is_bomb or ctype.is_bomb_class:
            return True
        return ctype is over.type and length == over.length and size == over.size

    def add(self, cards: list[int], k: int, reading: Reading) -> None:
        """Emit ``cards`` plus each way of taking ``k`` wildcards, read as ``reading``."""
        for split, _ in self.splits[k]:
            full = cards.copy()
            for w, n in split:
                full[w] += n
            play = tuple(full)
            if self.seen is not None:
                key = (play, reading.key())
                if key in self.seen:
                    continue
                self.seen.add(key)
            self.out.append(self.make(play, reading))

    def run(self) -> None:
        tb = self.tb
        types = tb.types
        over = self.over
        if over is None or not over.is_bomb:
            for copies, ctype in _SIMPLE.items():
                if ctype in types and self.wants(ctype, 1, copies):
                    self.one_rank(ctype, copies, None)
            for copies in tb.chain_min:
                self.chains(copies)
            for ctype, copies, pairs, per_rank in _KICKED:
                if ctype in types:
                    self.kicked(ctype, copies, pairs, per_rank)
        for btype, bsize in tb.rank_bombs:
            if self.wants(btype, 1, bsize):
                self.one_rank(btype, bsize, _SOFT)

    # -- plays without kickers ----------------------------------------------------------

    def one_rank(self, ctype: ComboType, copies: int, cls: BombClass | None) -> None:
        """Pairs, triples and bombs: natural cards of one rank completed with wildcards."""
        tb = self.tb
        over = self.over
        lowest = 0 if ctype.is_bomb_class else self.above + 1  # bombs beat any non-bomb
        for r in range(lowest, TWO + 1):
            for a in range(min(copies - 1, self.natural[r]), max(1, copies - self.budget) - 1, -1):
                k = copies - a
                reading = tb.reading(ctype, r, 1, copies, cls, (r,) * k)
                if reading is None or (over is not None and not beats(reading, over)):
                    continue
                cards = [0] * 15
                cards[r] = a
                self.add(cards, k, reading)

    def chains(self, copies: int) -> None:
        tb = self.tb
        ctype = CHAIN_TYPES[copies]
        minimum = tb.chain_min[copies]
        natural = self.natural
        budget = self.budget
        splits = self.splits
        seen = self.seen
        make = self.make
        out = self.out
        for lo in range(ACE + 1):
            # The splits of lo..hi grow one rank at a time with hi.
            ways: list[Fill] = [((), 0, ())]
            for hi in range(lo, ACE + 1):
                ways = _grow(ways, natural[hi], hi, copies, budget)
                if not ways:
                    break
                length = hi - lo + 1
                size = copies * length
                if length < minimum or hi <= self.above or not self.wants(ctype, length, size):
                    continue
                for nats, used, subs in ways:
                    if not used or used == size:
                        continue  # natural plays and all-wildcard plays are made elsewhere
                    reading = tb.reading(ctype, hi, length, size, None, subs)
                    assert reading is not None
                    if seen is None:
                        for split, _ in splits[used]:
                            cards = [0] * 15
                            cards[lo : hi + 1] = nats
                            for w, n in split:
                                cards[w] += n
                            out.append(make(tuple(cards), reading))
                    else:
                        cards = [0] * 15
                        cards[lo : hi + 1] = nats
                        self.add(cards, used, reading)

    # -- plays with kickers -------------------------------------------------------------

    def kicked(self, ctype: ComboType, copies: int, pairs: bool, per_rank: int) -> None:
        tb = self.tb
        natural = self.natural
        unit = 2 if pairs else 1
        if ctype in _PLANES:
            spans = [
                (lo, length)
                for length in range(tb.plane_min, ACE + 2)
                for lo in range(ACE + 2 - length)
            ]
        else:
            spans = [(r, 1) for r in range(TWO + 1)]
        total = sum(natural) + self.budget
        # Without the main-rank flag the main ranks take no kickers, so the kicker
        # choices are the same for every split of a main part; for a triple or four
        # they are even the same for every main rank, less those that use that rank.
        per_type: list[list[_Kick]] | None = None
        for lo, length in spans:
            hi = lo + length
            kickers = per_rank * length
            size = copies * length + unit * kickers
            if size > total or hi - 1 <= self.above or not self.wants(ctype, length, size):
                continue
            fills = _fills(natural, lo, hi, copies, self.budget)
            if not fills:
                continue
            main = range(lo, hi)
            caps = tb.pair_caps(main, copies) if pairs else tb.single_caps(main, copies, length > 1)
            shared = None  # with the flag: per split, from the cards the split leaves
            skip = -1
            if tb.kicker_of_main_rank:
                shared = None
            elif length == 1:
                if per_type is None:
                    no_main = range(0)
                    every = (
                        tb.pair_caps(no_main, copies)
                        if pairs
                        else tb.single_caps(no_main, copies, False)
                    )
                    per_type = self.kick_choices(natural, every, pairs, kickers, self.budget)
                shared = per_type
                skip = lo
            else:
                spare = self.budget - min(used for _, used, _ in fills)
                shared = self.kick_choices(natural, caps, pairs, kickers, spare)
            for nats, used, subs in fills:
                choices = shared
                if choices is None:
                    rest = natural.copy()
                    for i, a in enumerate(nats):
                        rest[lo + i] -= a
                    choices = self.kick_choices(rest, caps, pairs, kickers, self.budget - used)
                self.with_kickers(ctype, lo, length, size, nats, subs, caps, choices, skip)

    def kick_choices(
        self, rest: list[int], caps: list[int], pairs: bool, kickers: int, budget: int
    ) -> list[list[_Kick]]:
        """Every legal choice of natural kickers with the wildcards (at most ``budget``)
        that complete it, by the number of wildcards it uses."""
        tb = self.tb
        found: list[list[_Kick]] = [[] for _ in range(budget + 1)]
        if not pairs:
            pool: list[int] = []
            for r in range(15):
                have = min(rest[r], caps[r])
                if have > 0:
                    pool.extend([r] * have)
            split_jokers = not tb.jokers_as_kickers and BJ in pool and RJ in pool
            no_red = [r for r in pool if r != RJ]
            no_black = [r for r in pool if r != BJ]
            for free in range(min(kickers, budget) + 1):
                n = kickers - free
                if n > len(pool):
                    continue
                if split_jokers:
                    picks = dict.fromkeys(chain(combinations(no_red, n), combinations(no_black, n)))
                else:
                    picks = dict.fromkeys(combinations(pool, n))
                for pick in picks:
                    counts = [0] * 15
                    for r in pick:
                        counts[r] += 1
                    low = n - counts[BJ] - counts[RJ]
                    found[free].append((counts, pick, (), free, 1, low, free))
            return found
        # Pairs: per rank, how many pairs and how many natural cards (at least one; the
        # others are wildcards standing for that rank, never for a joker).
        options: list[tuple[int, list[tuple[int, int]]]] = []
        for r in range(15):
            if not caps[r] or not rest[r]:
                continue
            opts = [
                (u, x)
                for u in range(1, caps[r] + 1)
                for x in range(min(2 * u, rest[r]), 0, -1)
                if x == 2 * u or (r <= TWO and 2 * u - x <= budget)
            ]
            if opts:
                options.append((r, opts))
        nat: list[int] = []
        forced: list[int] = []
        ranks: list[int] = []

        def walk(start: int, left: int, low: int) -> None:
            # The pairs chosen so far, the ``left`` others made of two wildcards each;
            # then each way to add one more natural-backed pair on a higher rank.
            if left * 2 + len(forced) <= budget and (
                tb.jokers_as_kickers or not (BJ in ranks and RJ in ranks)
            ):
                counts = [0] * 15
                for r in nat:
                    counts[r] += 1
                wilds = len(forced) + 2 * left
                found[wilds].append((counts, tuple(nat), tuple(forced), left, 2, low, wilds))
            if not left:
                return
            for j in range(start, len(options)):
                r, opts = options[j]
                for u, x in opts:
                    if u <= left and len(forced) + 2 * u - x <= budget:
                        nat.extend([r] * x)
                        forced.extend([r] * (2 * u - x))
                        ranks.append(r)
                        walk(j + 1, left - u, low + (u if r <= TWO else 0))
                        ranks.pop()
                        del forced[len(forced) - (2 * u - x) :]
                        del nat[len(nat) - x :]

        walk(0, kickers, 0)
        return found

    def with_kickers(
        self,
        ctype: ComboType,
        lo: int,
        length: int,
        size: int,
        nats: tuple[int, ...],
        subs: tuple[int, ...],
        caps: list[int],
        choices: list[list[_Kick]],
        skip: int,
    ) -> None:
        """One split of a main part with every kicker choice (but those with a natural
        card of rank ``skip``), as plays."""
        hi = lo + length
        main = hi - 1
        wm = len(subs)
        kick_cards = size - wm - sum(nats)
        main_natural = any(nats)
        room_low = sum(caps[: TWO + 1])
        overlay = self.tb.kicker_of_main_rank
        make = self.make
        out = self.out
        seen = self.seen
        for kw in range(min(len(choices) - 1, self.budget - wm) + 1):
            bucket = choices[kw]
            k = wm + kw
            if not bucket or not k:
                continue  # natural plays are made elsewhere
            for split, present in self.splits[k]:
                own = sum(caps[w] for w in present)
                if bucket[0][4] == 1 and kw <= own and seen is None and not overlay:
                    # Single kickers whose wildcards all take their own rank: one
                    # reading for the whole bucket, and a tight loop.
                    reading = self.kicked_reading(
                        ctype, main, length, size, subs, (), caps, kw, 1, present
                    )
                    # Natural kickers take at most kick_cards - kw places: is there
                    # always room left for kw wildcards?
                    roomy = room_low >= kick_cards
                    for counts, nat, _, _, _, low, _ in bucket:
                        if (
                            (skip >= 0 and counts[skip])
                            or (not nat and not main_natural)
                            or (not roomy and room_low - low < kw)
                        ):
                            continue
                        full = counts.copy()
                        full[lo:hi] = nats
                        for w, n in split:
                            full[w] += n
                        out.append(make(tuple(full), reading))
                    continue
                readings: dict[object, Reading] = {}
                for counts, nat, forced, free, unit, low, _ in bucket:
                    if skip >= 0 and counts[skip]:
                        continue
                    if not nat and not main_natural:
                        continue  # all-wildcard plays are made elsewhere
                    if free and room_low - low < free:
                        continue
                    if free <= own:
                        # Free wildcards take their own rank, where no natural kicker
                        # can be (its cards are all wild): the choice does not matter.
                        memo = (forced, free)
                        known = readings.get(memo)
                        if known is None:
                            known = readings[memo] = self.kicked_reading(
                                ctype, main, length, size, subs, forced, caps, free, unit, present
                            )
                        reading = known
                    else:
                        room = caps.copy()
                        for r in set(nat):
                            room[r] -= (nat.count(r) + forced.count(r)) // unit
                        reading = self.kicked_reading(
                            ctype, main, length, size, subs, forced, room, free, unit, present
                        )
                    full = counts.copy()
                    if overlay:
                        for i, a in enumerate(nats):
                            full[lo + i] += a
                    else:
                        full[lo:hi] = nats
                    for w, n in split:
                        full[w] += n
                    play = tuple(full)
                    if seen is not None:
                        key = (play, reading.key())
                        if key in seen:
                            continue
                        seen.add(key)
                    out.append(make(play, reading))

    def kicked_reading(
        self,
        ctype: ComboType,
        main: int,
        length: int,
        size: int,
        subs: tuple[int, ...],
        forced: tuple[int, ...],
        room: list[int],
        free: int,
        unit: int,
        present: tuple[int, ...],
    ) -> Reading:
        if len(present) == 1 and room[present[0]] >= free:
            placed = [present[0]] * (free * unit)  # the usual case: all on their own rank
        else:
            placed = _place(room, free, unit, self.orders[present])
        substitutes = tuple(sorted([*subs, *forced, *placed]))
        reading = self.tb.reading(ctype, main, length, size, None, substitutes)
        assert reading is not None
        return reading
