"""A service's health as the gRPC health service reports it: SERVING while everything it
depends on answers, NOT_SERVING while anything does not.

A service names what it depends on (``Service.checks()``): each check is a callable
answering True while that part works, plain (a flag: the NATS connection is up, a
consumer loop runs) or awaitable (a probe: the database answers ``SELECT 1``,
``ddz.adapters.store.reachable``). A ``HealthWatch`` asks every check about once a
second and sets the status of "" and each of the service's names when the answer
changes, with one log line per change naming what is down. A check that raises, or a
probe that does not answer within ``PROBE_TIMEOUT``, counts as down.

A service may also name roles (``Service.roles()``): a health name of its own for each,
SERVING while the service serves and the role's check holds (the active one of several
table instances), so that a client's load balancer can send calls to that one only.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence

import structlog
from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer

from ddz.adapters.telemetry import metrics
from ddz.application.tasks import cancel_and_wait

INTERVAL = 1.0  # seconds between two rounds of checks
PROBE_TIMEOUT = 2.0  # seconds a probe may take before its part counts as down

ACTIVE_TABLE = "ddz.v1.TableService.active"
"""The role of the table instance holding the tables (the others forward to it)."""

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING

Check = Callable[[], bool | Awaitable[bool]]
"""True while the part it names works."""

log = structlog.get_logger("ddz.health")


class HealthWatch:
    """Keeps ``servicer``'s status of ``names`` (with "") true to ``checks``."""

    def __init__(
        self,
        service: str,
        names: Sequence[str],
        checks: Mapping[str, Check],
        servicer: HealthServicer,
        *,
        roles: Mapping[str, Check] | None = None,
        interval: float = INTERVAL,
        probe_timeout: float = PROBE_TIMEOUT,
    ) -> None:
        self.service = service
        self.names = ("", *names)
        self.checks = dict(checks)
        self.roles = dict(roles or {})
        self.playing: frozenset[str] | None = None  # the roles SERVING now (None: unset)
        self.servicer = servicer
        self.interval = interval
        self.probe_timeout = probe_timeout
        self.down: frozenset[str] = frozenset()
        self._reported = False  # the status was set at least once
        self._task: asyncio.Task[None] | None = None

    @property
    def serving(self) -> bool:
        return not self.down

    async def start(self) -> None:
        """Set the status from a first round of checks, then keep it true."""
        await self.update()
        if self.checks or self.roles:
            self._task = asyncio.create_task(self._watch(), name=f"health:{self.service}")

    async def stop(self) -> None:
        await cancel_and_wait([self._task])
        self._task = None

    async def update(self) -> frozenset[str]:
        """Ask every check once; set the status if what is down changed. What is down."""
        answers = await asyncio.gather(*(self._ask(check) for check in self.checks.values()))
        down = frozenset(name for name, up in zip(self.checks, answers, strict=True) if not up)
        if down != self.down or not self._reported:
            status = NOT_SERVING if down else SERVING
            for name in self.names:
                await self.servicer.set(name, status)
            self._reported = True
            metrics.serving(self.service, not down)
        if down != self.down:
            if down:
                log.warning("not_serving", service=self.service, down=sorted(down))
            else:
                log.info("serving", service=self.service, recovered=sorted(self.down))
            self.down = down
        await self._update_roles()
        return down

    async def _update_roles(self) -> None:
        answers = await asyncio.gather(*(self._ask(check) for check in self.roles.values()))
        playing = frozenset(
            name for name, up in zip(self.roles, answers, strict=True) if up and not self.down
        )
        for name in self.roles:
            if self.playing is None or (name in self.playing) != (name in playing):
                await self.servicer.set(name, SERVING if name in playing else NOT_SERVING)
        self.playing = playing

    async def _ask(self, check: Check) -> bool:
        try:
            answer = check()
            if inspect.isawaitable(answer):
                async with asyncio.timeout(self.probe_timeout):
                    answer = await answer
        except Exception:
            return False
        return bool(answer)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.update()
