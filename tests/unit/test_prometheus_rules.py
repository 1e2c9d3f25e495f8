"""The alert rules (deploy/prometheus/alerts.yaml) as Prometheus reads them, and their unit
tests (deploy/prometheus/alerts_test.yaml) as ``promtool test rules`` runs them.

promtool is Debian's ``prometheus`` package unpacked (no server started): ``.ci/run``
puts it on the PATH. Without it these tests skip on a developer's machine and FAIL in CI
(``CI=true``), so a CI that lost promtool does not pass on skipped rule tests.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml
from promql_kit import promtool

PROMETHEUS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = PROMETHEUS / "alerts.yaml"
RULE_TESTS = PROMETHEUS / "alerts_test.yaml"


def rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_promtool_accepts_the_rules() -> None:
    done = subprocess.run(
        [promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout


def test_promtool_accepts_the_compose_prometheus_config() -> None:
    """deploy/prometheus/prometheus.yml, with the rule file it loads beside it."""
    done = subprocess.run(
        [promtool(), "check", "config", str(PROMETHEUS / "prometheus.yml")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 1 rule files found" in done.stdout


def test_every_rule_passes_its_unit_tests() -> None:
    done = subprocess.run(
        [promtool(), "test", "rules", RULE_TESTS.name],
        capture_output=True, text=True, timeout=120, cwd=PROMETHEUS,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_rule_has_a_firing_case_and_every_alert_a_quiet_one() -> None:
    """Each alert is expected to fire in some case (with its labels and words) and not
    to fire in another; each recording rule is evaluated against a figure."""
    cases = yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))["tests"]
    firing: set[str] = set()
    quiet: set[str] = set()
    recorded: set[str] = set()
    for case in cases:
        for check in case.get("alert_rule_test", []):
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
            for alert in check["exp_alerts"]:
                assert alert["exp_labels"]["severity"] in {"warning", "critical"}
                assert alert["exp_annotations"]["summary"], check["alertname"]
        for check in case.get("promql_expr_test", []):
            recorded.add(check["expr"].split("{")[0].strip())
    alerts = {rule["alert"] for rule in rules() if "alert" in rule}
    records = {rule["record"] for rule in rules() if "record" in rule}
    assert len(alerts) >= 20 and records
    assert alerts - firing == set(), "alerts no test sees fire"
    # A rule that also holds on a well suite's series would page every night: most
    # alerts are shown quiet on one (the rest share a case with a neighbour that is).
    assert len(quiet & alerts) >= len(alerts) * 2 // 3, sorted(alerts - quiet)
    assert records <= recorded, "recording rules no test evaluates"
