"""The hands on the bus, as the bot reads them.

``FeedLookup`` is the ``HandLookup`` port: a hand this instance follows comes from its
feed, any other (another partition's, an ended one no longer kept) is read from
JetStream.

``resume_hands`` is what the bot does as it starts: find the hands in play that may be
waiting on it and fold them into its feed, so that a seat it plays gets played. Its
durable consumer brings only what it had not acknowledged before it stopped; a hand
whose last event was acknowledged (by this service before a crash, or the move that
followed it refused or lost) would otherwise wait for an event that never comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections.abc import Callable

import nats.errors
import nats.js.errors
import structlog
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import delivery_from
from ddz.adapters.messaging.hand_feed import HandFeed
from ddz.adapters.messaging.hand_reads import read_fold
from ddz.adapters.messaging.hand_stream import HAND
from ddz.adapters.messaging.subjects import category_filter, parse_subject, stream_parts
from ddz.application.hand_fold import HandFold
from ddz.domain.hand.events import HandEnded, HandStarted
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

log = structlog.get_logger("ddz.bot.hands")

RESUME_WINDOW = 3600.0
"""Seconds back the bot looks, as it starts, for hands still in play. A hand is over in
minutes (a person has ``DDZ_TURN_TIMEOUT`` per turn before the bot plays for them), so an
hour covers every hand a short outage of the bot left waiting and bounds what is read:
the hands' starts and ends of one hour (their subjects only), then each unfinished
hand. A hand older than that was abandoned long ago; its players have moved on."""
SCAN_BATCH = 1024
SCAN_WAIT = 5.0
LOADS_AT_ONCE = 8
RESUME_ATTEMPTS = 10
RESUME_PAUSE = 0.5
MAX_RESUME_PAUSE = 10.0
"""Ten attempts 0.5 s, 1 s ... 10 s apart: a minute of NATS not answering is ridden out."""


class FeedLookup:
    def __init__(self, feed: HandFeed) -> None:
        self.feed = feed

    async def __call__(self, hand_id: str) -> HandFold | None:
        fold = self.feed.get(hand_id) if self.feed.accept(hand_id) else None
        if fold is not None:
            return fold
        try:
            return await read_fold(self.feed.bus, hand_id, keyring=self.feed.keyring)
        except ValueError:  # not a hand id: no such hand
            return None


async def unfinished_hands(
    bus: EventBus,
    *,
    within: float = RESUME_WINDOW,
    accept: Callable[[str], bool] = lambda _hand_id: True,
) -> list[str]:
    """The hands started on the bus in the last ``within`` seconds that have no
    ``hand_ended`` yet (those ``accept`` takes), oldest first.

    Reads only the subjects of those two events (an ephemeral consumer from that time,
    headers only, no acks), up to where the stream was when the scan began."""
    kinds = {HandStarted.TYPE, HandEnded.TYPE}
    since = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=within)
    info = await bus.js.add_consumer(
        bus.stream,
        ConsumerConfig(
            filter_subjects=[category_filter(HAND, event_type=kind) for kind in sorted(kinds)],
            deliver_policy=DeliverPolicy.BY_START_TIME,
            opt_start_time=since,
            ack_policy=AckPolicy.NONE,
            headers_only=True,
            mem_storage=True,
            inactive_threshold=60.0,  # the server drops it if this process dies mid-scan
        ),
    )
    pull = await bus.js.pull_subscribe_bind(consumer=info.name, stream=bus.stream)
    started: dict[str, None] = {}  # insertion order: oldest first
    pending = info.num_pending or 0
    try:
        while pending > 0:
            # A fetch that times out while the server counts messages pending is NATS
            # not answering (TimeoutError: the scan is tried again), not the end.
            messages = await pull.fetch(SCAN_BATCH, timeout=SCAN_WAIT)
            for msg in messages:
                parts = parse_subject(msg.subject)
                _category, hand_id = stream_parts(parts.stream_id)
                if parts.event_type == HandStarted.TYPE:
                    started[hand_id] = None
                else:
                    started.pop(hand_id, None)
            pending = delivery_from(messages[-1]).pending if messages else 0
    finally:
        with contextlib.suppress(Exception):
            await pull.unsubscribe()
        with contextlib.suppress(nats.errors.Error):
            await bus.js.delete_consumer(bus.stream, info.name)
    return [hand_id for hand_id in started if accept(hand_id)]


async def resume_hands(
    feed: HandFeed,
    *,
    within: float = RESUME_WINDOW,
    accept: Callable[[str], bool] | None = None,
    attempts: int = RESUME_ATTEMPTS,
    pause: float = RESUME_PAUSE,
) -> int:
    """Fold every unfinished hand of the last ``within`` seconds into ``feed`` (read
    from JetStream), so its ``on_change`` sees any seat waiting on the bot: those the
    feed accepts, and of them those ``accept`` takes (a partition just taken). How many
    hands were read.

    A scan or a load that NATS does not answer (a node died, a stream's leader is being
    elected) is tried again, after ``pause`` seconds doubling up to ``MAX_RESUME_PAUSE``,
    up to ``attempts`` times: a hand left unread here would wait on the bot for ever."""
    wanted = feed.accept if accept is None else (lambda h: feed.accept(h) and accept(h))
    loaded: set[str] = set()
    for attempt in range(1, attempts + 1):
        try:
            hand_ids = await unfinished_hands(feed.bus, within=within, accept=wanted)
            failed = await _load_all(feed, [h for h in hand_ids if h not in loaded], loaded)
        except (nats.errors.Error, nats.js.errors.Error, TimeoutError) as exc:
            failed, why = -1, repr(exc)
        else:
            if not failed:
                log.info("hands_resumed", unfinished=len(hand_ids), read=len(loaded),
                         window_s=within, attempts=attempt)  # fmt: skip
                return len(loaded)
            why = f"{failed} hands not read"
        log.warning("resume_failed", attempt=attempt, of=attempts, why=why)
        if attempt < attempts:
            await asyncio.sleep(min(MAX_RESUME_PAUSE, pause * 2 ** (attempt - 1)))
    log.error("resume_gave_up", attempts=attempts, read=len(loaded))
    return len(loaded)


async def _load_all(feed: HandFeed, hand_ids: list[str], loaded: set[str]) -> int:
    """Fold each hand not over into the feed (``loaded`` gets those read); how many
    could not be read."""
    todo = [h for h in hand_ids if (fold := feed.get(h)) is None or not fold.over]
    gate = asyncio.Semaphore(LOADS_AT_ONCE)

    async def load(hand_id: str) -> bool:
        async with gate:
            try:
                await feed.load(hand_id)
            except (nats.errors.Error, nats.js.errors.Error, TimeoutError) as exc:
                log.warning("resume_load_failed", hand_id=hand_id, error=repr(exc))
                return False
            except ValueError as exc:  # not a hand this version can read: not again
                log.warning("resume_load_failed", hand_id=hand_id, error=repr(exc))
            loaded.add(hand_id)
            return True

    return sum(not ok for ok in await asyncio.gather(*(load(h) for h in todo)))
