"""``decide(state, command) -> events | Rejection``: the hand's rules (RULES.md §2, §5-§10).

Pure: the same state, command and seed always give the same answer, and a
rejection changes nothing. Everything random comes from the hand's server seed by
``ddz-shuffle-v1`` (docs/SHUFFLE.md). The seed is the one secret of a hand: it is in
no event until ``SeedRevealed``, so the authority that decides commands holds it and
passes it in (``seed=``) -- the ``Hand`` wrapper does. It is needed only by commands
that deal or draw (start, the bid that ends bidding) or end the hand (to reveal it).

The deciders, by the part of the hand they rule: ``opening`` (start, bidding, showing
cards), ``playing`` (plays, passes, the end), ``people`` (dropping, time-outs, escapes);
what they share (refusals, seat and turn checks, the seed): ``rejection``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .commands import (
    Bid,
    Command,
    Disconnect,
    Escape,
    Pass,
    Play,
    Reconnect,
    Resume,
    ShowCards,
    StartHand,
    TimeOut,
)
from .events import AutoPlayEnd, AutoPlayEnded
from .opening import decide_bid, decide_show, decide_start
from .people import (
    decide_disconnect,
    decide_escape,
    decide_reconnect,
    decide_resume,
    decide_time_out,
)
from .playing import decide_pass, decide_play
from .rejection import Decision
from .state import HandState


def decide(state: HandState, command: Command, seed: bytes | None = None) -> Decision:
    """The events ``command`` causes in ``state``, or why it is refused."""
    # A table, not a ``match``: plays and passes are most commands of a hand, and a
    # lookup by type costs the same for every command.
    handler = _DECIDERS.get(type(command))
    if handler is None:
        raise TypeError(f"not a hand command: {command!r}")
    decision = handler(state, command, seed)
    if state.auto_play and isinstance(decision, list) and type(command) in _OWN_MOVES:
        seat = command.seat  # type: ignore[union-attr]
        if seat in state.auto_play and not getattr(command, "by_bot", False):
            # The person's own move ends auto-play: said right after the move.
            decision.insert(1, AutoPlayEnded(seat, AutoPlayEnd.ACTED))
    return decision


# Every decider takes (state, command, seed); only those that deal, draw or reveal use
# the seed.
_DECIDERS: dict[type, Callable[[HandState, Any, bytes | None], Decision]] = {
    StartHand: decide_start,
    Bid: decide_bid,
    Play: decide_play,
    Pass: decide_pass,
    ShowCards: decide_show,
    Disconnect: lambda state, cmd, seed: decide_disconnect(state, cmd.seat, cmd.reason),
    Reconnect: decide_reconnect,
    Escape: decide_escape,
    TimeOut: decide_time_out,
    Resume: decide_resume,
}
_OWN_MOVES = frozenset({Bid, Play, Pass, ShowCards})
"""Commands by which a person in auto-play takes their seat back."""
