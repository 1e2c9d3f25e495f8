"""The crowd's processes: a few processes (``multiprocessing``, spawned: no gRPC state
crosses a fork), each running its share of the people on one asyncio loop, told by the
parent (``Crowd``) over a pipe how many people the crowd is to have and when to stop.

Person ``n`` (0, 1, 2, ...) lives in process ``n mod P``, is player
``crowd-<run>-<n>``, sits first in room ``n mod 4`` and draws from their own rng
(``behaviour.person_seed``). Growing to N people over a ramp of S seconds starts the
new people evenly over S. Every ``TICK`` seconds each process sends what its people
did (``tally.Delta``); on ``stop`` its people finish the hands in play and leave their
tables, and the process sends its last delta and the CPU seconds it used.

Each process is a composition root: it reads its ``Settings`` from the environment its
parent gave it, and hands its people only the parts they call with.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from ddz.config import Settings
from ddz.loadgen.behaviour import Behaviour, person_seed
from ddz.loadgen.tally import Delta, Tally, Totals
from ddz.v1 import table_pb2, table_pb2_grpc

TICK = 1.0
"""Seconds between two deltas of a process."""


@dataclass(frozen=True)
class PlanOfRun:
    """What every process of the crowd is told at start."""

    env: Mapping[str, str]  # the DDZ_* settings of the suite (Settings.from_env)
    run_id: str
    seed: int
    processes: int


def player_id(run_id: str, number: int) -> str:
    return f"crowd-{run_id}-{number}"


# -- a process of the crowd ----------------------------------------------------------


def process_main(plan: PlanOfRun, index: int, conn: Connection) -> None:
    """The body of process ``index``: its people until told to stop."""
    started = time.process_time()
    try:
        asyncio.run(_people(plan, index, conn))
    finally:
        with contextlib.suppress(OSError):  # the parent gone: nobody to tell
            conn.send(("cpu", time.process_time() - started))
        conn.close()


async def _rooms(settings: Settings) -> list[table_pb2.Room]:
    from ddz.adapters.rpc.grpc_client import open_channel

    channel = open_channel(
        settings.calling, settings.network.address("table"), service="table", client_cert=False
    )
    try:
        stub = table_pb2_grpc.TableServiceStub(channel)  # type: ignore[no-untyped-call]
        listed = await stub.ListRooms(table_pb2.ListRoomsRequest(), timeout=30)
    finally:
        await channel.close()
    return list(listed.rooms)


async def _people(plan: PlanOfRun, index: int, conn: Connection) -> None:
    from ddz.loadgen.person import Person  # here: the parent process needs no gRPC

    settings = Settings.from_env(dict(plan.env))
    rooms = await _rooms(settings)
    tally = Tally()
    stopping = asyncio.Event()
    lives: set[asyncio.Task[None]] = set()
    arrivals: list[asyncio.Task[None]] = []
    made = 0  # people of this process so far (numbers index, index + P, ...)
    loop = asyncio.get_running_loop()
    orders: asyncio.Queue[Any] = asyncio.Queue()

    def take_order() -> None:
        try:
            orders.put_nowait(conn.recv())
        except (EOFError, OSError):  # the parent is gone (killed): nobody to play for
            loop.remove_reader(conn.fileno())
            orders.put_nowait(("gone",))

    loop.add_reader(conn.fileno(), take_order)

    async def arrive(number: int, delay: float) -> None:
        await asyncio.sleep(delay)
        if stopping.is_set():
            return
        person = Person(settings.calling, settings.keys, player_id(plan.run_id, number),
                        rooms, number, Behaviour(person_seed(plan.seed, number)), tally,
                        stopping)  # fmt: skip
        task = asyncio.create_task(person.live(), name=f"person-{number}")
        lives.add(task)
        task.add_done_callback(lives.discard)

    async def report() -> None:
        while True:
            await asyncio.sleep(TICK)
            try:
                conn.send(("delta", tally.take()))
            except OSError:  # the parent is gone: the order loop hears it too
                return

    reporting = asyncio.create_task(report())
    try:
        while True:
            order = await orders.get()
            if order[0] == "grow":
                _, total, ramp = order
                mine = list(range(index + made * plan.processes, total, plan.processes))
                for k, number in enumerate(mine):
                    delay = ramp * k / max(1, len(mine))
                    arrivals.append(asyncio.create_task(arrive(number, delay)))
                made += len(mine)
            elif order[0] in ("stop", "gone"):
                # "gone": the parent died without a word; its people leave at once.
                drain = order[1] if order[0] == "stop" else 0.0
                stopping.set()
                for task in arrivals:
                    task.cancel()
                if lives and drain > 0:
                    await asyncio.wait(set(lives), timeout=drain)
                for task in list(lives):  # past the drain: gone, mid-hand
                    task.cancel()
                await asyncio.gather(*lives, return_exceptions=True)
                break
    finally:
        loop.remove_reader(conn.fileno())
        reporting.cancel()
        with contextlib.suppress(OSError):  # the parent gone: nobody to tell
            conn.send(("delta", tally.take()))


# -- the parent's side ---------------------------------------------------------------


class Crowd:
    """The crowd's processes, from the parent: grow, gather, stop."""

    def __init__(self, plan: PlanOfRun) -> None:
        self.plan = plan
        self.totals = Totals()
        self.cpu_seconds: dict[int, float] = {}
        self.people = 0
        context = multiprocessing.get_context("spawn")
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        for index in range(plan.processes):
            ours, theirs = context.Pipe()
            process = context.Process(target=process_main, args=(plan, index, theirs),
                                      name=f"ddz-crowd-{index}", daemon=True)  # fmt: skip
            self._conns.append(ours)
            self._procs.append(process)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.pid is not None]

    def start(self) -> Crowd:
        for process in self._procs:
            process.start()
        return self

    def grow(self, people: int, ramp: float) -> None:
        """To ``people`` in all, the new ones arriving over ``ramp`` seconds."""
        for conn in self._conns:
            conn.send(("grow", people, ramp))
        self.people = people

    def gather(self, wait: float) -> None:
        """Take in what the processes sent, waiting up to ``wait`` seconds for it."""
        deadline = time.monotonic() + wait
        while True:
            ready = multiprocessing.connection.wait(
                [c for c in self._conns if not c.closed], max(0.0, deadline - time.monotonic())
            )
            for conn in ready:
                self._take(conn)
            if time.monotonic() >= deadline:
                return

    def _take(self, conn: Any) -> None:
        index = self._conns.index(conn)
        try:
            kind, value = conn.recv()
        except (EOFError, OSError):
            conn.close()
            return
        if kind == "delta":
            assert isinstance(value, Delta)
            self.totals.add(index, value)
        elif kind == "cpu":
            self.cpu_seconds[index] = float(value)
            conn.close()

    def stop(self, drain: float, on_wait: Any = None) -> None:
        """Stop: the people finish their hands (up to ``drain`` seconds), then leave."""
        for conn in self._conns:
            conn.send(("stop", drain))
        deadline = time.monotonic() + drain + 30
        while any(not c.closed for c in self._conns) and time.monotonic() < deadline:
            self.gather(1.0)
            if on_wait is not None:
                on_wait()
        for process in self._procs:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()

    def kill(self) -> None:
        for process in self._procs:
            if process.is_alive():
                process.kill()
            process.join(timeout=5)
