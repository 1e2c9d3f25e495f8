"""One address per service: where clients dial it and where it listens are settings."""

from __future__ import annotations

import pytest
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS


def test_by_default_clients_dial_loopback_at_each_services_port() -> None:
    settings = Settings.from_env({})
    for name, port in SERVICE_PORTS.items():
        assert settings.network.address(name) == f"127.0.0.1:{port}"
        assert settings.network.listen_address(name) == f"127.0.0.1:{port}"


def test_one_setting_points_a_services_callers_at_another_host() -> None:
    settings = Settings.from_env(
        {"DDZ_RULES_ADDR": "dns:///rules:50052", "DDZ_DEALER_ADDR": "10.1.2.3:7000"}
    )
    assert settings.network.address("rules") == "dns:///rules:50052"
    assert settings.network.address("dealer") == "10.1.2.3:7000"
    assert settings.network.address("bot") == "127.0.0.1:50053"  # the others are unchanged
    assert (
        settings.network.listen_address("rules") == "127.0.0.1:50052"
    )  # listening is not dialling


def test_a_wildcard_listen_host_is_dialled_on_loopback() -> None:
    settings = Settings.from_env({"DDZ_HOST": "0.0.0.0", "DDZ_TABLE_LISTEN": "[::]:6000"})
    assert settings.network.listen_address("rules") == "0.0.0.0:50052"
    assert settings.network.address("rules") == "127.0.0.1:50052"
    assert settings.network.listen_address("table") == "[::]:6000"
    assert settings.network.listen_address("table", port=0) == "[::]:0"


def test_with_addresses_returns_a_copy() -> None:
    settings = Settings.from_env({})
    moved = settings.with_addresses(rules="127.0.0.1:1")
    assert moved.network.address("rules") == "127.0.0.1:1"
    assert settings.network.address("rules") == "127.0.0.1:50052"


@pytest.mark.parametrize("value", ["rules", "rules 50052", "  :  x"])
def test_a_target_that_is_not_one_names_the_variable(value: str) -> None:
    with pytest.raises(ValueError, match="DDZ_RULES_ADDR"):
        Settings.from_env({"DDZ_RULES_ADDR": value})
