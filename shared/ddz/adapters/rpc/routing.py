"""Which instance of the rules service decides a hand: every command of one hand goes
to one live instance, so that its cached copy of the hand stays the latest
(docs/ARCHITECTURE.md, "Rules instances"). Every client of the rules service (the
table's, the bot's) calls it through ``rules_service(settings.calling, partitions)``.

``DDZ_RULES_ADDR`` lists the instances (``NetworkSettings.targets``): ``host:port`` entries, and
``dns:///name:port`` entries standing for every address the name resolves to (a headless
Service in Kubernetes, ``docker compose --scale rules=3``), resolved again every
``RESOLVE_EVERY`` seconds. gRPC's load balancing cannot choose a server by a field of the
request (Python has no custom LB policies), so this is plain code over one channel per
instance, each made by ``grpc_client.make_channel`` (TLS, deadlines, retries; the
server's certificate still checked as the rules' own, whatever its address):

- **rendezvous hashing** (highest random weight) of the hand id over the live instances:
  clients that know the same instances choose the same one for a hand; when one goes,
  only its hands move (each to the next of its own ranking), and they return with it.
- **by the bot's partition**, when the bot's instances share the hands
  (``DDZ_BOT_PARTITIONS`` = P > 1, set alike for the table and the bot): a hand goes
  with its partition (``partition_of``), partition ``k`` to the ``k mod N``-th of the N
  instances in the order of their addresses (its home), while that one is live, else to
  the first live one of the partition's own rendezvous ranking. The bot's instances
  share the partitions the same way (``k mod M``-th of M instances,
  ``services/bot/adapters/partitions.py``), so with as many bot instances as rules instances,
  all the hands of one bot instance go to one rules instance, and its batch of moves
  (``DecideBatch``) goes whole instead of split in one call per rules instance. One
  rule for both clients: the table's calls for a hand meet the bot's on one instance.
- **liveness**: an instance is live while its health stream (``Health/Watch`` of
  ``ddz.v1.RulesService``) says SERVING. The stream breaking (the process died, the
  connection went), NOT_SERVING (it lost NATS, it is stopping), or a call to it failing
  at the transport (UNAVAILABLE or CANCELLED without our ErrorInfo) takes it out at
  once; while out, its stream is opened again every ``RECHECK`` seconds (growing), and
  SERVING brings it back. No instance live: the ranking over all of them (the call
  waits for its server).
- **failing over**: with several instances a call does not wait for a dead one
  (``wait_for_ready=False``); a call that failed at the transport is sent to the next
  instance when ``grpc_client.REPEATS`` says it may be sent again (``DecideBatch``,
  ``GetPublicState``); ``Decide``, sent once, fails to its caller. ``DecideBatch`` is
  split per instance, its outcomes put back in the order of the request; a part that
  failed becomes its commands' outcomes (the others were decided).
- one instance (the default, one ``host:port``): one channel, no health stream, every
  call exactly as a plain stub's.

Correctness does not rest on this: two instances deciding one hand (clients that
disagree for a moment about who is live) cannot fork it, and a stale copy is read again
(``services/rules/use_cases/handlers.py``). Routing is what keeps that rare.
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import grpc
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ddz.adapters.messaging.subjects import partition_of
from ddz.adapters.rpc.grpc_client import CUT, REPEATS, error_reason, make_channel
from ddz.application.tasks import cancel_and_wait
from ddz.config.calling import CallSettings
from ddz.v1 import rules_pb2, rules_pb2_grpc

log = structlog.get_logger("ddz.routing")

RESOLVE_EVERY = 5.0
"""Seconds between two resolutions of a ``dns:///`` entry (instances come and go)."""
RECHECK = (0.2, 2.0)
"""An instance that is out: its health stream is opened again after 0.2 s, doubling
up to 2 s, until it answers SERVING."""
CLOSE_GRACE = 5.0
"""Seconds calls in flight on an instance that left the DNS answer may still take."""
DNS_SCHEME = "dns:"
RULES = "ddz.v1.RulesService"


def weight(target: str, hand_id: str) -> int:
    """The rendezvous weight of ``target`` for ``hand_id``: the highest one decides."""
    digest = hashlib.blake2b(f"{target}\0{hand_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def dns_name(entry: str) -> tuple[str, int] | None:
    """``(host, port)`` of a ``dns:`` entry (``dns:///rules:50052``,
    ``dns://authority/rules:50052``, ``dns:rules:50052``; the system's resolver answers),
    None for any other target. ``ValueError`` when it names no port."""
    if not entry.startswith(DNS_SCHEME):
        return None
    rest = entry[len(DNS_SCHEME) :]
    if rest.startswith("//"):
        rest = rest[2:].partition("/")[2]
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"a DNS target needs a port, e.g. dns:///rules:50052, got {entry!r}")
    return host.strip("[]"), int(port)


def transport_failed(error: grpc.aio.AioRpcError) -> bool:
    """The call failed for want of a server (unreachable, connection lost, cancelled by a
    server that stopped), not because a server answered UNAVAILABLE with a reason of ours
    (e.g. no seed from the dealer)."""
    return error.code() in CUT and error_reason(error) is None


@dataclass(eq=False)
class Instance:
    """One server of the service: its address, channel and stub, and whether it is live."""

    target: str
    channel: grpc.aio.Channel
    stub: Any
    live: bool = True  # until told otherwise: a new instance is tried at once
    watching: asyncio.Task[None] | None = field(default=None, repr=False)


class HandRouter:
    """The instances of one service, each hand id mapped to one of them."""

    def __init__(
        self,
        settings: CallSettings,
        service: str,
        stub: Callable[[grpc.aio.Channel], Any],
        full_name: str,
        partitions: int = 1,
    ) -> None:
        self.settings = settings
        self.service = service
        self.full_name = full_name
        self.partitions = partitions  # DDZ_BOT_PARTITIONS; > 1: hands routed by partition
        self._stub = stub
        self._ordered: list[str] = []  # the instances' targets, sorted (homes by index)
        entries = settings.network.targets(service)
        self._names = {entry: name for entry in entries if (name := dns_name(entry))}
        self._static = [entry for entry in entries if entry not in self._names]
        # What each DNS entry stood for last; until it is resolved, its name itself.
        self._resolved: dict[str, set[str]] = {entry: {entry} for entry in self._names}
        self.watched = len(entries) > 1 or bool(self._names)
        self.instances: dict[str, Instance] = {}
        for entry in entries:
            self._add(entry)
        self._resolving: asyncio.Task[None] | None = None
        if self._names:
            self._resolving = asyncio.get_running_loop().create_task(
                self._resolve_forever(), name=f"routing:{service}:resolve"
            )

    # -- choosing ---------------------------------------------------------------------

    def ranking(self, hand_id: str, skip: Sequence[Instance] = ()) -> list[Instance]:
        """The live instances not in ``skip``, the hand's own first; when none is live
        (and none skipped), every instance."""
        live = [i for i in self.instances.values() if i.live and i not in skip]
        if not live and not skip:
            live = list(self.instances.values())
        if self.partitions <= 1:
            return sorted(live, key=lambda i: weight(i.target, hand_id), reverse=True)
        partition = partition_of(hand_id, self.partitions)
        key = f"partition:{partition}"
        ranked = sorted(live, key=lambda i: weight(i.target, key), reverse=True)
        home = self.instances[self.home(partition)]
        if home in ranked:
            ranked.remove(home)
            ranked.insert(0, home)
        return ranked

    def home(self, partition: int) -> str:
        """The target of the instance that decides the hands of the bot's ``partition``
        while it is live: the ``partition mod N``-th of the N instances by address."""
        return self._ordered[partition % len(self._ordered)]

    def choose(self, hand_id: str, skip: Sequence[Instance] = ()) -> Instance | None:
        """The instance that decides ``hand_id`` now (None: every one was skipped)."""
        ranked = self.ranking(hand_id, skip)
        return ranked[0] if ranked else None

    def options(self, options: dict[str, Any]) -> dict[str, Any]:
        """A call's options: with several instances, do not wait for a dead one."""
        if len(self.instances) > 1:
            options.setdefault("wait_for_ready", False)
        return options

    def failed(self, instance: Instance) -> None:
        """A call to ``instance`` found no server: out until its health says SERVING."""
        if not self.watched or instance.target not in self.instances:
            return
        self._set(instance, False, why="call_failed")
        if instance.watching is not None:
            instance.watching.cancel()
        instance.watching = asyncio.get_running_loop().create_task(
            self._watch(instance, pause=RECHECK[0]), name=f"routing:{instance.target}"
        )

    # -- instances --------------------------------------------------------------------

    def _add(self, target: str) -> None:
        channel = make_channel(self.settings, self.service, target=target)
        instance = Instance(target, channel, self._stub(channel))
        self.instances[target] = instance
        self._ordered = sorted(self.instances)
        if self.watched:
            instance.watching = asyncio.get_running_loop().create_task(
                self._watch(instance), name=f"routing:{target}"
            )

    async def _remove(self, target: str) -> None:
        instance = self.instances.pop(target)
        self._ordered = sorted(self.instances)
        log.info("instance_gone", service=self.service, target=target)
        if instance.watching is not None:
            instance.watching.cancel()
        await instance.channel.close(CLOSE_GRACE)

    def _set(self, instance: Instance, live: bool, *, why: str) -> None:
        if instance.live != live:
            instance.live = live
            say = log.info if live else log.warning
            say("instance_live" if live else "instance_out", service=self.service,
                target=instance.target, why=why)  # fmt: skip

    async def _watch(self, instance: Instance, *, pause: float = 0.0) -> None:
        """Keep ``instance.live`` true to its health stream."""
        health = health_pb2_grpc.HealthStub(instance.channel)
        request = health_pb2.HealthCheckRequest(service=self.full_name)
        wait, most = RECHECK
        while True:
            await asyncio.sleep(pause)
            why, answered = "stream_ended", False
            try:
                async for answer in health.Watch(request, wait_for_ready=False):
                    serving = answer.status == health_pb2.HealthCheckResponse.SERVING
                    self._set(instance, serving, why="health")
                    answered = True
            except grpc.aio.AioRpcError as error:
                why = error.code().name.lower()
            self._set(instance, False, why=why)
            pause = wait if answered or not pause else min(pause * 2, most)

    async def _resolve_forever(self) -> None:
        while True:
            await self._resolve()
            await asyncio.sleep(RESOLVE_EVERY)

    async def _resolve(self) -> None:
        """The instances: the static entries, and what each DNS name resolves to now (a
        name that resolves to nothing, or fails to, keeps what it had)."""
        loop = asyncio.get_running_loop()
        for entry, (host, port) in self._names.items():
            try:
                found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                log.warning("resolve_failed", service=self.service, name=host, error=str(exc))
                continue
            addresses = {_target(str(info[4][0]), port) for info in found}
            if addresses:
                self._resolved[entry] = addresses
        wanted = set(self._static).union(*self._resolved.values())
        for target in sorted(wanted - set(self.instances)):
            self._add(target)
        for target in sorted(set(self.instances) - wanted):
            await self._remove(target)

    async def close(self) -> None:
        await cancel_and_wait([self._resolving, *(i.watching for i in self.instances.values())])
        for instance in self.instances.values():
            await instance.channel.close()


def _target(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


class RoutedRules:
    """``RulesService`` as a stub whose every call goes to the instance of its hand
    (``HandRouter``); its methods take what the generated stub's take."""

    def __init__(self, router: HandRouter) -> None:
        self.router = router

    async def Decide(self, request: rules_pb2.DecideRequest, **options: Any) -> Any:
        return await self._call("Decide", request.hand_id, request, options)

    async def GetPublicState(self, request: rules_pb2.GetPublicStateRequest, **options: Any) -> Any:
        return await self._call("GetPublicState", request.hand_id, request, options)

    async def DecideBatch(self, request: rules_pb2.DecideBatchRequest, **options: Any) -> Any:
        commands = list(request.commands)
        chosen = {self.router.choose(command.hand_id) for command in commands}
        if len(chosen) <= 1:  # one instance's: as a plain stub, errors are the call's
            hand_id = commands[0].hand_id if commands else ""
            return await self._call("DecideBatch", hand_id, request, options)
        outcomes: list[rules_pb2.DecideOutcome | None] = [None] * len(commands)
        await self._split(list(enumerate(commands)), outcomes, options, ())
        return rules_pb2.DecideBatchResponse(outcomes=[o or _LOST for o in outcomes])

    async def close(self) -> None:
        await self.router.close()

    async def _call(self, method: str, hand_id: str, request: Any, options: dict[str, Any]) -> Any:
        again = REPEATS[f"{RULES}/{method}"].retried
        tried: list[Instance] = []
        while True:
            instance = self.router.choose(hand_id, tried)
            assert instance is not None  # the first choice always exists
            try:
                return await getattr(instance.stub, method)(request, **self.router.options(options))
            except grpc.aio.AioRpcError as error:
                if not transport_failed(error):
                    raise
                self.router.failed(instance)
                tried.append(instance)
                if not again or self.router.choose(hand_id, tried) is None:
                    raise

    async def _split(
        self,
        commands: list[tuple[int, rules_pb2.DecideRequest]],
        outcomes: list[rules_pb2.DecideOutcome | None],
        options: dict[str, Any],
        tried: Sequence[Instance],
    ) -> None:
        """Send each instance its hands' commands (in the order given), concurrently."""
        parts: dict[Instance, list[tuple[int, rules_pb2.DecideRequest]]] = {}
        for index, command in commands:
            instance = self.router.choose(command.hand_id, tried)
            if instance is None:  # every instance failed: the last failure stands
                continue
            parts.setdefault(instance, []).append((index, command))

        async def send(instance: Instance, part: list[tuple[int, rules_pb2.DecideRequest]]) -> None:
            batch = rules_pb2.DecideBatchRequest(commands=[command for _, command in part])
            try:
                answer = await instance.stub.DecideBatch(
                    batch, **self.router.options(dict(options))
                )
            except grpc.aio.AioRpcError as error:
                failed = _outcome_of(error)
                for index, _ in part:
                    outcomes[index] = failed
                if transport_failed(error):  # DecideBatch may be sent again (REPEATS)
                    self.router.failed(instance)
                    await self._split(part, outcomes, options, (*tried, instance))
                return
            for (index, _), outcome in zip(part, answer.outcomes, strict=True):
                outcomes[index] = outcome

        await asyncio.gather(*(send(instance, part) for instance, part in parts.items()))


def _outcome_of(error: grpc.aio.AioRpcError) -> rules_pb2.DecideOutcome:
    """A failed part of a batch as each of its commands' outcome (the call's status)."""
    return rules_pb2.DecideOutcome(
        code=error.code().value[0],
        reason=error_reason(error) or "",
        message=f"rules: {error.details() or error.code().name}",
    )


_LOST = rules_pb2.DecideOutcome(
    code=grpc.StatusCode.UNAVAILABLE.value[0], message="rules: no instance took the command"
)


def rules_service(settings: CallSettings, partitions: int = 1) -> RoutedRules:
    """The rules service as its clients call it: each hand's calls to its instance (by
    partition when ``partitions`` > 1: ``BotSettings.bot_partitions``). Made inside the
    event loop (it watches the instances); ``close()`` it."""
    return RoutedRules(
        HandRouter(settings, "rules", rules_pb2_grpc.RulesServiceStub, RULES, partitions)
    )


RulesStub: TypeAlias = rules_pb2_grpc.RulesServiceStub | RoutedRules
"""What a rules client calls: the routed service, or one instance's plain stub."""
