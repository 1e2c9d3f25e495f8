"""Hand planning: split a hand into the fewest, strongest plays.

The planner sees a hand as *natural* rank counts (wildcards removed) plus a number
of wildcards. It searches the ways to cut the hand into chains (depth-first over
chain choices, memoised on the counts), then groups what is left into bombs,
triples, pairs and singles, hangs the lowest singles and pairs on triples and
planes as kickers, and lends the wildcards where they add most (a small knapsack
over the leftover groups; chains take wildcards during the search).

A plan is scored the way strong rule-based players value a hand: every play is
worth roughly its rank (low cards are a burden, bombs and jokers are control),
and every play costs ``TURN_COST``, since each play is a turn in which the hand
may lose the lead. The bot compares the scores of the hands its candidate moves
would leave.

Nothing here decides legality: the player turns a planned part into real cards
and asks the rules engine for the reading.
"""

from __future__ import annotations

from ddz.domain.cards import Rank, RankCounts
from ddz.domain.readings import BombClass, ComboType
from ddz.domain.ruleset import RuleSet

from .parts import TURN_COST, Chain, Part, Plan, bomb_value, chain_part, kept_parts, rank_value

_TOP_CHAIN = int(Rank.ACE)
_TWO = int(Rank.TWO)
_B, _R = int(Rank.BLACK_JOKER), int(Rank.RED_JOKER)
_KICKER_MAX = int(Rank.ACE)
"""Cards above this (2, jokers) are control cards: never planned as kickers."""

_NEG = float("-inf")

MEMO_LIMIT = 60_000
"""Planner cache entries kept before the cache is emptied (a few tens of MB at most)."""

WILDS_PER_CHAIN = 2
"""Most wildcards one planned chain may use: more is rarely worth it (four wildcards
are a bomb) and the search grows fast with them."""


_Planes = tuple[Chain, ...]
_Lend = tuple[tuple[int, int], ...]  # (rank, wildcards lent to that rank's group)
_Key = tuple[RankCounts, int, int, _Planes]  # counts, wildcards, next rank, planes taken
_Choice = tuple[Chain | None, _Key] | None  # chain taken (None: skip a rank), next state


class Planner:
    """Plans hands under one rule set and set of wildcard ranks.

    Caches results; the cache only makes it faster (same input, same plan).
    """

    def __init__(self, rules: RuleSet, wild_ranks: tuple[int, ...] = ()) -> None:
        self.rules = rules
        self.wild_ranks = tuple(sorted(wild_ranks))
        types = rules.combo_types
        self.chain_kinds = tuple(
            (width, min_len, kind)
            for width, min_len, kind in (
                (1, rules.min_solo_chain, ComboType.SOLO_CHAIN),
                (2, rules.min_pair_chain, ComboType.PAIR_CHAIN),
                (3, rules.min_triple_chain, ComboType.TRIPLE_CHAIN),
            )
            if kind in types
        )
        self.triple_single = ComboType.TRIPLE_SINGLE in types
        self.triple_pair = ComboType.TRIPLE_PAIR in types
        self.plane_singles = ComboType.PLANE_SINGLES in types
        self.plane_pairs = ComboType.PLANE_PAIRS in types
        ladder = rules.bomb_ladder
        bombs = [(i, t) for i, t in enumerate(ladder) if t.type is not ComboType.ROCKET]
        self.bomb_sizes = frozenset(t.size for _, t in bombs)
        plain = frozenset(t.size for _, t in bombs if t.type is ComboType.BOMB)
        self.sky_sizes = self.bomb_sizes - plain
        self.max_bomb = max(self.bomb_sizes, default=4)
        # value a bomb by its tier: natural bombs on the "hard" rung where there is
        # one, bombs made with wildcards on the lowest rung of their size (soft)
        self.soft_tier: dict[int, int] = {}
        self.hard_tier: dict[int, int] = {}
        for i, t in bombs:
            self.soft_tier.setdefault(t.size, i)
            if t.bomb_class in (None, BombClass.HARD):
                self.hard_tier.setdefault(t.size, i)
        self.pure_tier = max((i for i, t in bombs if t.size == 4), default=0)
        rockets = [(i, t) for i, t in enumerate(ladder) if t.type is ComboType.ROCKET]
        self.rocket_tier = rockets[0][0] if rockets else -1
        self.rocket_each = rockets[0][1].size // 2 if rockets else 0
        self._memo: dict[_Key, tuple[float, _Choice]] = {}
        self._leaf_memo: dict[tuple[RankCounts, int, _Planes], tuple[float, _Lend]] = {}
        self.work = 0
        """States searched so far (cache misses): callers bound their planning by it."""

    # -- public ------------------------------------------------------------------

    def plan(self, natural: RankCounts, wilds: int = 0) -> Plan:
        """Best plan for ``natural`` counts (wildcard ranks zeroed) plus ``wilds``."""
        score = self.score(natural, wilds)
        parts: list[Part] = []
        key: _Key = (natural, wilds, 0, ())
        while True:
            c, w, _, planes = key
            choice = self._memo[key][1]
            if choice is None:
                _, lend = self._leaf(c, w, planes)
                parts.extend(self._leaf_parts(c, w, planes, lend))
                break
            chain, key = choice
            if chain is not None and chain[0] != 3:
                parts.append(chain_part(chain))  # planes come with the leaf's wings
        return Plan(score, tuple(parts))

    def score(self, natural: RankCounts, wilds: int = 0) -> float:
        if len(self._memo) > MEMO_LIMIT:
            self._memo.clear()
            self._leaf_memo.clear()
        return self._search(natural, wilds, 0, ())

    # -- chains ------------------------------------------------------------------

    def _search(self, c: RankCounts, w: int, i: int, planes: _Planes) -> float:
        key = (c, w, i, planes)
        hit = self._memo.get(key)
        if hit is not None:
            return hit[0]
        self.work += 1
        j = i
        while j <= _TOP_CHAIN and c[j] == 0:
            j += 1
        if j > _TOP_CHAIN:
            best = self._leaf(c, w, planes)[0]
            self._memo[key] = (best, None)
            return best
        skip: _Key = (c, w, j + 1, planes)
        best = self._search(*skip)
        choice: _Choice = (None, skip)
        cap = min(w, WILDS_PER_CHAIN)
        for width, min_len, _ in self.chain_kinds:
            deficit = 0
            natural = 0
            taken: list[int] = []
            top = j
            while top <= _TOP_CHAIN:
                have = c[top]
                use = have if have < width else width
                deficit += width - use
                if deficit > cap:
                    break
                natural += use
                taken.append(use)
                if top - j + 1 >= min_len and natural > deficit:
                    rest = c[:j] + tuple(c[j + k] - t for k, t in enumerate(taken)) + c[top + 1 :]
                    chain: Chain = (width, j, top, tuple(taken))
                    if width == 3:
                        nxt: _Key = (rest, w - deficit, j, (*planes, chain))
                        score = self._search(*nxt)  # planes are scored with their wings
                    else:
                        nxt = (rest, w - deficit, j, planes)
                        score = self._search(*nxt) + rank_value(top) + 1.0 - TURN_COST
                    if score > best:
                        best = score
                        choice = (chain, nxt)
                top += 1
        self._memo[key] = (best, choice)
        return best

    # -- leftovers ----------------------------------------------------------------

    def _leaf(self, c: RankCounts, w: int, planes: _Planes) -> tuple[float, _Lend]:
        """Score of the leftover groups, and where to lend the ``w`` wildcards."""
        key = (c, w, planes)
        hit = self._leaf_memo.get(key)
        if hit is not None:
            return hit
        self.work += 1
        total = 0.0
        singles: list[int] = []
        pairs: list[int] = []
        triples: list[int] = []
        bombs: list[tuple[int, int]] = []
        for r in range(_TWO + 1):
            n = c[r]
            if n == 0:
                continue
            if n == 1:
                singles.append(r)
            elif n == 2:
                pairs.append(r)
            elif n == 3:
                triples.append(r)
            else:
                bombs.append((r, n))
                total += self._bomb_part_value(r, n, 0) - TURN_COST
        b, rj = c[_B], c[_R]
        if self.rocket_each and b >= self.rocket_each and rj >= self.rocket_each:
            total += bomb_value(self.rocket_tier, _R) - TURN_COST
            b -= self.rocket_each
            rj -= self.rocket_each
        for r, n in ((_B, b), (_R, rj)):
            if n:
                total += rank_value(r) - TURN_COST  # a joker single, or ct's joker pair
        # kickers: lowest eligible singles/pairs hang on planes, then on triples
        absorbed: dict[int, int] = {}  # item rank -> carrier rank (-1: a plane)
        for _, lo, hi, _ in planes:
            total += rank_value(hi) + 1.0 - TURN_COST
            length = hi - lo + 1
            for items, allowed in ((singles, self.plane_singles), (pairs, self.plane_pairs)):
                if not allowed:
                    continue
                free = [
                    r for r in items if r <= _KICKER_MAX and not lo <= r <= hi and r not in absorbed
                ]
                if len(free) >= length:
                    for r in free[:length]:
                        absorbed[r] = -1
                    break
        carried: dict[int, int] = {}  # triple rank -> kicker rank
        for t in triples:
            total += rank_value(t) - TURN_COST
            k = self._free_kicker(singles, pairs, absorbed, exclude=t)
            if k is not None:
                absorbed[k] = t
                carried[t] = k
        for r in singles:
            if r not in absorbed:
                total += rank_value(r) - TURN_COST
        for r in pairs:
            if r not in absorbed:
                total += rank_value(r) - TURN_COST
        result: tuple[float, _Lend]
        if w == 0:
            result = (total, ())
            self._leaf_memo[key] = result
            return result
        result = self._lend(total, w, singles, pairs, triples, bombs, absorbed, carried)
        self._leaf_memo[key] = result
        return result

    def _free_kicker(
        self, singles: list[int], pairs: list[int], absorbed: dict[int, int], exclude: int
    ) -> int | None:
        best: int | None = None
        if self.triple_single:
            for r in singles:
                if r > _KICKER_MAX:
                    break
                if r not in absorbed and r != exclude:
                    best = r
                    break
        if self.triple_pair:
            for r in pairs:
                if r > _KICKER_MAX or (best is not None and r > best):
                    break
                if r not in absorbed and r != exclude:
                    best = r
                    break
        return best

    def _bomb_part_value(self, rank: int, size: int, subs: int) -> float:
        """A group of ``size`` cards of one rank played as a bomb (split if too big)."""
        if size in self.bomb_sizes:
            tier = (self.soft_tier if subs else self.hard_tier).get(size, 0)
            return bomb_value(tier, rank)
        top = max((s for s in self.bomb_sizes if s < size), default=0)
        if top == 0:
            return rank_value(rank)
        return bomb_value(self.hard_tier.get(top, 0), rank) + rank_value(rank) - TURN_COST

    def _lend(
        self,
        base: float,
        w: int,
        singles: list[int],
        pairs: list[int],
        triples: list[int],
        bombs: list[tuple[int, int]],
        absorbed: dict[int, int],
        carried: dict[int, int],
    ) -> tuple[float, _Lend]:
        """Knapsack of wildcard loans over the leftover groups (one loan per group)."""
        free = [
            r
            for r in sorted(singles + pairs)
            if r <= _KICKER_MAX
            and r not in absorbed
            and ((r in singles and self.triple_single) or (r in pairs and self.triple_pair))
        ]

        def contrib(r: int) -> float:
            return 0.0 if r in absorbed else rank_value(r) - TURN_COST

        def carry_gain(r: int) -> float:
            """Worth of a new triple of rank ``r`` taking the lowest free kicker."""
            for f in free:
                if f != r:
                    return TURN_COST - rank_value(f)
            return 0.0

        options: list[list[tuple[int, float, int]]] = []  # per group: (cost, gain, rank)
        soft4 = bomb_value(self.soft_tier.get(4, 0), 0)
        for r in triples:
            lost = TURN_COST - rank_value(carried[r]) if r in carried else 0.0
            if 4 in self.bomb_sizes:
                options.append(
                    [(1, bomb_value(self.soft_tier.get(4, 0), r) - rank_value(r) - lost, r)]
                )
        for r in pairs[:3]:
            opts = [(1, rank_value(r) + carry_gain(r) - TURN_COST - contrib(r), r)]
            if 4 in self.bomb_sizes and w >= 2:
                opts.append((2, soft4 + 0.5 * r - TURN_COST - contrib(r), r))
            options.append(opts)
        for r in singles[:2]:
            opts = []
            if w >= 2:
                opts.append((2, rank_value(r) + carry_gain(r) - TURN_COST - contrib(r), r))
            if w >= 3 and 4 in self.bomb_sizes:
                opts.append((3, soft4 + 0.5 * r - TURN_COST - contrib(r), r))
            if opts:
                options.append(opts)
        for r, n in bombs:
            if n + 1 in self.bomb_sizes:
                options.append(
                    [(1, self._bomb_part_value(r, n + 1, 1) - self._bomb_part_value(r, n, 0), r)]
                )
        # best[k]: (gain, loans) using exactly k wildcards
        none: _Lend = ()
        best: list[tuple[float, _Lend]] = [(0.0, none)] + [(_NEG, none)] * w
        for opts in options:
            nxt = list(best)
            for k in range(w + 1):
                g0, loans = best[k]
                if g0 == _NEG:
                    continue
                for cost, gain, r in opts:
                    if k + cost <= w and g0 + gain > nxt[k + cost][0]:
                        nxt[k + cost] = (g0 + gain, (*loans, (r, cost)))
            best = nxt
        top: tuple[float, _Lend] = (_NEG, none)
        for k in range(w + 1):
            gain, loans = best[k]
            if gain == _NEG:
                continue
            score = base + gain + self._kept_value(w - k)
            if score > top[0]:
                top = (score, loans)
        return top

    def _kept_value(self, kept: int) -> float:
        """Wildcards not lent: played as their own rank (four are the top bomb)."""
        if kept == 0:
            return 0.0
        wild = self.wild_ranks[-1] if self.wild_ranks else _TWO
        value = 0.0
        if kept >= 4 and 4 in self.bomb_sizes:
            value += bomb_value(self.pure_tier, wild) - TURN_COST
            kept -= 4
        if kept:
            value += rank_value(wild) + 1.0 - TURN_COST
        return value

    # -- building the parts of the chosen leaf ---------------------------------------

    def _leaf_parts(self, c: RankCounts, w: int, planes: _Planes, lend: _Lend) -> list[Part]:
        counts = list(c)
        subs = [0] * len(c)
        for r, n in lend:
            counts[r] += n
            subs[r] += n
        kept = w - sum(n for _, n in lend)
        parts: list[Part] = []
        singles: list[int] = []
        pairs: list[int] = []
        triples: list[int] = []
        for r in range(_TWO + 1):
            n = counts[r]
            if n == 0:
                continue
            if n >= 4:
                size = n if n in self.bomb_sizes else max(s for s in self.bomb_sizes if s < n)
                kind = ComboType.SKY_BOMB if size in self.sky_sizes else ComboType.BOMB
                parts.append(
                    Part(
                        kind,
                        r,
                        1,
                        ((r, size),),
                        (r,) * min(subs[r], size),
                        value=self._bomb_part_value(r, size, subs[r]),
                    )
                )
                n -= size
                subs[r] = max(0, subs[r] - size)
            if n:
                {1: singles, 2: pairs, 3: triples}[n].append(r)
        b, rj = c[_B], c[_R]
        if self.rocket_each and b >= self.rocket_each and rj >= self.rocket_each:
            e = self.rocket_each
            parts.append(
                Part(
                    ComboType.ROCKET,
                    _R,
                    1,
                    ((_B, e), (_R, e)),
                    value=bomb_value(self.rocket_tier, _R),
                )
            )
            b -= e
            rj -= e
        for r, n in ((_B, b), (_R, rj)):
            if n:
                kind = ComboType.SINGLE if n == 1 else ComboType.PAIR
                parts.append(Part(kind, r, 1, ((r, n),), value=rank_value(r)))
        natural_items = [r for r in singles + pairs if subs[r] == 0]
        absorbed: dict[int, int] = {}
        for chain in planes:
            plane = chain_part(chain)
            inside = {r for r, _ in plane.ranks}
            done = plane
            for items, allowed, kind in (
                (singles, self.plane_singles, ComboType.PLANE_SINGLES),
                (pairs, self.plane_pairs, ComboType.PLANE_PAIRS),
            ):
                if not allowed:
                    continue
                free = [
                    r
                    for r in items
                    if r <= _KICKER_MAX
                    and r not in inside
                    and r not in absorbed
                    and r in natural_items
                ]
                if len(free) >= plane.length:
                    wings = free[: plane.length]
                    for r in wings:
                        absorbed[r] = -1
                    n = 1 if kind is ComboType.PLANE_SINGLES else 2
                    done = Part(
                        kind,
                        plane.main,
                        plane.length,
                        plane.ranks,
                        plane.subs,
                        kickers=tuple((r, n) for r in wings),
                        value=plane.value,
                    )
                    break
            parts.append(done)
        nat_singles = [r for r in singles if r in natural_items]
        nat_pairs = [r for r in pairs if r in natural_items]
        for t in triples:
            k = self._free_kicker(nat_singles, nat_pairs, absorbed, exclude=t)
            tsubs = (t,) * subs[t]
            if k is None:
                parts.append(Part(ComboType.TRIPLE, t, 1, ((t, 3),), tsubs, value=rank_value(t)))
                continue
            absorbed[k] = t
            n = 1 if k in nat_singles else 2
            kind = ComboType.TRIPLE_SINGLE if n == 1 else ComboType.TRIPLE_PAIR
            parts.append(Part(kind, t, 1, ((t, 3),), tsubs, kickers=((k, n),), value=rank_value(t)))
        for r in sorted(singles + pairs):
            if r in absorbed:
                continue
            n = (
                counts[r]
                if counts[r] < 4
                else counts[r] - max(s for s in self.bomb_sizes if s <= counts[r])
            )
            kind = ComboType.SINGLE if n == 1 else ComboType.PAIR
            parts.append(Part(kind, r, 1, ((r, n),), (r,) * subs[r], value=rank_value(r)))
        wild = self.wild_ranks[-1] if self.wild_ranks else _TWO
        parts.extend(kept_parts(kept, wild, self.pure_tier if 4 in self.bomb_sizes else None))
        return parts
