"""``docker-compose.yml`` and ``deploy/Dockerfile`` match the real commands and settings
(there is no Docker engine in CI: the compose file must be valid and true all the same).

The file is read as Compose reads it: ``${VAR:-default}`` interpolated from the
environment of one of its two ways to run (plain, and ``--env-file
deploy/compose-cluster.env``), services of inactive profiles left out."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.server import MIN_SERVER_VERSION
from ddz.adapters.runtime import stack
from ddz.config import RETIRED, Settings
from ddz.config.network import SERVICE_PORTS
from ddz.entrypoints import serve_cmd
from settings_kit import settings_variables

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
CLUSTER_ENV = ROOT / "deploy" / "compose-cluster.env"
PREPARE = ROOT / "deploy" / "prepare.py"
ATOMIC_BATCHES = (2, 12)  # the floor for the images: the services use atomic batches


def env_file(path: Path) -> dict[str, str]:
    lines = (line.strip() for line in path.read_text().splitlines())
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?::-(?P<default>[^}]*))?\}")


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Compose's ``${NAME:-default}`` (the only form the file uses), everywhere."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: env.get(m["name"]) or (m["default"] or ""), value)
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    return value


def load(env: Mapping[str, str]) -> dict[str, Any]:
    """The compose file as Compose sees it under ``env``: active services only."""
    data = interpolate(yaml.safe_load(COMPOSE.read_text()), env)
    profiles = set(filter(None, env.get("COMPOSE_PROFILES", "").split(",")))
    data["services"] = {
        name: service
        for name, service in data["services"].items()
        if not service.get("profiles") or profiles & set(service["profiles"])
    }
    return data


MODES = {"plain": {}, "cluster": env_file(CLUSTER_ENV)}


@pytest.fixture(scope="module", params=sorted(MODES))
def compose(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load(MODES[request.param])


@pytest.fixture(scope="module")
def plain() -> dict[str, Any]:
    return load(MODES["plain"])


def dockerfile_instruction(name: str) -> list[str]:
    lines = [line for line in DOCKERFILE.read_text().splitlines() if line.startswith(name + " ")]
    assert len(lines) == 1, f"one {name} in the Dockerfile"
    value: list[str] = json.loads(lines[0][len(name) + 1 :])
    return value


def serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ddz")
    serve_cmd.register(parser.add_subparsers(dest="command", required=True))
    return parser


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in service["environment"].items()}


def image_version(image: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", image.split(":", 1)[1])[:2])


def check_compose(path: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema with the compose-spec schema it ships (no network)."""
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec"]
    return subprocess.run([*command, str(path)], capture_output=True, text=True, timeout=120)


def test_the_image_runs_ddz() -> None:
    assert dockerfile_instruction("ENTRYPOINT") == ["ddz"]
    args = serve_parser().parse_args(dockerfile_instruction("CMD"))
    assert args.name in SERVICE_PORTS
    for source in re.findall(r"^COPY (\S+)", DOCKERFILE.read_text(), re.MULTILINE):
        assert (ROOT / source).exists(), f"the Dockerfile copies {source}, which is missing"
    # the one-shot services run the preparation script where the image puts it
    assert "COPY deploy/prepare.py ./deploy/prepare.py" in DOCKERFILE.read_text()
    assert "WORKDIR /app" in DOCKERFILE.read_text()


def test_the_file_is_valid_against_the_compose_spec(tmp_path: Path) -> None:
    checked = check_compose(COMPOSE)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # ... and the check refuses what Compose would refuse (a misspelt key)
    broken = tmp_path / "docker-compose.yml"
    text = COMPOSE.read_text()
    broken.write_text(text.replace("    restart: on-failure\n", "    restat: x\n", 1))
    refused = check_compose(broken)
    assert refused.returncode != 0 and "restat" in refused.stdout + refused.stderr


def test_every_service_runs_its_real_ddz_serve_command(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"nats", "postgres", "init", "provision", *SERVICE_PORTS} <= set(services)
    parser = serve_parser()
    for name in SERVICE_PORTS:
        service = services[name]
        assert service.get("entrypoint") is None  # the image's: ddz
        args = parser.parse_args(service["command"])
        assert args.command == "serve" and args.name == name


def test_the_one_shot_services_run_steps_that_exist(compose: dict[str, Any]) -> None:
    spec = importlib.util.spec_from_file_location("prepare", PREPARE)
    assert spec is not None and spec.loader is not None
    prepare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prepare)
    for name, steps in (("init", ["init", "migrate"]), ("provision", ["stream"])):
        service = compose["services"][name]
        assert service["entrypoint"] == ["python", "/app/deploy/prepare.py"]
        assert service["command"] == steps and set(steps) <= set(prepare.STEPS)
        assert service["restart"] == "on-failure"  # retried until its server answers


def test_the_environment_holds_only_settings_variables_with_valid_values(
    compose: dict[str, Any],
) -> None:
    known = settings_variables()
    assert {"DDZ_TURN_TIMEOUT", "DDZ_TABLE_PORT", "DDZ_TLS_CA"} <= known  # the recorder works
    services = compose["services"]
    for name in (*SERVICE_PORTS, "init", "provision"):
        env = environment(services[name])
        unknown = {k for k in env if k.startswith("DDZ_")} - known
        assert not unknown, f"{name}: variables Settings never reads: {sorted(unknown)}"
        assert not set(env) & set(RETIRED), f"{name}: sets a retired variable"
        settings = Settings.from_env(env)  # every value is valid
        assert settings.store.database_url.startswith("postgresql+psycopg://")
        assert settings.network.host == "0.0.0.0"  # reachable from the other containers
        assert not settings.tls.insecure  # TLS between the services (certificates: ddz init)
        for server in settings.bus.nats_servers:  # every NATS node is a service of this mode
            assert server.startswith("nats://")
            assert server.removeprefix("nats://").rsplit(":", 1)[0] in services
        for other, port in SERVICE_PORTS.items():  # each found by its service name
            assert settings.network.address(other) == f"dns:///{other}:{port}"
            assert other in services


def test_the_cluster_mode_uses_three_nodes_and_three_replicas() -> None:
    plain, cluster = (Settings.from_env(environment(load(MODES[m])["services"]["rules"]))
                      for m in ("plain", "cluster"))  # fmt: skip
    assert plain.bus.nats_servers == ("nats://nats:4222",) and plain.bus.stream_replicas == 1
    assert len(cluster.bus.nats_servers) == 3 and cluster.bus.stream_replicas == 3
    nodes = {name: s for name, s in load(MODES["cluster"])["services"].items()
             if name.startswith("nats-")}  # fmt: skip
    assert set(nodes) == {"nats-1", "nats-2", "nats-3"}
    assert not set(nodes) & set(load(MODES["plain"])["services"])  # a profile of its own
    names = set()
    for name, node in nodes.items():
        command = node["command"]
        option = dict(zip(command, [*command[1:], ""], strict=True))
        names.add(option["-n"])
        assert option["--cluster_name"] == "ddz" and "-js" in command
        routes = option["--routes"].split(",")
        assert {r.removeprefix("nats://").split(":")[0] for r in routes} == set(nodes)
        assert option["--cluster"].endswith(":6222") and all(r.endswith(":6222") for r in routes)
        assert node["volumes"][0].split(":")[0] == f"{name}-data"  # its own store
    assert len(names) == 3  # JetStream needs unique server names


def test_scaling_works_by_design(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        assert "container_name" not in service, f"{name}: --scale needs generated names"
        assert "network_mode" not in service  # each instance its own network namespace
    published = {name: service["ports"] for name, service in services.items() if "ports" in service}
    assert set(published) == {"table", "play", "grafana", "console"}, (
        "only the players' entry points (gRPC, the web front), the dashboard and the desk"
    )
    assert all(p.startswith("127.0.0.1:") for p in published.pop("grafana"))  # this host's
    # the desk is for staff: on the host's loopback only, one instance
    assert published.pop("console") == ["127.0.0.1:8443:8443"]
    (ports,) = published["table"]
    host, container = ports.split(":")
    low, high = (int(p) for p in host.split("-"))
    assert int(container) == SERVICE_PORTS["table"] == low  # one instance: the usual port
    assert high - low + 1 >= 2, "--scale table=2 needs a host port each"


def test_health_checks_ask_the_containers_own_instance(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("nats", "postgres", *SERVICE_PORTS):
        assert services[name]["healthcheck"]["test"], f"{name} has no health check"
    assert importlib.util.find_spec("ddz.adapters.runtime.stack") is not None
    for name, port in SERVICE_PORTS.items():
        test = services[name]["healthcheck"]["test"]
        assert test[:3] == ["CMD", "env", "-u"]
        unset, command = test[3], test[4:]
        assert command == ["python", "-m", "ddz.adapters.runtime.stack", "health", name]
        env = {k: v for k, v in environment(services[name]).items() if k != unset}
        # without its DDZ_<NAME>_ADDR the service is dialled on loopback at its own port,
        # not at the name that resolves to every instance
        assert Settings.from_env(env).network.address(name) == f"127.0.0.1:{port}"


def test_the_start_order(compose: dict[str, Any]) -> None:
    services = compose["services"]

    def needs(name: str) -> dict[str, str]:
        return {k: v["condition"] for k, v in services[name].get("depends_on", {}).items()}

    done, healthy = "service_completed_successfully", "service_healthy"
    for name in SERVICE_PORTS:
        assert needs(name) == {"provision": done, "postgres": healthy}
    nodes = {n for n in services if n == "nats" or n.startswith("nats-")}
    assert set(needs("provision")) >= nodes and set(needs("provision").values()) == {healthy}
    for node in nodes:
        assert needs(node) == {"init": done}  # its users are written before it starts
    assert needs("init") == {"postgres": healthy}


def test_nats_reads_the_users_init_writes(compose: dict[str, Any]) -> None:
    data = Settings.from_env(environment(compose["services"]["init"])).data_dir
    for name, service in compose["services"].items():
        if name == "nats" or name.startswith("nats-"):
            command = service["command"]
            config = Path(command[command.index("-c") + 1])
            (mount,) = [v for v in service["volumes"] if v.startswith("ddz-data:")]
            _, target, mode = mount.split(":")
            assert mode == "ro"
            written = nats_auth.nats_dir(data) / nats_auth.CONFIG_FILE  # by ddz init
            assert config == Path(target) / written.relative_to(data)


def test_the_nats_images_are_new_enough_for_the_services(compose: dict[str, Any]) -> None:
    images = {s["image"] for n, s in compose["services"].items() if n.startswith("nats")}
    assert images
    for image in images:
        assert image_version(image) >= MIN_SERVER_VERSION[:2], f"{image} is too old"
        assert image_version(image) >= ATOMIC_BATCHES, f"{image}: the issue asks 2.12"


def test_the_health_check_command_answers(capsys: pytest.CaptureFixture[str]) -> None:
    assert stack.main(["health", "chess"]) == 2
    assert "usage" in capsys.readouterr().err
