"""``DDZ_NATS_URL`` names one server or a cluster's servers; the stream's settings."""

from __future__ import annotations

import pytest
from ddz.adapters.messaging.server import server_list
from ddz.adapters.runtime.stack_env import settings_env
from ddz.config import Settings
from ddz.config.bus import DEFAULT_STREAM_MAX_AGE
from ddz.urls import nats_servers, redacted_servers


def test_one_url_is_one_server() -> None:
    settings = Settings.from_env({"DDZ_NATS_URL": "nats://10.0.0.5:4222"})
    assert settings.bus.nats_url == "nats://10.0.0.5:4222"
    assert settings.bus.nats_servers == ("nats://10.0.0.5:4222",)
    assert server_list(settings.bus.nats_url) == ["nats://10.0.0.5:4222"]


def test_a_comma_list_is_every_server_of_a_cluster() -> None:
    raw = "nats://a:4222, nats://b:4222 ,tls://c:4222"
    settings = Settings.from_env({"DDZ_NATS_URL": raw})
    assert settings.bus.nats_url == "nats://a:4222,nats://b:4222,tls://c:4222"
    assert settings.bus.nats_servers == ("nats://a:4222", "nats://b:4222", "tls://c:4222")
    assert server_list(settings.bus.nats_url) == list(settings.bus.nats_servers)
    assert server_list(["nats://a:4222", "nats://b:4222"]) == ["nats://a:4222", "nats://b:4222"]


def test_no_url_is_the_default_server() -> None:
    assert Settings.from_env({}).bus.nats_servers == ()


@pytest.mark.parametrize(
    "raw",
    [
        "nats://a:4222,b:4222",  # the second has no scheme
        "nats://a:4222,,nats://b:4222",  # an empty entry
        "nats://a:4222,",
        "http://a:4222",
        "nats://",
        "nats://a :4222",
    ],
)
def test_each_server_is_checked(raw: str) -> None:
    with pytest.raises(ValueError, match="DDZ_NATS_URL"):
        Settings.from_env({"DDZ_NATS_URL": raw})


def test_a_bad_entry_is_shown_without_its_credentials() -> None:
    with pytest.raises(ValueError) as caught:
        nats_servers("nats://a:4222,secret-token@b:4222")
    assert "secret-token" not in str(caught.value)


def test_every_server_is_redacted() -> None:
    shown = redacted_servers("nats://alice:pw1@a:4222,nats://tok@b:4222")
    assert "pw1" not in shown and "tok" not in shown and "alice" not in shown
    assert shown.count("@") == 2 and "a:4222" in shown and "b:4222" in shown
    settings = Settings.from_env({"DDZ_NATS_URL": "nats://alice:pw1@a:4222,nats://b:4222"})
    assert "pw1" not in repr(settings)


def test_the_stream_settings() -> None:
    default = Settings.from_env({})
    assert (
        default.bus.stream_replicas,
        default.bus.stream_max_age,
        default.bus.stream_max_bytes,
    ) == (
        1,
        DEFAULT_STREAM_MAX_AGE,
        None,
    )
    cluster = Settings.from_env(
        {
            "DDZ_STREAM_REPLICAS": "3",
            "DDZ_STREAM_MAX_AGE": "3600",
            "DDZ_STREAM_MAX_BYTES": "1000000000",
        }
    )
    assert (
        cluster.bus.stream_replicas,
        cluster.bus.stream_max_age,
        cluster.bus.stream_max_bytes,
    ) == (
        3,
        3600.0,
        1_000_000_000,
    )
    unlimited = Settings.from_env({"DDZ_STREAM_MAX_AGE": "0", "DDZ_STREAM_MAX_BYTES": "0"})
    assert (unlimited.bus.stream_max_age, unlimited.bus.stream_max_bytes) == (None, None)
    for settings in (default, cluster, unlimited):
        assert Settings.from_env(settings_env(settings)) == settings


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("DDZ_STREAM_REPLICAS", "0"),
        ("DDZ_STREAM_REPLICAS", "6"),
        ("DDZ_STREAM_MAX_AGE", "-1"),
        ("DDZ_STREAM_MAX_AGE", "a week"),
        ("DDZ_STREAM_MAX_BYTES", "1.5"),
    ],
)
def test_bad_stream_settings_name_their_variable(name: str, raw: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: raw})
