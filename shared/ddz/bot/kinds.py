"""The player a bot seat is given by name (``ddz.player_kinds`` lists the names).

One small factory so the bot service, ``ddz bench`` (its in-process baseline) and the
tests all seat the same player, and swapping it is one line. Every player reads only a
``PlayerView``; all are deterministic given their seed.
"""

from __future__ import annotations

import random
from dataclasses import replace

from ddz.domain.players import GreedyPlayer, Player, RandomPlayer
from ddz.player_kinds import DEFAULT_PLAYER, PLAYER_KINDS


def make_player(kind: str = DEFAULT_PLAYER, seed: int = 0, max_ms: float | None = None) -> Player:
    """A player of ``kind`` (one of ``PLAYER_KINDS``); ``ValueError`` otherwise.

    ``max_ms`` caps one strong-bot decision (None: the bot's own default budget).
    """
    if kind == "greedy":
        return GreedyPlayer(random.Random(seed))
    if kind == "random":
        return RandomPlayer(random.Random(seed))
    if kind == "strong":
        from ddz.bot import Bot, Budget  # imported on demand: it builds planner tables

        budget = Budget() if max_ms is None else replace(Budget(), max_ms=max_ms)
        return Bot(seed, budget=budget)
    raise ValueError(f"unknown player {kind!r} (expected one of {', '.join(PLAYER_KINDS)})")
