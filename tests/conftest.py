"""Shared fixtures: a real nats-server, and databases for the event store.

- ``nats_server`` (session): a real ``nats-server -js`` on a random free loopback port
  with its JetStream files in a temporary directory (never the system NATS on 4222).
- ``bus`` (per test): an ``EventBus`` on that server with a fresh ``DDZ`` stream (and
  no room queue tickets left by an earlier test).
- ``database_url`` (per test): parametrized over the store's backends: ``sqlite`` (a
  new file per test) always, and ``postgres`` when ``DDZ_TEST_DATABASE_URL`` is set.
  PostgreSQL isolation: the database may be shared (CI's ``test``), so each test gets
  its own schema ``ddz_test_<random>``, selected through the connection's
  ``search_path`` (``?options=-csearch_path=...``) and dropped afterwards; nothing
  outside that schema is touched.
- ``store``: the ``SqlEventStore`` at ``database_url`` with its schema migrated.

Running in parallel: ``scripts/dev.py test`` runs the modules on pytest-xdist workers
(processes of their own), each module whole on one worker (``--dist loadfile``), so a
module-scoped fixture (a stack shared by the module's tests) starts once. A test shares
the machine with the other workers' tests without a word when it takes what it needs
fresh: ports from ``free_port`` or port 0, directories from ``tmp_path``, its own stream
(``bus``) and schema, environment changes through ``monkeypatch`` (a worker's
environment is its own). A test that cannot share the machine (a fixed port such as the
suite's defaults, kills by process name, files in ``$HOME``, a clock read to the second
off a real terminal) asks for it with ``@pytest.mark.alone`` (a whole module:
``pytestmark = pytest.mark.alone``): it then runs while no other test of the run does
(``taking_turns``). Fixed ports inside network namespaces of a test's own are its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats.js.errors
import pytest
import sqlalchemy as sa
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import BUCKET as LEASE_BUCKET
from ddz.adapters.messaging.room_queue import BUCKET as ROOM_QUEUE_BUCKET
from ddz.adapters.runtime.nats_server import NatsServer, start_nats_server
from ddz.adapters.store import SqlEventStore, create_store, make_engine
from ddz.compiled import engine_build

TEST_DATABASE_URL = os.environ.get("DDZ_TEST_DATABASE_URL", "").strip()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Never test a compiled rules engine built from an older source (it would test the
    old rules); CI sets ``DDZ_REQUIRE_COMPILED=1``, where running the engine
    interpreted means the build step failed."""
    build = engine_build()
    if build.stale:
        pytest.exit(build.describe(), returncode=2)
    if os.environ.get("DDZ_REQUIRE_COMPILED") == "1" and not build.fully_compiled:
        pytest.exit(f"{build.describe()}; DDZ_REQUIRE_COMPILED=1", returncode=2)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "alone: runs while no other test of a parallel run does (see the docstring)"
    )
    config.addinivalue_line(
        "markers", "early: its module starts first (a long test that mostly waits, e.g. a crowd)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``early`` modules first (a long test that mostly waits starts while the others
    run, rather than being the last one left), then ``alone`` tests and their modules:
    an ``alone`` test waits for every test running on the other workers to end, and at
    the start those are the first, short ones. (``scripts/dev.py test`` runs the
    ``alone`` tests in a run of their own after the parallel one.)"""
    alone = {item.path for item in items if item.get_closest_marker("alone")}
    early = {item.path for item in items if item.get_closest_marker("early")}
    items.sort(
        key=lambda item: (
            item.path not in early,
            item.path not in alone,
            not item.get_closest_marker("alone"),
        )
    )


@pytest.fixture(autouse=True)
def taking_turns(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """In a parallel run, an ``alone`` test waits until no other test runs, and the
    others wait while it does: a shared lock for every test, an exclusive one for an
    ``alone`` test, on files in the run's temporary directory (the parent of each
    worker's own). A turnstile in front lets no new test in while an ``alone`` one
    waits, or it could wait forever. (Its wait counts in its setup's duration.)"""
    if "PYTEST_XDIST_WORKER" not in os.environ:  # one test at a time anyway
        yield
        return
    folder = tmp_path_factory.getbasetemp().parent
    alone = request.node.get_closest_marker("alone") is not None
    with open(folder / "turnstile", "a") as turnstile, open(folder / "room", "a") as room:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)


DATABASE_BACKENDS = [
    "sqlite",
    *([pytest.param("postgres", marks=pytest.mark.postgres)] if TEST_DATABASE_URL else []),
]


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = start_nats_server(tmp_path_factory.mktemp("nats"), port=0)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def bus(nats_server: NatsServer) -> AsyncIterator[EventBus]:
    event_bus = await EventBus.connect(nats_server.url, name="pytest")
    with contextlib.suppress(Exception):
        await event_bus.js.delete_stream(event_bus.stream)  # leftovers of an earlier test
    with contextlib.suppress(Exception):  # tickets a stopped table service kept for its restart
        await event_bus.js.delete_key_value(ROOM_QUEUE_BUCKET)
    with contextlib.suppress(Exception):  # leases a killed instance of an earlier test left
        await event_bus.js.delete_key_value(LEASE_BUCKET)
    await create_stream_again(event_bus)
    try:
        yield event_bus
    finally:
        await event_bus.close()


STORE_NOT_CREATED_ERR = 10049  # JSStreamCreateErr: "error creating store for stream"


async def create_stream_again(event_bus: EventBus, attempts: int = 40) -> None:
    """``ensure_stream`` right after the stream was deleted. nats-server answers a delete
    before its file store is gone, so creating the stream again at once can fail with
    "error creating store for stream" (seen once in 300 delete-create cycles, 2.15.1):
    then wait a little and try again."""
    for attempt in range(1, attempts + 1):
        try:
            await event_bus.ensure_stream()
            return
        except nats.js.errors.APIError as exc:
            if exc.err_code != STORE_NOT_CREATED_ERR or attempt == attempts:
                raise
            await asyncio.sleep(0.05)


def postgres_schema_url(base_url: str, schema: str) -> str:
    """``base_url`` with every connection's search_path set to ``schema``."""
    url = sa.make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


@contextlib.contextmanager
def postgres_schema(base_url: str) -> Iterator[str]:
    """A fresh schema in the test database, dropped on exit; yields its URL."""
    schema = f"ddz_test_{uuid.uuid4().hex[:12]}"
    admin = make_engine(base_url)
    try:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        yield postgres_schema_url(base_url, schema)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.dispose()


@pytest.fixture(params=DATABASE_BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'events.sqlite3'}"
        return
    with postgres_schema(TEST_DATABASE_URL) as url:
        yield url


@pytest.fixture
def store(database_url: str) -> Iterator[SqlEventStore]:
    recorder = create_store(database_url, upgrade=True)
    try:
        yield recorder
    finally:
        recorder.close()
