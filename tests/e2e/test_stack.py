"""The whole suite as it runs on a machine: NATS and the six services as real
processes (``ddz.adapters.runtime.stack.Stack``, the code behind ``ddz up``), on free ports,
with a temporary ``DDZ_DATA_DIR``; and ``ddz up``/``ddz simulate`` as a user runs them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_kit import run_here
from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream, nats_auth
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.nats_auth import connect_options
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.runtime.stack_env import settings_env, with_free_ports
from ddz.adapters.security.event_signing import event_keyring
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS
from ddz.domain.ruleset import VARIANTS
from ddz.loadgen.driver import Driver

SIMULATE_KEYS = {"hands", "hands_per_s", "events", "stored_events"}


def gone(pid: int) -> bool:
    """True when no process ``pid`` runs (a zombie awaiting its parent counts as alive
    only if its parent is still ours to reap; after our children exit it is reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("ddz-data")
    settings = Settings.from_env({"DDZ_DATA_DIR": str(data_dir)})
    running = Stack(settings, ephemeral_ports=True, nats_port=0)
    pids: list[int] = []
    with running:
        pids = running.pids()
        yield running
    # Leaving the context stopped every child (SIGTERM, then NATS): none is left.
    deadline = time.monotonic() + 5
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(gone(pid) for pid in pids), "a child of the stack outlived it"


async def _play_every_variant(stack: Stack) -> None:
    settings = stack.settings
    # The stack's nats-server knows only its users: read the stream as the tools do.
    bus = await EventBus.connect(
        settings.bus.nats_url, name="e2e", **connect_options(settings.bus, nats_auth.TOOLS)
    )
    try:
        async with Driver(settings.calling, settings.keys) as driver:
            for variant in VARIANTS:
                [result] = await driver.play(variant, hands=1, tables=1)
                assert result.variant == variant and result.events >= 5
                assert sum(result.deltas) + result.system == 0
                assert await driver.stored_events([result]) == result.events
                stored = await driver.read_hand(result.hand_id)
                on_bus, _cursor = await hand_stream.read(
                    bus, result.hand_id, keyring=event_keyring(settings.keys)
                )
                # In order, exactly once, byte for byte what was published.
                versions = [codec.parse_envelope(e.envelope).stream_version for e in stored]
                assert versions == list(range(1, result.events + 1))
                ids = [codec.parse_envelope(e.envelope).event_id for e in stored]
                assert len(set(ids)) == len(ids)
                assert [e.envelope for e in stored] == [r.data for r in on_bus]
                types = [codec.parse_envelope(e.envelope).type for e in stored]
                assert types[0] == "hand_started" and types[-1] == "seed_revealed"
                assert "cards_dealt" in types  # internal events are stored too
    finally:
        await bus.close()


def test_every_variant_through_the_six_services_is_stored_once_in_order(stack: Stack) -> None:
    assert {name for name in stack.processes} == set(SERVICE_PORTS)
    assert not stack.failed()
    asyncio.run(_play_every_variant(stack))


def ddz_env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(settings_env(settings))
    return env


def test_simulate_json_against_the_running_stack(stack: Stack) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "simulate", "--variant", "ct",
         "--hands", "4", "--tables", "2", "--json"],
        capture_output=True, text=True, timeout=180, env=ddz_env(stack.settings),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == SIMULATE_KEYS
    assert data["hands"] == 4 and data["hands_per_s"] > 0
    assert data["stored_events"] == data["events"] >= 4 * 5
    assert "no suite is running from" not in done.stderr  # it used the running one


def test_simulate_rejects_bad_input_in_one_line(stack: Stack) -> None:
    for args in (["--hands", "0"], ["--variant", "chess"], ["--tables", "x"]):
        done = run_here(["simulate", *args], ddz_env(stack.settings))
        assert done.returncode == 2
        assert done.stderr.startswith("ddz: error: ") and done.stderr.count("\n") == 1


def test_bench_e2e_json_against_the_running_stack(stack: Stack) -> None:
    # This process asks for greedy bots; the running stack's bot service runs its own
    # (strong, the default): the figures must be labelled with the player really measured.
    env = {**ddz_env(stack.settings), "DDZ_BOT_PLAYER": "greedy"}
    done = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "bench", "e2e", "--tables", "2",
         "--hands", "4", "--json"],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["player"] == "strong"
    assert data["hands"] == 4 and data["tables"] == 2 and data["hands_per_s"] > 0
    assert data["stored_events"] == data["events"] >= 4 * 5
    latency = data["play_latency_ms"]
    assert latency["samples"] > 0 and 0 < latency["p50"] <= latency["p99"]
    assert data["conflicts"] == 0 and data["refused"] == 0
    assert data["selfplay_hands_per_s"] > 0


def test_bench_e2e_player_is_refused_for_a_running_stack(stack: Stack) -> None:
    done = run_here(["bench", "e2e", "--hands", "1", "--player", "greedy"], ddz_env(stack.settings))
    assert done.returncode == 2
    assert done.stderr.startswith("ddz: error: ") and done.stderr.count("\n") == 1
    assert "--player" in done.stderr


def test_ctrl_c_stops_ddz_up_and_leaves_no_process(tmp_path: Path) -> None:
    """``ddz up`` in the foreground; Ctrl-C (SIGINT) stops services, then NATS."""
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    settings = with_free_ports(settings)
    ports = settings.network.ports
    up = subprocess.Popen(
        [sys.executable, "-m", "ddz.entrypoints.cli", "up", "--nats-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ddz_env(settings),
    )  # fmt: skip
    pids: list[int] = []
    try:
        assert up.stdout is not None
        lines = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = up.stdout.readline()
            if not line:
                break
            lines.append(line)
            pids += [int(p) for p in re.findall(r"\(pid (\d+)\)", line)]
            if "Ctrl-C stops everything" in line:
                break
        if not lines or "Ctrl-C stops everything" not in lines[-1]:
            # It ended (or never got ready): say what it printed on the way out.
            if up.poll() is None:
                up.kill()
            up.wait(10)
            stderr = up.stderr.read() if up.stderr else ""
            pytest.fail("ddz up did not start:\n" + "".join(lines) + stderr)
        assert len(pids) == len(SERVICE_PORTS) + 1, "".join(lines)
        assert f"table        127.0.0.1:{ports['table']}" in "".join(lines)
        # the player's page, where ddz up says it is
        assert f"play         https://127.0.0.1:{settings.network.play_web_port}" in "".join(lines)
        up.send_signal(signal.SIGINT)
        assert up.wait(30) == 0
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
    stderr = up.stderr.read() if up.stderr else ""
    assert "ddz: stopped" in stderr
    assert all(gone(pid) for pid in pids), "a child of ddz up outlived it"
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert logs == sorted([*(f"{name}.log" for name in SERVICE_PORTS), "nats-server.log"])
    for name in SERVICE_PORTS:
        text = (tmp_path / "logs" / f"{name}.log").read_text()
        assert '"event": "stopped"' in text, f"{name} did not stop gracefully"
