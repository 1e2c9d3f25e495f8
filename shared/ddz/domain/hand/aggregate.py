"""``Hand``: a small convenience around ``decide``/``evolve`` that keeps the events."""

from __future__ import annotations

from collections.abc import Iterable

from .commands import Command, StartHand
from .decide import decide
from .events import Event
from .rejection import Decision, Rejection
from .state import HandState, evolve, replay


class Hand:
    """One hand in memory: ``execute(cmd)`` decides, then folds what was decided.

    It holds the hand's seed (the only secret, see ``decide``) so that callers need
    not pass it with every command. A rejection leaves ``state`` and ``events`` as
    they were.
    """

    def __init__(self, events: Iterable[Event] = (), seed: bytes | None = None) -> None:
        self.events: list[Event] = list(events)
        self.state: HandState = replay(self.events)
        self._seed = seed

    def execute(self, command: Command) -> Decision:
        if isinstance(command, StartHand):
            self._seed = command.seed
        result = decide(self.state, command, self._seed)
        if isinstance(result, Rejection):
            return result
        state = self.state
        for event in result:
            state = evolve(state, event)
        self.state = state
        self.events.extend(result)
        return result
