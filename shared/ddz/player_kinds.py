"""The names of the players a bot seat can be given (and that play for a disconnected
person, 托管); ``ddz.bot.kinds.make_player`` makes one. The names are apart from the
players so that the settings can check ``DDZ_BOT_PLAYER`` without importing the bot:

* ``strong`` -- ``ddz.bot.Bot``: plans, counts cards, searches endgames within
  a wall-clock cap (``max_ms``, ``DDZ_BOT_MAX_MS``). The default: it is what players
  meet in empty seats and what plays for them while they are disconnected.
* ``greedy`` -- ``ddz.domain.players.GreedyPlayer``: the simple baseline, sub-millisecond
  per decision (``DDZ_BOT_PLAYER=greedy`` for load tests of the suite itself).
* ``random`` -- ``RandomPlayer``: uniformly random legal moves.
"""

from __future__ import annotations

PLAYER_KINDS = ("strong", "greedy", "random")
DEFAULT_PLAYER = "strong"
