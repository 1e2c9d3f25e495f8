"""Data written by the code of 2026-12-04 (``tests/fixtures/contract_v1``: a store and a
JetStream directory, one hand of each variant, each event signed on its own: event
contract 1) read with today's code, so that a change of the contract or the store that
breaks old records fails here: ``ddz audit --all``, ``ddz audit HAND --at N`` and ``ddz rebuild``
pass on the store as it is (not upgraded) and after the upgrade, and every hand read
back from the old JetStream files verifies and equals the stored events."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_kit import ddz as ddz_in
from cli_kit import ddz_here
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.runtime.nats_server import start_nats_server
from ddz.adapters.security.event_signing import EventKeyring
from ddz.adapters.store import create_store

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "contract_v1"
VARIANTS = {"classic", "ct", "laizi", "tiandi"}


def ddz(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The program (``--all`` and ``rebuild``); each hand's audit calls its entry point in
    this process (``ddz_here``)."""
    return ddz_in(data_dir, *args, timeout=300)  # the whole fixture's hands take time


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    shutil.copy(FIXTURE / "ddz.sqlite3", tmp_path / "ddz.sqlite3")
    shutil.copytree(FIXTURE / "keys", tmp_path / "keys")
    return tmp_path


def hand_ids(data_dir: Path) -> list[str]:
    store = create_store(f"sqlite:///{data_dir / 'ddz.sqlite3'}")
    try:
        return [s.removeprefix("hand-") for s in store.stream_ids() if s.startswith("hand-")]
    finally:
        store.close()


@pytest.mark.parametrize("upgraded", [False, True])
def test_old_hands_audit_and_rebuild_clean(data_dir: Path, upgraded: bool) -> None:
    if upgraded:
        create_store(f"sqlite:///{data_dir / 'ddz.sqlite3'}", upgrade=True).close()
    every = ddz(data_dir, "audit", "--all", "--public-only", "--json")
    assert every.returncode == 0, every.stdout + every.stderr
    summary = json.loads(every.stdout)
    assert (summary["hands"], summary["clean"]) == (4, 4)
    assert summary["by_rules"] == dict.fromkeys(sorted(VARIANTS), 1)
    hands = hand_ids(data_dir)
    assert len(hands) == len(VARIANTS)
    for hand_id in hands:
        one = ddz_here(data_dir, "audit", hand_id, "--public-only")
        assert one.returncode == 0, one.stdout + one.stderr
        assert "producer_signature" in one.stdout and "CLEAN" in one.stdout
    at = ddz_here(data_dir, "audit", hands[0], "--at", "5", "--public-only")
    assert at.returncode == 0, at.stdout + at.stderr
    rebuilt = ddz(data_dir, "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert "equal" in rebuilt.stdout


def test_old_hands_on_the_bus_read_as_they_were_stored(tmp_path: Path, data_dir: Path) -> None:
    streams = tmp_path / "nats" / "jetstream" / "$G" / "streams"
    streams.mkdir(parents=True)
    shutil.copytree(FIXTURE / "jetstream" / "DDZ", streams / "DDZ")
    keyring = EventKeyring(data_dir / "keys" / "event-keyring.json")
    store = create_store(f"sqlite:///{data_dir / 'ddz.sqlite3'}")
    server = start_nats_server(tmp_path / "nats", port=0)

    async def read_all() -> None:
        bus = await EventBus.connect(server.url)
        try:
            for hand_id in hand_ids(data_dir):
                read, cursor = await hand_stream.read(bus, hand_id, keyring=keyring)
                stored = store.read_stream(f"hand-{hand_id}")
                assert [e.data for e in read] == [s.envelope for s in stored]
                assert cursor.version == len(stored) > 20
        finally:
            await bus.close()

    try:
        asyncio.run(read_all())
    finally:
        server.stop()
        store.close()
