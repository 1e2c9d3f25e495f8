"""A ``Supervisor`` keeps a started stack running, as ``restart: unless-stopped`` does:
a child that exits (NATS included) is started again at the same address, after a
delay that doubles while it keeps failing; only a crash loop (``RestartPolicy``) gives
up. The stack knows how to restart a child (``restart``); the supervisor decides when.
``stopping.Stop`` is the request to stop that both look at.
"""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ddz.adapters.runtime.children import ServiceProcess, StackError
from ddz.adapters.runtime.nats_server import (
    NatsServerError,
)
from ddz.adapters.runtime.stopping import Stop
from ddz.config.fronts import SupervisionSettings


class Supervised(Protocol):
    """The part of a stack's settings a supervisor reads (``Settings`` is one)."""

    @property
    def supervision(self) -> SupervisionSettings: ...


class SupervisedStack(Protocol):
    """What a supervisor needs of a started stack (``Stack`` is one)."""

    @property
    def settings(self) -> Supervised: ...

    def children(self) -> list[ServiceProcess]: ...

    def restart(self, name: str) -> ServiceProcess: ...


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """When a supervisor restarts an exited child, and when it gives up.

    The n-th restart in a row waits ``first_delay * 2**n`` seconds, at most ``max_delay``;
    a child that stayed up ``stable_after`` seconds starts again from ``first_delay``.
    More than ``limit`` restarts of one child within ``window`` seconds is a crash loop
    (``limit=0``: the first exit is one). ``DDZ_RESTART_LIMIT`` and
    ``DDZ_RESTART_WINDOW`` set the two that an operator may want to tune.
    """

    limit: int = 5
    window: float = 60.0
    first_delay: float = 0.2
    max_delay: float = 5.0
    stable_after: float = 10.0

    @classmethod
    def from_settings(cls, settings: SupervisionSettings) -> RestartPolicy:
        return cls(limit=settings.restart_limit, window=settings.restart_window)

    def delay(self, streak: int) -> float:
        """Seconds to wait before the restart that follows ``streak`` quick ones."""
        return float(min(self.max_delay, self.first_delay * 2 ** min(streak, 32)))


class CrashLoop(StackError):
    """A child exited more often than the restart policy allows (the message names it,
    how it exited, and ends with the tail of its log)."""

    def __init__(self, child: ServiceProcess, exits: int, policy: RestartPolicy) -> None:
        self.name = child.name
        self.log_file = child.log_file
        super().__init__(
            f"{child.name} is crash looping: it {exit_reason(child.process.returncode)}, "
            f"{exits} exits within {policy.window:g}s (DDZ_RESTART_LIMIT allows "
            f"{policy.limit} restarts); stopping the stack.\n"
            f"last lines of {child.log_file}:\n{child.log_lines()}"
        )


def exit_reason(returncode: int | None) -> str:
    """How a child ended: ``exited with code 2``, ``was killed by SIGKILL``."""
    if returncode is None:
        return "is running"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


@dataclass
class _Watch:
    """What the supervisor remembers of one child between looks."""

    started: float  # when its current process started (monotonic seconds)
    streak: int = 0  # restarts in a row that did not stay up stable_after
    restarts: deque[float] = field(default_factory=deque)  # when, within the window
    due: float | None = None  # when an exited child is restarted


class Supervisor:
    """Keeps a started ``Stack`` running: an exited child is restarted at the same address
    after a growing delay (``RestartPolicy``), and ``report`` gets one line per restart.
    ``watch(stop)`` looks every ``poll`` seconds until ``stop`` is set; it raises
    ``CrashLoop`` when a child keeps exiting. It runs in the thread that will call
    ``stack.stop()`` afterwards, so nothing is restarted once stopping has begun.
    """

    def __init__(
        self,
        stack: SupervisedStack,
        policy: RestartPolicy | None = None,
        *,
        report: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stack = stack
        self.policy = policy or RestartPolicy.from_settings(stack.settings.supervision)
        self.report = report
        self.clock = clock
        now = clock()
        self._watches = {child.name: _Watch(started=now) for child in stack.children()}

    def watch(self, stop: Stop, poll: float = 0.2) -> None:
        """Supervise until ``stop`` is set (then return at once, restarting nothing)."""
        while not stop.wait(poll):
            self.step(stop.is_set)

    def step(self, stopping: Callable[[], bool] = lambda: False) -> None:
        """One look at every child (NATS first, so services come back to a bus)."""
        for child in self.stack.children():
            if stopping():
                return
            now = self.clock()
            watch = self._watches.setdefault(child.name, _Watch(started=now))
            if child.running():
                if watch.streak and now - watch.started >= self.policy.stable_after:
                    watch.streak = 0
                continue
            if watch.due is None:
                self._exited(child, watch, now)
            if watch.due is not None and now >= watch.due:
                self._restart(child, watch, now)

    def _exited(self, child: ServiceProcess, watch: _Watch, now: float) -> None:
        while watch.restarts and now - watch.restarts[0] > self.policy.window:
            watch.restarts.popleft()
        if len(watch.restarts) >= self.policy.limit:
            raise CrashLoop(child, len(watch.restarts) + 1, self.policy)
        if now - watch.started >= self.policy.stable_after:
            watch.streak = 0
        watch.due = now + self.policy.delay(watch.streak)

    def _restart(self, child: ServiceProcess, watch: _Watch, now: float) -> None:
        reason = exit_reason(child.process.returncode)
        watch.restarts.append(now)
        watch.streak += 1
        watch.started = now
        watch.due = None
        try:
            new = self.stack.restart(child.name)
        except (StackError, NatsServerError) as exc:
            # Counted as a restart that exited at once: the next look tries again later.
            self.report(f"ddz: {child.name} {reason}; restarting it failed: {exc}")
            return
        watch.started = self.clock()
        self.report(
            f"ddz: {child.name} {reason}; restarted  {new.address}  (pid {new.process.pid})"
        )
