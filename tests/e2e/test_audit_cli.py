"""``ddz audit`` and ``ddz rebuild`` as an operator runs them: the real command (in a
subprocess, or its entry point in this process where a process proves nothing) on an
event store in ``DDZ_DATA_DIR``; exit codes 0 / 1 / 2, ``--at``, ``--json``, ``--all``,
and the balances rebuilt from events against the live ones."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from cli_kit import run_here
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters import codec
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.service_db.balances import BalanceProjection
from ddz.adapters.store import chain as hash_chain
from ddz.adapters.store import create_store
from ddz.adapters.store.keys import ensure_signing_key, signer_of
from ddz.adapters.store.schema import events, stream_signatures
from ddz.audit import CHECKS
from ddz.audit.store.sample import Mischief, SampleKeys, record_hand
from ddz.config import Settings
from ddz.domain.hand.events import HandSettled, HandStarted
from ddz.domain.ruleset import VARIANTS

KEY = "operator-key-for-the-e2e-test"
PRODUCERS = SampleKeys.generate()  # the producers' keys the sample hands are signed with


@dataclass(frozen=True)
class StoreDir:
    data: Path
    clean: dict[str, str]  # variant -> a hand that audits clean
    tampered: str  # a hand copied in by someone without the key


def _project_balances(url: str) -> None:
    """The settlement service's projection, built by its own code from the store."""
    store = create_store(url)
    projection = BalanceProjection(store.engine)
    upgrade_service_db(store.engine)
    players: dict[str, tuple[str, ...]] = {}
    for stored in store.read_all(limit=100_000):
        envelope, event = codec.decode_envelope(stored.envelope)
        if isinstance(event, HandStarted):
            players[stored.stream_id] = tuple(s.player_id for s in event.seats)
        elif isinstance(event, HandSettled):
            projection.apply_settled(
                stored.event_id, stored.stream_id.removeprefix("hand-"),
                players[stored.stream_id], event, envelope.payload,
            )  # fmt: skip
    store.close()


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreDir]:
    data = tmp_path_factory.mktemp("ddz-data")
    url = f"sqlite:///{data / 'ddz.sqlite3'}"
    # The producers' public keyring where the services keep it: <data dir>/keys/.
    PRODUCERS.publish(Settings.from_env({"DDZ_DATA_DIR": str(data)}).keys.event_keyring_path)
    store = create_store(url, upgrade=True)
    rng = random.Random(77)
    clean = {
        variant: record_hand(
            store, rules, rng, signers=PRODUCERS, key=KEY.encode(), odds=Mischief(refuse=0.1)
        )
        for variant, rules in VARIANTS.items()
    }
    # A hand someone with the database's password wrote in, signing its head with a key
    # of their own (the store's own code cannot do that; raw SQL can). Its events are
    # the producers' own (copied off the bus, say): only the head is forged.
    elsewhere = create_store("sqlite:///:memory:", upgrade=True)
    tampered = record_hand(
        elsewhere, VARIANTS["classic"], rng, signers=PRODUCERS, key=b"not the operator's key"
    )
    rows = [dataclasses.asdict(e) for e in elsewhere.read_stream(f"hand-{tampered}")]
    (signature,) = elsewhere.read_signatures(f"hand-{tampered}")
    elsewhere.close()
    with store.engine.begin() as conn:
        top = conn.execute(sa.select(sa.func.max(events.c.position))).scalar() or 0
        conn.execute(
            sa.insert(events), [{**r, "position": top + i + 1} for i, r in enumerate(rows)]
        )
        conn.execute(sa.insert(stream_signatures), dataclasses.asdict(signature))
    assert (
        hash_chain.first_broken_link((r["prev_hash"], r["hash"], r["envelope"]) for r in rows)
        is None
    )
    store.close()
    _project_balances(url)
    yield StoreDir(data, clean, tampered)


def audit_env(data: Path, key: str | None, env: dict[str, str] | None) -> dict[str, str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}, **(env or {})}
    env["DDZ_DATA_DIR"] = str(data)
    if key is not None:
        env["DDZ_AUDIT_KEY"] = key
    return env


def ddz(
    data: Path, *args: str, key: str | None = KEY, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The program in a process of its own: a clean hand of each variant, ``rebuild``, and
    every ``--all`` (its pool of processes forks this one)."""
    return subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", *args],
        capture_output=True, text=True, timeout=300, env=audit_env(data, key, env),
    )  # fmt: skip


def ddz_here(
    data: Path, *args: str, key: str | None = KEY, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The same command through its entry point in this process (``cli_kit.run_here``)."""
    return run_here(args, audit_env(data, key, env))


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddz: error: "), done.stderr
    return lines[0]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_clean_hand_exits_0_with_its_transcript(store_dir: StoreDir, variant: str) -> None:
    hand_id = store_dir.clean[variant]
    done = ddz(store_dir.data, "audit", hand_id)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith(f"Hand {hand_id}")
    assert any(line.startswith("#1 ") and "hand started" in line for line in out)
    assert any("deal, round 0" in line for line in out)
    assert any("REFUSED" in line for line in out)  # the sample hands hold refusals
    assert any(line.lstrip().startswith("ledger:") for line in out)
    assert "Verdict: CLEAN" in out
    assert out[-1] == f"{hand_id}: clean: {', '.join(CHECKS)} all hold"


def test_a_tampered_hand_exits_1_naming_the_check(store_dir: StoreDir) -> None:
    done = ddz_here(store_dir.data, "audit", store_dir.tampered)
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith(f"{store_dir.tampered}: signature check failed: ")


def test_the_wrong_key_fails_every_signature(store_dir: StoreDir) -> None:
    done = ddz_here(store_dir.data, "audit", store_dir.clean["ct"], key="a guess")
    assert done.returncode == 1
    assert "signature check failed" in done.stdout.splitlines()[-1]


def test_at_n_shows_the_table_after_event_n(store_dir: StoreDir) -> None:
    hand_id = store_dir.clean["classic"]
    done = ddz_here(store_dir.data, "audit", hand_id, "--at", "12")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("After event #12: ")
    assert sum(line.lstrip().startswith("seat ") for line in out) == 3
    assert any(line.lstrip().startswith("turn: ") for line in out)
    assert any(line.lstrip().startswith("multiplier so far: ") for line in out)
    assert "Verdict: CLEAN" in out


def test_json_is_one_object_with_checks_transcript_and_the_table(store_dir: StoreDir) -> None:
    hand_id = store_dir.clean["tiandi"]
    done = ddz_here(store_dir.data, "audit", f"hand-{hand_id}", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["hand_id"], report["verdict"], report["failed_check"]) == (
        hand_id,
        "clean",
        None,
    )
    assert [c["name"] for c in report["checks"]] == list(CHECKS)
    assert all(c["passed"] for c in report["checks"])
    assert report["transcript"][-len(CHECKS) - 1] == "Verdict: CLEAN"

    at = json.loads(ddz_here(store_dir.data, "audit", hand_id, "--at", "5", "--json").stdout)["at"]
    assert at["event"] == 5 and len(at["seats"]) == 3
    assert {"turn", "to_beat", "multiplier", "phase", "wild"} <= set(at)
    assert sum(seat["count"] for seat in at["seats"]) in (51, 54)  # dealt, or with the bottom

    bad = json.loads(ddz_here(store_dir.data, "audit", store_dir.tampered, "--json").stdout)
    assert (bad["verdict"], bad["failed_check"]) == ("failed", "signature")


def test_all_counts_every_hand_and_exits_1_when_one_fails(store_dir: StoreDir) -> None:
    done = ddz(store_dir.data, "audit", "--all")
    assert done.returncode == 1, done.stderr
    assert "signature 1" in done.stdout and "hands/s" in done.stdout
    as_json = ddz(store_dir.data, "audit", "--all", "--json", "--workers", "2")
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    hands = len(store_dir.clean) + 1
    assert (report["hands"], report["clean"], report["failed"]) == (hands, hands - 1, 1)
    assert report["failed_by_check"] == {c: int(c == "signature") for c in CHECKS}
    assert report["hands_per_s"] > 0 and report["workers"] == 2
    assert [f["hand_id"] for f in report["failures"]] == [store_dir.tampered]
    only_first = json.loads(ddz(store_dir.data, "audit", "--all", "--json", "--limit", "2").stdout)
    assert (only_first["hands"], only_first["clean"]) == (2, 2)


def test_rebuild_equals_the_live_balances_and_names_any_difference(
    store_dir: StoreDir, tmp_path: Path
) -> None:
    done = ddz(store_dir.data, "rebuild", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["matches"] is True and report["differences"] == []
    assert report["hands"] == len(store_dir.clean) + 1

    # The same store with one live balance off by one bean: rebuild names the player.
    copy = tmp_path / "data"
    shutil.copytree(store_dir.data, copy)
    with sqlite3.connect(copy / "ddz.sqlite3") as conn:
        conn.execute("UPDATE balances SET balance = balance + 1 WHERE player_id = 'alice'")
    off = ddz(copy, "rebuild", "--json")
    assert off.returncode == 1
    (difference,) = json.loads(off.stdout)["differences"]
    assert difference["player_id"] == "alice"
    assert difference["live"] == difference["rebuilt"] + 1
    human = ddz(copy, "rebuild")
    assert human.returncode == 1 and "alice" in human.stdout and "1 difference" in human.stdout


def test_without_the_producers_keyring_every_hand_fails_producer_signature(
    store_dir: StoreDir, tmp_path: Path
) -> None:
    """An auditor handed the store and the head keys but not the producers' keyring
    cannot tell who made the events: the audit fails, saying what is missing."""
    copy = tmp_path / "data"
    shutil.copytree(store_dir.data, copy)
    (copy / "keys" / "event-keyring.json").unlink()
    hand_id = store_dir.clean["classic"]
    done = ddz_here(copy, "audit", hand_id)
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith(f"{hand_id}: producer_signature check failed: no event keyring")
    assert "DDZ_EVENT_KEYRING" in last
    every = ddz(copy, "audit", "--all", "--json")
    assert every.returncode == 1, every.stderr
    report = json.loads(every.stdout)
    assert report["failed_by_check"]["producer_signature"] == report["hands"] == report["failed"]
    # The keyring given by its variable, from anywhere, is as good as the file.
    elsewhere = tmp_path / "producers.json"
    PRODUCERS.publish(elsewhere)
    found = ddz_here(copy, "audit", hand_id, env={"DDZ_EVENT_KEYRING": str(elsewhere)})
    assert found.returncode == 0, found.stdout[-2000:] + found.stderr


def test_the_key_file_in_the_data_dir_is_used_without_the_variable(
    store_dir: StoreDir, tmp_path: Path
) -> None:
    copy = tmp_path / "data"
    shutil.copytree(store_dir.data, copy)
    (copy / "audit.key").write_text(KEY + "\n")
    assert ddz_here(copy, "audit", store_dir.clean["laizi"], key=None).returncode == 0


def test_bad_input_is_one_line_and_exit_code_2(store_dir: StoreDir, tmp_path: Path) -> None:
    data = store_dir.data
    assert "no hand 'nope'" in one_error_line(ddz_here(data, "audit", "nope"))
    assert "HAND_ID, or --all" in one_error_line(ddz_here(data, "audit"))
    assert "HAND_ID, or --all" in one_error_line(ddz_here(data, "audit", "x", "--all"))
    hand_id = store_dir.clean["ct"]
    assert "--at" in one_error_line(ddz_here(data, "audit", hand_id, "--at", "0"))
    assert "--at" in one_error_line(ddz_here(data, "audit", hand_id, "--at", "seven"))
    assert "not #100000" in one_error_line(ddz_here(data, "audit", hand_id, "--at", "100000"))
    assert "--workers" in one_error_line(ddz_here(data, "audit", "--all", "--workers", "0"))
    assert "no audit key" in one_error_line(ddz_here(tmp_path, "audit", hand_id, key=None))
    assert "no event store" in one_error_line(ddz_here(tmp_path, "audit", hand_id))
    assert "no event store" in one_error_line(ddz_here(tmp_path, "rebuild"))


# --- public keys only: what anyone can be handed ----------------------------------------------


@dataclass(frozen=True)
class PublicDir:
    data: Path  # the store, the keyring; no private key, no HMAC key
    genuine: list[str]
    forged: str  # re-signed with another Ed25519 key under the recorder's key id
    poisoned: str  # a row whose envelope does not parse (hashes recomputed)


@pytest.fixture(scope="module")
def public_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PublicDir]:
    """Hands signed as the recorder signs them (its Ed25519 key made by the same code),
    then the private key moved out of the data directory: the auditor has only the
    public keyring."""
    data = tmp_path_factory.mktemp("ddz-public")
    settings = Settings.from_env({"DDZ_DATA_DIR": str(data)})
    recorder = ensure_signing_key(
        settings.keys.audit_signing_key_path, settings.keys.audit_public_keys_path
    )
    PRODUCERS.publish(settings.keys.event_keyring_path)  # their public keys; the private ones: here
    store = create_store(settings.store.database_url, upgrade=True)
    rng = random.Random(78)
    rules = [VARIANTS[name] for name in sorted(VARIANTS)]
    genuine = [
        record_hand(store, rules[i % len(rules)], rng, signers=PRODUCERS, key=recorder)
        for i in range(6)
    ]
    # forged: a hand recorded elsewhere and signed by another key claiming the recorder's id
    elsewhere = create_store("sqlite:///:memory:", upgrade=True)
    # A forger's key, writing the recorder's key id beside its signatures.
    forger = dataclasses.replace(signer_of(Ed25519PrivateKey.generate()), key_id=recorder.key_id)
    forged = record_hand(elsewhere, rules[0], rng, signers=PRODUCERS, key=forger)
    poisoned = record_hand(elsewhere, rules[1], rng, signers=PRODUCERS, key=recorder)
    copied = {}
    for hand_id in (forged, poisoned):
        rows = [dataclasses.asdict(e) for e in elsewhere.read_stream(f"hand-{hand_id}")]
        copied[hand_id] = (rows, elsewhere.read_signatures(f"hand-{hand_id}"))
    elsewhere.close()
    rows = copied[poisoned][0]
    rows[2]["envelope"] = b"\xff\xfe not an envelope"
    prev = hash_chain.GENESIS_HASH
    for row in rows:
        row["prev_hash"], row["hash"] = prev, hash_chain.chain_hash(prev, row["envelope"])
        prev = row["hash"]
    with store.engine.begin() as conn:
        for rows, signatures in copied.values():
            top = conn.execute(sa.select(sa.func.max(events.c.position))).scalar() or 0
            conn.execute(
                sa.insert(events), [{**r, "position": top + i + 1} for i, r in enumerate(rows)]
            )
            for signature in signatures:
                conn.execute(sa.insert(stream_signatures), dataclasses.asdict(signature))
    store.close()
    settings.keys.audit_signing_key_path.rename(
        tmp_path_factory.mktemp("vault") / "audit-signing.key"
    )
    public = {p.name for p in (data / "keys").iterdir() if not p.name.startswith(".")}
    assert public == {"audit-public.json", "event-keyring.json"}  # the lock file aside
    assert not list(data.rglob("*.key")) and not (data / "audit.key").exists()
    yield PublicDir(data, genuine, forged, poisoned)


def test_public_keys_alone_pass_genuine_hands_and_fail_forged_and_poisoned_ones(
    public_dir: PublicDir, tmp_path: Path
) -> None:
    one = ddz_here(public_dir.data, "audit", public_dir.genuine[0], key=None)
    assert one.returncode == 0, one.stdout[-2000:] + one.stderr
    forged = ddz_here(public_dir.data, "audit", public_dir.forged, key=None)
    assert forged.returncode == 1
    assert "signature check failed: " in forged.stdout.splitlines()[-1]

    done = ddz(public_dir.data, "audit", "--all", "--json", "--workers", "2", key=None)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert (report["hands"], report["clean"], report["failed"]) == (8, 6, 2)
    failed = {f["hand_id"]: f["failed_check"] for f in report["failures"]}
    assert failed == {public_dir.forged: "signature", public_dir.poisoned: "hash_chain"}
    assert report["stale_incomplete"] == [] and report["incomplete_after"] == 3600
    human = ddz(public_dir.data, "audit", "--all", "--public-only", key=None)
    assert human.returncode == 1 and public_dir.forged in human.stdout

    # Only the genuine hands: exit 0 with the public keyring alone.
    clean = tmp_path / "clean"
    shutil.copytree(public_dir.data, clean)
    with sqlite3.connect(clean / "ddz.sqlite3") as conn:
        conn.execute("DROP TRIGGER events_no_delete")
        conn.execute("DROP TRIGGER stream_signatures_no_delete")
        for hand_id in (public_dir.forged, public_dir.poisoned):
            conn.execute("DELETE FROM events WHERE stream_id = ?", (f"hand-{hand_id}",))
            conn.execute("DELETE FROM stream_signatures WHERE stream_id = ?", (f"hand-{hand_id}",))
    passed = ddz(clean, "audit", "--all", "--json", "--incomplete-after", "0", key=None)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert json.loads(passed.stdout)["clean"] == 6
    # The HMAC key alone cannot vouch for Ed25519 heads; nor can another keyring.
    (clean / "keys" / "audit-public.json").rename(clean / "moved.json")
    hmac_only = ddz_here(clean, "audit", public_dir.genuine[0])
    assert hmac_only.returncode == 1 and "no head signature under a key" in hmac_only.stdout
    assert "no audit key" in one_error_line(ddz(clean, "audit", "--all", key=None))
    assert "--incomplete-after" in one_error_line(
        ddz_here(clean, "audit", public_dir.genuine[0], "--incomplete-after", "5")
    )
