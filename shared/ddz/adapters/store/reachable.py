"""The health check of a service's database (``telemetry.health``): apart from the
health watch, so that a service without a database never imports SQLAlchemy."""

from __future__ import annotations

import asyncio

from sqlalchemy import Engine
from sqlalchemy.pool import StaticPool

from ddz.adapters.telemetry.health import Check


def database_reachable(engine: Engine) -> Check:
    """A probe: the database at ``engine`` answers ``SELECT 1``.

    The query runs in a worker thread; a probe still waiting for an earlier one (a
    database that accepts connections but never answers) waits on that one instead of
    starting another, so a hung database holds one thread, not one per round. A
    database in memory is always there (and its one shared connection must not be
    checked out beside its users: returning it would roll their transaction back)."""
    if isinstance(engine.pool, StaticPool):
        return lambda: True
    pending: asyncio.Future[None] | None = None

    def select_one() -> None:
        with engine.connect() as connection:
            connection.exec_driver_sql("SELECT 1")

    async def probe() -> bool:
        nonlocal pending
        if pending is None:
            pending = asyncio.ensure_future(asyncio.to_thread(select_one))
        await asyncio.wait((pending,))  # the caller's timeout interrupts the wait only
        done, pending = pending, None
        return done.exception() is None

    return probe
