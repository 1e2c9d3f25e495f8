"""The rules service's memory: hands in play and one lock per hand.

Only a cache: a hand missing here is rebuilt from its events (``HandLog.read``).
Ended hands are dropped at once; the rest are kept least-recently-used first.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ddz.domain.hand import HandState

P = TypeVar("P")  # the hand log's position (``ports.Position``)


@dataclass
class LiveHand(Generic[P]):
    """A hand as its single writer sees it: the folded state, where its stream
    stands (``cursor``), and (once a command needed it) the hand's server seed."""

    state: HandState
    cursor: P
    seed: bytes | None = field(default=None, repr=False)  # secret while the hand is played


class HandCache(Generic[P]):
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._hands: OrderedDict[str, LiveHand[P]] = OrderedDict()

    def get(self, hand_id: str) -> LiveHand[P] | None:
        hand = self._hands.get(hand_id)
        if hand is not None:
            self._hands.move_to_end(hand_id)
        return hand

    def put(self, hand_id: str, hand: LiveHand[P]) -> None:
        self._hands[hand_id] = hand
        self._hands.move_to_end(hand_id)
        while len(self._hands) > self.capacity:
            self._hands.popitem(last=False)

    def drop(self, hand_id: str) -> None:
        self._hands.pop(hand_id, None)

    def __len__(self) -> int:
        return len(self._hands)


class KeyedLocks:
    """One ``asyncio.Lock`` per key, existing only while someone holds or awaits it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)
