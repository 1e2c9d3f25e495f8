"""An operator's first hour, through the real CLI and real processes: one suite per data
dir (a lock the kernel drops on ``kill -9``), a taken port as one line naming the setting
that moves it, each start's own logs, progress lines off a terminal with stdout kept for
the result, a tool that starts a stack of its own saying so first, a closed pipe ending a
command quietly, and ``ddz --version``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from ddz.adapters.runtime.stack_env import settings_env, with_free_ports
from ddz.adapters.security.event_signing import ENVELOPE_VERSION
from ddz.config import Settings
from supervision_kit import Up, processes_of, wait_until

CLI = [sys.executable, "-m", "ddz.entrypoints.cli"]
PROGRESS = re.compile(r"^ddz simulate: .+, \d+ s(, done)?$")


def env_of(settings: Settings, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    return {**env, **settings_env(settings), **extra}


def ddz(
    *args: str, env: dict[str, str], timeout: float = 240.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=env, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def one_line(stderr: str) -> str:
    """The single line a refused command prints (no traceback, no log noise)."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert lines[0].startswith("ddz: error: "), stderr
    return lines[0]


def listening_lines(log: Path) -> int:
    return sum('"event": "listening"' in line for line in log.read_text().splitlines())


def test_a_second_ddz_up_on_a_data_dir_is_refused_and_a_killed_one_holds_nothing(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "ddz"
    logs = data_dir / "logs"
    first = Up(data_dir)
    try:
        # Its banner says what to run next, and with which data dir.
        nexts = [line.split() for line in first.out if f"DDZ_DATA_DIR={data_dir} " in line]
        assert {words[2] for words in nexts} >= {"play", "simulate"}, first.transcript()
        # The same settings as the first (its ports, its data dir): as a user would retry.
        same = env_of(
            dataclasses.replace(
                first.settings, bus=dataclasses.replace(first.settings.bus, nats_url="")
            )
        )
        second = ddz("up", "--nats-port", "0", env=same, timeout=60)
        assert second.returncode == 2, second.stderr
        line = one_line(second.stderr)
        assert f"already running from {data_dir} " in line, line
        assert f"pid {first.process.pid}" in line and first.addresses["table"] in line, line
        assert "DDZ_DATA_DIR" in line  # what to do about it
        assert second.stdout == ""
        # It touched nothing of the first: its logs are this run's, its suite serves.
        assert not (logs / "previous").exists()
        assert first.serving("table") and first.process.poll() is None
        first_pids = set(first.pids.values())
        # A tool run with another data dir, where the first suite's table listens.
        table_port = str(first.settings.network.port("table"))
        elsewhere = {"DDZ_DATA_DIR": str(tmp_path / "b"), "DDZ_TABLE_PORT": table_port}
        simulate_off_a_terminal_beside_another_suite(
            env_of(Settings.from_env(elsewhere)), tmp_path / "b"
        )
    finally:
        first.close()  # kill -9 of ddz up and of each child
    wait_until(lambda: not processes_of(data_dir), "no process of the first suite left")

    # The kernel dropped the lock with the process: the next ddz up on the dir starts.
    again = Up(data_dir)
    try:
        assert not first_pids & set(again.pids.values())
        record = json.loads((data_dir / "stack.json").read_text())
        assert record["pid"] == again.process.pid
        # This start's logs are new; the run before is kept whole in logs/previous/.
        for name in ("table", "rules", "recorder"):
            assert listening_lines(logs / f"{name}.log") == 1, name
            assert listening_lines(logs / "previous" / f"{name}.log") == 1, name
    finally:
        again.close()


def test_a_taken_port_is_one_line_naming_the_setting_that_moves_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "ddz"
    settings = with_free_ports(Settings.from_env({"DDZ_DATA_DIR": str(data_dir)}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = [
            (("up",), {"DDZ_RULES_PORT": str(port)}, "set DDZ_RULES_PORT "),
            (("up",), {"DDZ_TABLE_METRICS_PORT": str(port)}, "set DDZ_TABLE_METRICS_PORT "),
            (("up", "--nats-port", str(port)), {}, "give --nats-port another port"),
        ]
        for args, extra, setting in cases:
            done = ddz(*args, env=env_of(settings, **extra), timeout=60)
            assert done.returncode == 2, done.stderr
            line = one_line(done.stderr)
            assert f"port {port} " in line and setting in line, line
            assert "rules: rules:" not in line
    # Refused before anything started: no NATS store, no child, the lock let go.
    assert not (data_dir / "jetstream").exists()
    assert not processes_of(data_dir)

    a_file = tmp_path / "a-file"
    a_file.write_text("kept\n")
    done = ddz("up", env=env_of(settings, DDZ_DATA_DIR=str(a_file)), timeout=60)
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert f"data dir {a_file}: not a directory" in line and "set DDZ_DATA_DIR" in line, line
    assert a_file.read_text() == "kept\n"


def simulate_off_a_terminal_beside_another_suite(env: dict[str, str], data_dir: Path) -> None:
    """No suite runs from ``data_dir``; another one's table listens at the port ``env``
    names. ``simulate`` says so first, naming the dir, with no TLS handshake noise; its
    progress comes as plain lines on stderr (a pipe is no terminal), stdout is the JSON
    alone. Then the hands it stored: ``ddz audit`` of one with stdout closed (as ``|
    head -1`` leaves it) ends with 0 and says nothing; ``--quiet`` silences progress."""
    done = ddz("simulate", "--hands", "4", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) >= {"hands", "events"}  # stdout: the JSON, whole
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(f"ddz: no suite is running from {data_dir} "), done.stderr
    assert "another suite's?" in lines[0] and "starting one for this command only" in lines[0]
    assert "Handshake" not in done.stderr
    # Starting a stack takes longer than one progress interval: lines came meanwhile.
    progress = [line for line in lines[1:] if PROGRESS.match(line)]
    assert progress and progress[-1].endswith(", done"), done.stderr
    assert "Traceback" not in done.stderr

    with sqlite3.connect(data_dir / "ddz.sqlite3") as db:
        [(stream,)] = db.execute(
            "select stream_id from events where stream_id like 'hand-%' limit 1"
        ).fetchall()
    audit = subprocess.Popen(
        [*CLI, "audit", stream], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert audit.stdout is not None and audit.stderr is not None
    audit.stdout.close()  # the reader is gone before the first line
    assert audit.wait(120) == 0
    assert audit.stderr.read() == b""
    audit.stderr.close()

    quiet = ddz("audit", "--all", "--quiet", "--json", env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "" and json.loads(quiet.stdout)["hands"] == 4


def test_version_names_the_package_and_the_event_contract() -> None:
    done = ddz("--version", env=dict(os.environ), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"ddz {version('ddz')}, event contract version {ENVELOPE_VERSION}"
    )
