"""The kickers of plays with wildcards (RULES.md §3, §5): which natural kicker cards and
how many wildcards each choice of kickers takes, grouped by the wildcards they need, and
where free wildcards stand. Rank counts are coded as ints (``lookup.ONE``)."""

from __future__ import annotations

from itertools import compress

from ddz.domain.lookup import ONE, TWO, counts_of_code


def place(room: list[int], free: int, unit: int, order: list[int]) -> int:
    """The code of the ranks for ``free`` kicker places of wildcards, taken in ``order``
    (their own ranks first, then low to high) where the caps in ``room`` allow."""
    left = list(room)
    placed = 0
    for _ in range(free):
        for r in order:
            if left[r] > 0:
                left[r] -= 1
                placed += unit * ONE[r]
                break
    return placed


class Choices:
    """The kicker choices that take the same number of wildcards, as columns: the code
    of the natural kicker cards and the group of each. A group is (code of the
    wildcards that complete natural cards to pairs, free places for wildcards); the
    choices of a group share their reading."""

    __slots__ = ("_index", "_without", "codes", "gids", "groups", "lows", "most_free")

    def __init__(self, groups: list[tuple[int, int]] | None = None) -> None:
        self.codes: list[int] = []
        self.gids: list[int] = []
        # Places the natural kickers take on ranks 3..2 (pairs); single kickers: None,
        # counted from the codes when asked.
        self.lows: list[int] | None = []
        self.groups: list[tuple[int, int]] = [] if groups is None else groups
        self.most_free = 0
        self._index: dict[tuple[int, int], int] = {}
        self._without: dict[int, Choices] = {}

    def group(self, forced: int, free: int) -> int:
        key = (forced, free)
        gid = self._index.get(key)
        if gid is None:
            gid = self._index[key] = len(self.groups)
            self.groups.append(key)
            self.most_free = max(self.most_free, free)
        return gid

    def keep(self, flags: list[bool]) -> Choices:
        """The choices whose flag is set, in order."""
        kept = Choices(self.groups)
        kept.most_free = self.most_free
        kept.codes = list(compress(self.codes, flags))
        if len(self.groups) > 1:
            kept.gids = list(compress(self.gids, flags))
        kept.lows = None if self.lows is None else list(compress(self.lows, flags))
        return kept

    def without(self, mask: int) -> Choices:
        """The choices with no natural kicker of the ranks in ``mask`` (255 in each of
        their bytes), made once per mask."""
        found = self._without.get(mask)
        if found is None:
            found = self._without[mask] = self.keep([not c & mask for c in self.codes])
        return found

    def with_room(self, room_low: int) -> Choices:
        """The choices whose free wildcards find places on ranks 3..2 beside the
        natural kickers."""
        lows = self.lows
        if lows is None:
            # Single kickers: every natural kicker but a joker takes a place.
            lows = [sum(counts_of_code(c)[: TWO + 1]) for c in self.codes]
        if len(self.groups) == 1:
            free = [self.groups[0][1]] * len(self.codes)
        else:
            free = [self.groups[g][1] for g in self.gids]
        return self.keep([room_low - n >= f for n, f in zip(lows, free, strict=True)])


class PairOption:
    """One way to take pair kickers of one rank: ``units`` pairs, ``low`` of them on
    ranks 3..2, natural cards ``natural`` (a code) and ``wild`` wildcards standing for
    the rank (``forced``, a code); ``joker`` 1 for the black joker, 2 for the red."""

    __slots__ = ("forced", "joker", "low", "natural", "units", "wild")

    def __init__(
        self, units: int, low: int, natural: int, wild: int, forced: int, joker: int
    ) -> None:
        self.units = units
        self.low = low
        self.natural = natural
        self.wild = wild
        self.forced = forced
        self.joker = joker


class PairWalk:
    """Every choice of pair kickers, depth first: each rank's options in turn."""

    def __init__(
        self, options: list[list[PairOption]], found: list[Choices], budget: int, jokers_ok: bool
    ) -> None:
        self.options = options
        self.found = found
        self.budget = budget
        self.jokers_ok = jokers_ok

    def walk(
        self, start: int, left: int, low: int, nat: int, forced: int, wild: int, jokers: int
    ) -> None:
        # The pairs chosen so far, the ``left`` others made of two wildcards each (both
        # jokers are never kickers together, §3); then each way to add one more
        # natural-backed pair on a higher rank.
        budget = self.budget
        if left * 2 + wild <= budget and (jokers != 3 or self.jokers_ok):
            choices = self.found[wild + 2 * left]
            choices.codes.append(nat)
            choices.gids.append(choices.group(forced, left))
            choices.lows.append(low)  # type: ignore[union-attr]
        if not left:
            return
        options = self.options
        for j in range(start, len(options)):
            for o in options[j]:
                if o.units <= left and wild + o.wild <= budget:
                    self.walk(
                        j + 1,
                        left - o.units,
                        low + o.low,
                        nat + o.natural,
                        forced + o.forced,
                        wild + o.wild,
                        jokers | o.joker,
                    )
