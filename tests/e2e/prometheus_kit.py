"""A tiny Prometheus for end-to-end tests: ``Scraper`` scrapes every instance of a stack
on a fixed interval, as deploy/prometheus/prometheus.yml does (the job named after the
service, the instance the metrics address), and records for each target ``up`` (1: the
scrape succeeded, 0: it failed) and every sample it served, parsed with
prometheus_client's text parser. ``rule_test_file`` writes what it recorded as a
``promtool test rules`` file against the shipped rules, one recorded scrape per
``interval`` of promtool's time:

    with Scraper(targets(stack), every=1.0) as prometheus:
        ...                                  # faults; prometheus.ticks counts the scrapes
    text = rule_test_file(prometheus, RULES, interval=15, checks=[...])

A series missing from a scrape after it was present is written ``stale`` (Prometheus
writes a staleness marker when a target's scrape fails or a series leaves it), then
``_`` until it is back, so a value is never carried past its process's end.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from ddz.adapters.runtime.stack import Stack
from prometheus_client.parser import text_string_to_metric_families

Labels = tuple[tuple[str, str], ...]
SeriesKey = tuple[str, Labels]  # metric name, its labels (job and instance among them)


@dataclass(frozen=True)
class Target:
    job: str  # the service, as deploy/prometheus/prometheus.yml names its scrape job
    instance: str  # host:port of its /metrics


def targets(stack: Stack) -> list[Target]:
    """Every service instance of ``stack`` (NATS has no /metrics of ours)."""
    return [
        Target(child.service, stack.metrics_address(child)) for child in stack.processes.values()
    ]


class Scraper:
    """Scrapes ``targets`` every ``every`` seconds on a thread of its own (a context
    manager). A scrape that overruns its interval delays the next one; each scrape is
    one tick, numbered from 0."""

    def __init__(self, targets: Iterable[Target], every: float, timeout: float = 0.8) -> None:
        self.targets = list(targets)
        self.every = every
        self.timeout = timeout
        self.samples: dict[SeriesKey, dict[int, float]] = {}
        self.ticks = 0  # scrapes recorded
        self._more = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scraper", daemon=True)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            scraped = {target: self._scrape(target) for target in self.targets}
            with self._more:
                tick = self.ticks
                for target, samples in scraped.items():
                    own = (("instance", target.instance), ("job", target.job))
                    up = 0.0 if samples is None else 1.0
                    self.samples.setdefault(("up", own), {})[tick] = up
                    for (name, labels), value in (samples or {}).items():
                        key = (name, tuple(sorted((*labels, *own))))
                        self.samples.setdefault(key, {})[tick] = value
                self.ticks += 1
                self._more.notify_all()
            due = max(due + self.every, time.monotonic())
            self._stop.wait(due - time.monotonic())

    def _scrape(self, target: Target) -> dict[SeriesKey, float] | None:
        """Every sample ``target`` serves now; None when the scrape failed."""
        try:
            with urllib.request.urlopen(
                f"http://{target.instance}/metrics", timeout=self.timeout
            ) as answer:
                text = answer.read().decode("utf-8")
        except (OSError, urllib.error.URLError):
            return None
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def wait_ticks(self, count: int, timeout: float = 120.0) -> int:
        """Wait until ``count`` more scrapes are recorded; the ticks recorded then."""
        with self._more:
            wanted = self.ticks + count
            if not self._more.wait_for(lambda: self.ticks >= wanted, timeout):
                raise TimeoutError(f"the scraper recorded {self.ticks} of {wanted} scrapes")
            return self.ticks

    def last(self, name: str, **labels: str) -> dict[Labels, float]:
        """The value each series ``name`` with these labels had at the last scrape that
        saw it, by its labels."""
        wanted = set(labels.items())
        with self._more:
            return {
                have: values[max(values)]
                for (seen, have), values in self.samples.items()
                if seen == name and wanted <= set(have) and values
            }

    def recorded(self) -> tuple[int, dict[SeriesKey, dict[int, float]]]:
        """The scrapes recorded so far, and every series's value at each."""
        with self._more:
            return self.ticks, {key: dict(values) for key, values in self.samples.items()}

    def seen(self, name: str, tick: int, **labels: str) -> dict[Labels, float]:
        """The series ``name`` with these labels as scrape ``tick`` recorded them."""
        wanted = set(labels.items())
        with self._more:
            return {
                have: values[tick]
                for (seen, have), values in self.samples.items()
                if seen == name and wanted <= set(have) and tick in values
            }


def series_values(values: dict[int, float], ticks: int) -> str:
    """Ticks 0..ticks-1 of one series in promtool's expanding notation: runs of one value
    as ``vxN``, ``stale`` where it left, ``_xN`` while it is away."""
    items: list[str] = []
    for tick in range(ticks):
        if tick in values:
            items.append(number(values[tick]))
        else:
            items.append("stale" if tick - 1 in values else "_")
    runs: list[tuple[str, int]] = []
    for item in items:
        if runs and runs[-1][0] == item and item != "stale":
            runs[-1] = (item, runs[-1][1] + 1)
        else:
            runs.append((item, 1))
    words = []
    for item, count in runs:
        if count == 1:
            words.append(item)
        elif item == "_":
            words.append(f"_x{count}")  # '_xN' is N missing samples
        else:
            words.append(f"{item}x{count - 1}")  # 'axN' is a, then N more of it
    return " ".join(words)


def number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def selector(name: str, labels: Labels) -> str:
    inside = ", ".join(f"{label}={json.dumps(value)}" for label, value in labels)
    return f"{name}{{{inside}}}"


@dataclass(frozen=True)
class Check:
    """``alertname`` at scrape ``tick``: firing with exactly these label sets (each the
    alert's labels beside its rule's), or not at all (``firing=()``)."""

    alertname: str
    tick: int
    firing: tuple[dict[str, str], ...] = ()
    why: str = ""  # a comment in the file: what the fault was


_TEMPLATE = re.compile(r"\{\{\s*(.*?)\s*\}\}")


def render(text: str, labels: dict[str, str]) -> str:
    """An annotation as Prometheus renders it, for the templates the faults' alerts use
    (``{{ $labels.x }}``); any other template is refused, not guessed."""

    def one(match: re.Match[str]) -> str:
        inner = match[1]
        if not inner.startswith("$labels."):
            raise ValueError(f"cannot render {match[0]!r}")
        return labels.get(inner.removeprefix("$labels."), "")

    return _TEMPLATE.sub(one, text)


def alert_rules(rules: Path) -> dict[str, dict[str, Any]]:
    groups = yaml.safe_load(rules.read_text(encoding="utf-8"))["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}


def rule_test_file(prometheus: Scraper, rules: Path, interval: int, checks: Sequence[Check]) -> str:
    """A ``promtool test rules`` file: the recorded series (tick n at n * ``interval``
    seconds, the rules evaluated at every tick) and ``checks`` against ``rules``."""
    shipped = alert_rules(rules)
    ticks, recorded = prometheus.recorded()
    series = [
        {"series": selector(name, labels), "values": series_values(values, ticks)}
        for (name, labels), values in sorted(recorded.items())
    ]

    def expected(check: Check) -> dict[str, Any]:
        rule = shipped[check.alertname]
        alerts = []
        for labels in check.firing:
            every = {**labels, **rule.get("labels", {})}
            annotations = {k: render(v, every) for k, v in rule.get("annotations", {}).items()}
            alerts.append({"exp_labels": every, "exp_annotations": annotations})
        return {"eval_time": f"{check.tick * interval}s", "alertname": check.alertname,
                "exp_alerts": alerts}  # fmt: skip

    document = {
        "rule_files": [str(rules)],
        "evaluation_interval": f"{interval}s",
        "tests": [
            {
                "interval": f"{interval}s",
                "input_series": series,
                "alert_rule_test": [expected(check) for check in checks],
            }
        ],
    }
    comments = "".join(
        f"# tick {c.tick} ({c.tick * interval}s): {c.alertname} "
        f"{'fires' if c.firing else 'quiet'}: {c.why}\n"
        for c in checks
    )
    body: str = yaml.safe_dump(document, sort_keys=False, width=10_000)
    return comments + body
