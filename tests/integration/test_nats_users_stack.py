"""The whole stack, each service on its own NATS user (``nats_auth``): the suite still
plays, and a forger holding a service's NATS credentials but no producer's private key
changes no balance and fails the audit."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters import codec
from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.nats_auth import connect_options
from ddz.adapters.messaging.server import MSG_ID
from ddz.adapters.messaging.subjects import subject_for
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.runtime.stack_env import settings_env
from ddz.adapters.security.event_signing import EventSigner, ensure_signer
from ddz.adapters.service_db.balances import BalanceProjection
from ddz.adapters.store import create_store, make_engine
from ddz.config import Settings
from ddz.v1 import envelope_pb2
from nats_auth_kit import VIOLATION, settings_for


def test_every_service_plays_on_its_own_user(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    with Stack(settings, ephemeral_ports=True, nats_port=0) as stack:
        # every service with a NATS user (the console and the players' web front have
        # none: they speak only gRPC)
        seeds = {
            name: nats_auth.seed_path(tmp_path, name)
            for name in stack.services
            if name in nats_auth.ROLES
        }
        assert set(stack.services) - set(seeds) == {"console", "play"}
        assert all(seed.is_file() and seed.stat().st_mode & 0o077 == 0 for seed in seeds.values())
        done = ddz(stack.settings, "simulate", "--hands", "2", "--json", timeout=120)
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["hands"] == 2 and data["stored_events"] == data["events"] >= 2 * 5
        assert not stack.failed()
        nats_log = (tmp_path / "logs" / "nats-server.log").read_text(errors="replace")
        assert "Violation" not in nats_log, nats_log[-3000:]
        for name in stack.services:
            log = stack.processes[name].log_tail(chars=1_000_000)
            assert VIOLATION not in log.lower(), f"{name}: {log[-2000:]}"


def forgeries(settled: bytes, data_dir: Path, version: int) -> dict[str, bytes]:
    """A genuine ``hand_settled`` again, as someone with a service's NATS credentials and
    no producer's private key could publish it (each a new event id: a new credit), as
    the hand's event ``version``."""
    genuine = codec.parse_envelope(settled)

    def copy(event_id: str) -> envelope_pb2.EventEnvelope:
        forged = envelope_pb2.EventEnvelope()
        forged.CopyFrom(genuine)
        forged.event_id = event_id
        forged.stream_version = version
        return forged

    unsigned = copy("forged-unsigned")
    for name in ("envelope_version", "producer_key_id", "signature"):
        unsigned.ClearField(name)
    claimed = EventSigner("rules", genuine.producer_key_id, Ed25519PrivateKey.generate())
    dealer = ensure_signer(settings_for(data_dir).keys, "dealer")  # a real key, not the rules'
    edited = copy("forged-edited")  # the genuine signature kept under another event id
    edited.ClearField("signature")
    return {
        "unsigned": unsigned.SerializeToString(),
        "bad_signature": claimed.seal(copy("forged-claimed")),
        "not_allowed": dealer.seal(copy("forged-by-dealer")),
        "edited": edited.SerializeToString() + settled[-66:],
    }


def ddz(settings: Settings, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real ``ddz`` with ``settings``' environment (the test's own ``DDZ_*`` left out)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(settings_env(settings))
    return subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


def test_a_forged_hand_settled_from_a_valid_nats_user_changes_no_balance(tmp_path: Path) -> None:
    """The rules' NATS user may publish ``hand_settled``: its credentials leaked, a forger
    publishes a settled hand again -- unsigned, under a key of its own, signed by the
    dealer's key, or a genuine signature under a new event id. JetStream stores them (the
    credentials are good); settlement credits none, the recorder refuses every one (an
    error line each, kept on the bus), and ``ddz audit`` with public keys only passes the
    genuine hands and names a forged event that was written into the store behind the
    recorder's back."""
    settings = settings_for(tmp_path)
    with Stack(settings, ephemeral_ports=True, nats_port=0) as stack:
        done = ddz(stack.settings, "simulate", "--hands", "2", "--json", timeout=120)
        assert done.returncode == 0, done.stderr
        store = create_store(stack.settings.store.database_url)
        hand = next(s for s in store.stream_ids() if s.startswith("hand-"))
        rows = store.read_stream(hand)
        settled = next(r.envelope for r in rows if r.type == "hand_settled")
        players = {s.player_id for s in codec.decode_envelope(rows[0].envelope)[1].seats}  # type: ignore[attr-defined]
        ledgers = BalanceProjection(make_engine(stack.settings.store.database_url))
        before = {p: ledgers.balance(p) for p in players}
        forged = forgeries(settled, tmp_path, len(rows) + 1)

        async def publish_as_rules() -> list[int]:
            options = connect_options(stack.settings.bus, "rules")
            bus = await EventBus.connect(
                stack.settings.bus.nats_url, max_reconnect_attempts=0, **options
            )
            try:
                subject = subject_for(hand, "hand_settled")
                acks = [await bus.js.publish(subject, data, headers={MSG_ID: f"{why}-{hand}"})
                        for why, data in forged.items()]  # fmt: skip
                return [ack.seq for ack in acks]
            finally:
                await bus.close()

        seqs = asyncio.run(publish_as_rules())
        assert len(set(seqs)) == len(forged)  # on the bus: the credentials are good

        def refused(name: str) -> int:
            log = stack.processes[name].log_tail(chars=1_000_000)
            return sum(1 for line in log.splitlines() if "event_refused" in line and hand in line)

        assert asyncio.run(eventually_true(lambda: refused("recorder") >= len(forged)))
        assert asyncio.run(eventually_true(lambda: refused("settlement") >= len(forged)))
        assert {p: ledgers.balance(p) for p in players} == before
        assert [r.event_id for r in store.read_stream(hand)] == [r.event_id for r in rows]
        recorder_log = stack.processes["recorder"].log_tail(chars=1_000_000)
        for why in ("unsigned", "bad_signature", "not_allowed"):
            assert why in recorder_log
        assert not stack.failed()

        clean = ddz(stack.settings, "audit", "--all", "--public-only")
        assert clean.returncode == 0, clean.stdout + clean.stderr

        # Behind the recorder's back: the unsigned one written into the store itself.
        store.append(hand, len(rows), [forged["unsigned"]])
        caught = ddz(stack.settings, "audit", hand.removeprefix("hand-"), "--public-only")
        assert caught.returncode != 0
        assert "producer_signature" in caught.stdout and "not signed" in caught.stdout
        assert f"#{len(rows) + 1}" in caught.stdout
        every = ddz(stack.settings, "audit", "--all", "--public-only")
        assert every.returncode != 0 and hand in every.stdout + every.stderr


async def eventually_true(check: Callable[[], bool], timeout: float = 60.0) -> bool:
    """``check()`` once it holds (False if it never did within ``timeout``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True
