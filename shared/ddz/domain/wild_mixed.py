"""Plays of natural cards and wildcards together, with every reading they allow (RULES.md
§5): chains, planes and one-rank plays with their main parts made of naturals and
wildcards, then their kickers (``wild_kickers``). ``wild`` adds the plays made only of
wildcards and is the way in."""

from __future__ import annotations

from itertools import chain, combinations, product, repeat
from operator import itemgetter

from ddz.domain.compare import beats
from ddz.domain.lookup import ACE, BJ, CHAIN_TYPES, ONE, RJ, TWO, Lookup, counts_of_code
from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.wild_kickers import Choices, PairOption, PairWalk, place

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
_SUBS = itemgetter(2)  # of a Fill

Shape = tuple[ComboType, int, int]  # type, length, size: a reading's key but its main


# A way to make a main part: (code of its natural cards, wildcards used, code of the
# ranks they stand for).
Fill = tuple[int, int, int]


def _grow(ways: list[Fill], steps: list[tuple[int, int, int]], budget: int) -> list[Fill]:
    """``ways`` extended by one more rank, made in one of the ``steps``."""
    return [
        (nats + a, used + wild, subs + stand)
        for nats, used, subs in ways
        for a, wild, stand in steps
        if used + wild <= budget
    ]


class Mixed:
    """Plays of natural cards and wildcards together, appended to the columns
    ``codes`` and ``readings``."""

    def __init__(
        self,
        tb: Lookup,
        natural: list[int],
        wild_ranks: tuple[int, ...],
        counts: list[int],
        over: Reading | None,
        size: int | None,
        codes: list[int],
        readings: list[Reading],
        shape: Shape | None = None,
    ) -> None:
        self.tb = tb
        self.natural = natural
        self.budget = sum(counts)
        self.over = over
        self.size = size
        self.shape = shape
        self.every = over is None and size is None and shape is None  # every play is wanted
        self.above = int(over.main) if over is not None and not over.is_bomb else -1
        # Per number of wildcards: each way to take them from the hand, as (their code,
        # wild ranks used).
        self.splits: list[list[tuple[int, tuple[int, ...]]]] = []
        for k in range(self.budget + 1):
            ways = []
            for split in product(*(range(min(n, k) + 1) for n in counts)):
                if sum(split) == k:
                    pairs = tuple((w, n) for w, n in zip(wild_ranks, split, strict=True) if n)
                    ways.append((sum(n * ONE[w] for w, n in pairs), tuple(w for w, _ in pairs)))
            self.splits.append(ways)
        # With wildcards of one rank only (laizi), k of them are always k * one_wild.
        self.one_wild = ONE[wild_ranks[0]] if len(wild_ranks) == 1 else 0
        # Kicker wildcards stand for their own rank first, then the lowest allowed.
        self.orders = {
            present: [*present, *(r for r in range(TWO + 1) if r not in present)]
            for ways in self.splits
            for _, present in ways
        }
        self.codes = codes
        self.readings = readings
        # (copies, lo) -> ways to make lo..hi, per hi: chains, planes and kicker types
        # share them.
        self._ways: dict[tuple[int, int], list[list[Fill]]] = {}
        self._steps: dict[int, list[list[tuple[int, int, int]]]] = {}

    def fills(self, copies: int, lo: int, hi: int) -> list[Fill]:
        """Every way to make ``copies`` cards of each rank lo..hi-1 from natural cards and
        at most all the wildcards, naturals first."""
        grown = self._ways.get((copies, lo))
        if grown is None:
            grown = self._ways[(copies, lo)] = [[(0, 0, 0)]]
        steps = self.steps(copies)
        while len(grown) <= hi - lo and grown[-1]:
            grown.append(_grow(grown[-1], steps[lo + len(grown) - 1], self.budget))
        return grown[hi - lo] if hi - lo < len(grown) else []

    def steps(self, copies: int) -> list[list[tuple[int, int, int]]]:
        """Per rank, the ways to make ``copies`` cards of it: (code of the natural cards,
        wildcards, code of the rank they stand for), naturals first."""
        found = self._steps.get(copies)
        if found is None:
            found = self._steps[copies] = [
                [(a * one, copies - a, (copies - a) * one) for a in range(min(copies, n), -1, -1)]
                for n, one in zip(self.natural, ONE, strict=True)
            ]
        return found

    def wants(self, ctype: ComboType, length: int, size: int) -> bool:
        if self.size is not None and size != self.size:
            return False
        if self.shape is not None and (ctype, length, size) != self.shape:
            return False
        over = self.over
        if over is None or over.is_bomb or ctype.is_bomb_class:
            return True
        return ctype is over.type and length == over.length and size == over.size

    def add(self, code: int, k: int, reading: Reading) -> None:
        """The natural cards ``code`` plus each way of taking ``k`` wildcards, read as
        ``reading``."""
        for wilds, _ in self.splits[k]:
            self.codes.append(code + wilds)
            self.readings.append(reading)

    def run(self) -> None:
        tb = self.tb
        types = tb.types
        over = self.over
        if over is None or not over.is_bomb:
            for copies, ctype in _SIMPLE.items():
                if ctype in types and self.wants(ctype, 1, copies):
                    self.one_rank(ctype, copies, None)
            # With a shape, only its generator runs (the others would build main
            # parts only to have ``wants`` refuse every one of them).
            only = self.shape[0] if self.shape is not None else None
            for copies in tb.chain_min:
                if only is None or CHAIN_TYPES[copies] is only:
                    self.chains(copies)
            for ctype, copies, pairs, per_rank in _KICKED:
                if ctype in types and (only is None or ctype is only):
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
                self.add(a * ONE[r], k, reading)

    def chains(self, copies: int) -> None:
        tb = self.tb
        ctype = CHAIN_TYPES[copies]
        minimum = tb.chain_min[copies]
        coded = tb.coded
        one_wild = self.one_wild
        steps = self.steps(copies)
        budget = self.budget
        for lo in range(ACE + 1):
            # The ways to make lo..hi grow one rank at a time with hi (and are kept for
            # the planes and kicker types).
            ways: list[Fill] = [(0, 0, 0)]
            grown = self._ways[(copies, lo)] = [ways]
            for hi in range(lo, ACE + 1):
                ways = _grow(ways, steps[hi], budget)
                grown.append(ways)
                if not ways:
                    break
                length = hi - lo + 1
                size = copies * length
                if length < minimum or hi <= self.above:
                    continue
                if not self.every and not self.wants(ctype, length, size):
                    continue
                # Natural plays (no wildcard: the first way, if any) and all-wildcard
                # plays (the last, if any) are made elsewhere.
                plays = ways[1:] if not ways[0][1] else ways
                if plays and plays[-1][1] == size:
                    plays = plays[:-1]
                family = tb.family(ctype, hi, length, size)
                if one_wild:
                    self.codes += [nats + used * one_wild for nats, used, _ in plays]
                    self.readings += map(coded.__getitem__, map(family.__add__, map(_SUBS, plays)))
                else:
                    for nats, used, subs in plays:
                        self.add(nats, used, coded[family + subs])

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
        # choices are the same for every split of a main part; for a triple or four,
        # and for the pairs of a plane of a given length, they are even those of no main
        # part at all, less those that hold a main rank.
        per_length: dict[int, list[Choices]] = {}
        for lo, length in spans:
            hi = lo + length
            kickers = per_rank * length
            size = copies * length + unit * kickers
            if size > total or hi - 1 <= self.above:
                continue
            if not self.every and not self.wants(ctype, length, size):
                continue
            fills = self.fills(copies, lo, hi)
            if not fills:
                continue
            caps = tb.kicker_caps(pairs, copies, lo, length)
            shared = None  # with the flag: per split, from the cards the split leaves
            held = 0  # the main ranks (as a code mask) that the shared choices may hold
            if tb.kicker_of_main_rank:
                shared = None
            elif length == 1 or pairs:
                shared = per_length.get(length)
                if shared is None:
                    no_main = tb.kicker_caps(pairs, copies, 0, 0)
                    shared = self.kick_choices(natural, no_main, pairs, kickers, self.budget)
                    per_length[length] = shared
                held = sum(255 * ONE[r] for r in range(lo, hi) if natural[r])
            else:
                spare = self.budget - min(used for _, used, _ in fills)
                shared = self.kick_choices(natural, caps, pairs, kickers, spare)
            family = tb.family(ctype, hi - 1, length, size)
            for fill in fills:
                choices = shared
                if choices is None:
                    rest = natural.copy()
                    for r, a in zip(range(lo, hi), counts_of_code(fill[0])[lo:hi], strict=True):
                        rest[r] -= a
                    choices = self.kick_choices(rest, caps, pairs, kickers, self.budget - fill[1])
                self.with_kickers(family, fill, kickers, unit, caps, choices, held)

    def kick_choices(
        self, rest: list[int], caps: list[int], pairs: bool, kickers: int, budget: int
    ) -> list[Choices]:
        """Every legal choice of natural kickers with the wildcards (at most ``budget``)
        that complete it, by the number of wildcards it uses."""
        found = [Choices() for _ in range(budget + 1)]
        if pairs:
            self.pair_choices(rest, caps, kickers, budget, found)
            return found
        pool: list[int] = []
        for r in range(15):
            have = min(rest[r], caps[r])
            if have > 0:
                pool += [ONE[r]] * have
        # Both jokers are never kickers together (§3): choose without one or the other.
        split_jokers = not self.tb.jokers_as_kickers and ONE[BJ] in pool and ONE[RJ] in pool
        no_red = [c for c in pool if c != ONE[RJ]]
        no_black = [c for c in pool if c != ONE[BJ]]
        for free in range(min(kickers, budget) + 1):
            n = kickers - free
            if n > len(pool):
                continue
            picks = (
                chain(combinations(no_red, n), combinations(no_black, n))
                if split_jokers
                else combinations(pool, n)
            )
            # A code is a multiset of ranks: equal picks of equal ranks dedupe as codes.
            choices = found[free]
            choices.codes = list(dict.fromkeys(map(sum, picks)))
            choices.group(0, free)
            choices.lows = None
        return found

    def pair_choices(
        self, rest: list[int], caps: list[int], kickers: int, budget: int, found: list[Choices]
    ) -> None:
        """Pair kickers: per rank, how many pairs and how many natural cards (at least
        one; the others are wildcards standing for that rank, never for a joker)."""
        options: list[list[PairOption]] = []
        for r in range(15):
            if not caps[r] or not rest[r]:
                continue
            low = r <= TWO
            joker = 1 if r == BJ else 2 if r == RJ else 0
            opts = [
                PairOption(u, u if low else 0, x * ONE[r], 2 * u - x, (2 * u - x) * ONE[r], joker)
                for u in range(1, caps[r] + 1)
                for x in range(min(2 * u, rest[r]), 0, -1)
                if x == 2 * u or (low and 2 * u - x <= budget)
            ]
            if opts:
                options.append(opts)
        PairWalk(options, found, budget, self.tb.jokers_as_kickers).walk(0, kickers, 0, 0, 0, 0, 0)

    def with_kickers(
        self,
        family: int,
        fill: Fill,
        kickers: int,
        unit: int,
        caps: list[int],
        choices: list[Choices],
        held: int,
    ) -> None:
        """One split of a main part with every kicker choice (but those with a natural
        card of a rank in the mask ``held``), as plays."""
        nats, wm, subs = fill
        key = family + subs
        room_low = sum(caps[: TWO + 1])
        # Free wildcards need places on ranks 3..2; only a long plane can run short.
        roomy = room_low >= kickers
        # The choice of wildcards only (no natural kicker) is alone in its bucket.
        all_free = -1 if nats else unit * kickers
        coded = self.tb.coded
        codes = self.codes
        readings = self.readings
        for kw in range(min(len(choices) - 1, self.budget - wm) + 1):
            k = wm + kw
            if not k or kw == all_free:
                continue  # natural plays, all-wildcard plays are made elsewhere
            bucket = choices[kw]
            if held:
                bucket = bucket.without(held)
            if not roomy:
                bucket = bucket.with_room(room_low)
            n = len(bucket.codes)
            if not n:
                continue
            groups = bucket.groups
            for wilds, present in self.splits[k]:
                base = nats + wilds
                if len(present) == 1:
                    # The usual case: free wildcards all on their own rank, where no
                    # natural kicker can be (its cards are all wild): one reading per
                    # group of choices.
                    own = present[0]
                    if bucket.most_free <= caps[own]:
                        placed = unit * ONE[own]
                        codes += map(base.__add__, bucket.codes)
                        if len(groups) == 1:
                            forced, free = groups[0]
                            readings += repeat(coded[key + forced + free * placed], n)
                        else:
                            by_group = [coded[key + f + free * placed] for f, free in groups]
                            readings += map(by_group.__getitem__, bucket.gids)
                        continue
                self.spilled(key, base, bucket, caps, unit, present)

    def spilled(
        self,
        key: int,
        base: int,
        bucket: Choices,
        caps: list[int],
        unit: int,
        present: tuple[int, ...],
    ) -> None:
        """Kicker choices one by one, for free wildcards that may not all fit on their
        own ranks: the ranks they stand for then depend on the natural kickers."""
        order = self.orders[present]
        own = sum(caps[w] for w in present)
        gids = bucket.gids if len(bucket.groups) > 1 else [0] * len(bucket.codes)
        for code, g in zip(bucket.codes, gids, strict=True):
            forced, free = bucket.groups[g]
            room = caps
            if free > own:
                room = caps.copy()
                both = code + forced
                for r in range(15):
                    if code >> 8 * r & 255:
                        room[r] -= (both >> 8 * r & 255) // unit
            self.codes.append(base + code)
            self.readings.append(self.tb.coded[key + forced + place(room, free, unit, order)])
