"""What the rules engine derives once per rule set (RULES.md §3-§5).

``lookup_for(rules)`` turns a ``RuleSet`` into the data the classifier and the move
generators read: which types exist, chain minimums, bomb sizes and tiers, kicker caps,
and interned ``Reading`` objects. Building it once per rule set (cached by the rule set,
which is hashable) keeps the hot loops free of look-ups and of object churn: a natural
reading is made once and shared by every move and every hand that plays it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from functools import cache
from typing import Final

from ddz.domain.cards import Rank
from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.ruleset import RuleSet

# Final: the compiled modules (setup.py) read these as constants, not module globals.
TWO: Final = int(Rank.TWO)
ACE: Final = int(Rank.ACE)
BJ: Final = int(Rank.BLACK_JOKER)
RJ: Final = int(Rank.RED_JOKER)

# Comparison order of readings for listing (§3 Readings): bomb class first, then ladder
# tier, then main rank; the rest only makes the order total and deterministic.
_TYPE_ORDER = {t: i for i, t in enumerate(ComboType)}

CHAIN_TYPES = {1: ComboType.SOLO_CHAIN, 2: ComboType.PAIR_CHAIN, 3: ComboType.TRIPLE_CHAIN}

_RANKS = tuple(Rank)
_WILD_READINGS_KEPT = 1 << 17  # readings with substitutes kept per rule set, at most

# Rank counts as one int, a byte per rank (rank r at bits 8r..8r+7): the wildcard
# generator adds and compares whole plays, substitutions and kicker choices with one
# int operation each instead of a loop over 15 ranks.
ONE: Final = tuple(1 << (8 * r) for r in range(15))
"""The code of one card of each rank; ``code(counts) == sum(n * ONE[r])``."""
FAMILY_SHIFT: Final = 8 * 15  # family ids sit above the 15 rank bytes of a substitutes code
_SUBSTITUTES: Final = (1 << FAMILY_SHIFT) - 1


_unpack: Callable[[bytes], tuple[int, ...]] = struct.Struct("15B").unpack
_to_bytes: Callable[[int, int, str], bytes] = int.to_bytes  # type: ignore[assignment]


def counts_of_code(code: int) -> tuple[int, ...]:
    return _unpack(_to_bytes(code, 15, "little"))


def code_of(counts: Iterable[int]) -> int:
    """The code of rank counts (each below 256): ``counts_of_code``'s inverse."""
    return int.from_bytes(bytes(counts), "little")


def sort_key(reading: Reading) -> tuple[int, int, int, int, int, int]:
    """Ascending order of readings; lists of readings are sorted by it, highest first."""
    return (
        reading.is_bomb,
        reading.tier,
        reading.main,
        reading.length,
        reading.size,
        _TYPE_ORDER[reading.type],
    )


class Lookup:
    """Derived, read-only data for one rule set. Never mutated after construction except
    for the interning caches, which only ever grow with equal values."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        types = rules.combo_types
        self.types = types
        # Bomb classes matter only where the ladder tells them apart (wildcard rule sets).
        self.has_classes = any(t.bomb_class is not None for t in rules.bomb_ladder)
        self.natural_class = BombClass.HARD if self.has_classes else None
        # (type, size) of every bomb-class play made of one rank, low tier first.
        seen: list[tuple[ComboType, int]] = []
        rocket_size = 0
        for tier in rules.bomb_ladder:
            if tier.type is ComboType.ROCKET:
                rocket_size = rocket_size or tier.size
            elif tier.type in types and (tier.type, tier.size) not in seen:
                seen.append((tier.type, tier.size))
        self.rank_bombs: tuple[tuple[ComboType, int], ...] = tuple(seen)
        # A rocket is all the jokers of the deck: half small, half big (§3, §5: never wild).
        self.rocket_half = rocket_size // 2 if ComboType.ROCKET in types else 0
        if self.rocket_half > rules.joker_copies:
            self.rocket_half = 0
        self.chain_min: dict[int, int] = {}
        for copies, ctype, minimum in (
            (1, ComboType.SOLO_CHAIN, rules.min_solo_chain),
            (2, ComboType.PAIR_CHAIN, rules.min_pair_chain),
            (3, ComboType.TRIPLE_CHAIN, rules.min_triple_chain),
        ):
            if ctype in types:
                self.chain_min[copies] = max(2, minimum)
        self.plane_min = max(2, rules.min_triple_chain)
        k = rules.kickers
        self.four_as_kickers = k.four_as_kickers
        self.jokers_as_kickers = k.jokers_as_kickers
        self.kicker_of_main_rank = k.kicker_of_main_rank
        # Most cards of one rank among single kickers: a triple may be wings, a four never
        # (§3 Decision), unless the flag says so.
        self.single_cap = 4 if k.four_as_kickers else 3
        # Most pairs of one rank among pair kickers (two pairs of one rank are a four).
        self.pair_units = 2 if k.four_as_kickers else 1
        self.rank_copies = rules.rank_copies
        # Moves of the same (cards, reading) can only arise twice when a flag lets a main
        # rank be a kicker; the generators skip the de-duplication otherwise.
        self.may_repeat = k.kicker_of_main_rank or k.four_as_kickers
        self._tiers: dict[tuple[ComboType, int, BombClass | None], int] = {}
        self._readings: dict[object, Reading | None] = {}
        self._wild_readings: dict[object, Reading | None] = {}
        self._families: dict[tuple[ComboType, int, int, int], int] = {}
        self._family_keys: list[tuple[ComboType, int, int, int]] = []
        self.coded = _CodedReadings(self)
        self._caps: dict[tuple[bool, int, int, int], list[int]] = {}

    # -- bombs ------------------------------------------------------------------------

    def tier(self, ctype: ComboType, size: int, bomb_class: BombClass | None) -> int:
        """Ladder position of a bomb-class play (§4), or -1 if the ladder has no place
        for it (which makes it no legal reading)."""
        key = (ctype, size, bomb_class)
        found = self._tiers.get(key)
        if found is None:
            found = -1
            for i, tier in enumerate(self.rules.bomb_ladder):
                if (
                    tier.type is ctype
                    and tier.size == size
                    and (tier.bomb_class is None or tier.bomb_class is bomb_class)
                ):
                    found = i
                    break
            self._tiers[key] = found
        return found

    # -- readings ---------------------------------------------------------------------

    def reading(
        self,
        ctype: ComboType,
        main: int,
        length: int,
        size: int,
        bomb_class: BombClass | None = None,
        substitutes: tuple[int, ...] = (),
    ) -> Reading | None:
        """The interned reading, or None when a bomb has no tier on the ladder.

        For bomb-class types the caller gives the make (soft/hard/mixed/pure); it is
        dropped in rule sets whose ladder does not tell makes apart (classic, ct).
        """
        cache_key = (ctype, main, length, size, bomb_class, substitutes)
        # Natural readings are few and kept for good; readings with substitutes are
        # many (one per way of completing a play), so their cache is bounded.
        cache = self._wild_readings if substitutes else self._readings
        found = cache.get(cache_key, False)
        if found is not False:
            return found  # type: ignore[return-value]
        result: Reading | None
        subs = tuple(map(_RANKS.__getitem__, substitutes))
        if ctype.is_bomb_class:
            cls = bomb_class if self.has_classes and ctype is not ComboType.ROCKET else None
            tier = self.tier(ctype, size, cls)
            result = (
                None if tier < 0 else Reading(ctype, _RANKS[main], length, size, cls, subs, tier)
            )
        else:
            result = Reading(ctype, _RANKS[main], length, size, None, subs)
        if substitutes and len(cache) >= _WILD_READINGS_KEPT:
            cache.clear()
        cache[cache_key] = result
        return result

    def family(self, ctype: ComboType, main: int, length: int, size: int) -> int:
        """A number for the non-bomb readings of one type, main rank, length and size;
        plus a substitutes code, it is a key of ``coded``."""
        key = (ctype, main, length, size)
        found = self._families.get(key)
        if found is None:
            found = self._families[key] = len(self._family_keys) << FAMILY_SHIFT
            self._family_keys.append(key)
        return found

    def natural(self, ctype: ComboType, main: int, length: int, size: int) -> Reading:
        """A reading of natural cards (bombs hard where classes matter); must exist."""
        cls = self.natural_class if ctype is not ComboType.ROCKET else None
        found = self.reading(ctype, main, length, size, cls)
        assert found is not None, (ctype, main, size)
        return found

    # -- kickers ----------------------------------------------------------------------

    def kicker_caps(self, pairs: bool, copies: int, lo: int, length: int) -> list[int]:
        """``pair_caps`` or ``single_caps`` of the main ranks lo..lo+length-1, made once
        (shared: never to be changed)."""
        key = (pairs, copies, lo, length)
        caps = self._caps.get(key)
        if caps is None:
            main = range(lo, lo + length)
            caps = (
                self.pair_caps(main, copies)
                if pairs
                else self.single_caps(main, copies, length > 1)
            )
            self._caps[key] = caps
        return caps

    def single_caps(self, main_ranks: range, copies: int, plane: bool) -> list[int]:
        """Most single kickers of each rank beside a main part of ``copies`` cards per
        rank (§3 Kickers).

        Main ranks: none (unless the flag; then as many as the deck leaves). Plane wings
        may not hold a triple next to the plane (a longer chain), except of 2s.
        """
        caps = [self.single_cap] * 15
        if self.kicker_of_main_rank:
            for r in main_ranks:
                caps[r] = min(self.single_cap, max(0, self.rank_copies - copies))
        else:
            for r in main_ranks:
                caps[r] = 0
        if plane:
            for r in (main_ranks.start - 1, main_ranks.stop):
                if 0 <= r <= ACE:
                    caps[r] = min(caps[r], 2)
        return caps

    def pair_caps(self, main_ranks: range, copies: int) -> list[int]:
        """Most pair kickers of each rank beside the given main part (§3 Kickers)."""
        caps = [self.pair_units] * 15
        for r in main_ranks:
            spare = max(0, self.rank_copies - copies) // 2 if self.kicker_of_main_rank else 0
            caps[r] = min(self.pair_units, spare)
        return caps


_new = object.__new__
_set = object.__setattr__


def _new_reading(
    ctype: ComboType, main: Rank, length: int, size: int, substitutes: tuple[Rank, ...]
) -> Reading:
    """``Reading(ctype, main, length, size, None, substitutes)``, made as its frozen
    dataclass ``__init__`` makes it (each field through ``object.__setattr__``) but from
    compiled code, where that ``__init__`` is Python: it halves the cost of the thousand
    new readings a hand with wildcards meets. tests/unit/test_classify.py checks that it
    sets every field."""
    reading: Reading = _new(Reading)
    _set(reading, "type", ctype)
    _set(reading, "main", main)
    _set(reading, "length", length)
    _set(reading, "size", size)
    _set(reading, "bomb_class", None)
    _set(reading, "substitutes", substitutes)
    _set(reading, "tier", -1)
    return reading


class _CodedReadings(dict[int, Reading]):
    """Interned non-bomb readings by ``family + substitutes code``: the wildcard
    generator's look-up, an int key where ``reading()`` builds a tuple key per call."""

    def __init__(self, tb: Lookup) -> None:
        super().__init__()
        self.tb = tb

    def __missing__(self, key: int) -> Reading:
        # Made here rather than by ``Lookup.reading``: this table is the only cache
        # such a reading needs (a hand with wildcards meets a thousand new ones).
        ctype, main, length, size = self.tb._family_keys[key >> FAMILY_SHIFT]
        substitutes: tuple[Rank, ...] = ()
        for r, n in enumerate(counts_of_code(key & _SUBSTITUTES)):
            if n:
                substitutes += (_RANKS[r],) * n
        reading = _new_reading(ctype, _RANKS[main], length, size, substitutes)
        if len(self) >= _WILD_READINGS_KEPT:
            self.clear()
        self[key] = reading
        return reading


@cache
def lookup_for(rules: RuleSet) -> Lookup:
    return Lookup(rules)
