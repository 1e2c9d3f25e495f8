"""The strong player: hand planning, card counting, farmer cooperation and
endgame search, for every variant. Pure: no I/O; randomness only from its seed."""

from .endgame import Budget
from .player import Bot

__all__ = ["Bot", "Budget"]
