"""``ddz up`` supervises its children, as ``restart: unless-stopped`` does: a real ``ddz up``
process on free ports with a temporary ``DDZ_DATA_DIR``; services and nats-server killed
with SIGKILL come back at the same address; a crash loop stops it with the child's log
tail; Ctrl-C stops everything and restarts nothing. The restart policy's arithmetic
(backoff, reset, window) is checked on a fake stack and clock, as it cannot be timed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ddz.adapters.messaging import nats_auth
from ddz.adapters.runtime.children import ServiceProcess
from ddz.adapters.runtime.stack_env import settings_env
from ddz.adapters.runtime.supervisor import CrashLoop, RestartPolicy, Supervisor
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS
from metrics_kit import scrape, total
from supervision_kit import BOUND, Up, gone, processes_of, wait_until

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ROOT / "services" / "table" / "rooms.toml"
RPC = "ddz_rpc_handled_total"


def recorded_pids(up: Up) -> dict[str, int]:
    """The pid of every child as ``<data dir>/stack.json`` gives it to the tools."""
    record = json.loads((up.settings.data_dir / "stack.json").read_text())
    children = [*record["instances"], *record["nats"]]
    return {child["name"]: child["pid"] for child in children}


def restarted(name: str, address: str) -> str:
    """The line ``ddz up`` prints when it restarted ``name`` killed by SIGKILL."""
    return rf"^ddz: {name} was killed by SIGKILL; restarted  {re.escape(address)}  \(pid (\d+)\)$"


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    running = Up(tmp_path_factory.mktemp("ddz-supervised"))
    try:
        yield running
    finally:
        running.close()


def test_a_killed_service_comes_back_at_its_address(up: Up) -> None:
    old, address = up.pids["rules"], up.addresses["rules"]
    seen = len(up.out)
    os.kill(old, signal.SIGKILL)
    new = int(up.wait_line(restarted("rules", address), after=seen)[1])
    up.pids["rules"] = new
    assert new != old
    wait_until(lambda: up.serving("rules"), "the restarted rules service answers SERVING")
    assert gone(old) and not gone(new)  # the one answering at the address is the new one
    assert up.process.poll() is None
    assert recorded_pids(up) == up.pids  # stack.json says the restarted one, not the dead one


def test_a_killed_nats_server_comes_back_and_the_services_recover(up: Up) -> None:
    old, url = up.pids["nats"], up.addresses["nats"]
    seen = len(up.out)
    os.kill(old, signal.SIGKILL)
    up.pids["nats"] = int(up.wait_line(restarted("nats", url), after=seen)[1])
    assert recorded_pids(up) == up.pids
    for name in SERVICE_PORTS:
        wait_until(lambda name=name: up.serving(name), f"{name} SERVING after NATS restarted")
    # Serving is not enough: a hand must go through every service and reach the store.
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(settings_env(up.settings))
    done = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "simulate", "--variant", "classic",
         "--hands", "2", "--json"],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + up.transcript()
    data = json.loads(done.stdout)
    assert data["hands"] == 2 and data["stored_events"] == data["events"] > 0
    assert "no suite is running" not in done.stderr  # it used the supervised one
    assert up.process.poll() is None


def test_a_service_started_on_a_taken_port_says_so_in_one_line(up: Up) -> None:
    """A second rules service, as ``ddz serve rules`` would start one beside the suite: it
    reaches NATS, then cannot listen on the suite's rules port; its last line names the
    setting that moves the port, and the service once (no ``rules: rules:``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(settings_env(up.settings))
    env.update(nats_auth.service_env(up.settings.data_dir, "rules"))
    env.update(DDZ_LOG_TO_FILE="false", DDZ_RULES_METRICS_PORT="0")
    done = subprocess.run(
        [sys.executable, "-m", "services.rules"], capture_output=True, text=True, env=env,
        timeout=BOUND, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ddz: error: rules: cannot listen on {up.addresses['rules']} "), last
    assert "set DDZ_RULES_PORT to a free port" in last and "rules: rules:" not in done.stderr
    assert "Traceback" not in done.stderr
    assert up.serving("rules")  # the suite's own rules service is untouched


def test_ctrl_c_stops_everything_and_restarts_nothing(up: Up) -> None:
    seen = len(up.out)
    up.process.send_signal(signal.SIGINT)
    assert up.ended(60) == 0, up.transcript()
    wait_until(lambda: all(gone(pid) for pid in up.pids.values()), "every child gone")
    assert not [line for line in up.out[seen:] if "restarted" in line], up.transcript()
    assert "ddz: stopped" in up.err, up.transcript()
    for name in SERVICE_PORTS:
        # The log holds this run of the service, restarts included; the last stopped gracefully.
        last_run = (
            (up.settings.telemetry.log_dir / f"{name}.log").read_text().rsplit("rules_engine", 1)
        )
        assert '"event": "stopped"' in last_run[-1], f"{name} did not stop gracefully"


def test_ctrl_c_while_starting_stops_what_was_started(tmp_path: Path) -> None:
    up = Up(tmp_path, ready=False)
    try:
        up.wait_line(r"^ddz: starting NATS", err=True)
        up.process.send_signal(signal.SIGINT)  # while it starts, or just after: both stop
        assert up.ended(60) == 0, up.transcript()
        assert "ddz: stopped" in up.err, up.transcript()
        wait_until(lambda: not processes_of(tmp_path), "no process of the stack left")
    finally:
        up.close()


def test_a_crash_loop_stops_ddz_up_with_the_log_tail(tmp_path: Path) -> None:
    rooms = tmp_path / "rooms.toml"
    shutil.copy(ROOMS, rooms)
    env = {"DDZ_ROOMS_FILE": str(rooms), "DDZ_RESTART_LIMIT": "2", "DDZ_RESTART_WINDOW": "600"}
    up = Up(tmp_path / "data", env)
    try:
        # From now on the table service cannot start: only a restart reads the file again.
        rooms.write_text('[[rooms]]\nid = "broken"\nname = "Broken"\nvariant = "chess"\n')
        seen = len(up.out)
        os.kill(up.pids["table"], signal.SIGKILL)
        assert up.ended() == 1, up.transcript()
        lines = [line for line in up.out[seen:] if line.startswith("ddz: table ")]
        assert len(lines) == 2, up.transcript()  # SIGKILL, then one failed start: 2 restarts
        assert "was killed by SIGKILL; restarted" in lines[0]
        assert re.search(r"exited with code \d+; restarted", lines[1]), up.transcript()
        errors = "\n".join(up.err)
        assert "ddz: error: table is crash looping: it exited with code" in errors, errors
        assert "3 exits within 600s" in errors
        assert "unknown variant 'chess'" in errors  # the tail of table.log
        wait_until(lambda: not processes_of(tmp_path / "data"), "no process of the stack left")
    finally:
        up.close()


class FakeProcess:
    """What the supervisor reads of a ``Popen``: ``poll``, ``returncode``, ``pid``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode


class FakeStack:
    """One child, ``rules``, restarted on demand; the test makes it exit."""

    def __init__(self, log_file: Path) -> None:
        self.log_file = log_file
        self.pid = 100
        self.child = self._child()
        self.settings = Settings()

    def _child(self) -> ServiceProcess:
        self.pid += 1
        process: Any = FakeProcess(self.pid)
        return ServiceProcess("rules", process, "127.0.0.1:50052", self.log_file)

    def children(self) -> list[ServiceProcess]:
        return [self.child]

    def restart(self, name: str) -> ServiceProcess:
        self.child = self._child()
        return self.child

    def crash(self, code: int = 1) -> None:
        self.child.process.returncode = code  # type: ignore[misc]


def test_the_restart_delay_doubles_to_its_cap_and_resets_once_stable(tmp_path: Path) -> None:
    (tmp_path / "rules.log").write_text("".join(f"line {n}\n" for n in range(50)))
    fake = FakeStack(tmp_path / "rules.log")
    now = [0.0]
    policy = RestartPolicy(limit=6, window=60.0, first_delay=0.25, max_delay=1.5, stable_after=10)
    lines: list[str] = []
    stack: Any = fake
    supervisor = Supervisor(stack, policy, report=lines.append, clock=lambda: now[0])

    def delay_of_next_restart() -> float:
        """Crash the child and step the clock until the supervisor restarts it (steps of
        0.25 s: exact in binary, so the sums are too)."""
        fake.crash()
        pid, crashed_at = fake.child.process.pid, now[0]
        supervisor.step()
        while fake.child.process.pid == pid:
            now[0] += 0.25
            supervisor.step()
        return now[0] - crashed_at

    assert [delay_of_next_restart() for _ in range(4)] == [0.25, 0.5, 1.0, 1.5]
    assert lines[-1] == "ddz: rules exited with code 1; restarted  127.0.0.1:50052  (pid 105)"
    now[0] += 10.0  # it stays up: the next crash is restarted at the first delay again
    supervisor.step()
    assert delay_of_next_restart() == 0.25
    now[0] += 61.0  # the window forgets the restarts before: no crash loop yet
    assert [delay_of_next_restart() for _ in range(6)] == [0.25, 0.5, 1.0, 1.5, 1.5, 1.5]
    fake.crash(3)
    with pytest.raises(CrashLoop) as loop:
        supervisor.step()  # a seventh exit within the window: limit=6 restarts
    message = str(loop.value)
    assert message.startswith("rules is crash looping: it exited with code 3, 7 exits within 60s")
    assert message.endswith("\n".join(f"line {n}" for n in range(30, 50)))


def test_ddz_up_scales_services_on_a_nats_cluster_and_the_tools_find_it(tmp_path: Path) -> None:
    """``ddz up --scale rules=2,bot=2,table=2 --nats-cluster 3``: one line per instance and
    node, each its own address and pid; ``ddz simulate`` given nothing but the data dir
    plays through every instance; Ctrl-C stops it all and takes ``stack.json`` away."""
    data_dir = tmp_path / "ddz"
    instances = frozenset(
        {*SERVICE_PORTS, "rules-2", "bot-2", "table-2", "nats-1", "nats-2", "nats-3"}
    )
    up = Up(data_dir, args=("--scale", "rules=2,bot=2,table=2", "--nats-cluster", "3"),
            expected=instances)  # fmt: skip
    try:
        assert len(set(up.addresses.values())) == len(instances), up.transcript()
        assert len(set(up.pids.values())) == len(instances), up.transcript()
        assert not any(gone(pid) for pid in up.pids.values()), up.transcript()
        assert all(up.serving(name) for name in ("rules", "rules-2", "bot", "bot-2"))
        up.wait_line(r"^  streams      3 replicas$")
        record = json.loads((data_dir / "stack.json").read_text(encoding="utf-8"))
        assert record["addresses"]["rules"] == f"{up.addresses['rules']},{up.addresses['rules-2']}"
        assert record["nats_url"] == ",".join(up.addresses[f"nats-{n}"] for n in (1, 2, 3))

        metrics = {entry["name"]: entry["metrics"] for entry in record["instances"]}
        # The bots' partitions are shared once the second instance has counted the first
        # (a lease interval or two): before that one of them may hold them all.
        deadline = time.monotonic() + BOUND
        while not all(total(scrape(metrics[n]), "ddz_leases_held") for n in ("bot", "bot-2")):
            assert time.monotonic() < deadline, f"the bots share no partitions\n{up.transcript()}"
            time.sleep(0.2)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
        env["DDZ_DATA_DIR"] = str(data_dir)  # and nothing else: the stack file says the rest
        done = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "simulate", "--hands", "24",
             "--tables", "4", "--json"],
            env=env, capture_output=True, text=True, timeout=BOUND,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "no suite is running from" not in done.stderr
        assert json.loads(done.stdout)["hands"] == 24

        for name in ("rules", "rules-2"):  # each hand's commands reach one of them
            series = scrape(metrics[name])
            decided = sum(total(series, RPC, method=m) for m in ("Decide", "DecideBatch"))
            assert decided > 0, f"{name} decided nothing\n{up.transcript()}"
        for name in ("bot", "bot-2"):  # the partitions are shared
            decisions = total(scrape(metrics[name]), "ddz_decision_seconds_count")
            assert decisions > 0, f"{name} played nothing\n{up.transcript()}"
        # One table instance is active (whichever took the lease first); the tools'
        # channels, given both, call the one SERVING the active role: none was forwarded.
        active = {
            name: total(scrape(metrics[name]), "ddz_table_active") for name in ("table", "table-2")
        }
        assert sorted(active.values()) == [0, 1], active
        standby = min(active, key=active.__getitem__)
        forwarded = total(scrape(metrics[standby]), "ddz_table_forwarded_total")
        assert forwarded == 0, up.transcript()
        holder = max(active, key=active.__getitem__)
        started = total(scrape(metrics[holder]), RPC, method="StartHand")
        assert started > 0, up.transcript()

        up.process.send_signal(signal.SIGINT)
        assert up.ended() == 0, up.transcript()
        assert not (data_dir / "stack.json").exists()
        assert all(gone(pid) for pid in up.pids.values()), "an instance outlived ddz up"
    finally:
        up.close()
