"""A process's Prometheus metrics as the tests read them: every sample its endpoint
(``host:port``) serves, by name and labels."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(address: str) -> Series:
    """Every sample the metrics endpoint at ``address`` serves now."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        text = answer.read().decode("utf-8")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(series: Series, name: str, **labels: str) -> float:
    """The sample ``name`` with exactly these labels (0 when absent)."""
    return series.get((name, frozenset(labels.items())), 0.0)


def total(series: Series, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` whose labels include these."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in series.items() if n == name and wanted <= have)
