"""A hand's state folded from its events, in version order: what a service following
hands keeps per hand (``HandFold``), an event as it enters the fold (``Entry``), what is
told of each change (``OnChange``) and whether a hand's deal is all in (``deal_complete``).
Pure: the bus that feeds it is ``ddz.adapters.messaging.hand_feed``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ddz.domain.hand import CommandRejected, HandState, Phase, Recorded, evolve
from ddz.domain.ruleset import WildcardDraw
from ddz.v1 import envelope_pb2


@dataclass(frozen=True, slots=True)
class Entry:
    """One recorded event of a hand, as applied."""

    version: int
    envelope: envelope_pb2.EventEnvelope
    event: Recorded

    @property
    def hidden(self) -> bool:
        return bool(self.event.HIDDEN)

    @property
    def rejected_seat(self) -> int | None:
        """The seat whose command was refused, for a ``CommandRejected``."""
        return self.event.seat if isinstance(self.event, CommandRejected) else None


@dataclass
class HandFold:
    """One hand: its state, its stream version, and (optionally) every entry."""

    hand_id: str
    keep_log: bool = False
    state: HandState = field(default_factory=HandState)
    version: int = 0
    log: list[Entry] = field(default_factory=list)
    pending: dict[int, Entry] = field(default_factory=dict)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def over(self) -> bool:
        """The hand has ended and its last event (the seed's reveal) is in."""
        return self.state.phase is Phase.ENDED and self.state.seed is not None

    def offer(self, entry: Entry) -> list[Entry]:
        """Apply ``entry`` and any held entries that now follow; return what was applied."""
        if entry.version <= self.version:
            return []
        self.pending[entry.version] = entry
        applied: list[Entry] = []
        while self.version + 1 in self.pending:
            ready = self.pending.pop(self.version + 1)
            self._apply(ready)
            applied.append(ready)
        return applied

    def _apply(self, entry: Entry) -> None:
        if not isinstance(entry.event, CommandRejected):
            self.state = evolve(self.state, entry.event)
        self.version = entry.version
        if self.keep_log:
            self.log.append(entry)

    def entries_after(self, version: int) -> list[Entry]:
        """Logged entries with a version above ``version`` (``keep_log`` only)."""
        return self.log[version:] if 0 <= version < len(self.log) else []

    async def wait_for(self, version: int, timeout: float) -> bool:
        """Wait until the fold has reached ``version``; False on timeout."""
        if self.version >= version:
            return True
        async with self.changed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self.changed.wait_for(lambda: self.version >= version)
        return self.version >= version


def deal_complete(state: HandState) -> bool:
    """Whether every event of the deal is in. A deal is several events published one
    after another (by the dealer, or by the rules for a re-deal): the cards, then the
    draws due before bidding (§5) and the hands shown before the deal (§6). Until the
    last is in, a bid would race the deal's writer for the hand's next version."""
    if state.phase is not Phase.BIDDING:
        return True
    due = sum(1 for draw in state.rules.wildcard_draws if draw is WildcardDraw.BEFORE_BIDDING)
    if len(state.wild) < due:
        return False
    shown = {event.seat for event in state.shown if event.when == "before_deal"}
    return set(state.show_before_deal) <= shown


OnChange = Callable[[HandFold, list[Entry]], Awaitable[None] | None]
