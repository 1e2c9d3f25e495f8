"""The services the integration tests talk to, running in this process (``suite_kit``):

- ``suite``: the whole suite, all six services (the core, the bot, and the table
  service with a rooms file), over a SQLite store;
- ``core_suite``: its core, dealer, rules, recorder and settlement, over each of the
  store's backends (the ``database_url`` fixture of tests/conftest.py).

Both run on the test's own ``DDZ`` stream (the ``bus`` fixture) and are stopped after
it. Options, on a test or on a whole module (``pytestmark``), the closest one winning::

    @pytest.mark.suite(turn_timeout=0.3, fill=0.5, max_message_bytes=64 * 1024)

(``suite_kit.suite_settings``' keywords: the turn clock, the rooms' bot fill wait, the
rooms file's text, the request size limit.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.runtime.nats_server import NatsServer
from suite_kit import CORE, EVERY_SERVICE, Suite, running_suite, suite_settings


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "suite(**options): settings of the test's in-process suite (suite_settings)"
    )


def suite_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The ``suite`` markers' options, the test's own over its module's."""
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("suite"))):
        options.update(marker.kwargs)
    return options


@pytest.fixture
async def suite(
    request: pytest.FixtureRequest, bus: EventBus, nats_server: NatsServer, tmp_path: Path
) -> AsyncIterator[Suite]:
    """Every service, the table service's rooms from the suite's rooms file."""
    settings = suite_settings(tmp_path, nats_server.url, **suite_options(request))
    async with running_suite(EVERY_SERVICE, settings, bus) as running:
        yield running


@pytest.fixture
async def core_suite(
    request: pytest.FixtureRequest,
    bus: EventBus,
    nats_server: NatsServer,
    database_url: str,
    tmp_path: Path,
) -> AsyncIterator[Suite]:
    """Dealer, rules, recorder and settlement on ``database_url``."""
    settings = suite_settings(
        tmp_path, nats_server.url, database_url=database_url, **suite_options(request)
    )
    async with running_suite(CORE, settings, bus) as running:
        yield running
