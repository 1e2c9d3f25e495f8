"""The kinds of player a seat can be given by name (``ddz.player_kinds``)."""

from __future__ import annotations

import pytest
from ddz.bot.kinds import make_player
from ddz.player_kinds import PLAYER_KINDS


def test_every_player_kind_is_made_and_unknown_kinds_are_refused() -> None:
    for kind in PLAYER_KINDS[:2]:  # the strong bot builds tables: covered by its own tests
        assert hasattr(make_player(kind), "act")
    with pytest.raises(ValueError, match="unknown player"):
        make_player("oracle")
