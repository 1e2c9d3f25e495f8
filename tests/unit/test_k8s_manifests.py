"""``deploy/k8s`` is valid Kubernetes and true to the code: every manifest against the
Kubernetes schemas kubernetes-validate ships (strict: no unknown field; no network),
every variable one the settings read, ports as ``config.SERVICE_PORTS``, the network
policies as the rights table (``ddz.access.rights.RIGHTS``), the Secrets where the
settings look for them."""

from __future__ import annotations

import argparse
import copy
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from ddz.access.rights import RIGHTS, TABLE_FRONTS
from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.server import MIN_SERVER_VERSION
from ddz.adapters.telemetry import metrics
from ddz.config import RETIRED, Settings
from ddz.config.network import SERVICE_PORTS
from ddz.config.security import OPERATOR, SPIFFE_PREFIX
from ddz.entrypoints import serve_cmd
from prometheus_client.metrics import MetricWrapperBase
from settings_kit import Recording

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUBERNETES = "1.33.0"  # the schemas the manifests are checked against (native sidecars, GA probes)
CUSTOM_KINDS = {("cert-manager.io/v1", "Issuer"), ("cert-manager.io/v1", "Certificate")}
"""Kinds of CRDs, which kubernetes-validate has no schema for: checked below instead."""
NATS_RELEASE = "nats"  # the Helm release of deploy/k8s/nats-values.yaml
OPERATOR_POD = "ddz-operator"  # the label of a pod that runs the operator's tools
DATABASE_USERS = {"dealer", "settlement", "recorder"}  # services/<name>/app.py: database_url
PROTO_SERVICE = {
    "DealerService": "dealer", "RulesService": "rules", "BotService": "bot",
    "SettlementService": "settlement", "TableService": "table",
    "RecorderService": "recorder", "AuditService": "recorder", "DeskService": "recorder",
}  # fmt: skip
NO_NATS = {"console", "play"}
"""Services with no NATS user: everything they show comes through other services."""
WEB_PORTS = {
    "console": Settings().network.console_web_port,
    "play": Settings().network.play_web_port,
}
"""Services that also serve HTTPS pages (the desk, the player's page), on a port of their own."""
SECRET_MOUNTS = {"tls": "/etc/ddz/tls", "nats": "/etc/ddz/nats"}


@functools.cache
def _parsed(path: Path) -> tuple[dict[str, Any], ...]:
    return tuple(doc for doc in yaml.safe_load_all(path.read_text()) if doc)


def documents(path: Path) -> list[dict[str, Any]]:
    """The YAML documents of ``path`` (a copy each time: a test may change its own)."""
    return copy.deepcopy(list(_parsed(path)))


def manifest_files() -> list[Path]:
    return sorted(p for p in K8S.rglob("*.yaml") if p.name not in {"nats-values.yaml"})


def resources() -> Iterator[dict[str, Any]]:
    for path in manifest_files():
        if path.name != "kustomization.yaml":
            yield from documents(path)


def find(kind: str, name: str) -> dict[str, Any]:
    found = [r for r in resources() if r["kind"] == kind and r["metadata"]["name"] == name]
    assert len(found) == 1, f"one {kind} {name}"
    return found[0]


def container(name: str) -> dict[str, Any]:
    (only,) = find("Deployment", name)["spec"]["template"]["spec"]["containers"]
    assert only["name"] == name
    return only


FORWARDING = {"table"}
"""Services whose standby instances call the active one."""


def settings_map() -> dict[str, str]:
    data: dict[str, str] = find("ConfigMap", "ddz-settings")["data"]
    return data


def pod_env(name: str) -> dict[str, str]:
    """The pod's environment: the shared ConfigMap, then its own variables (a Secret's
    value as a placeholder of the right form)."""
    placeholders = {("ddz-database", "url"): "postgresql://ddz@postgres.example:5432/ddz"}
    fields = {"status.podIP": "10.1.2.3"}
    env = dict(settings_map())
    for item in container(name).get("env", []):
        if "value" in item:  # $(VAR) of an earlier variable is expanded, as the kubelet does
            env[item["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env[m[1]], item["value"])
        elif "fieldRef" in item["valueFrom"]:
            env[item["name"]] = fields[item["valueFrom"]["fieldRef"]["fieldPath"]]
        else:
            ref = item["valueFrom"]["secretKeyRef"]
            env[item["name"]] = placeholders.get((ref["name"], ref["key"]), "s3cret")
    return env


def callers_of(service: str) -> set[str]:
    """The identities with a right to some RPC of ``service`` (None inside: anyone)."""
    found: set[str] = set()
    for method, right in RIGHTS.items():
        proto = method.split("/")[0].rsplit(".", 1)[-1]
        if PROTO_SERVICE.get(proto) != service:
            continue
        found |= {"*"} if right.anyone else set(right.callers)
    return found


@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: str(p.relative_to(K8S)))
def test_every_manifest_is_valid_kubernetes(path: Path) -> None:
    for resource in documents(path):
        if path.name == "kustomization.yaml":
            assert resource["kind"] == "Kustomization"
            continue
        if (resource["apiVersion"], resource["kind"]) in CUSTOM_KINDS:
            continue
        kubernetes_validate.validate(resource, KUBERNETES, strict=True)


def test_the_validation_refuses_a_misspelt_field() -> None:
    deployment = find("Deployment", "rules")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


def test_each_kustomization_lists_every_manifest_beside_it() -> None:
    for kustomization in K8S.rglob("kustomization.yaml"):
        (spec,) = documents(kustomization)
        here = {p.name for p in kustomization.parent.glob("*.yaml")}
        assert set(spec["resources"]) == here - {"kustomization.yaml", "nats-values.yaml"}
        assert spec["namespace"] == "ddz"


def test_each_service_runs_its_real_command_on_its_ports() -> None:
    parser = argparse.ArgumentParser(prog="ddz")
    serve_cmd.register(parser.add_subparsers(dest="command", required=True))
    for name, port in SERVICE_PORTS.items():
        spec = container(name)
        args = parser.parse_args(spec["args"])
        assert (args.command, args.name) == ("serve", name) and "command" not in spec
        settings = Settings.from_env(pod_env(name))
        ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
        probe = settings.network.probe_address(name)
        network = settings.network
        expected = {"grpc": network.port(name), "metrics": network.metrics_port(name),
                    "probe": int(probe.rsplit(":", 1)[1]) if probe else None}  # fmt: skip
        if name in WEB_PORTS:
            expected["https"] = WEB_PORTS[name]
            web = (
                settings.network.console_web_port
                if name == "console"
                else settings.network.play_web_port
            )
            assert web == WEB_PORTS[name]
        assert ports == expected
        assert ports["grpc"] == port
        template = find("Deployment", name)["spec"]["template"]
        scrape = template["metadata"]["annotations"]
        assert scrape["prometheus.io/scrape"] == "true"
        assert int(scrape["prometheus.io/port"]) == settings.network.metrics_port(name)
        service = find("Service", name)["spec"]
        assert service["ports"] == [{"name": "grpc", "port": port, "targetPort": "grpc",
                                     "appProtocol": "grpc"}]  # fmt: skip
        assert service["selector"].items() <= template["metadata"]["labels"].items()
        # internal services: headless, so DNS answers each pod and the clients balance;
        # the table: the one reachable from outside
        assert service.get("type") == ("LoadBalancer" if name == "table" else None)
        assert (service.get("clusterIP") == "None") == (name != "table")


def test_the_environment_holds_only_settings_variables_with_valid_values() -> None:
    known = Recording()
    Settings.from_env(known)
    for name in SERVICE_PORTS:
        env = pod_env(name)
        unknown = {k for k in env if k.startswith("DDZ_")} - known.asked
        assert not unknown, f"{name}: variables Settings never reads: {sorted(unknown)}"
        assert not set(env) & set(RETIRED)
        settings = Settings.from_env(env)
        assert settings.network.host == "0.0.0.0" and not settings.tls.insecure
        for other, port in SERVICE_PORTS.items():
            assert settings.network.address(other) == f"dns:///{other}:{port}"
        uses_database = any(i["name"] == "DDZ_DATABASE_URL" for i in container(name).get("env", []))
        assert uses_database == (name in DATABASE_USERS)
        if uses_database:
            assert settings.store.database_url.startswith("postgresql+psycopg://")


def test_the_nats_url_names_every_node_of_the_chart_and_streams_are_replicated() -> None:
    (values,) = documents(K8S / "nats-values.yaml")
    cluster = values["config"]["cluster"]
    assert cluster["enabled"] and values["config"]["jetstream"]["enabled"]
    settings = Settings.from_env(settings_map())
    nodes = cluster["replicas"]
    assert settings.bus.nats_servers == tuple(
        f"nats://{NATS_RELEASE}-{i}.{NATS_RELEASE}-headless:4222" for i in range(nodes)
    )
    assert settings.bus.stream_replicas == nodes == 3
    tag = values["container"]["image"]["tag"]
    version = tuple(int(p) for p in re.findall(r"\d+", tag)[:2])
    assert version >= MIN_SERVER_VERSION[:2] and version >= (2, 12)
    assert values["config"]["merge"]["$include"] == "auth.conf"  # the suite's users


def test_secrets_are_mounted_read_only_where_the_settings_look() -> None:
    for name in SERVICE_PORTS:
        pod = find("Deployment", name)["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["name"]: m for m in container(name)["volumeMounts"]}
        assert volumes["tls"]["secret"]["secretName"] == f"ddz-tls-{name}"
        if name in NO_NATS:
            assert "nats" not in volumes and "nats" not in mounts
        else:
            assert volumes["nats"]["secret"]["secretName"] == f"ddz-nats-{name}"
        for volume, path in SECRET_MOUNTS.items():
            if volume in mounts or name not in NO_NATS:
                assert mounts[volume] == {"name": volume, "mountPath": path, "readOnly": True}
        for volume in volumes.values():
            if "secret" in volume:
                assert volume["secret"]["defaultMode"] & 0o077 == 0o040  # group read only
                assert mounts[volume["name"]]["readOnly"]
        settings = Settings.from_env(pod_env(name)).as_identity(name)
        tls = Path(SECRET_MOUNTS["tls"])
        assert settings.tls.tls_ca_path == tls / "ca.crt"  # the keys of a cert-manager Secret
        assert (settings.tls.tls_cert_path, settings.tls.tls_key_path) == (
            tls / "tls.crt",
            tls / "tls.key",
        )
        assert settings.bus.nats_nkey_seed_file == Path(SECRET_MOUNTS["nats"]) / "nkey.seed"


def test_pods_run_hardened_with_resources_and_health_probes() -> None:
    for name, port in SERVICE_PORTS.items():
        pod = find("Deployment", name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"]
        assert pod["automountServiceAccountToken"] is False
        spec = container(name)
        context = spec["securityContext"]
        assert context["readOnlyRootFilesystem"] and not context["allowPrivilegeEscalation"]
        assert context["capabilities"]["drop"] == ["ALL"]
        writable = {m["mountPath"] for m in spec["volumeMounts"] if not m.get("readOnly")}
        assert writable == {"/data", "/tmp"}
        assert Settings.from_env(pod_env(name)).data_dir == Path("/data")
        for kind in ("requests", "limits"):
            assert set(spec["resources"][kind]) == {"cpu", "memory"}
        # alive: the gRPC port accepts; ready: the service's own health says SERVING
        # (its NATS, database and consumers), asked by kubelet's native gRPC probe on the
        # plaintext health-only port the service opens for it (DDZ_<NAME>_PROBE_PORT)
        assert spec["livenessProbe"]["tcpSocket"] == {"port": "grpc"}
        probe_address = Settings.from_env(pod_env(name)).network.probe_address(name)
        assert probe_address is not None, f"{name}: no DDZ_{name.upper()}_PROBE_PORT"
        probe_port = int(probe_address.rsplit(":", 1)[1])
        assert probe_port not in (port, Settings.from_env(pod_env(name)).network.metrics_port(name))
        assert {"name": "probe", "containerPort": probe_port} in spec["ports"]
        for probe in ("startupProbe", "readinessProbe"):
            assert spec[probe]["grpc"] == {"port": probe_port}, (name, probe)


def _peers(rule: dict[str, Any], side: str) -> set[str]:
    """The pods of this namespace a rule names, by their name label."""
    peers = [p for p in rule.get(side, []) if "podSelector" in p and "namespaceSelector" not in p]
    return {p["podSelector"]["matchLabels"]["app.kubernetes.io/name"] for p in peers}


def _ports(rule: dict[str, Any]) -> set[int]:
    return {p["port"] for p in rule["ports"]}


def test_network_policies_let_through_only_who_has_a_right() -> None:
    deny = find("NetworkPolicy", "default-deny")["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    for name, port in SERVICE_PORTS.items():
        spec = find("NetworkPolicy", name)["spec"]
        assert spec["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": name}
        grpc_in = [r for r in spec["ingress"] if _ports(r) == {port}]
        assert len(grpc_in) == 1
        callers = callers_of(name)
        if "*" in callers:  # the players' entry point: from anywhere
            assert "from" not in grpc_in[0] and name == "table"
        else:
            # a service no one calls (the desk: health only) lets in the operator's tools
            expected = {c if c != OPERATOR else OPERATOR_POD for c in callers} or {OPERATOR_POD}
            assert _peers(grpc_in[0], "from") == expected, name
        others = [r for r in spec["ingress"] if r is not grpc_in[0]]
        pages = [r for r in others if name in WEB_PORTS and _ports(r) == {WEB_PORTS[name]}]
        assert all(
            _ports(r) == {Settings().network.metrics_port(name)} for r in others if r not in pages
        )
        # out: exactly the services it may call, NATS, and its database; a table standby
        # forwards its players' calls to the active table instance
        called = {s for s in SERVICE_PORTS if name in callers_of(s) and s != name}
        called |= {name} & FORWARDING
        called |= {"table"} if name in TABLE_FRONTS else set()  # a player's calls, relayed
        egress = spec["egress"]
        assert {p for r in egress for p in _peers(r, "to") if p != "nats"} == called
        for callee in called:
            assert any(_peers(r, "to") == {callee} and _ports(r) == {SERVICE_PORTS[callee]}
                       for r in egress)  # fmt: skip
        assert any(_peers(r, "to") == {"nats"} and _ports(r) == {4222} for r in egress) == (
            name not in NO_NATS
        )
        assert any(_ports(r) == {5432} for r in egress) == (name in DATABASE_USERS)
    # the operator's tools pod reaches what the operator may call, and NATS
    tools = find("NetworkPolicy", OPERATOR_POD)["spec"]
    reachable = {s for s in SERVICE_PORTS if callers_of(s) & {OPERATOR, "*"}}
    assert {p for r in tools["egress"] for p in _peers(r, "to")} == reachable | {"nats"}


def test_the_certificates_name_their_service_as_the_code_checks() -> None:
    path = K8S / "cert-manager" / "certificates.yaml"
    certificates = {d["spec"]["secretName"]: d["spec"] for d in documents(path)
                    if d["kind"] == "Certificate"}  # fmt: skip
    assert set(certificates) == {f"ddz-tls-{name}" for name in SERVICE_PORTS}
    for name in SERVICE_PORTS:
        spec = certificates[f"ddz-tls-{name}"]
        assert spec["uris"] == [f"{SPIFFE_PREFIX}{name}"]
        assert {name, "localhost"} <= set(spec["dnsNames"]) and spec["ipAddresses"] == ["127.0.0.1"]
        assert {"server auth", "client auth"} <= set(spec["usages"])


SAMPLE_SUFFIXES = {"counter": ["_total"], "gauge": [""], "histogram": ["_bucket", "_sum", "_count"]}


def _series() -> dict[str, set[str]]:
    """Every series name the suite's metrics expose, with its label names."""
    found: dict[str, set[str]] = {}
    for metric in vars(metrics).values():
        if not isinstance(metric, MetricWrapperBase):
            continue
        (family,) = metric.describe()
        labels = set(getattr(metric, "_labelnames", ()))  # the names it was declared with
        for suffix in SAMPLE_SUFFIXES[family.type]:
            found[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    for family in metrics.PROCESS.collect():  # ddz_process_*: no labels of their own
        found[family.name + SAMPLE_SUFFIXES[family.type][0]] = set()
    return found


# Labels Prometheus gives every series it scrapes (deploy/prometheus/prometheus.yml names
# each job after its service), and its own series for each target.
TARGET_LABELS = {"job", "instance"}
PROMETHEUS_SERIES = {"up"}


def test_the_alerts_name_only_series_and_labels_the_services_export() -> None:
    ((file,),) = [documents(ROOT / "deploy" / "prometheus" / "alerts.yaml")]
    rules = [rule for group in file["groups"] for rule in group["rules"]]
    series = _series()
    assert {"ddz_rpc_handled_total", "ddz_decision_seconds_bucket"} <= set(series)
    assert "ddz_process_cpu_seconds_total" in series
    records = {rule["record"]: rule["expr"] for rule in rules if "record" in rule}
    alerts = [rule for rule in rules if "alert" in rule]
    assert len({a["alert"] for a in alerts}) == len(alerts) >= 6
    for rule in rules:
        name, expr = rule.get("alert", rule.get("record")), rule["expr"]
        if "alert" in rule:
            assert rule["labels"]["severity"] in {"warning", "critical"} and rule["for"]
            assert rule["annotations"]["summary"]
        recorded = set(re.findall(r"\bddz:[\w:]+", expr))
        assert recorded <= set(records), f"{name}: {recorded - set(records)}"
        expr = " ".join([expr, *(records[r] for r in recorded)])  # what it stands for
        used = set(re.findall(r"\bddz_\w+", expr))
        assert used or "up{" in expr, name
        assert used <= set(series), f"{name}: {used - set(series)}"
        labels = TARGET_LABELS.union(*(series[n] for n in used))
        for metric, selector in re.findall(r"\b(ddz_\w+)\{([^}]*)\}", expr):
            named = set(re.findall(r"(\w+)\s*=~?", selector))
            assert named <= series[metric] | TARGET_LABELS, f"{name}: {metric} has no {named}"
        for group in re.findall(r"by \(([^)]*)\)", expr):
            assert {g.strip() for g in group.split(",")} <= labels, name


def test_the_jobs_run_the_preparation_with_what_it_reads() -> None:
    jobs = [r for r in resources() if r["kind"] == "Job"]
    steps = {}
    for job in jobs:
        pod = job["spec"]["template"]["spec"]
        (spec,) = pod["containers"]
        assert spec["command"][:2] == ["python", "/app/deploy/prepare.py"]
        steps[spec["command"][2]] = (spec, pod)
        assert (
            pod["securityContext"]["runAsNonRoot"]
            and spec["securityContext"]["readOnlyRootFilesystem"]
        )
        labels = job["spec"]["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "ddz-prepare"  # its NetworkPolicy
        assert labels["app.kubernetes.io/part-of"] == "ddz"  # NATS lets it in
    assert set(steps) == {"migrate", "stream"}
    spec, _ = steps["migrate"]
    assert [e["valueFrom"]["secretKeyRef"] for e in spec["env"]] == [
        {"name": "ddz-database", "key": "url"}
    ]
    spec, pod = steps["stream"]
    (mount,) = [m for m in spec["volumeMounts"] if m["name"] == "provision"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "provision"]
    assert volume["secret"]["secretName"] == "ddz-nats-provision"
    (item,) = volume["secret"]["items"]
    seed = Path(mount["mountPath"]) / item["path"]
    settings = Settings.from_env(settings_map())
    assert seed == nats_auth.seed_path(settings.data_dir, nats_auth.PROVISION)  # where it reads
    assert settings.bus.stream_replicas == 3


def test_the_image_is_the_one_kustomize_sets() -> None:
    (kustomization,) = documents(K8S / "kustomization.yaml")
    (image,) = kustomization["images"]
    pods = [
        r["spec"]["template"]["spec"] for r in resources() if r["kind"] in {"Deployment", "Job"}
    ]
    assert pods
    for pod in pods:
        assert {c["image"].split(":")[0] for c in pod["containers"]} == {image["name"]}


def test_producers_sign_with_their_own_key_and_every_pod_reads_the_keyring() -> None:
    """Pods share no data dir: a producer's event key is its own Secret, the public keyring a
    ConfigMap every pod mounts (docs/SECURITY.md, "Signed events")."""
    for name in SERVICE_PORTS:
        pod = find("Deployment", name)["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["name"]: m for m in container(name)["volumeMounts"]}
        settings = Settings.from_env(pod_env(name))
        keyring = mounts["event-keyring"]
        assert keyring["readOnly"] and volumes["event-keyring"]["configMap"]["name"] == (
            "ddz-event-keyring"
        )
        assert settings.keys.event_keyring_path.parent == Path(keyring["mountPath"])
        producer = name in ("dealer", "rules", "table")
        assert ("events" in mounts) == producer, name
        if producer:
            assert volumes["events"]["secret"]["secretName"] == f"ddz-events-{name}"
            key = settings.keys.event_signing_key_path(name)
            assert key.parent == Path(mounts["events"]["mountPath"])
            assert mounts["events"]["readOnly"]
        else:
            assert settings.keys.event_signing_key_file is None
