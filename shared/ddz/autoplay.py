"""Which player sits in a bot seat (and plays for a disconnected one, 托管).

One small factory so the bot service, ``ddz bench`` (its in-process baseline) and the
tests all seat the same player, and swapping it is one line:

* ``greedy`` -- ``ddz.domain.players.GreedyPlayer``: the simple baseline, sub-millisecond
  per decision. The default while the strong bot is slow: the bench's target (100
  hands/s on 2 cores) leaves well under 1 ms of decision time per move.
* ``random`` -- ``RandomPlayer``: uniformly random legal moves.
* ``strong`` -- ``ddz.bot.Bot`` (issue 6): plans, counts cards, searches endgames.

Every player reads only a ``PlayerView``; all are deterministic given their seed.
"""

from __future__ import annotations

import random

from ddz.domain.players import GreedyPlayer, Player, RandomPlayer

PLAYER_KINDS = ("greedy", "random", "strong")
DEFAULT_PLAYER = "greedy"


def make_player(kind: str = DEFAULT_PLAYER, seed: int = 0) -> Player:
    """A player of ``kind`` (one of ``PLAYER_KINDS``); ``ValueError`` otherwise."""
    if kind == "greedy":
        return GreedyPlayer(random.Random(seed))
    if kind == "random":
        return RandomPlayer(random.Random(seed))
    if kind == "strong":
        from ddz.bot import Bot  # imported on demand: it builds planner tables

        return Bot(seed)
    raise ValueError(f"unknown player {kind!r} (expected one of {', '.join(PLAYER_KINDS)})")
