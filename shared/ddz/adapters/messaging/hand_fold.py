"""A hand's state folded from its events, in version order: what ``HandFeed`` keeps per
hand (``HandFold``), an event as it enters the fold (``Entry``), the fold read back from
JetStream (``read_fold``), and what becomes of an event offered to it (``Verdict``)."""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ddz.adapters.codec import decode_event
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.security.event_signing import EventKeyring
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


def entry_of(envelope: envelope_pb2.EventEnvelope) -> Entry:
    """The entry of a parsed envelope (``CodecError`` if its event does not decode)."""
    event = decode_event(envelope.type, envelope.type_version, envelope.payload)
    return Entry(int(envelope.stream_version), envelope, event)


async def read_fold(
    bus: EventBus,
    hand_id: str,
    *,
    keep_log: bool = False,
    archive: hand_stream.HandArchive | None = None,
    keyring: EventKeyring,
) -> HandFold | None:
    """The hand read straight from JetStream, folded (None: no such hand on the bus).
    ``ValueError`` when ``hand_id`` cannot be a hand id; ``HandAgedOut`` (a NOT_FOUND
    refusal) when the bus no longer has its first events and ``archive`` is not given."""
    read, _cursor = await hand_stream.read(bus, hand_id, archive, keyring=keyring)
    if not read:
        return None
    fold = HandFold(hand_id, keep_log)
    for item in read:
        fold.offer(Entry(int(item.envelope.stream_version), item.envelope, item.event))
    return fold


OnChange = Callable[[HandFold, list[Entry]], Awaitable[None] | None]


class Verdict(enum.Enum):
    """What the feed tells JetStream about one message it was given."""

    ACK = "ack"  # applied (or a duplicate, or not ours): never again
    NAK = "nak"  # failed: again after a delay
    TERM = "term"  # never applicable (not an envelope), or failed too often
