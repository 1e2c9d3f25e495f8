"""The strong player: hand planning, card counting, farmer cooperation and
endgame search, for every variant. Pure: no I/O; randomness only from its seed."""

from .player import Bot, Budget

__all__ = ["Bot", "Budget"]
