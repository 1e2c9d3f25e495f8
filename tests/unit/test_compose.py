"""``docker-compose.yml`` and ``deploy/Dockerfile`` match the real commands and settings
(there is no Docker engine in CI: the compose file must be valid and true all the same)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from ddz.adapters import stack
from ddz.adapters.bus import MIN_SERVER_VERSION
from ddz.config import SERVICE_PORTS, Settings
from ddz.entrypoints import serve_cmd

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"


class Recording(Mapping[str, str]):
    """An environment that remembers every variable asked for."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.values = dict(values or {})
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return self.values.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def settings_variables() -> set[str]:
    env = Recording()
    Settings.from_env(env)
    return env.asked


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def services_of(compose: dict[str, Any]) -> set[str]:
    return set(compose["services"])


def dockerfile_instruction(name: str) -> list[str]:
    lines = [line for line in DOCKERFILE.read_text().splitlines() if line.startswith(name + " ")]
    assert len(lines) == 1, f"one {name} in the Dockerfile"
    value: list[str] = json.loads(lines[0][len(name) + 1 :])
    return value


def serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ddz")
    serve_cmd.register(parser.add_subparsers(dest="command", required=True))
    return parser


def test_the_image_runs_ddz() -> None:
    assert dockerfile_instruction("ENTRYPOINT") == ["ddz"]
    args = serve_parser().parse_args(dockerfile_instruction("CMD"))
    assert args.name in SERVICE_PORTS
    for source in re.findall(r"^COPY (\S+)", DOCKERFILE.read_text(), re.MULTILINE):
        assert (ROOT / source).exists(), f"the Dockerfile copies {source}, which is missing"


def test_every_service_runs_its_real_ddz_serve_command(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"nats", "postgres", *SERVICE_PORTS} <= set(services)
    parser = serve_parser()
    for name in SERVICE_PORTS:
        service = services[name]
        assert service.get("entrypoint") is None  # the image's: ddz
        args = parser.parse_args(service["command"])
        assert args.command == "serve" and args.name == name


def test_the_environment_holds_only_settings_variables_with_valid_values(
    compose: dict[str, Any],
) -> None:
    known = settings_variables()
    assert "DDZ_TURN_TIMEOUT" in known and "DDZ_TABLE_PORT" in known  # the recorder works
    for name in SERVICE_PORTS:
        env = {str(k): str(v) for k, v in compose["services"][name]["environment"].items()}
        unknown = {k for k in env if k.startswith("DDZ_")} - known
        assert not unknown, f"{name}: variables Settings never reads: {sorted(unknown)}"
        settings = Settings.from_env(env)  # every value is valid
        assert settings.nats_url.startswith("nats://nats:")
        assert settings.database_url.startswith("postgresql+psycopg://")
        assert settings.host == "0.0.0.0"  # reachable from the other containers
        for other, port in SERVICE_PORTS.items():  # each found by its service name
            assert settings.address(other) == f"dns:///{other}:{port}"
            assert other in services_of(compose)


def test_infrastructure_and_health_checks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert "-js" in services["nats"]["command"]  # JetStream
    for name in ("nats", "postgres", *SERVICE_PORTS):
        assert services[name]["healthcheck"]["test"], f"{name} has no health check"
    assert importlib.util.find_spec("ddz.adapters.stack") is not None
    for name in SERVICE_PORTS:
        test = services[name]["healthcheck"]["test"]
        assert test[:5] == ["CMD", "python", "-m", "ddz.adapters.stack", "health"]
        assert test[5] == name
        needs = services[name]["depends_on"]
        assert needs["nats"]["condition"] == needs["postgres"]["condition"] == "service_healthy"
    published = {name: service["ports"] for name, service in services.items() if "ports" in service}
    table = SERVICE_PORTS["table"]
    assert published == {"table": [f"{table}:{table}"]}, "only the players' entry point"
    assert all("network_mode" not in service for service in services.values())


def test_the_nats_image_is_new_enough_for_the_services(compose: dict[str, Any]) -> None:
    image = compose["services"]["nats"]["image"]
    version = tuple(int(part) for part in re.findall(r"\d+", image.split(":", 1)[1])[:2])
    assert version >= MIN_SERVER_VERSION[:2], f"{image} is older than the services need"


def test_the_health_check_command_answers(capsys: pytest.CaptureFixture[str]) -> None:
    assert stack.main(["health", "chess"]) == 2
    assert "usage" in capsys.readouterr().err
