"""A hand feed's finished hands (``HandFeed._retire``): the ``keep_ended`` most recent
stay folded for late readers, older ones are dropped, and a straggling event of any
finished hand is ignored rather than starting a fold of its own."""

from __future__ import annotations

import pytest
from ddz.adapters import codec
from ddz.adapters.messaging.hand_feed import HandFeed
from signing_kit import KEYRING, hand_envelopes


async def finish(feed: HandFeed, hand_id: str) -> bytes:
    """Fold a whole self-played hand into ``feed``; its last envelope's bytes."""
    data = hand_envelopes(hand_id, seed=len(hand_id))
    await feed.learn(hand_id, [codec.parse_envelope(item) for item in data])
    fold = feed.get(hand_id)
    assert fold is not None and fold.over
    return data[-1]


@pytest.mark.asyncio
async def test_the_most_recent_finished_hands_are_kept_and_older_ones_dropped() -> None:
    feed = HandFeed(None, keyring=KEYRING, keep_ended=2)  # type: ignore[arg-type]
    last = {hand_id: await finish(feed, hand_id) for hand_id in ("h1", "h2", "h3", "h4")}
    assert sorted(feed.hands) == ["h3", "h4"]
    # A straggler of a dropped hand is ignored: no fold is started from its last event.
    await feed.handle_data(last["h1"])
    assert sorted(feed.hands) == ["h3", "h4"]
    # A kept hand forgotten on purpose leaves room: the next two are kept beside h4.
    feed.forget("h3")
    await finish(feed, "h5")
    assert sorted(feed.hands) == ["h4", "h5"]
    await finish(feed, "h6")
    assert sorted(feed.hands) == ["h5", "h6"]


@pytest.mark.asyncio
async def test_a_feed_that_keeps_no_finished_hand_drops_each_at_its_end() -> None:
    feed = HandFeed(None, keyring=KEYRING, keep_ended=0)  # type: ignore[arg-type]
    data = hand_envelopes("h1", seed=3)
    await feed.learn("h1", [codec.parse_envelope(item) for item in data[:-3]])
    assert feed.get("h1") is not None and feed.in_play() == 1
    await feed.learn("h1", [codec.parse_envelope(item) for item in data[-3:]])
    assert feed.get("h1") is None and feed.in_play() == 0
