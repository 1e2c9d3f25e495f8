"""``Settings.from_env`` ("all settings come from one config object read from
DDZ_* environment variables") and the logging setup built on it."""

from __future__ import annotations

import io
import json
import logging
import os
import stat
from pathlib import Path

import pytest
import structlog
from ddz.adapters.telemetry.logging import configure_logging
from ddz.config import Settings
from ddz.config.bus import bus_from_env
from ddz.config.fronts import console_from_env, play_from_env, supervision_from_env
from ddz.config.game import bot_from_env, clocks_from_env, table_from_env
from ddz.config.network import SERVICE_PORTS, network_from_env
from ddz.config.rpc import rpc_from_env
from ddz.config.security import keys_from_env, tls_from_env
from ddz.config.store import store_from_env
from ddz.config.telemetry import TelemetrySettings, telemetry_from_env


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({})
    assert settings.data_dir == tmp_path / ".ddz"
    assert settings.store.database_url == f"sqlite:///{tmp_path / '.ddz' / 'ddz.sqlite3'}"
    assert settings.bus.nats_url == ""
    assert settings.network.host == "127.0.0.1"
    assert dict(settings.network.ports) == {
        "dealer": 50051, "rules": 50052, "bot": 50053,
        "settlement": 50054, "table": 50055, "recorder": 50056, "console": 50057,
        "play": 50058,
    }  # fmt: skip
    assert (
        settings.network.listen_address("play", settings.network.play_web_port) == "127.0.0.1:8444"
    )
    assert not settings.play.play_guests  # guests play only where the operator says so
    assert settings.network.console_web_address == "127.0.0.1:8443"
    assert (
        settings.telemetry.log_level,
        settings.telemetry.log_format,
        settings.telemetry.log_to_file,
    ) == (
        "INFO",
        "auto",
        False,
    )
    assert (settings.rpc.rpc_timeout, settings.clocks.turn_timeout) == (5.0, 20.0)
    assert (settings.bot.bot_player, settings.bot.bot_max_ms) == ("strong", 250.0)
    assert settings.bus.atomic_decisions
    assert settings.network.address("table") == "127.0.0.1:50055"
    assert not tmp_path.joinpath(".ddz").exists()  # reading settings creates nothing


def test_every_variable_is_read(tmp_path: Path) -> None:
    env = {
        "DDZ_DATA_DIR": str(tmp_path / "data"),
        "DDZ_DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/ddz",
        "DDZ_NATS_URL": "nats://10.0.0.5:4222",
        "DDZ_HOST": "0.0.0.0",
        "DDZ_LOG_LEVEL": "debug",
        "DDZ_LOG_FORMAT": "JSON",
        "DDZ_LOG_TO_FILE": "yes",
        "DDZ_AUDIT_KEY": "s3cret-key",
        "DDZ_AUDIT_KEY_ID": "2025-01",
        "DDZ_RPC_TIMEOUT": "2.5",
        "DDZ_TURN_TIMEOUT": "30",
        "DDZ_MAX_MESSAGE_BYTES": "65536",
        "DDZ_BOT_PLAYER": "Greedy",
        "DDZ_BOT_MAX_MS": "40",
        "DDZ_ATOMIC_DECISIONS": "off",
        "DDZ_PLAY_WEB_PORT": "9444",
        "DDZ_PLAY_GUESTS": "1",
        **{f"DDZ_{name.upper()}_PORT": str(60000 + n) for n, name in enumerate(SERVICE_PORTS)},
    }
    settings = Settings.from_env(env)
    assert settings.data_dir == tmp_path / "data"
    assert settings.store.database_url == "postgresql+psycopg://postgres@127.0.0.1:5432/ddz"
    assert settings.bus.nats_url == "nats://10.0.0.5:4222"
    assert settings.network.host == "0.0.0.0"
    assert (
        settings.telemetry.log_level,
        settings.telemetry.log_format,
        settings.telemetry.log_to_file,
    ) == (
        "DEBUG",
        "json",
        True,
    )
    assert (settings.keys.audit_key, settings.keys.audit_key_id) == (b"s3cret-key", "2025-01")
    assert (settings.rpc.rpc_timeout, settings.clocks.turn_timeout) == (2.5, 30.0)
    assert settings.rpc.max_message_bytes == 65536
    assert (settings.bot.bot_player, settings.bot.bot_max_ms) == ("greedy", 40.0)
    assert not settings.bus.atomic_decisions
    assert (settings.network.play_web_port, settings.play.play_guests) == (9444, True)
    assert [settings.network.port(name) for name in SERVICE_PORTS] == list(
        range(60000, 60000 + len(SERVICE_PORTS))
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DDZ_RPC_TIMEOUT", "soon"),
        ("DDZ_RPC_TIMEOUT", "0"),
        ("DDZ_TURN_TIMEOUT", "-1"),
        ("DDZ_TURN_TIMEOUT", "inf"),
        ("DDZ_TABLE_PORT", "http"),
        ("DDZ_DEALER_PORT", "70000"),
        ("DDZ_LOG_LEVEL", "LOUD"),
        ("DDZ_LOG_FORMAT", "xml"),
        ("DDZ_LOG_TO_FILE", "maybe"),
        ("DDZ_DATABASE_URL", "events.db"),
        ("DDZ_NATS_URL", "localhost:4222"),
        ("DDZ_MAX_MESSAGE_BYTES", "10"),
        ("DDZ_BOT_PLAYER", "clever"),
        ("DDZ_BOT_MAX_MS", "0"),
        ("DDZ_ATOMIC_DECISIONS", "sometimes"),
        ("DDZ_PLAY_WEB_PORT", "70000"),
        ("DDZ_PLAY_GUESTS", "perhaps"),
    ],
)
def test_bad_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: value})


def test_each_part_is_read_by_its_own_function_as_the_whole_reads_it(tmp_path: Path) -> None:
    """A module handed one part sees what it would have seen in the whole; the parts that
    keep files under the data dir all keep them under the same one."""
    env = {
        "DDZ_DATA_DIR": str(tmp_path),
        "DDZ_DATABASE_URL": "postgresql://postgres@db/ddz",
        "DDZ_NATS_URL": "nats://n1:4222,nats://n2:4222",
        "DDZ_STREAM_REPLICAS": "3",
        "DDZ_RULES_ADDR": "dns:///rules:50052",
        "DDZ_INSECURE": "1",
        "DDZ_AUDIT_KEY_ID": "2026-q4",
        "DDZ_MAX_MESSAGE_BYTES": "2048",
        "DDZ_TURN_TIMEOUT": "9",
        "DDZ_JOIN_BURST": "3",
        "DDZ_BOT_PARTITIONS": "4",
        "DDZ_LOG_LEVEL": "warning",
        "DDZ_TRACE_URL": "https://traces.example/{trace_id}",
        "DDZ_PLAY_GUESTS": "1",
        "DDZ_RESTART_LIMIT": "0",
    }
    whole = Settings.from_env(env)
    assert whole.store == store_from_env(env, tmp_path)
    assert whole.store.database_url == "postgresql+psycopg://postgres@db/ddz"
    assert whole.bus == bus_from_env(env, tmp_path)
    assert (whole.bus.nats_servers, whole.bus.stream_replicas) == (
        ("nats://n1:4222", "nats://n2:4222"),
        3,
    )
    assert whole.network == network_from_env(env)
    assert whole.network.targets("rules") == ("dns:///rules:50052",)
    assert whole.tls == tls_from_env(env, tmp_path) and whole.tls.insecure
    assert whole.keys == keys_from_env(env, tmp_path) and whole.keys.audit_key_id == "2026-q4"
    assert whole.rpc == rpc_from_env(env) and whole.rpc.max_message_bytes == 2048
    assert whole.clocks == clocks_from_env(env) and whole.clocks.turn_timeout == 9.0
    assert whole.table == table_from_env(env) and whole.table.join_burst == 3
    assert whole.bot == bot_from_env(env) and whole.bot.bot_partitions == 4
    assert whole.telemetry == telemetry_from_env(env, tmp_path)
    assert whole.telemetry.log_dir == tmp_path / "logs"
    assert whole.console == console_from_env(env)
    assert whole.play == play_from_env(env) and whole.play.play_guests
    assert whole.supervision == supervision_from_env(env)
    assert whole.supervision.restart_limit == 0
    kept_under = {whole.data_dir, whole.bus.data_dir, whole.tls.data_dir, whole.keys.data_dir,
                  whole.telemetry.data_dir}  # fmt: skip
    assert kept_under == {tmp_path}


def test_unknown_service_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown service 'casino'"):
        Settings().network.port("casino")


def test_audit_key_never_appears_in_repr() -> None:
    settings = Settings.from_env({"DDZ_AUDIT_KEY": "s3cret-key"})
    assert "s3cret" not in repr(settings)
    assert "s3cret" not in str(settings)


def test_audit_key_file_is_created_once_and_private(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    key = settings.keys.require_audit_key()
    assert len(key) == 64
    assert settings.keys.require_audit_key() == key
    assert Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)}).keys.require_audit_key() == key
    assert stat.S_IMODE(os.stat(tmp_path / "audit.key").st_mode) == 0o600
    configured = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path), "DDZ_AUDIT_KEY": "mine"})
    assert configured.keys.require_audit_key() == b"mine"


def test_json_logs_carry_service_level_time_and_context(tmp_path: Path) -> None:
    sink = io.StringIO()
    settings = TelemetrySettings(data_dir=tmp_path, log_format="auto")  # not a TTY: JSON
    configure_logging(settings, service="dealer", stream=sink)
    try:
        structlog.contextvars.bind_contextvars(hand_id="h-1")
        structlog.get_logger().info("hand_dealt", seats=3)
        structlog.get_logger().debug("hidden below INFO")
        logging.getLogger("nats").warning("from a library")
        try:
            raise KeyError("boom")
        except KeyError:
            structlog.get_logger().exception("failed")
    finally:
        structlog.contextvars.clear_contextvars()
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["hand_dealt", "from a library", "failed"]
    first = lines[0]
    assert (first["service"], first["level"], first["hand_id"], first["seats"]) == (
        "dealer", "info", "h-1", 3,
    )  # fmt: skip
    assert first["timestamp"].endswith("Z")
    assert lines[1]["level"] == "warning"
    assert lines[2]["exception"][0]["exc_type"] == "KeyError"  # dict_tracebacks


def test_console_format_and_log_file(tmp_path: Path) -> None:
    sink = io.StringIO()
    configure_logging(
        TelemetrySettings(data_dir=tmp_path, log_format="console"), service="bot", stream=sink
    )
    structlog.get_logger().info("thinking", seat=2)
    assert "thinking" in sink.getvalue()
    with pytest.raises(json.JSONDecodeError):
        json.loads(sink.getvalue().splitlines()[0])

    configure_logging(TelemetrySettings(data_dir=tmp_path, log_to_file=True), service="bot")
    structlog.get_logger().info("to the file")
    configure_logging(TelemetrySettings(data_dir=tmp_path), service="pytest", stream=io.StringIO())
    (line,) = (tmp_path / "logs" / "bot.log").read_text().splitlines()
    assert json.loads(line)["event"] == "to the file"


def test_settings_env_gives_child_processes_the_same_settings(tmp_path: Path) -> None:
    """The local stack hands its settings to each service as variables (settings_env)."""
    from ddz.adapters.runtime.stack_env import settings_env

    settings = Settings.from_env(
        {"DDZ_DATA_DIR": str(tmp_path), "DDZ_BOT_PLAYER": "random", "DDZ_BOT_MAX_MS": "12.5",
         "DDZ_AUDIT_KEY": "k", "DDZ_TURN_TIMEOUT": "3", "DDZ_ATOMIC_DECISIONS": "0",
         "DDZ_RULES_ADDR": "dns:///rules:50052", "DDZ_TABLE_LISTEN": "0.0.0.0:6000",
         "DDZ_PLAY_WEB_PORT": "9444", "DDZ_PLAY_GUESTS": "1"}
    )  # fmt: skip
    assert Settings.from_env(settings_env(settings)) == settings


def test_a_retired_variable_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"DDZ_OPERATOR_KEY is no longer read: .*DDZ_LOGIN_KEY"):
        Settings.from_env({"DDZ_OPERATOR_KEY": "anything"})


def test_the_trace_url_is_an_address_with_the_trace_id_in_it() -> None:
    assert Settings.from_env({}).console.trace_url == ""
    url = "https://grafana.example/explore?traceId={trace_id}"
    assert Settings.from_env({"DDZ_TRACE_URL": f" {url} "}).console.trace_url == url
    for bad in (
        "grafana.example/{trace_id}",
        "https://grafana.example/explore",
        "javascript:{trace_id}",
    ):
        with pytest.raises(ValueError, match="DDZ_TRACE_URL"):
            Settings.from_env({"DDZ_TRACE_URL": bad})


def test_calling_is_the_four_parts_a_channel_reads(tmp_path: Path) -> None:
    """``settings.calling`` carries the parts as the whole read them, and a copy as another
    identity or at other addresses changes only that."""
    settings = Settings.from_env(
        {"DDZ_DATA_DIR": str(tmp_path), "DDZ_RPC_TIMEOUT": "7", "DDZ_RULES_ADDR": "10.0.0.9:1",
         "DDZ_INSECURE": "1", "DDZ_LOG_LEVEL": "debug"}
    )  # fmt: skip
    calling = settings.calling
    assert (calling.network, calling.tls, calling.rpc, calling.telemetry) == (
        settings.network, settings.tls, settings.rpc, settings.telemetry,
    )  # fmt: skip
    assert calling.rpc.rpc_timeout == 7.0 and calling.tls.insecure
    assert calling.network.address("rules") == "10.0.0.9:1"
    assert calling.as_identity("bot") == settings.as_identity("bot").calling
    assert calling.as_identity("bot").tls.identity == "bot"
    moved = calling.with_addresses(rules="10.0.0.8:2")
    assert moved == settings.with_addresses(rules="10.0.0.8:2").calling
    assert moved.network.address("rules") == "10.0.0.8:2"


def test_the_table_takes_a_call_open_for_each_person_it_seats(tmp_path: Path) -> None:
    """Calls in flight at once: each seated person holds a stream open at the table, so
    its own default is higher than the other services'; ``DDZ_MAX_CONCURRENT_RPCS`` set
    applies to every server, and reaches the stack's children as it was (set or not)."""
    from ddz.adapters.runtime.stack_env import settings_env

    unset = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    assert unset.rpc.concurrent_rpcs_of("table") == 5000
    assert {unset.rpc.concurrent_rpcs_of(s) for s in ("rules", "bot", "recorder")} == {2000}
    assert Settings.from_env(settings_env(unset)) == unset
    set_ = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path), "DDZ_MAX_CONCURRENT_RPCS": "300"})
    assert {set_.rpc.concurrent_rpcs_of(s) for s in ("table", "rules")} == {300}
    assert Settings.from_env(settings_env(set_)) == set_
