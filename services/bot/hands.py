"""The ``HandLookup`` port on the bus: a hand this instance follows comes from its feed,
any other (another partition's, an ended one no longer kept) is read from JetStream."""

from __future__ import annotations

from ddz.adapters.hand_feed import HandFeed, HandFold, read_fold


class FeedLookup:
    def __init__(self, feed: HandFeed) -> None:
        self.feed = feed

    async def __call__(self, hand_id: str) -> HandFold | None:
        fold = self.feed.get(hand_id) if self.feed.accept(hand_id) else None
        if fold is not None:
            return fold
        try:
            return await read_fold(self.feed.bus, hand_id)
        except ValueError:  # not a hand id: no such hand
            return None
