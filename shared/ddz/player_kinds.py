"""Which player sits in a bot seat (and plays for a disconnected one, 托管).

One small factory so the bot service, ``ddz bench`` (its in-process baseline) and the
tests all seat the same player, and swapping it is one line:

* ``strong`` -- ``ddz.bot.Bot``: plans, counts cards, searches endgames within
  a wall-clock cap (``max_ms``, ``DDZ_BOT_MAX_MS``). The default: it is what players
  meet in empty seats and what plays for them while they are disconnected.
* ``greedy`` -- ``ddz.domain.players.GreedyPlayer``: the simple baseline, sub-millisecond
  per decision (``DDZ_BOT_PLAYER=greedy`` for load tests of the suite itself).
* ``random`` -- ``RandomPlayer``: uniformly random legal moves.

Every player reads only a ``PlayerView``; all are deterministic given their seed.
"""

from __future__ import annotations

import random

from ddz.domain.players import GreedyPlayer, Player, RandomPlayer

PLAYER_KINDS = ("strong", "greedy", "random")
DEFAULT_PLAYER = "strong"


def make_player(kind: str = DEFAULT_PLAYER, seed: int = 0, max_ms: float | None = None) -> Player:
    """A player of ``kind`` (one of ``PLAYER_KINDS``); ``ValueError`` otherwise.

    ``max_ms`` caps one strong-bot decision (None: the bot's own default budget).
    """
    if kind == "greedy":
        return GreedyPlayer(random.Random(seed))
    if kind == "random":
        return RandomPlayer(random.Random(seed))
    if kind == "strong":
        from dataclasses import replace

        from ddz.bot import Bot, Budget  # imported on demand: it builds planner tables

        budget = Budget() if max_ms is None else replace(Budget(), max_ms=max_ms)
        return Bot(seed, budget=budget)
    raise ValueError(f"unknown player {kind!r} (expected one of {', '.join(PLAYER_KINDS)})")
