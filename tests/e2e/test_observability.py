"""What an operator watches, on the whole suite as ``ddz up`` runs it (NATS and the six
services as real processes, on free ports): every series the alert rules and the
dashboard read is exported by a service once hands have been played, and ``ddz status``
tells how the suite is, a service killed with SIGKILL and restarted included, and that
none runs where none does.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import metrics_kit
import pytest
from cli_kit import ddz, ddz_here
from ddz.adapters.messaging import nats_auth
from ddz.adapters.runtime import stack_file
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.runtime.stack import Stack
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS
from ddz.domain.ruleset import VARIANTS
from ddz.loadgen.driver import Driver
from metrics_kit import value
from promql_kit import PROMETHEUS_OWN, expressions, metric_names, recorded

HANDS = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("ddz-observed")
    settings = Settings.from_env({"DDZ_DATA_DIR": str(data_dir)})
    with Stack(settings, ephemeral_ports=True, nats_port=0) as running:
        asyncio.run(_play(running.settings))
        yield running


async def _play(settings: Settings) -> None:
    async with Driver(settings.calling, settings.keys) as driver:
        results = await driver.play(next(iter(VARIANTS)), hands=HANDS, tables=1)
        assert len(results) == HANDS and all(r.events >= 5 for r in results)


def status_json(stack: Stack) -> tuple[int, dict[str, Any]]:
    done = ddz(stack.settings.data_dir, "status", "--json")
    assert done.returncode in (0, 1), done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, data


def test_every_series_the_rules_and_the_dashboard_read_is_exported(stack: Stack) -> None:
    record = stack_file.read(stack.settings.data_dir)
    assert record is not None
    exported: set[str] = set()
    for instance in record["instances"]:
        series = metrics_kit.scrape(instance["metrics"])
        exported |= {name for name, _labels in series}
        service = instance["service"]
        # Each process says it serves and, when it has a NATS user, that it has NATS (the
        # console has none: no series, so the NATS alert cannot fire for it), and reports
        # its CPU and start time.
        assert value(series, "ddz_serving", service=service) == 1, service
        if service in nats_auth.ROLES:
            assert value(series, "ddz_nats_connected", service=service) == 1, service
        else:
            assert not any(name == "ddz_nats_connected" for name, _labels in series), service
        assert value(series, "ddz_process_cpu_seconds_total") > 0, service
        started = value(series, "ddz_process_start_time_seconds")
        assert 0 < time.time() - started < 3600, service
    known = exported | recorded() | PROMETHEUS_OWN
    missing = {
        where: sorted(metric_names(expr) - known)
        for where, expr in expressions().items()
        if metric_names(expr) - known
    }
    assert not missing, f"series no service exports: {missing}"
    # What the hands played leave behind, on the names the rules read.
    assert "ddz_events_published_total" in exported and "ddz_hands_stalled" in exported
    assert "ddz_rpc_duration_seconds_bucket" in exported


def test_status_shows_every_part_serving(stack: Stack) -> None:
    code, data = status_json(stack)
    assert code == 0, data["problems"]
    assert data["running"] is True and data["serving"] is True and data["problems"] == []
    assert data["data_dir"] == str(stack.settings.data_dir) and data["pid"] == os.getpid()
    instances = {part["name"]: part for part in data["instances"]}
    assert set(instances) == set(SERVICE_PORTS)
    for name, part in instances.items():
        child = stack.processes[name]
        assert part["pid"] == child.process.pid and part["address"] == child.address
        assert part["health"] == "SERVING" and part["restarts"] == 0
        assert 0 < part["uptime_s"] < 3600
        assert part["metrics"]
    assert instances["table"]["role"] == "active"
    (node,) = data["nats"]
    assert stack.nats is not None
    assert node["health"] == "SERVING" and node["pid"] == stack.nats.process.pid
    stream = data["stream"]
    assert stream["name"] == "DDZ" and stream["replicas"] == 1
    assert stream["messages"] >= HANDS * 5 and stream["last_seq"] >= stream["messages"]
    consumers = {c["name"]: c for c in data["consumers"]}
    assert {"recorder", "settlement", "table"} <= set(consumers)
    for consumer in consumers.values():
        assert consumer["pending"] >= 0 and consumer["last_delivered"] <= stream["last_seq"]
    store = data["store"]
    assert store["error"] == "" and store["size_bytes"] > 0
    assert store["last_position"] >= HANDS * 5
    last = datetime.fromisoformat(store["last_event_time"])
    assert 0 <= (datetime.now(UTC) - last).total_seconds() < 600

    shown = ddz_here(stack.settings.data_dir, "status")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    lines = shown.stdout.splitlines()
    for name in ("nats", *SERVICE_PORTS):
        assert any(line.startswith(name) and "SERVING" in line for line in lines), name
    assert "stream DDZ:" in shown.stdout and "everything serves" in shown.stdout


def test_status_names_a_killed_service_until_it_is_restarted(stack: Stack) -> None:
    victim = stack.processes["settlement"]
    victim.process.kill()  # SIGKILL
    victim.process.wait(10)
    shown = ddz_here(stack.settings.data_dir, "status")
    assert shown.returncode == 1, shown.stdout + shown.stderr
    [line] = [x for x in shown.stdout.splitlines() if x.startswith("settlement")]
    assert "EXITED" in line
    assert "NOT SERVING:" in shown.stdout and f"settlement at {victim.address}" in shown.stdout
    code, data = status_json(stack)
    assert code == 1 and data["serving"] is False
    assert [p for p in data["problems"] if p.startswith("settlement")]

    child = stack.restart("settlement")
    deadline = time.monotonic() + 60
    while health_status(child.address, 0.5, settings=stack.settings.calling) != SERVING:
        assert time.monotonic() < deadline, child.log_tail()
        time.sleep(0.2)
    code, data = status_json(stack)
    assert code == 0, data["problems"]
    settlement = next(p for p in data["instances"] if p["name"] == "settlement")
    assert settlement["pid"] == child.process.pid != victim.process.pid
    assert settlement["restarts"] == 1 and settlement["health"] == "SERVING"


def test_status_where_no_suite_runs(tmp_path: Path) -> None:
    done = ddz_here(tmp_path, "status")
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.startswith(f"ddz: no suite runs from {tmp_path}")
    assert done.stderr.count("\n") == 1 and "ddz up" in done.stderr
    # A stack.json left by a ddz up that was killed is no suite either.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    stack_file.path(tmp_path).write_text(json.dumps({"version": 1, "pid": int(dead.stdout)}))
    done = ddz_here(tmp_path, "status", "--json")
    assert done.returncode == 3
    data = json.loads(done.stdout)
    assert data["running"] is False and data["serving"] is False
    assert data["instances"] == [] and data["data_dir"] == str(tmp_path)
