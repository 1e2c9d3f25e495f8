"""Several instances of a service on one machine: ``ddz up --scale`` and ``--nats-cluster``
as typed, the gRPC target a comma list of instances becomes, and how the tools find a
running stack from its data dir (``stack.json``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ddz.adapters.files.data_files import BadFile
from ddz.adapters.rpc.grpc_client import channel_target, health_name_for, service_config
from ddz.adapters.runtime import stack_file
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.telemetry.health import ACTIVE_TABLE
from ddz.config import Settings
from ddz.entrypoints.up_cmd import parse_scale


def test_scale_names_services_and_counts() -> None:
    assert parse_scale("rules=3,bot=2") == {"rules": 3, "bot": 2}
    assert parse_scale(" table = 2 , ") == {"table": 2}
    assert parse_scale("") == {}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("rulez=2", "NAME one of"),
        ("rules", "NAME=N"),
        ("rules=two", "whole number"),
        ("rules=0", "1..16"),
        ("bot=17", "1..16"),
    ],
)
def test_a_bad_scale_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_scale(text)


def test_ddz_up_refuses_a_bad_scale_in_one_line_with_exit_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env["DDZ_DATA_DIR"] = str(tmp_path)
    for args in (["--scale", "rules=x"], ["--nats-cluster", "0"],
                 ["--nats-cluster", "3", "--nats-port", "0"]):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "up", *args],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr


def test_a_comma_list_of_instances_is_one_round_robin_target() -> None:
    assert channel_target("127.0.0.1:50052") == "127.0.0.1:50052"
    assert channel_target("dns:///rules:50052") == "dns:///rules:50052"
    assert channel_target("127.0.0.1:1,10.0.0.2:2") == "ipv4:127.0.0.1:1,10.0.0.2:2"
    assert channel_target("[::1]:1,[::1]:2") == "ipv6:[::1]:1,[::1]:2"
    assert json.loads(service_config())["loadBalancingConfig"] == [{"round_robin": {}}]


def test_a_list_of_table_instances_is_balanced_by_the_active_ones_health() -> None:
    assert health_name_for("127.0.0.1:1,127.0.0.1:2", "table") == ACTIVE_TABLE
    assert health_name_for("127.0.0.1:1,127.0.0.1:2", None) == ACTIVE_TABLE  # a player's
    assert health_name_for("127.0.0.1:1", "table") is None  # one instance: no health stream
    assert health_name_for("127.0.0.1:1,127.0.0.1:2", "settlement") is None
    config = json.loads(service_config(ACTIVE_TABLE))
    assert config["healthCheckConfig"] == {"serviceName": ACTIVE_TABLE}
    assert "healthCheckConfig" not in json.loads(service_config())


@pytest.mark.parametrize(
    ("target", "says"),
    [("rules-1:50052,rules-2:50052", "must be IP addresses"), ("127.0.0.1:1,[::1]:2", "mix")],
)
def test_a_comma_list_that_grpc_cannot_dial_says_why(target: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        channel_target(target)


def write_record(data_dir: Path, pid: int, **fields: object) -> None:
    record = {
        "version": stack_file.VERSION,
        "pid": pid,
        "nats_url": "nats://127.0.0.1:1,nats://127.0.0.1:2",
        "addresses": {"rules": "127.0.0.1:7,127.0.0.1:8", "table": "127.0.0.1:9"},
        "database_url": f"sqlite:///{data_dir}/elsewhere.sqlite3",
        **fields,
    }
    stack_file.path(data_dir).write_text(json.dumps(record), encoding="utf-8")


def test_the_tools_take_a_running_stacks_addresses_but_the_environment_wins(
    tmp_path: Path,
) -> None:
    write_record(tmp_path, os.getpid())
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path), "DDZ_TABLE_ADDR": "10.0.0.1:5"})
    found = stack_file.found(settings, env={})
    assert found.bus.nats_url == "nats://127.0.0.1:1,nats://127.0.0.1:2"
    assert found.network.address("rules") == "127.0.0.1:7,127.0.0.1:8"
    assert found.network.address("table") == "10.0.0.1:5"  # the environment named it
    assert found.network.address("bot") == settings.network.address(
        "bot"
    )  # the record names it not
    assert found.store.database_url.endswith("elsewhere.sqlite3")
    kept = stack_file.found(settings, env={"DDZ_DATABASE_URL": settings.store.database_url})
    assert kept.store.database_url == settings.store.database_url


def test_a_record_left_by_a_stack_that_is_gone_is_ignored(tmp_path: Path) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    write_record(tmp_path, int(ended.stdout))  # that process has exited
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    assert stack_file.read(tmp_path) is None
    assert stack_file.found(settings) == settings
    write_record(tmp_path, int(ended.stdout), version=stack_file.VERSION + 1)
    assert stack_file.found(settings) == settings  # gone, whatever its version


def test_a_record_that_cannot_be_read_is_refused_not_ignored(tmp_path: Path) -> None:
    """A tool that ignored it would start a stack of its own beside the running one."""
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    stack_file.path(tmp_path).write_text("{not json", encoding="utf-8")
    with pytest.raises(BadFile, match=r"stack\.json: not the record of a running stack"):
        stack_file.found(settings)
    write_record(tmp_path, os.getpid(), version=stack_file.VERSION + 1)
    with pytest.raises(BadFile, match="another version of ddz"):
        stack_file.found(settings)


def test_each_console_instance_serves_its_pages_on_a_port_of_its_own(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    stack = Stack(settings, scale={"console": 2})
    placed = stack._place_instances(settings)
    second = stack._instance_env["console-2"]
    assert int(second["DDZ_CONSOLE_WEB_PORT"]) not in (placed.network.console_web_port, 0)
    assert second["DDZ_CONSOLE_PORT"] != str(placed.network.port("console"))


def test_each_play_instance_serves_its_page_on_a_port_of_its_own(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    stack = Stack(settings, scale={"play": 2})
    placed = stack._place_instances(settings)
    second = stack._instance_env["play-2"]
    assert int(second["DDZ_PLAY_WEB_PORT"]) not in (placed.network.play_web_port, 0)
    assert second["DDZ_PLAY_PORT"] != str(placed.network.port("play"))
