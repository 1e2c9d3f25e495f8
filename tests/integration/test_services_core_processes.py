"""A core service as its own process: it serves until SIGTERM and then exits cleanly, and
bad configuration or a too old nats-server is one line and exit code 2.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nats
import nats.errors
import pytest
from ddz.adapters.messaging.server import (
    MIN_SERVER_VERSION,
    check_server_version,
)
from ddz.adapters.runtime.nats_server import NatsServer
from ddz.adapters.runtime.probes import health_status
from ddz.adapters.security.certs import ensure_certificates
from ddz.config import Settings
from grpc_health.v1 import health_pb2


@pytest.mark.parametrize("how", ["python -m services.settlement", "ddz serve settlement"])
def test_a_service_process_serves_until_sigterm_then_exits_cleanly(
    how: str, nats_server: NatsServer, tmp_path: Path
) -> None:
    """One way to start a service: the module and the CLI run the same runner; it reports
    SERVING on the health service, and SIGTERM stops it with exit code 0. It finds its
    certificate in the data dir that ``ensure_certificates`` (``ddz init``) prepared."""
    port = free_port()
    ensure_certificates(tmp_path)
    env = {
        **os.environ,
        "DDZ_DATA_DIR": str(tmp_path),
        "DDZ_NATS_URL": nats_server.url,
        "DDZ_SETTLEMENT_PORT": str(port),
        "DDZ_LOG_FORMAT": "json",
    }
    command = how.split()
    if command[0] == "python":
        command[0] = sys.executable
    else:
        command = [sys.executable, "-m", "ddz.entrypoints.cli", *command[1:]]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        serving = wait_serving(
            process, f"127.0.0.1:{port}", "ddz.v1.SettlementService", 30, Settings.from_env(env)
        )
        assert serving, process.stderr.read().decode() if process.stderr else ""
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr.decode()
    lines = [json.loads(line) for line in stderr.decode().splitlines() if line.startswith("{")]
    assert {"listening", "stopping", "stopped"} <= {line["event"] for line in lines}
    assert all(line["service"] == "settlement" for line in lines)


def test_bad_configuration_is_one_line_and_exit_code_2() -> None:
    env = {**os.environ, "DDZ_RULES_PORT": "not-a-port"}
    done = subprocess.run(
        [sys.executable, "-m", "services.rules"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines() == [
        "ddz: error: DDZ_RULES_PORT must be an integer, got 'not-a-port'"
    ]


SHARED_NATS = "nats://127.0.0.1:4222"  # the machine's own server (DEVELOPERS.md)


def test_a_service_on_a_too_old_nats_server_says_so_in_one_line(tmp_path: Path) -> None:
    """The machine's own NATS (2.9 here) predates the per-hand subject check: a service
    pointed at it stops at once with a clear error naming the version, exit code 2,
    instead of refusing every other move of every hand."""

    async def version() -> tuple[int, int, int]:
        nc = await nats.connect(SHARED_NATS, connect_timeout=2, max_reconnect_attempts=0)
        found = nc.connected_server_version
        await nc.close()
        return (found.major, found.minor, found.patch)

    try:
        found = asyncio.run(version())
    except (OSError, nats.errors.Error) as exc:
        pytest.skip(f"no NATS server on {SHARED_NATS}: {exc}")
    if found >= MIN_SERVER_VERSION:
        check_server_version(found)  # a recent shared server is simply accepted
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(DDZ_DATA_DIR=str(tmp_path), DDZ_NATS_URL=SHARED_NATS, DDZ_SETTLEMENT_PORT="0")
    done = subprocess.run(
        [sys.executable, "-m", "services.settlement"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 2
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr
    # Its log lines (JSON, on stderr when there is no log file): the rules engine's build,
    # logged by every service at start, and the error; then the one-line error.
    *logged, line = stderr.strip().splitlines()
    assert [json.loads(entry)["event"] for entry in logged] == ["rules_engine", "bad_configuration"]
    version_text = ".".join(map(str, found))
    assert line == (
        f"ddz: error: settlement: nats-server {version_text} at {SHARED_NATS} is too old: the "
        "suite needs 2.11.0 or later (the per-hand Nats-Expected-Last-Subject-Sequence-Subject "
        "check)"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_serving(
    process: subprocess.Popen[bytes], target: str, service: str, timeout: float, settings: Settings
) -> bool:
    """True once ``service`` reports SERVING; False if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        status = health_status(target, timeout=1, service=service, settings=settings.calling)
        if status == health_pb2.HealthCheckResponse.SERVING:
            return True
        time.sleep(0.1)
    return False
