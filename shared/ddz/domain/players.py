"""Built-in players: they act on a ``PlayerView`` (never the full hand) with an injected
``random.Random``, so a run is reproducible from its seeds.

* ``RandomPlayer`` -- uniformly random among the legal bids, and among the legal
  moves plus "pass" when passing is allowed (the same kind of player RLCard's random
  agent is). ``show_rate`` > 0 also makes it show its cards now and then (§6).
* ``GreedyPlayer`` -- the simple baseline: bids by a hand-strength count; leads its
  lowest small combination; follows with the lowest play of the same type that
  beats; never follows its partner; bombs only when it cannot otherwise follow and
  the player to beat is an opponent close to going out.
"""

from __future__ import annotations

import random
from typing import Protocol

from ddz.domain.cards import Rank, RankCounts
from ddz.domain.hand.commands import Bid, BidAction, Command, Pass, Play, ShowCards
from ddz.domain.hand.state import Phase
from ddz.domain.hand.view import PlayerView
from ddz.domain.move import Move
from ddz.domain.ruleset import Bidding

BOMB_WHEN_OPPONENT_HOLDS = 4  # GreedyPlayer bombs when the opponent is this close to out


class Player(Protocol):
    def act(self, view: PlayerView) -> Command:
        """The command for the seat whose turn it is (``view.my_turn``)."""
        ...


def play_of(seat: int, move: Move) -> Play:
    """The command for a move, declaring its reading (wildcard plays are ambiguous, §3)."""
    return Play(seat, move.cards, move.reading)


class RandomPlayer:
    def __init__(self, rng: random.Random, show_rate: float = 0.0) -> None:
        self.rng = rng
        self.show_rate = show_rate

    def act(self, view: PlayerView) -> Command:
        if self.show_rate and view.can_show and self.rng.random() < self.show_rate:
            return ShowCards(view.seat)
        if view.phase is Phase.BIDDING:
            return self.rng.choice(view.legal_bids())
        moves = view.legal_moves()
        can_pass = view.trick is not None  # on its turn in play: pass unless it leads
        pick = self.rng.randrange(len(moves) + can_pass)
        return play_of(view.seat, moves[pick]) if pick < len(moves) else Pass(view.seat)


def strength(counts: RankCounts, wild: tuple[Rank, ...] = ()) -> float:
    """A rough count of winners in 17 cards: 2s, jokers, bombs, wildcards."""
    score = counts[Rank.TWO] + 1.5 * counts[Rank.BLACK_JOKER] + 2 * counts[Rank.RED_JOKER]
    score += 2 * sum(1 for rank in range(Rank.TWO + 1) if counts[rank] >= 4)
    score += sum(counts[rank] for rank in wild)
    return score * 17 / max(1, sum(counts))


class GreedyPlayer:
    CALL_AT = ((7.0, 3), (5.0, 2), (3.0, 1))  # strength -> call score
    GRAB_AT = 3.0

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng  # unused: the baseline is deterministic; kept for a uniform API

    def act(self, view: PlayerView) -> Command:
        if view.phase is Phase.BIDDING:
            return self._bid(view)
        return self._play(view)

    def _bid(self, view: PlayerView) -> Bid:
        power = strength(view.counts, view.wild)
        seat = view.seat
        if view.rules.bidding is Bidding.CALL_SCORE:
            highest = max((b.score for b in view.bids), default=0)
            want = next((score for at, score in self.CALL_AT if power >= at), 0)
            return Bid.call(seat, want) if want > highest else Bid.pass_(seat)
        if power < self.GRAB_AT:
            return Bid.pass_(seat)
        called = any(b.action is BidAction.CALL for b in view.bids)
        return Bid.grab(seat) if called else Bid.call(seat)

    def _play(self, view: PlayerView) -> Command:
        moves = view.legal_moves()
        plain = [m for m in moves if not m.reading.is_bomb]
        bombs = sorted(
            (m for m in moves if m.reading.is_bomb), key=lambda m: (m.reading.tier, m.reading.main)
        )
        if view.trick is None:  # lead the lowest small combination; the most cards of it
            if plain:
                best = min(plain, key=lambda m: (m.reading.main, -m.reading.size))
                return play_of(view.seat, best)
            return play_of(view.seat, bombs[0])
        to_beat = view.trick.seat
        partner = view.landlord not in (view.seat, to_beat)
        if partner:
            return Pass(view.seat)
        if plain:
            return play_of(view.seat, min(plain, key=lambda m: m.reading.main))
        if bombs and view.card_counts[to_beat] <= BOMB_WHEN_OPPONENT_HOLDS:
            return play_of(view.seat, bombs[0])
        return Pass(view.seat)


PLAYERS = {"random": RandomPlayer, "greedy": GreedyPlayer}
