"""The tools ride through a service restart (real processes, ``kill -9``): ``ddz
simulate`` waits for a settlement service killed near the end and started again, and
for a table service that restarted (its tables forgotten: the driver opens them
again); a service that never comes back ends the tool with one ``ddz: error:`` line,
no traceback. A stream cut part-way (the connection, through a proxy) is resumed from
its last position: every update once, none missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from ddz.access.tokens import operator_token
from ddz.adapters import codec
from ddz.adapters.rpc.bearer import bearer_channel
from ddz.adapters.rpc.grpc_client import ask, make_channel, resumed
from ddz.adapters.runtime.children import ServiceProcess
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.runtime.stack import Stack
from ddz.config import Settings
from ddz.v1 import recorder_pb2, recorder_pb2_grpc, rules_pb2, table_pb2, table_pb2_grpc

HANDS = 6
TURN_TIMEOUT = 2.0
"""A person's seat that misses its turn this long is played by the bot (resume test)."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("ddz-restart")
    settings = Settings.from_env(
        {"DDZ_DATA_DIR": str(data_dir), "DDZ_TURN_TIMEOUT": str(TURN_TIMEOUT)}
    )
    with Stack(settings, ephemeral_ports=True, nats_port=0) as running:
        yield running


def kill(stack: Stack, name: str) -> None:
    """``kill -9`` the service and reap it."""
    child = stack.processes[name]
    os.kill(child.process.pid, signal.SIGKILL)
    child.process.wait()


def start_again(stack: Stack, name: str, **env: str) -> int:
    """Start the service as the stack starts it (``python -m services.NAME``, the
    stack's environment: same port, same data), left for the stack to stop. Returns
    where the new process's log begins (its log file is the one of every run)."""
    child = stack.processes[name]
    begins = child.log_file.stat().st_size
    with child.log_file.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", f"services.{name}"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env={**stack.child_env(), **env}, start_new_session=True,
        )  # fmt: skip
    stack.processes[name] = ServiceProcess(name, process, child.address, child.log_file)
    return begins


def log_since(stack: Stack, name: str, offset: int) -> str:
    with stack.processes[name].log_file.open("rb") as log:
        log.seek(offset)
        return log.read().decode("utf-8", "replace")


def ensure_running(stack: Stack, name: str) -> None:
    if not stack.processes[name].running():
        start_again(stack, name)
    deadline = time.monotonic() + 60
    while (
        health_status(stack.settings.network.address(name), 0.5, settings=stack.settings.calling)
        != SERVING
    ):
        assert time.monotonic() < deadline, (
            f"{name} is not back:\n{stack.processes[name].log_lines()}"
        )
        time.sleep(0.1)


def simulate(stack: Stack, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(stack.child_env())
    return subprocess.Popen(
        [sys.executable, "-m", "ddz.entrypoints.cli", "simulate", "--hands", str(HANDS), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def hands_over(settings: Settings) -> int:
    """How many hands the recorder holds to their end (a ``seed_revealed`` each)."""

    async def count() -> int:
        async with make_channel(settings.calling, "recorder") as channel:
            stub = recorder_pb2_grpc.RecorderServiceStub(channel)  # type: ignore[no-untyped-call]
            over, after = 0, 0
            while True:
                page = await stub.ReadAll(
                    recorder_pb2.ReadAllRequest(after_position=after, limit=1000), timeout=10
                )
                if not page.events:
                    return over
                over += sum(
                    codec.parse_envelope(e.envelope).type == "seed_revealed" for e in page.events
                )
                after = page.events[-1].position

    return asyncio.run(count())


def wait_for_hands(settings: Settings, count: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while hands_over(settings) < count and process.poll() is None:
        assert time.monotonic() < deadline, "the hands did not end"
        time.sleep(0.05)


def finish(process: subprocess.Popen[str], timeout: float = 180) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, out, err


def figure(report: str, label: str) -> str:
    found = re.search(rf"{re.escape(label)}\s*│?\s*(\S+)", report)
    assert found, report
    return found.group(1)


def test_simulate_waits_for_settlement_killed_near_the_end(stack: Stack) -> None:
    before = hands_over(stack.settings)
    run = simulate(stack)
    try:
        wait_for_hands(stack.settings, before + HANDS - 1, run)
        kill(stack, "settlement")
        wait_for_hands(stack.settings, before + HANDS, run)
        restarted = start_again(stack, "settlement", DDZ_LOG_LEVEL="DEBUG")  # logs each call
    finally:
        code, out, err = finish(run)
    assert code == 0, err
    assert figure(out, "hands settled") == str(HANDS), out
    assert "Traceback" not in err
    # The totals were read from the settlement service started again.
    assert '"rpc": "GetLedger"' in log_since(stack, "settlement", restarted)


def test_simulate_rides_through_a_table_restart(stack: Stack) -> None:
    ensure_running(stack, "settlement")
    before = hands_over(stack.settings)
    run = simulate(stack, "--tables", "2")
    try:
        wait_for_hands(stack.settings, before + 2, run)
        kill(stack, "table")
        restarted = start_again(stack, "table")
    finally:
        code, out, err = finish(run)
    assert code == 0, err
    assert figure(out, "hands settled") == str(HANDS), out
    # The restarted table service rebuilt the tables from their streams and dealt on: a
    # new hand, or (when the kill came late in the run) the deal its predecessor had
    # asked for and not seen answered.
    log = log_since(stack, "table", restarted)
    assert '"table_restored"' in log
    assert '"hand_started"' in log or '"hand_deal_finished"' in log, log


def test_a_service_that_never_comes_back_is_one_line(stack: Stack) -> None:
    ensure_running(stack, "settlement")
    ensure_running(stack, "table")
    before = hands_over(stack.settings)
    run = simulate(stack, "--json")
    try:
        wait_for_hands(stack.settings, before + 1, run)
        kill(stack, "table")
    finally:
        code, out, err = finish(run)
        start_again(stack, "table")  # for the tests after this one
    assert code == 1, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("ddz: error: ")]
    assert len(errors) == 1 and "table" in errors[0], err
    assert out == ""


class Proxy:
    """A TCP proxy to ``upstream`` whose connections ``cut()`` drops (a network cut:
    the service goes on, with everything it knows)."""

    def __init__(self, upstream: str) -> None:
        self.host, _, port = upstream.rpartition(":")
        self.port = int(port)
        self.writers: set[asyncio.StreamWriter] = set()
        self.cuts = 0

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._pipe, "127.0.0.1", 0)
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        self.writers |= {writer, up_writer}

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))

    def cut(self) -> None:
        self.cuts += 1
        for writer in list(self.writers):
            writer.transport.abort()
        self.writers.clear()

    async def close(self) -> None:
        self.cut()
        self.server.close()


@pytest.fixture
async def proxy(stack: Stack) -> AsyncIterator[tuple[Proxy, str]]:
    ensure_running(stack, "table")
    running = Proxy(stack.settings.network.address("table"))
    address = await running.start()
    yield running, address
    await running.close()


async def test_a_cut_stream_resumes_after_its_last_position(proxy: tuple[Proxy, str],
                                                             stack: Stack) -> None:  # fmt: skip
    cutter, address = proxy
    settings = stack.settings
    token = operator_token(settings.keys, "restart-test")
    async with (
        bearer_channel(settings.calling, token) as direct,
        bearer_channel(settings.calling, token, target=address) as through,
    ):
        table = table_pb2_grpc.TableServiceStub(direct)  # type: ignore[no-untyped-call]
        watched = table_pb2_grpc.TableServiceStub(through)  # type: ignore[no-untyped-call]
        # Seat 0 is a person who never moves: each of its turns waits TURN_TIMEOUT for
        # the bot to take over, so the hand is still in play when the stream is cut.
        seats = [table_pb2.SeatSpec(player_id="cut-person", is_bot=False)] + [
            table_pb2.SeatSpec(player_id=f"bot-cut-{s}", is_bot=True) for s in (1, 2)
        ]
        opened = await ask("table", table.OpenTable,
                           table_pb2.OpenTableRequest(variant="classic", seats=seats))  # fmt: skip
        dealt = await ask("table", table.StartHand,
                          table_pb2.StartHandRequest(table_id=opened.table.table_id))  # fmt: skip

        def open_stream(after: int) -> AsyncIterator[table_pb2.WatchHandResponse]:
            request = table_pb2.WatchHandRequest(
                hand_id=dealt.hand_id, seat=1, after_position=after
            )
            stream: AsyncIterator[table_pb2.WatchHandResponse] = watched.WatchHand(
                request, timeout=300
            )
            return stream

        seen: list[table_pb2.WatchHandResponse] = []
        cuts: list[str] = []
        updates = resumed("table", through, open_stream, lambda u: int(u.position),
                          patience=30, on_cut=lambda code: cuts.append(code.name))  # fmt: skip
        async for update in updates:
            seen.append(update)
            if len(seen) in (2, 5, 8):  # mid-hand: seat 0's turn holds it up
                cutter.cut()
        whole = [u async for u in table.WatchHand(
            table_pb2.WatchHandRequest(hand_id=dealt.hand_id, seat=1), timeout=60)]  # fmt: skip
    assert cutter.cuts == 3 and len(cuts) >= 1, cuts
    assert [u.position for u in seen] == [u.position for u in whole]
    assert [u.event.SerializeToString() for u in seen] == [
        u.event.SerializeToString() for u in whole
    ]
    assert seen[-1].view.phase == whole[-1].view.phase == rules_pb2.HAND_PHASE_ENDED
