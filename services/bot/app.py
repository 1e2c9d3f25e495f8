"""The bot service, wired: NATS bus + hand feed (durable consumer) + the rules client +
autoplay + the stall watchdog + the Suggest/GetStats handlers behind the servicer.

As it starts, once the feed follows the bus, it reads back the hands still in play
(``hands.resume_hands``), in the background: a hand waiting on one of its seats from
before it started is played.

``build(settings, player=..., partition=i, partitions=n)``: the player kind
(``ddz.player_kinds``; default ``settings.bot.bot_player``, the strong bot) and a static
share of the hands (one instance plays every hand by default).

Several instances (``DDZ_BOT_PARTITIONS`` > 1): the hands are shared by partition leases
(``partitions.Partitions``). Each instance follows the bus with a consumer of its own
that starts at the present (``bot-<holder>``, deleted by the server a minute after its
instance is gone) and filters on the subjects of the partitions it holds (changed as it
takes and lets go of them), so it is sent only its own hands' events; it reads a
partition's unfinished hands from the bus when it takes it. No instance replays the
stream's history, and each bot turn is decided by the one holder of its hand's
partition.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence

import grpc
import structlog
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_feed import HandFeed
from ddz.adapters.messaging.hand_stream import HAND
from ddz.adapters.messaging.lease import instance_id
from ddz.adapters.messaging.subjects import bucket_filters, category_filter
from ddz.adapters.rpc.grpc_server import full_service_name
from ddz.adapters.rpc.routing import RoutedRules, rules_service
from ddz.adapters.runtime.service_runner import connect_bus
from ddz.adapters.security.event_signing import event_keyring
from ddz.adapters.telemetry import metrics
from ddz.adapters.telemetry.health import Check
from ddz.application.hand_fold import Entry, HandFold
from ddz.application.tasks import cancel_and_wait
from ddz.bot.kinds import make_player
from ddz.config import Settings
from ddz.v1 import bot_pb2, bot_pb2_grpc

from .adapters.clients import RulesClient
from .adapters.hands import FeedLookup, resume_hands
from .adapters.partitions import Partitions, buckets_of, partition_of, subject_token
from .servicer import BotServicer
from .use_cases.autoplay import AutoPlay, in_partition
from .use_cases.batcher import in_flight_of
from .use_cases.handlers import GetStats, Suggest
from .use_cases.watchdog import Watchdog

NAME = "bot"
INSTANCE_IDLE = 60.0
"""Seconds after its last pull the server deletes an instance's own consumer."""

log = structlog.get_logger("ddz.bot")


class BotApp:
    """The bot built whole (``build``); ``start`` follows its hands (and, when the hands
    are shared, takes its partitions)."""

    full_names: Sequence[str] = (full_service_name(bot_pb2, "BotService"),)

    def __init__(
        self,
        settings: Settings,
        bus: EventBus,
        rules: RoutedRules,
        *,
        player: str | None = None,
        partition: int = 0,
        partitions: int = 1,
    ) -> None:
        self.settings = settings
        self.bus = bus
        self.rules = rules  # each hand's moves to one instance
        self.player_kind = player or settings.bot.bot_player
        self.player = make_player(self.player_kind, max_ms=settings.bot.bot_max_ms)
        self.partition = partition
        self.partitions_n = partitions
        self.durable = NAME if partitions <= 1 else f"{NAME}-{partition}-of-{partitions}"
        self.holder = instance_id(NAME)
        self.shared = settings.bot.bot_partitions > 1  # hands shared by partition leases
        if self.shared:
            self.durable = f"{NAME}-{subject_token(self.holder)}"
        self._taking: set[asyncio.Task[int]] = set()
        self._filtering = asyncio.Lock()
        self._resuming: asyncio.Task[int] | None = None
        self.autoplay = AutoPlay(
            RulesClient(rules, timeout=settings.rpc.rpc_timeout),
            self.player,
            owns=self._owns,
            metrics=metrics,
        )
        self.feed = HandFeed(
            bus,
            keyring=event_keyring(settings.keys),  # every event folded is verified
            keep_ended=0,
            on_change=self._changed,
            accept=self._owns,
        )
        self.autoplay.attach(self.feed)
        self.watchdog = Watchdog(
            self.feed,
            self.autoplay.moves,
            self.autoplay.kick,
            stall_after=settings.clocks.turn_timeout + settings.clocks.stall_margin,
            auto_play_after=settings.clocks.timeouts_to_autoplay,
            metrics=metrics,
        )
        self.servicer = BotServicer(
            Suggest(FeedLookup(self.feed), self.player), GetStats(self.autoplay, self.player_kind)
        )
        self.partitions: Partitions | None = None
        """The partition leases, when the hands are shared (``DDZ_BOT_PARTITIONS``)."""
        if self.shared:
            self.partitions = Partitions(
                bus, self.holder, settings.bot.bot_partitions,
                ttl=settings.bus.lease_ttl, replicas=settings.bus.stream_replicas,
                on_taken=self._partition_taken, on_lost=self._partition_lost,
                on_members=self._members_counted,
            )  # fmt: skip

    async def start(self) -> None:
        if self.partitions is None:
            await self.feed.follow(self.durable, filters=self._static_filters())
            self.watchdog.start()
            self._resuming = asyncio.create_task(resume_hands(self.feed), name="bot:resume")
            return
        await self.feed.follow(
            self.durable, from_now=True, inactive_threshold=INSTANCE_IDLE,
            filters=bucket_filters(HAND, ()),  # no partition yet: nothing
        )  # fmt: skip
        self.watchdog.start()
        await self.partitions.start()

    def _static_filters(self) -> list[str]:
        """Every hand's events, or those of this instance's static share."""
        if self.partitions_n <= 1:
            return [category_filter(HAND), category_filter(HAND, internal=True)]
        return bucket_filters(HAND, buckets_of({self.partition}, self.partitions_n))

    def _owns(self, hand_id: str) -> bool:
        """This instance plays the hand (its static share, or its partition's lease)."""
        if self.partitions is None:
            return in_partition(hand_id, self.partition, self.partitions_n)
        return self.partitions.holds(partition_of(hand_id, self.partitions.count))

    async def _partition_taken(self, partition: int) -> None:
        """Ours now: its events sent here from now on, then its unfinished hands read
        (in the background; events meanwhile are folded as they come)."""
        assert self.partitions is not None  # called by the partitions only
        await self._follow_held()
        count = self.partitions.count

        def accept(hand_id: str) -> bool:
            return partition_of(hand_id, count) == partition

        task = asyncio.create_task(resume_hands(self.feed, accept=accept), name="bot:take")
        self._taking.add(task)
        task.add_done_callback(self._taking.discard)

    def _members_counted(self, members: int) -> None:
        """The bot's calls in flight to the rules, its share of the suite's."""
        self.autoplay.moves.max_in_flight = in_flight_of(members)

    async def _partition_lost(self, partition: int) -> None:
        """Another instance's now: its hands' folds dropped (``_owns`` already says no)."""
        dropped = self.feed.drop_refused()
        log.info("partition_left", partition=partition, hands=dropped)
        await self._follow_held(leaving=partition)

    async def _follow_held(self, leaving: int | None = None) -> None:
        """Filter the feed's consumer on the buckets of the partitions held (not
        ``leaving``, let go of right after). One change at a time, each made from what
        is held when it runs, so the last one made is the latest."""
        assert self.partitions is not None  # called by the partitions only
        async with self._filtering:
            held = self.partitions.held - {leaving}
            buckets = buckets_of(held, self.partitions.count)
            await self.feed.refilter(bucket_filters(HAND, buckets))

    def _changed(self, fold: HandFold, applied: list[Entry]) -> None:
        self.watchdog.seen(fold)
        self.autoplay.on_change(fold, applied)

    def checks(self) -> Mapping[str, Check]:
        """NOT_SERVING while NATS or the hand feed is down (or the partition leases'
        loop, when the hands are shared)."""
        bus, feed, partitions = self.bus, self.feed, self.partitions
        checks: dict[str, Check] = {"nats": lambda: bus.connected, "feed": lambda: feed.healthy}
        if partitions is not None:
            checks["partitions"] = lambda: partitions.running
        return checks

    def add_to_server(self, server: grpc.aio.Server) -> None:
        bot_pb2_grpc.add_BotServiceServicer_to_server(self.servicer, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        with contextlib.suppress(Exception):  # logged where they ended
            await cancel_and_wait(list(self._taking))
        if self.partitions is not None:
            await self.partitions.stop()  # released: the others take them at once
        await cancel_and_wait([self._resuming])
        await self.watchdog.close()
        await self.autoplay.close()
        await self.feed.close()  # finishes and acks its batch: before the connection closes
        await self.bus.close()
        await self.rules.close()


async def build(
    settings: Settings, *, player: str | None = None, partition: int = 0, partitions: int = 1
) -> BotApp:
    """The bot with its bus connected and its routes to the rules open (closed again if
    a later step fails); ``partition`` of ``partitions``: a static share of the hands."""
    if not 0 <= partition < max(1, partitions):
        raise ValueError(f"partition {partition} is not one of 0..{partitions - 1}")
    bus = await connect_bus(settings.bus, NAME)
    rules = rules_service(settings.calling, settings.bot.bot_partitions)
    try:
        return BotApp(
            settings, bus, rules, player=player, partition=partition, partitions=partitions
        )
    except BaseException:
        await rules.close()
        await bus.close()
        raise
