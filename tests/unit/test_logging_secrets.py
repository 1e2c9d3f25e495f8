"""Nothing secret in a log line, an error message or a ``repr``: tracebacks are logged
without the frames' locals (JSON, console, the standard library's loggers and structlog's
own defaults), settings hide their keys and the URLs' passwords, and the values that
hold a seed or a token's nonce do not show them."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from ddz.access.table_tokens import SignedTokens
from ddz.access.token_keys import LoginKeys
from ddz.access.tokens import TokenKeys, new_claims, verify
from ddz.adapters.telemetry.logging import configure_logging, defaults_without_locals
from ddz.config import Settings
from ddz.config.telemetry import TelemetrySettings
from ddz.domain.hand import HandState
from ddz.domain.hand.commands import SeatInfo, StartHand
from ddz.domain.ruleset import ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.urls import redacted_url

from services.rules.use_cases.cache import LiveHand

SECRET = "the-audit-key-nobody-may-read"


def fail_holding_a_secret() -> None:
    audit_key = SECRET.encode()  # a local of the failing frame, as in a real audit step
    token = f"ddz1.{SECRET}.sig"
    raise RuntimeError(f"the audit step failed ({len(audit_key) + len(token)} bytes)")


@pytest.fixture
def sink(tmp_path: Path) -> Iterator[io.StringIO]:
    out = io.StringIO()
    yield out
    configure_logging(TelemetrySettings(data_dir=tmp_path), service="pytest", stream=io.StringIO())


def log_failures(logger_name: str | None) -> None:
    """The failure logged by a service's logger (None) or a standard-library one."""
    try:
        fail_holding_a_secret()
    except RuntimeError:
        if logger_name is None:
            structlog.get_logger().exception("audit_failed")
        else:
            logging.getLogger(logger_name).exception("audit failed")


@pytest.mark.parametrize("log_format", ["json", "console"])
@pytest.mark.parametrize("logger_name", [None, "nats"])
def test_a_logged_exception_does_not_print_its_frames_locals(
    tmp_path: Path, sink: io.StringIO, log_format: str, logger_name: str | None
) -> None:
    settings = TelemetrySettings(data_dir=tmp_path, log_format=log_format)  # type: ignore[arg-type]
    configure_logging(settings, service="recorder", stream=sink)
    log_failures(logger_name)
    out = sink.getvalue()
    assert "fail_holding_a_secret" in out and "the audit step failed" in out  # the traceback
    assert SECRET not in out
    assert "locals" not in out  # no locals panel (console), no "locals" key (JSON)


def test_a_log_file_gets_tracebacks_without_locals(tmp_path: Path, sink: io.StringIO) -> None:
    configure_logging(TelemetrySettings(data_dir=tmp_path, log_to_file=True), service="recorder")
    log_failures(None)
    log_failures("grpc")
    configure_logging(TelemetrySettings(data_dir=tmp_path), service="pytest", stream=sink)
    text = (tmp_path / "logs" / "recorder.log").read_text()
    assert text.count("fail_holding_a_secret") == 2 and SECRET not in text


def test_structlogs_defaults_print_no_locals_either(
    tmp_path: Path, sink: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a process prints that never configured logging (services started in a test)."""
    structlog.reset_defaults()
    defaults_without_locals()
    log_failures(None)
    out = capsys.readouterr().out
    assert "fail_holding_a_secret" in out and SECRET not in out


def test_settings_hide_keys_and_passwords() -> None:
    settings = Settings.from_env(
        {
            "DDZ_AUDIT_KEY": "audit-s3cret",
            "DDZ_TABLE_TOKEN_KEY": "table-s3cret",
            "DDZ_NATS_PASSWORD": "operator-s3cret",
            "DDZ_DATABASE_URL": "postgresql://ddz:db-s3cret@db:5432/ddz?password=q-s3cret",
            "DDZ_NATS_URL": "nats://nats-s3cret-token@nats:4222",
        }
    )
    for text in (repr(settings), str(settings)):
        assert "s3cret" not in text
        assert "ddz:***@db:5432/ddz" in text and "nats://***@nats:4222" in text
    assert settings.store.database_url.endswith("ddz:db-s3cret@db:5432/ddz?password=q-s3cret")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ddz:pw@db/ddz", "postgresql://ddz:***@db/ddz"),
        ("postgresql://ddz:p@ss/w@db/ddz", "postgresql://ddz:***@db/ddz"),
        ("postgresql://ddz@db/ddz", "postgresql://ddz@db/ddz"),
        (
            "postgresql://db/ddz?sslmode=require&password=pw",
            "postgresql://db/ddz?sslmode=require&password=***",
        ),
        ("sqlite:////tmp/a@b/ddz.sqlite3", "sqlite:////tmp/a@b/ddz.sqlite3"),
        ("ddz:pw@db/ddz", "ddz:***@db/ddz"),
        ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222"),
    ],
)
def test_redacted_urls(url: str, shown: str) -> None:
    assert redacted_url(url) == shown
    assert "pw" not in redacted_url(url, keep_user=False)


def test_bad_urls_are_named_without_their_passwords() -> None:
    with pytest.raises(ValueError, match="DDZ_DATABASE_URL") as bad_database:
        Settings.from_env({"DDZ_DATABASE_URL": "ddz:db-s3cret@db/ddz"})
    with pytest.raises(ValueError, match="DDZ_NATS_URL") as bad_nats:
        Settings.from_env({"DDZ_NATS_URL": "http://user:nats-s3cret@nats:4222"})
    assert "s3cret" not in str(bad_database.value) + str(bad_nats.value)


def test_seeds_and_nonces_are_not_in_a_repr() -> None:
    seed = bytes(range(32))
    seats = (SeatInfo("ann"), SeatInfo("ben"), SeatInfo("bot", is_bot=True))
    start = StartHand("h1", ruleset_for("classic"), RoomSettings(), seats, seed)
    live = LiveHand(HandState(), cursor=0, seed=seed)
    claims = new_claims("seat", "ann", 60, table="t1", seat=0)
    for value, secret in ((start, repr(seed)), (live, repr(seed)), (claims, claims.nonce)):
        assert secret not in repr(value)
    assert "ann" in repr(claims)  # the rest is still there


def test_a_seat_token_is_not_in_the_repr_of_the_pass_that_carries_it() -> None:
    keys = TokenKeys(b"seat-key" * 4, LoginKeys(None))
    seat_pass = SignedTokens(keys).seat_pass("ann", "t1", 0)
    assert verify(seat_pass.token, keys).player == "ann"  # a real token, signed
    assert seat_pass.token not in repr(seat_pass)
    assert seat_pass.token.split(".")[2] not in repr(seat_pass)
    assert str(seat_pass.expires) in repr(seat_pass)  # the rest is still there
