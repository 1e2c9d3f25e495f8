"""The series an expression of a rule or a dashboard panel reads, and the series the
suite's monitoring files use (deploy/prometheus/alerts.yaml, deploy/grafana/dashboards/).

``metric_names`` reads PromQL as far as naming goes: strings, label matchers, ranges,
subqueries and the label lists of ``by``/``without``/``on``/``ignoring``/``group_*`` are
dropped first; what is left that is a name not followed by ``(`` (a function or an
aggregation) and not a keyword is a metric name. Grafana's ``$variables`` are not names.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus" / "alerts.yaml"
DASHBOARDS = ROOT / "deploy" / "grafana" / "dashboards"

PROMETHEUS_OWN = frozenset({"up", "ALERTS", "ALERTS_FOR_STATE"})
"""Series Prometheus writes itself: a target's ``up``, the alerts' state."""

KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
     "unless", "offset", "atan2", "inf", "nan"}
)  # fmt: skip

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_NAME = re.compile(r"(?<![\w:.$])([A-Za-z_:][\w:]*)(\s*\()?")


def promtool() -> str:
    """The ``promtool`` on the PATH (Debian's ``prometheus`` package unpacked: ``.ci/run``
    puts it there). Without it a test skips on a developer's machine and FAILS in CI
    (``CI=true``), so a CI that lost promtool does not pass on skipped rule tests."""
    found = shutil.which("promtool")
    if found is None:
        message = "promtool not found (apt-get download prometheus; dpkg-deb -x; see .ci/run)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}: CI runs the alert rules' tests", pytrace=False)
        pytest.skip(message)
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` reads (recording rules' names included)."""
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub(" ", text)
    text = _RANGE.sub(" ", text)
    text = _LABEL_LIST.sub(" ", text)
    return {
        match[1]
        for match in _NAME.finditer(text)
        if not match[2] and match[1].lower() not in KEYWORDS
    }


def rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def recorded() -> set[str]:
    """The names the recording rules define."""
    return {rule["record"] for rule in rules() if "record" in rule}


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    found = []
    for panel in dashboard["panels"]:
        found.append(panel)
        found += panel.get("panels", [])
    return found


def dashboards() -> dict[str, dict[str, Any]]:
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(DASHBOARDS.glob("*.json"))
    }


def expressions() -> dict[str, str]:
    """Every PromQL expression of the rules and of the dashboards' panels, by where."""
    found = {f"rule {r.get('alert') or r['record']}": r["expr"] for r in rules()}
    for name, dashboard in dashboards().items():
        for panel in panels(dashboard):
            for target in panel.get("targets", []):
                found[f"{name} panel {panel['title']!r} {target['refId']}"] = target["expr"]
    return found
