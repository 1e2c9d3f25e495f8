"""Card counting: what the enemies could still beat a play with.

An enemy whose hand the bot cannot see may hold any of the unseen cards (the pool),
up to its card count; a shown hand is known exactly. A play is a *control* when no
enemy could beat it: no higher play of its type can be made from what the enemy
may hold, and no bomb either (or the enemy has no bomb allowance left, §7).
"""

from __future__ import annotations

from dataclasses import dataclass

from ddz.domain.cards import RankCounts
from ddz.domain.readings import ComboType, Reading
from ddz.domain.ruleset import RuleSet

from .plan import Planner

_TWO, _B, _R, _ACE = 12, 13, 14, 11

_CHAIN_WIDTH = {
    ComboType.SOLO_CHAIN: 1,
    ComboType.PAIR_CHAIN: 2,
    ComboType.TRIPLE_CHAIN: 3,
    ComboType.PLANE_SINGLES: 3,
    ComboType.PLANE_PAIRS: 3,
}
_SET_WIDTH = {
    ComboType.SINGLE: 1,
    ComboType.PAIR: 2,
    ComboType.TRIPLE: 3,
    ComboType.TRIPLE_SINGLE: 3,
    ComboType.TRIPLE_PAIR: 3,
    ComboType.FOUR_TWO_SINGLES: 4,
    ComboType.FOUR_TWO_PAIRS: 4,
}


BombKey = tuple[int, int]
NO_BOMB: BombKey = (-1, -1)


@dataclass(frozen=True, slots=True)
class Holder:
    """What one other seat may hold: ``cards`` (exact if ``exact``), ``count`` cards."""

    seat: int
    cards: RankCounts
    count: int
    exact: bool
    bombs_ok: bool


class Counter:
    """Answers "can this seat beat that play?" from the cards it may hold."""

    def __init__(self, rules: RuleSet, planner: Planner, wild: tuple[int, ...]) -> None:
        self.rules = rules
        self.planner = planner
        self.wild = wild
        self.joker_pairs = rules.joker_copies >= 2
        self._best_bomb: dict[tuple[RankCounts, int], BombKey] = {}

    def wilds_in(self, cards: RankCounts) -> int:
        return sum(cards[w] for w in self.wild)

    def best_bomb(self, cards: RankCounts, count: int) -> BombKey:
        """The strongest bomb-class play ``cards`` could make with ``count`` cards."""
        key = (cards, count)
        hit = self._best_bomb.get(key)
        if hit is not None:
            return hit
        p = self.planner
        best = NO_BOMB
        e = p.rocket_each
        if e and cards[_B] >= e and cards[_R] >= e and count >= 2 * e:
            best = (p.rocket_tier, _R)
        w = self.wilds_in(cards)
        sizes = sorted(s for s in p.bomb_sizes if s <= count)
        if sizes:
            for r in range(_TWO + 1):
                have = cards[r]
                if r in self.wild:
                    if have >= 4 and 4 in p.bomb_sizes:
                        cand = (p.pure_tier, r)
                        best = max(best, cand)
                    continue
                for s in sizes:
                    if have >= s:
                        best = max(best, (p.hard_tier.get(s, 0), r))
                    elif have >= 1 and have + w >= s:
                        best = max(best, (p.soft_tier.get(s, 0), r))
        if len(self._best_bomb) > 20_000:
            self._best_bomb.clear()
        self._best_bomb[key] = best
        return best

    def can_beat(self, holder: Holder, play: Reading) -> bool:
        """Could ``holder`` beat ``play``? (Conservative when its hand is hidden.)"""
        if holder.bombs_ok and self.best_bomb(holder.cards, holder.count) > self.bomb_key(play):
            return True
        if play.is_bomb or play.size > holder.count:
            return False
        return self._same_type_higher(holder.cards, play)

    def bomb_key(self, play: Reading) -> BombKey:
        return (play.tier, int(play.main)) if play.is_bomb else NO_BOMB

    def _same_type_higher(self, cards: RankCounts, play: Reading) -> bool:
        ctype = play.type
        main = int(play.main)
        w = self.wilds_in(cards)
        width = _SET_WIDTH.get(ctype)
        if width is not None:
            top = _R if width == 1 else (_R if width == 2 and self.joker_pairs else _TWO)
            for r in range(main + 1, top + 1):
                have = cards[r]
                if have >= width:
                    return True
                if r <= _TWO and r not in self.wild and have >= 1 and have + w >= width:
                    return True
            return False
        width = _CHAIN_WIDTH.get(ctype)
        if width is None:
            return False
        length = play.length
        for top in range(main + 1, _ACE + 1):
            lo = top - length + 1
            if lo < 0:
                continue
            deficit = 0
            for r in range(lo, top + 1):
                have = cards[r] if r not in self.wild else 0
                if have < width:
                    deficit += width - have
                    if deficit > w:
                        break
            if deficit <= w:
                return True
        return False
