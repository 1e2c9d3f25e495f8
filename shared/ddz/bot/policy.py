"""Choosing a play: lead from the hand's plan, follow by what a move leaves behind.

* Leading: the bot plans its hand (``plan.Planner``) and leads one part of the plan.
  When every part but one is a control (no enemy can beat it, ``threats.Counter``)
  it plays the controls first and wins; otherwise it sheds its weakest part, keeping
  controls and bombs back, avoiding the play an enemy close to going out could beat,
  and feeding a partner who is close to going out.
* Following: each legal move is scored by how the plan of the cards it leaves
  compares with the plan of the whole hand; passing scores nothing. A farmer lets a
  partner's play stand; the urge to beat (and to bomb) grows as the player to beat
  gets close to going out.
"""

from __future__ import annotations

from collections import Counter as Multiset
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ddz.domain.cards import Rank, RankCounts
from ddz.domain.classify import classify
from ddz.domain.move import Move
from ddz.domain.readings import ComboType, Reading

from .parts import TURN_COST, Part, split_wild
from .plan import Planner
from .situation import Situation
from .threats import Counter, Holder

FULL_EVALS = 10
"""Following, at most this many moves outside the plan are planned out (cheapest first)."""

KEEP_PER_MAIN = 4
"""Following, at most this many moves per reading are weighed (see ``prune``)."""

WIN_LINE = 100.0
"""Bonus for a move after which the bot can play out its hand unbeaten."""


@dataclass(frozen=True, slots=True)
class Weights:
    """Tunable constants of the policy (swept against ``rlcard-rule``, see docs/BOT.md)."""

    size_bonus: float = 0.6  # per extra card of a lead, up to 4 cards
    keep_control: float = 8.0  # leading a control early wastes it
    keep_bomb: float = 30.0
    feed_partner: float = 12.0
    block_enemy: float = 20.0
    tempo: float = 1.5  # value of taking the lead when following
    bomb_risk: float = 3.0  # a bomb doubles the stake (and spends a control)
    danger_close: float = 20.0  # the player to beat holds <= 2 cards
    danger_near: float = 6.0  # ... <= 4 cards
    danger_far: float = 3.0  # ... <= far_cards: an enemy running its hand down
    far_cards: int = 7
    overtake_min: float = 4.0  # top a partner only with a play this cheap (99: never)
    partner_short: int = 3  # never top a partner holding this few cards


def sub(a: RankCounts, b: RankCounts) -> RankCounts:
    return tuple(x - y for x, y in zip(a, b, strict=True))


class Policy:
    def __init__(self, planner: Planner, weights: Weights = Weights()) -> None:
        self.planner = planner
        self.rules = planner.rules
        self.wild = planner.wild_ranks
        self.wild_set = frozenset(Rank(r) for r in planner.wild_ranks)
        self.counter = Counter(planner.rules, planner, planner.wild_ranks)
        self.w = weights
        self._search_moves: dict[Any, Any] = {}
        self._search_rids: dict[Any, int] = {}

    @property
    def search_cache(self) -> tuple[dict[Any, Any], dict[Any, int]]:
        """Caches the endgame search keeps between decisions (pure: only speed)."""
        if len(self._search_moves) > 20_000:
            self._search_moves.clear()  # reading ids stay valid: they are never reused
        return self._search_moves, self._search_rids

    # -- shared pieces ------------------------------------------------------------------

    def hand_score(self, hand: RankCounts) -> float:
        natural, wilds = split_wild(hand, self.wild)
        return self.planner.score(natural, wilds)

    def enemies(self, sit: Situation) -> list[Holder]:
        out = []
        for seat in sit.enemies():
            known = sit.known[seat]
            if known is not None:
                cards, exact = known, True
            else:
                cards, exact = sit.pool, False
            allowance = sit.bombs_left[seat]
            out.append(Holder(seat, cards, sit.counts[seat], exact, allowance != 0))
        return out

    def is_control(self, reading: Reading, holders: list[Holder]) -> bool:
        return not any(self.counter.can_beat(h, reading) for h in holders)

    def part_cards(self, part: Part, hand: RankCounts) -> RankCounts | None:
        """The physical cards of a planned part (wildcards taken from the hand)."""
        counts = [0] * len(hand)
        if part.natural_wild:
            need = sum(n for _, n in part.ranks)
            for w in sorted(self.wild, key=lambda r: -hand[r]):
                take = min(need, hand[w])
                counts[w] += take
                need -= take
            return tuple(counts) if need == 0 else None
        subs = Multiset(part.subs)
        for r, n in part.ranks:
            counts[r] += n - subs[r]
        for r, n in part.kickers:
            counts[r] += n
        need = len(part.subs)
        for w in sorted(self.wild, key=lambda r: hand[r]):  # spend the thinner rank first
            take = min(need, hand[w] - counts[w])
            if take > 0:
                counts[w] += take
                need -= take
        if need or any(c > h for c, h in zip(counts, hand, strict=True)):
            return None
        return tuple(counts)

    def part_reading(self, part: Part) -> Reading:
        """A stand-in reading of a planned part, good enough to ask who could beat it."""
        p = self.planner
        tier = -1
        if part.type is ComboType.ROCKET:
            tier = p.rocket_tier
        elif part.is_bomb:
            size = part.size
            if part.natural_wild:
                tier = p.pure_tier
            else:
                tier = (p.soft_tier if part.subs else p.hard_tier).get(size, 0)
        return Reading(part.type, Rank(part.main), part.length, part.size, tier=tier)

    @staticmethod
    def pick_reading(options: list[Move], part: Part | None) -> Move:
        """Among moves with the same cards, the one meant by ``part``, highest main."""
        if part is not None:
            same = [
                m
                for m in options
                if m.reading.type is part.type and m.reading.length == part.length
            ]
            if same:
                return max(same, key=lambda m: m.reading.main)
        plain = [m for m in options if not m.reading.is_bomb]
        return max(plain or options, key=lambda m: (m.reading.tier, m.reading.main))

    # -- deciding --------------------------------------------------------------------

    def choose(self, sit: Situation, legal: Callable[[], list[Move]]) -> Move | None:
        """The move to make, or None to pass (only when passing is allowed).

        ``legal()`` lists the legal moves; a lead does without it when it can (with
        wildcards a lead may have thousands of moves): it reads its planned parts
        with the classifier instead, which is what the hand would do with them.
        """
        if sit.trick is None:
            out = self.readings_of(sit, sit.hand)
            if out:
                return self.pick_reading(out, None)  # the whole hand in one play
            return self.lead(sit, legal)
        moves = legal()
        if not moves:
            return None
        whole = [m for m in moves if m.cards == sit.hand]
        if whole:
            return self.pick_reading(whole, None)
        return self.follow(sit, moves)

    def readings_of(self, sit: Situation, cards: RankCounts) -> list[Move]:
        """``cards`` as a lead: one move per legal reading (within the bomb allowance)."""
        readings = classify(cards, self.rules, self.wild_set)
        if sit.bombs_left[sit.seat] == 0:
            readings = [r for r in readings if not r.is_bomb]
        return [Move.of(cards, r) for r in readings]

    def lead(self, sit: Situation, legal: Callable[[], list[Move]]) -> Move:
        natural, wilds = split_wild(sit.hand, self.wild)
        plan = self.planner.plan(natural, wilds)
        cands: list[tuple[Part, Move]] = []
        for part in plan.parts:
            cards = self.part_cards(part, sit.hand)
            options = self.readings_of(sit, cards) if cards is not None else None
            if options:
                cands.append((part, self.pick_reading(options, part)))
        if not cands:
            return self._best_by_remainder(sit, legal())
        holders = self.enemies(sit)
        controls = [c for c in cands if self.is_control(c[1].reading, holders)]
        if len(cands) - len(controls) <= 1 and controls:
            # winning line: every control first (plain plays before bombs), then the rest
            return min(controls, key=lambda c: (c[1].reading.is_bomb, c[0].value))[1]
        w = self.w
        partner = sit.partner()
        partner_left = sit.counts[partner] if partner is not None else 99

        def score(c: tuple[Part, Move]) -> float:
            part, move = c
            reading = move.reading
            s = -part.value + w.size_bonus * min(4, reading.size - 1)
            if c in controls:
                s -= w.keep_control
            if reading.is_bomb:
                s -= w.keep_bomb
            for h in holders:
                if h.count <= 2 and self.counter.can_beat(h, reading):
                    if reading.size == h.count:
                        # they could go out on it: if it must be led, lead it high
                        s -= w.block_enemy + part.value
                    elif reading.size < h.count:
                        s -= w.block_enemy / 3
            if (
                partner_left <= 2
                and reading.size == partner_left
                and reading.type in (ComboType.SINGLE, ComboType.PAIR)
            ):
                s += w.feed_partner - 0.5 * int(reading.main)
            return s

        return max(cands, key=score)[1]

    def _best_by_remainder(self, sit: Situation, moves: list[Move]) -> Move:
        return max(moves, key=lambda m: (self.hand_score(sub(sit.hand, m.cards)), -m.reading.main))

    def follow(self, sit: Situation, moves: list[Move]) -> Move | None:
        w = self.w
        natural, wilds = split_wild(sit.hand, self.wild)
        plan = self.planner.plan(natural, wilds)
        base = plan.score
        # a move that is a part of the plan leaves the rest of the plan standing: its
        # worth is known without planning again (a lower bound, nearly always exact)
        known: dict[RankCounts, float] = {}
        for part in plan.parts:
            cards = self.part_cards(part, sit.hand)
            if cards is not None:
                known.setdefault(sub(sit.hand, cards), base + TURN_COST - part.value)
        holders = self.enemies(sit)
        owner = sit.trick_seat
        partner_owns = not sit.is_enemy(owner)
        best: Move | None = None
        best_val = 0.0
        owner_left = sit.counts[owner]
        urgency = 0.0
        if not partner_owns:
            if owner_left <= 2:
                urgency = w.danger_close
            elif owner_left <= 4:
                urgency = w.danger_near
            elif owner_left <= w.far_cards:
                urgency = w.danger_far
            partner = sit.partner()
            if partner is not None and sit.next_seat() == partner:
                urgency *= 0.5  # the partner still gets a go before the trick comes back
        # a farmer may top a partner's weak play that the landlord, next, could beat
        overtake = (
            partner_owns
            and w.overtake_min < 90
            and sit.next_seat() == sit.landlord
            and owner_left > w.partner_short
            and sit.trick is not None
            and any(self.counter.can_beat(h, sit.trick) for h in holders)
        )
        scores: dict[RankCounts, float] = dict(known)
        for m in self._follow_candidates(sit.hand, moves, known):
            rem = sub(sit.hand, m.cards)
            left = scores.get(rem)
            if left is None:
                left = scores[rem] = self.hand_score(rem)
            val = left - base
            if m.reading.is_bomb:
                val -= w.bomb_risk
            if self.is_control(m.reading, holders) and self._wins_after(rem, holders):
                val += WIN_LINE
            elif partner_owns:
                if not overtake or m.reading.is_bomb or val < w.overtake_min:
                    continue
            else:
                val += w.tempo + urgency
            if val > best_val or (
                best is not None and val == best_val and m.reading.main < best.reading.main
            ):
                best, best_val = m, val
        return best

    def _follow_candidates(
        self, hand: RankCounts, moves: list[Move], known: dict[RankCounts, float]
    ) -> list[Move]:
        """Moves worth weighing: those that are parts of the plan, every bomb, and the
        cheapest few others (each of those costs a planning of what it leaves)."""
        planned: list[Move] = []
        others: list[Move] = []
        for m in self.prune(moves):
            if m.reading.is_bomb or sub(hand, m.cards) in known:
                planned.append(m)
            else:
                others.append(m)
        if len(others) > FULL_EVALS:
            others = sorted(others, key=self._cost)[:FULL_EVALS]
        return planned + others

    def _cost(self, m: Move) -> int:
        wild = self.wild
        return sum(n * (30 if r in wild else r) for r, n in enumerate(m.cards) if n)

    def search_candidates(self, sit: Situation, legal: Callable[[], list[Move]]) -> list[Move]:
        """The moves the endgame search weighs at the root."""
        return self.prune(legal(), keep=3)

    def prune(self, moves: list[Move], keep: int = 0) -> list[Move]:
        """Keep, for each main part, the few moves with the cheapest cards.

        Kicker types have a move per choice of kickers (hundreds with wildcards);
        moves with the same reading differ only in what they spend, and the cheap
        kickers are the ones worth planning around.
        """
        keep = keep or KEEP_PER_MAIN
        if len(moves) <= keep * 4:
            return moves
        groups: dict[tuple[object, ...], list[Move]] = {}
        for m in moves:
            groups.setdefault(m.reading.key(), []).append(m)
        cost = self._cost
        out: list[Move] = []
        for group in groups.values():
            if len(group) > keep:
                group = sorted(group, key=cost)[:keep]
            out.extend(group)
        return out

    def _wins_after(self, rem: RankCounts, holders: list[Holder]) -> bool:
        """After leaving ``rem``, could the bot lead out unbeaten (all controls but one)?"""
        if not any(rem):
            return True
        natural, wilds = split_wild(rem, self.wild)
        plan = self.planner.plan(natural, wilds)
        loose = 0
        for part in plan.parts:
            reading = self.part_reading(part)
            if not self.is_control(reading, holders):
                loose += 1
                if loose > 1:
                    return False
        return True
