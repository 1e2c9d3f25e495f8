"""Endgame search: determinised sampling of the unseen cards, then exact play-out.

When few cards are left, the bot deals the unseen cards to the hidden hands at
random (consistent with every seat's card count and with the bottom cards the
landlord has not played yet), and for each such deal solves the open-card game
exactly: an AND/OR search (the landlord's side wins or not) with a transposition
table. Each candidate move scores the number of sampled deals it wins; the policy's
own choice is kept unless another move wins strictly more deals.

Every bound is a count (sampled deals, searched nodes), so the result depends only
on the position and the seeded ``random.Random``; the wall-clock cap of ``Budget``
is a safety net that abandons the search (and falls back to the policy) if hit.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddz.domain.cards import RankCounts
from ddz.domain.move import Move
from ddz.domain.moves import legal_moves
from ddz.domain.readings import Reading

from .situation import Situation

if TYPE_CHECKING:
    from .policy import Policy

_Hands = tuple[RankCounts, RankCounts, RankCounts]
_Codes = tuple[int, int, int]
_Trick = tuple[int, Reading]  # (small id of the reading's key, the reading)
_Allow = tuple[int | None, int | None, int | None]


@dataclass(frozen=True, slots=True)
class Found:
    move: Move | None  # None: pass
    wins: int
    samples: int


MOVES_PER_NODE = 4
MISS_NODES = 4
"""Listing a hand's legal moves costs about ``MISS_NODES`` searched nodes plus one per
``MOVES_PER_NODE`` moves (wildcard hands list many), so the node budget bounds the
work, not only the tree."""

MIN_SAMPLES = 3
"""A search that cannot finish this many sampled deals within budget gives up."""


@dataclass(frozen=True, slots=True)
class Budget:
    """How hard the endgame search may work on one decision.

    ``iterations`` (sampled deals x searched nodes) keeps decisions deterministic;
    ``max_ms`` is a safety cap on wall-clock time (None: no cap). A cap that fires
    makes the decision depend on the machine's speed, so keep it generous.
    """

    iterations: int = 4000
    samples: int = 12
    max_cards: int = 18  # search only when the bot and its enemies hold this few cards
    max_ms: float | None = 250.0


class _OutOfBudget(Exception):
    pass


def _sub(a: RankCounts, b: RankCounts) -> RankCounts:
    return tuple(x - y for x, y in zip(a, b, strict=True))


class Endgame:
    def __init__(self, policy: Policy, budget: Budget, rng: random.Random, start: float) -> None:
        self.policy = policy
        self.budget = budget
        self.rng = rng
        self.start = start
        self.rules = policy.rules
        self.wild = policy.wild_set
        self.nodes = 0
        self.limit = 0
        # shared by every search of this policy: legal moves depend only on their key
        self._moves: dict[tuple[int, int, bool], tuple[list[tuple[_Trick, int, bool]], int]]
        self._charged: set[tuple[int, int, bool]] = set()
        self._rids: dict[tuple[object, ...], int]
        self._moves, self._rids = policy.search_cache

    # -- when --------------------------------------------------------------------------

    def applies(self, sit: Situation) -> bool:
        b = self.budget
        if b.iterations <= 0 or b.samples <= 0 or sit.landlord < 0:
            return False
        return sum(sit.counts) <= b.max_cards

    # -- search ------------------------------------------------------------------------

    def choose(self, sit: Situation, legal: Callable[[], list[Move]]) -> Found | None:
        roots: list[Move | None] = list(self.policy.search_candidates(sit, legal))
        if sit.trick is not None:
            roots.append(None)
        if len(roots) <= 1:
            return None
        wins = [0] * len(roots)
        done = 0
        per_sample = max(1, self.budget.iterations // self.budget.samples)
        landlord = sit.landlord
        mine_is_landlord = sit.is_landlord
        for _ in range(self.budget.samples):
            hands = self._deal(sit)
            if hands is None:
                return None
            self.nodes = 0
            self.limit = per_sample
            table: dict[tuple[object, ...], bool] = {}
            results = []
            try:
                for move in roots:
                    results.append(self._after(sit, hands, move, landlord, table))
            except _OutOfBudget:
                # the position is too big for the budget: later deals would be too
                if done < MIN_SAMPLES:
                    return None
                break
            if self._late():
                break
            done += 1
            for i, landlord_wins in enumerate(results):
                wins[i] += landlord_wins == mine_is_landlord
        if done == 0:
            return None
        preferred = self.policy.choose(sit, legal)
        pref_index = next((i for i, m in enumerate(roots) if _same(m, preferred)), None)
        best = max(range(len(roots)), key=lambda i: wins[i])
        if pref_index is not None and wins[pref_index] >= wins[best]:
            best = pref_index
        return Found(roots[best], wins[best], done)

    def _late(self) -> bool:
        cap = self.budget.max_ms
        return cap is not None and (time.perf_counter() - self.start) * 1000.0 > cap

    def _deal(self, sit: Situation) -> _Hands | None:
        """Deal the unseen cards to the hidden hands (the landlord keeps its bottom)."""
        hands: list[RankCounts] = [sit.known[s] or () for s in range(3)]
        hidden = sit.hidden_seats()
        pool = list(sit.pool)
        fixed: dict[int, list[int]] = {s: [0] * len(pool) for s in hidden}
        if sit.landlord in hidden and any(sit.landlord_bottom):
            for r, n in enumerate(sit.landlord_bottom):
                take = min(n, pool[r])
                fixed[sit.landlord][r] += take
                pool[r] -= take
        cards = [r for r, n in enumerate(pool) for _ in range(n)]
        self.rng.shuffle(cards)
        for s in hidden:
            need = sit.counts[s] - sum(fixed[s])
            if need < 0 or need > len(cards):
                return None
            for r in cards[:need]:
                fixed[s][r] += 1
            cards = cards[need:]
            hands[s] = tuple(fixed[s])
        if any(sum(hands[s]) != sit.counts[s] for s in range(3)):
            return None
        return (hands[0], hands[1], hands[2])

    def _after(
        self,
        sit: Situation,
        hands: _Hands,
        move: Move | None,
        landlord: int,
        table: dict[tuple[object, ...], bool],
    ) -> bool:
        """Does the landlord's side win after the bot makes ``move``?"""
        seat = sit.seat
        codes = (_code(hands[0]), _code(hands[1]), _code(hands[2]))
        allow: _Allow = (sit.bombs_left[0], sit.bombs_left[1], sit.bombs_left[2])
        trick = None if sit.trick is None else self._trick_of(sit.trick)
        if move is None:
            passes = sit.passes + 1
            if passes == 2:
                return self._solve(codes, sit.trick_seat, None, -1, 0, allow, landlord, table)
            return self._solve(
                codes, (seat + 1) % 3, trick, sit.trick_seat, passes, allow, landlord, table
            )
        left = codes[seat] - _code(move.cards)
        if left == 0:
            return seat == landlord
        if move.reading.is_bomb:
            allow = _spend(allow, seat)
        return self._solve(
            _put(codes, seat, left),
            (seat + 1) % 3,
            self._trick_of(move.reading),
            seat,
            0,
            allow,
            landlord,
            table,
        )

    def _trick_of(self, reading: Reading) -> _Trick:
        key = reading.key()
        rid = self._rids.get(key)
        if rid is None:
            rid = self._rids[key] = len(self._rids)
        return (rid, reading)

    def _solve(
        self,
        hands: _Codes,
        turn: int,
        trick: _Trick | None,
        owner: int,
        passes: int,
        allow: _Allow,
        landlord: int,
        table: dict[tuple[object, ...], bool],
    ) -> bool:
        key = (hands, turn, trick[0] if trick else -1, owner, passes, allow)
        hit = table.get(key)
        if hit is not None:
            return hit
        self.nodes += 1
        if self.nodes > self.limit:
            raise _OutOfBudget
        want = turn == landlord  # the mover wants this outcome of "landlord wins"
        options = self._legal(hands[turn], trick, allow[turn] == 0)
        if options and options[0][1] == 0:
            result = want  # the mover goes out
        else:
            result = not want
            nxt = (turn + 1) % 3
            for played, left, bomb in options:
                a = _spend(allow, turn) if bomb else allow
                out = self._solve(_put(hands, turn, left), nxt, played, turn, 0, a, landlord, table)
                if out == want:
                    result = want
                    break
            else:
                if trick is not None:
                    if passes + 1 == 2:
                        result = self._solve(hands, owner, None, -1, 0, allow, landlord, table)
                    else:
                        result = self._solve(
                            hands, nxt, trick, owner, passes + 1, allow, landlord, table
                        )
        table[key] = result
        return result

    def _legal(
        self, hand: int, trick: _Trick | None, no_bombs: bool
    ) -> list[tuple[_Trick, int, bool]]:
        """(play as a trick, hand code left, is a bomb) per move worth searching, best
        first: going out, then big plays, which end tricks and hands sooner."""
        key = (hand, trick[0] if trick else -1, no_bombs)
        hit = self._moves.get(key)
        if hit is not None:
            out, cost = hit
            if key not in self._charged:  # the work is charged as if listed now, so that
                self._charged.add(key)  # a warm cache never changes what the search does
                self.nodes += cost
            return out
        moves = legal_moves(_decode(hand), self.rules, self.wild, trick[1] if trick else None)
        cost = MISS_NODES + len(moves) // MOVES_PER_NODE  # listing moves is work too
        self._charged.add(key)
        self.nodes += cost
        if no_bombs:
            moves = [m for m in moves if not m.reading.is_bomb]
        moves = sorted(self.policy.prune(moves, keep=2), key=lambda m: -m.reading.size)
        out = [(self._trick_of(m.reading), hand - _code(m.cards), m.reading.is_bomb) for m in moves]
        out.sort(key=lambda t: t[1] != 0)
        self._moves[key] = (out, cost)
        return out


def _code(counts: RankCounts) -> int:
    """Rank counts packed 4 bits a rank: subtraction of a contained play is exact."""
    code = 0
    for r in range(len(counts) - 1, -1, -1):
        code = (code << 4) | counts[r]
    return code


def _decode(code: int) -> RankCounts:
    return tuple((code >> (4 * r)) & 15 for r in range(15))


def _put(hands: _Codes, seat: int, hand: int) -> _Codes:
    if seat == 0:
        return (hand, hands[1], hands[2])
    if seat == 1:
        return (hands[0], hand, hands[2])
    return (hands[0], hands[1], hand)


def _spend(allow: _Allow, seat: int) -> _Allow:
    left = allow[seat]
    if left is None:
        return allow
    out = list(allow)
    out[seat] = left - 1
    return (out[0], out[1], out[2])


def _same(a: Move | None, b: Move | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.cards == b.cards and a.reading.key() == b.reading.key()
