"""``free_port`` never hands out a port twice in one process: a port picked is free,
but its server binds it only later, and the next pick must not get it meanwhile (a
cluster's route ports, then its nodes' client ports)."""

from __future__ import annotations

import pytest
from ddz.adapters.runtime import nats_server
from ddz.adapters.runtime.nats_server import free_port


def test_a_port_picked_and_not_yet_bound_is_not_picked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = free_port("127.0.0.1")
    # Every random try lands on the first pick, which nothing has bound yet.
    monkeypatch.setattr(nats_server.random, "randrange", lambda _low, _high: first)
    second = free_port("127.0.0.1")
    assert second != first
    assert nats_server.port_is_free("127.0.0.1", second)


def test_a_clusters_route_ports_are_distinct() -> None:
    assert len(set(nats_server._free_ports("127.0.0.1", 50))) == 50


def test_a_reserved_port_is_never_picked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stack reserves the ports its settings name (its children bind them later)."""
    named = free_port("127.0.0.1") + 1
    while not nats_server.port_is_free("127.0.0.1", named):
        named += 1
    nats_server.reserve([named, 0])
    monkeypatch.setattr(nats_server.random, "randrange", lambda _low, _high: named)
    assert free_port("127.0.0.1") != named


def test_two_processes_picking_at_once_never_get_the_same_port() -> None:
    """Parallel test workers and two stacks starting at once pick from one range: a port
    one process picked and has not bound yet is not the other's to take."""
    import subprocess
    import sys

    picks = 400
    script = (
        "from ddz.adapters.runtime.nats_server import free_port\n"
        f"print(' '.join(str(free_port('127.0.0.1')) for _ in range({picks})))"
    )
    other = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    theirs = {int(port) for port in other.stdout.split()}
    ours = {free_port("127.0.0.1") for _ in range(picks)}
    assert len(theirs) == picks and len(ours) == picks
    assert not ours & theirs
