"""The Grafana dashboard and the Prometheus of docker-compose.yml: the files provision
what they say, every panel reads the provisioned Prometheus, and every expression (rule
or panel) names series the suite defines. tests/e2e/test_observability.py checks the
same names against what a running suite exports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ddz.adapters.telemetry import metrics
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS
from promql_kit import (
    DASHBOARDS,
    PROMETHEUS_OWN,
    dashboards,
    expressions,
    metric_names,
    panels,
    recorded,
)

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
PROMETHEUS = ROOT / "deploy" / "prometheus"


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (job) (rate(ddz_process_cpu_seconds_total{job=~"a|b"}[$__rate_interval]))',
         {"ddz_process_cpu_seconds_total"}),
        ("histogram_quantile(0.99, sum by (le) (rate(x_bucket{a=\"b\"}[5m]))) > 0.5",
         {"x_bucket"}),
        ("a / on (job) group_left (instance) b offset 5m", {"a", "b"}),
        ('up{job="x"} == 0 or absent(foo{bar="by (x)", baz=\'}\'})', {"up", "foo"}),
        ("ddz:hands_settled:rate1m > bool 1e3", {"ddz:hands_settled:rate1m"}),
        ('{__name__="hidden"}', set()),
        ("sum without (a, b) (m1) unless m2 and m3", {"m1", "m2", "m3"}),
        ("max_over_time(rate(m[5m])[1h:1m]) > $threshold", {"m"}),
        ('label_replace(m, "dst", "$1", "src", "(.*)")', {"m"}),
        ("count(ALERTS{alertstate=\"firing\"}) > Inf", {"ALERTS"}),
    ],
)  # fmt: skip
def test_the_names_an_expression_reads(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def defined() -> set[str]:
    """Every sample name the metrics module can export."""
    names: set[str] = set()
    for family in metrics.REGISTRY.collect():
        names.add(family.name)
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
        names |= {family.name + suffix for suffix in suffixes.get(family.type, ())}
    return names


def test_every_expression_names_series_the_suite_defines() -> None:
    known = defined() | PROMETHEUS_OWN | recorded()
    found = expressions()
    assert len(found) >= 30
    for where, expr in found.items():
        names = metric_names(expr)
        assert names, f"{where} reads no series: {expr}"
        assert names <= known, f"{where}: {sorted(names - known)}"


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Host path (of this repository) -> container path, of the bind mounts."""
    found = {}
    for volume in service["volumes"]:
        source, target, *_ = volume.split(":")
        if source.startswith("./"):
            found[str((ROOT / source).resolve())] = target
    return found


def test_grafana_is_provisioned_with_the_dashboard_and_the_compose_prometheus() -> None:
    services = compose()["services"]
    grafana = mounts(services["grafana"])
    provisioning = grafana[str(GRAFANA / "provisioning")]
    assert provisioning == "/etc/grafana/provisioning"
    (source,) = yaml.safe_load(
        (GRAFANA / "provisioning" / "datasources" / "prometheus.yaml").read_text()
    )["datasources"]
    assert source["type"] == "prometheus"
    host, port = source["url"].removeprefix("http://").split(":")
    assert host in services and port == "9090"
    (provider,) = yaml.safe_load(
        (GRAFANA / "provisioning" / "dashboards" / "ddz.yaml").read_text()
    )["providers"]
    assert provider["options"]["path"] == grafana[str(DASHBOARDS)]
    home = services["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert Path(home).parent == Path(grafana[str(DASHBOARDS)]) and "ddz.json" in dashboards()
    for name, dashboard in dashboards().items():
        found = panels(dashboard)
        assert len({p["id"] for p in found}) == len(found), f"{name}: panel ids repeat"
        for panel in found:
            if panel["type"] == "row":
                continue
            assert panel["title"] and panel["description"] and panel["targets"]
            assert panel["datasource"]["uid"] == source["uid"], panel["title"]
            grid = panel["gridPos"]
            assert grid["x"] + grid["w"] <= 24, panel["title"]
            for target in panel["targets"]:
                assert target["datasource"]["uid"] == source["uid"], panel["title"]


def test_the_dashboard_shows_what_the_operator_watches() -> None:
    """Hands per second, play latency, per-service CPU and errors, consumer lag,
    restarts and refusals: a panel reads each."""
    exprs = [t["expr"] for p in panels(dashboards()["ddz.json"]) for t in p.get("targets", [])]

    def shown(*parts: str) -> bool:
        return any(all(part in expr for part in parts) for expr in exprs)

    assert shown("ddz:hands_settled:rate1m")
    assert shown("histogram_quantile(0.99", "ddz_rpc_duration_seconds_bucket", "Play")
    assert shown("by (job)", "ddz_process_cpu_seconds_total")
    assert shown("by (service, code)", "ddz_rpc_handled_total", "INTERNAL")
    assert shown("ddz_consumer_pending", "by (durable)")
    assert shown("changes(ddz_process_start_time_seconds")
    assert shown("ddz_events_refused_total") and shown("ddz_rpc_handled_total", "PERMISSION_DENIED")


def test_prometheus_scrapes_every_service_at_its_metrics_port() -> None:
    services = compose()["services"]
    prometheus = services["prometheus"]
    target = mounts(prometheus)[str(PROMETHEUS)]
    assert f"--config.file={target}/prometheus.yml" in prometheus["command"]
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yaml"]  # beside it, in the same mount
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == set(SERVICE_PORTS)
    env = services["dealer"]["environment"]  # every service shares the suite's settings
    settings = Settings.from_env({k: str(v) for k, v in env.items() if "${" not in str(v)})
    for name, job in jobs.items():
        (sd,) = job["dns_sd_configs"]
        assert sd["names"] == [name] and name in services and sd["type"] == "A"
        assert sd["port"] == settings.network.metrics_port(name)
