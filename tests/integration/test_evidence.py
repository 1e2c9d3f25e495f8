"""Evidence files and the audit's account of a hand (``ddz.audit.evidence``,
``ddz.audit.transcript``), on hands recorded as the services record them (``record_hand``:
events signed by the dealer's and rules service's keys, heads by the recorder's Ed25519
key kept where the recorder keeps it).

- ``ddz audit HAND --export-bundle`` writes a file that ``ddz audit --bundle`` verifies
  in a directory with no store and no key, against ``ddz keys export``'s keyring;
- any changed byte fails it, with a named check (seeded: the seed is printed on failure);
- a file re-signed whole by another operator's keys is internally consistent, says only
  that, and fails against the published keyring;
- the transcript gives each event's UTC time and time since the deal, marks the moves
  the bot made for a person and why, and writes the settlement out: the figures are
  checked against RULES.md §10 computed here, for a ct hand (cap, rake) and a laizi hand
  (room coefficient 100, wildcard factor 1/4).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters.store import SqlEventStore, create_store
from ddz.adapters.store.keys import (
    Ed25519Signer,
    Keyring,
    ensure_signing_key,
    read_public_keys,
    signer_of,
)
from ddz.audit import AuditReport, audit_hand
from ddz.audit.evidence import NotEvidence, build_evidence, canonical, verify_evidence
from ddz.audit.keys import auditor_keyring
from ddz.audit.published import PublishedKeys, published_keys
from ddz.audit.sample import Mischief, SampleKeys, record_hand
from ddz.audit.source import load_hand
from ddz.audit.timeline import Timeline, clock
from ddz.config import Settings
from ddz.domain.hand import CommandRejected
from ddz.domain.hand.events import (
    BidMade,
    CardsDealt,
    HandSettled,
    Passed,
    PlayerDisconnected,
    PlayerReconnected,
    PlayMade,
)
from ddz.domain.multipliers import Side
from ddz.domain.ruleset import VARIANTS
from ddz.domain.settlement import RoomSettings
from tamper_kit import decoded, forge

PRODUCERS = SampleKeys.generate()
RICH = (10**7, 10**7, 10**7)  # balances no bean hand here can reach: no balance limit
CHECK_NAMES = {
    "file", "keys", "events", "hash_chain", "producer_signature", "signature",
    "engine_version", "commitment", "deal", "decisions", "multiplier", "settlement",
    "transcript",
}  # fmt: skip


@dataclass(frozen=True)
class Operator:
    data: Path
    settings: Settings
    store: SqlEventStore
    hands: dict[str, str]  # what the hand shows -> hand id


def _recorder(settings: Settings) -> Ed25519Signer:
    return ensure_signing_key(settings.audit_signing_key_path, settings.audit_public_keys_path)


@pytest.fixture(scope="module")
def operator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    """An operator's data directory: the store, the recorder's key and keyring, the
    producers' keyring; a ct hand with cap and rake, a laizi hand at coefficient 100,
    a classic hand where seats dropped and came back."""
    data = tmp_path_factory.mktemp("operator")
    settings = Settings.from_env({"DDZ_DATA_DIR": str(data)})
    PRODUCERS.publish(settings.event_keyring_path)
    recorder = _recorder(settings)
    store = create_store(settings.database_url, upgrade=True)
    rng = random.Random(30)
    quiet = Mischief(refuse=0.08, disconnect=0.0)
    hands = {
        "ct": record_hand(
            store, VARIANTS["ct"], rng, signers=PRODUCERS, key=recorder, odds=quiet,
            room=RoomSettings(rake=Fraction(1, 20), cap=24),
        ),
        "laizi": record_hand(
            store, VARIANTS["laizi"], rng, signers=PRODUCERS, key=recorder, odds=quiet,
            room=RoomSettings(coefficient=100, fee=5), balances=RICH,
        ),
    }  # fmt: skip
    while "dropped" not in hands:  # a hand where the bot played for a person
        hand_id = record_hand(
            store, VARIANTS["classic"], rng, signers=PRODUCERS, key=recorder,
            odds=Mischief(refuse=0.05, disconnect=0.08),
        )  # fmt: skip
        events = [e for _, e in decoded(store.read_stream(f"hand-{hand_id}"))]
        if any(isinstance(e, PlayerReconnected) for e in events):
            hands["dropped"] = hand_id
    yield Operator(data, settings, store, hands)
    store.close()


def ddz(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env["DDZ_DATA_DIR"] = str(data)
    return subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", *args],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def _public(settings: Settings) -> Keyring:
    return auditor_keyring(settings, public_only=True)


def _fingerprints(keyring_file: Path) -> dict[str, str]:
    """Each key's fingerprint, computed here from the key itself."""
    document = json.loads(keyring_file.read_text())
    return {
        k["key_id"]: "SHA256:" + hashlib.sha256(base64.b64decode(k["public_key"])).hexdigest()
        for k in document["keys"]
    }


# --- the file, offline --------------------------------------------------------------------


def test_an_exported_file_verifies_offline_against_the_exported_keyring(
    operator: Operator, tmp_path: Path
) -> None:
    hand_id = operator.hands["laizi"]
    bundle, keyring = tmp_path / "hand.json", tmp_path / "keyring.json"
    exported = ddz(operator.data, "audit", hand_id, "--export-bundle", str(bundle))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert f"ddz audit --bundle {bundle}" in exported.stdout
    published = ddz(operator.data, "keys", "export", "--out", str(keyring))
    assert published.returncode == 0, published.stderr
    assert "exported 1 head key(s) and 3 event key(s)" in published.stderr
    # The keyring holds the recorder's key and the producers', nothing secret.
    document = json.loads(keyring.read_text())
    recorder_keys = read_public_keys(operator.settings.audit_public_keys_path)
    assert {k["key_id"] for k in document["keys"] if k["use"] == "head"} == set(recorder_keys)
    assert {k["producer"] for k in document["keys"] if k["use"] == "event"} == {
        "dealer", "rules", "table",
    }  # fmt: skip
    assert "PRIVATE" not in keyring.read_text()

    # Elsewhere: an empty directory, no store, no key, no settings.
    nowhere = tmp_path / "player"
    nowhere.mkdir()
    done = ddz(nowhere, "audit", "--bundle", str(bundle), "--keys", str(keyring))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert out[-1] == (
        f"{hand_id}: clean: every check holds and every signer is in the published keyring"
    )
    for name in ("hash_chain", "signature", "deal", "decisions", "settlement", "transcript",
                 "published_keys"):  # fmt: skip
        assert any(line.startswith(f"  ✓ {name}: ") for line in out), name
    assert not any(line.startswith("  ✗") for line in out)
    assert any(line.startswith("#1 ") and "hand started" in line for line in out)
    assert not list(nowhere.iterdir())  # it made nothing: no store, no key

    # Without the keyring: internally consistent only, and the fingerprints to compare.
    alone = ddz(nowhere, "audit", "--bundle", str(bundle))
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert "only internal consistency was checked" in alone.stdout
    assert alone.stdout.splitlines()[-1].startswith(f"{hand_id}: internally consistent: ")
    fingerprints = _fingerprints(keyring)
    signers = {hand_key for hand_key in fingerprints if f"{hand_key} (" in alone.stdout}
    assert len(signers) == 3  # the recorder's head key, the dealer's and the rules service's
    for key_id in signers:
        assert f"{key_id} (" in alone.stdout and fingerprints[key_id] in alone.stdout
    as_json = json.loads(ddz(nowhere, "audit", "--bundle", str(bundle), "--json").stdout)
    assert (as_json["verdict"], as_json["keyring_checked"]) == ("consistent", False)
    assert {s["fingerprint"] for s in as_json["signers"]} == {fingerprints[k] for k in signers}


def test_any_changed_byte_fails_with_a_named_check(operator: Operator) -> None:
    hand_id = operator.hands["ct"]
    data = build_evidence(operator.store, hand_id, _public(operator.settings)).to_bytes()
    published = read_published_of(operator.settings)
    assert verify_evidence(data, published).verdict == "clean"
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    text = data.decode("ascii")
    # Chosen places (an envelope's bytes, a signature, a key, the transcript, spacing)
    # and random ones.
    places = [
        text.index('"envelope": "') + 40,
        text.index('"signature": "') + 20,
        text.index('"public_key": "') + 20,
        text.index('"lines": [') + 30,
        text.index("\n"),
        *(rng.randrange(len(data)) for _ in range(120)),
    ]  # fmt: skip
    for place in places:
        changed = bytearray(data)
        changed[place] = _other_byte(changed[place], rng)
        report = verify_evidence(bytes(changed), published)
        failure = report.failure
        assert failure is not None, f"seed {seed}: a change at byte {place} went unnoticed"
        assert failure.name in CHECK_NAMES, (seed, place, failure)
        assert failure.detail, (seed, place)


def test_edits_that_keep_the_json_valid_fail_too(operator: Operator) -> None:
    """Rewritten in canonical form, so only the content speaks: a number written as
    ``true``, a field added, an event dropped, two events swapped, a key relabelled."""
    hand_id = operator.hands["laizi"]
    data = build_evidence(operator.store, hand_id, _public(operator.settings)).to_bytes()
    published = read_published_of(operator.settings)
    original = json.loads(data)

    def edited(change: Callable[[dict[str, Any]], None]) -> str | None:
        document = json.loads(data)
        change(document)
        failure = verify_evidence(canonical(document), published).failure
        return None if failure is None else failure.name

    def drop(d: dict[str, Any]) -> None:
        del d["events"][5]

    def swap(d: dict[str, Any]) -> None:
        d["events"][5], d["events"][6] = d["events"][6], d["events"][5]

    def relabel(d: dict[str, Any]) -> None:
        d["keys"][0]["key_id"] = d["keys"][1]["key_id"]

    assert edited(lambda d: d.update(version=True)) == "file"
    assert edited(lambda d: d["events"][0].update(version=True)) is not None
    assert edited(lambda d: d["heads"][0].update(head_version=True)) == "keys"
    assert edited(lambda d: d.update(note="trust me")) == "file"
    assert edited(drop) == "hash_chain"
    assert edited(swap) == "hash_chain"
    assert edited(relabel) == "keys"
    assert edited(lambda d: None) is None and original["version"] == 1
    nested = b"[" * 100_000 + b"]" * 100_000
    assert verify_evidence(nested, published).failure is not None


def test_a_file_made_before_the_timeline_gained_keys_still_verifies(operator: Operator) -> None:
    """An evidence file handed out before an entry carried its multiplier, producer and
    trace id verifies as it did; a value it does carry, changed, still fails."""
    data = build_evidence(operator.store, operator.hands["ct"], _public(operator.settings))
    published = read_published_of(operator.settings)
    document = json.loads(data.to_bytes())
    timeline = document["transcript"]["timeline"]
    assert "trace_id" in timeline["entries"][0] and "multiplier" in timeline["entries"][0]
    for entry in timeline["entries"]:
        for newer in ("multiplier", "producer", "trace_id"):
            del entry[newer]
    for newer in ("message", "players", "bots", "variant", "room", "ended", "view"):
        del timeline[newer]
    older = verify_evidence(canonical(document), published)
    assert older.failure is None, older.message
    timeline["entries"][1]["text"] += " (and a word more)"
    changed = verify_evidence(canonical(document), published).failure
    assert changed is not None and changed.name == "transcript"


def _other_byte(byte: int, rng: random.Random) -> int:
    """Another printable ASCII byte (what an editor would leave)."""
    while True:
        new = rng.randrange(32, 127)
        if new != byte:
            return new


def read_published_of(settings: Settings) -> PublishedKeys:
    return published_keys(_public(settings))


def test_a_changed_file_fails_on_the_command_line_naming_the_check(
    operator: Operator, tmp_path: Path
) -> None:
    hand_id = operator.hands["ct"]
    data = build_evidence(operator.store, hand_id, _public(operator.settings)).to_bytes()
    # One base64 character of an event's envelope, mid-hand: the stored bytes changed.
    text = data.decode("ascii")
    at = text.index('"envelope": "', len(text) // 3) + 30
    changed = tmp_path / "changed.json"
    changed.write_bytes(data[:at] + (b"A" if data[at : at + 1] != b"A" else b"B") + data[at + 1 :])
    done = ddz(tmp_path, "audit", "--bundle", str(changed))
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith(f"{hand_id}: hash_chain check failed: event #"), last
    assert "altered after it was stored" in last or "not an envelope" in last


def test_a_file_re_signed_whole_by_another_key_fails_against_the_published_keyring(
    operator: Operator, tmp_path: Path
) -> None:
    """A forger copies the hand and signs every event and the head again with keys of
    their own, carried in the file: the file is consistent, and says only that; against
    the operator's published keyring it fails."""
    hand_id = operator.hands["ct"]
    forger_producers = SampleKeys.generate()
    forger_recorder = signer_of(Ed25519PrivateKey.generate())
    elsewhere = create_store("sqlite:///:memory:", upgrade=True)
    history = decoded(operator.store.read_stream(f"hand-{hand_id}"))
    forge(elsewhere, f"hand-{hand_id}", history, forger_recorder, seal=forger_producers.seal)
    forged_keys = (
        Keyring()
        .with_public({forger_recorder.key_id: forger_recorder.public_key})
        .with_events(forger_producers.keyring)
    )
    forged = build_evidence(elsewhere, hand_id, forged_keys)
    elsewhere.close()
    assert forged.report.clean, forged.report.message
    bundle, keyring = tmp_path / "forged.json", tmp_path / "keyring.json"
    bundle.write_bytes(forged.to_bytes())
    assert ddz(operator.data, "keys", "export", "--out", str(keyring)).returncode == 0

    alone = ddz(tmp_path, "audit", "--bundle", str(bundle))
    assert alone.returncode == 0, alone.stdout
    assert "only internal consistency was checked" in alone.stdout
    assert forger_recorder.key_id in alone.stdout  # the fingerprints printed are the forger's
    assert not set(_fingerprints(keyring).values()) & set(alone.stdout.split())

    against = ddz(tmp_path, "audit", "--bundle", str(bundle), "--keys", str(keyring))
    assert against.returncode == 1, against.stdout
    last = against.stdout.splitlines()[-1]
    assert last.startswith(f"{hand_id}: published_keys check failed: the ")
    assert "is not in the published keyring" in last


def test_a_hand_in_play_has_no_evidence_file_and_bad_input_is_one_line(
    operator: Operator, tmp_path: Path
) -> None:
    done = ddz(operator.data, "audit", "no-such-hand", "--export-bundle", str(tmp_path / "x"))
    assert done.returncode == 2 and done.stderr.startswith("ddz: error: no hand 'no-such-hand'")
    missing = ddz(tmp_path, "audit", "--bundle", str(tmp_path / "none.json"))
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith("ddz: error: cannot read the evidence file")
    (tmp_path / "bad-keyring.json").write_text("{}")
    (tmp_path / "some.json").write_text("{}")
    bad = ddz(tmp_path, "audit", "--bundle", str(tmp_path / "some.json"), "--keys",
              str(tmp_path / "bad-keyring.json"))  # fmt: skip
    assert bad.returncode == 2 and "is not a ddz-public-keyring file" in bad.stderr
    alone = ddz(tmp_path, "audit", "--keys", str(tmp_path / "bad-keyring.json"))
    assert alone.returncode == 2 and "--keys KEYRING goes with --bundle FILE" in alone.stderr
    # A hand still in play: its cards are secret, so no file.
    hand_id = operator.hands["ct"]
    in_play = create_store("sqlite:///:memory:", upgrade=True)
    played = operator.store.read_stream(f"hand-{hand_id}")[:6]  # dealt and bid: in play
    in_play.append(f"hand-{hand_id}", 0, [event.envelope for event in played])
    with pytest.raises(NotEvidence, match="still in play"):
        build_evidence(in_play, hand_id, _public(operator.settings))
    in_play.close()


# --- the account: times, bot marks, arithmetic ----------------------------------------------


def _timeline(operator: Operator, hand_id: str) -> tuple[AuditReport, Timeline]:
    record = load_hand(operator.store, hand_id)
    assert record is not None
    report = audit_hand(record.events, _public(operator.settings), record.signatures)
    assert report.clean, report.message
    return report, report.timeline()


def test_every_event_has_its_utc_time_and_the_time_since_the_deal(operator: Operator) -> None:
    report, timeline = _timeline(operator, operator.hands["laizi"])
    stored = operator.store.read_stream(f"hand-{operator.hands['laizi']}")
    dealt = next(
        row.occurred_at for row, (_, e) in zip(stored, decoded(stored), strict=True)
        if isinstance(e, CardsDealt)
    )  # fmt: skip
    assert dealt is not None
    lines = report.transcript()
    for row, entry in zip(stored, timeline.entries, strict=True):
        assert entry.version == row.stream_version
        assert row.occurred_at is not None and entry.at is not None
        assert abs((entry.at - row.occurred_at).total_seconds()) < 1e-3
        assert entry.since_deal is not None
        assert abs(entry.since_deal - (row.occurred_at - dealt).total_seconds()) < 1e-3
        head = next(line for line in lines if line.startswith(f"#{row.stream_version} "))
        assert row.occurred_at.strftime("%H:%M:%S") in head
        assert clock(entry.at) in head and "s  " in head
    assert lines[1].startswith(f"dealt {dealt:%Y-%m-%d %H:%M:%S} UTC")


def test_moves_the_bot_made_for_a_person_are_marked_with_why(operator: Operator) -> None:
    hand_id = operator.hands["dropped"]
    report, timeline = _timeline(operator, hand_id)
    history = [e for _, e in decoded(operator.store.read_stream(f"hand-{hand_id}"))]
    away: dict[int, int] = {}  # seat -> version of its disconnect, computed here
    expected: dict[int, str] = {}
    for version, event in enumerate(history, start=1):
        if isinstance(event, PlayerDisconnected):
            away[event.seat] = version
        elif isinstance(event, PlayerReconnected):
            away.pop(event.seat, None)
        elif isinstance(event, BidMade | PlayMade | Passed | CommandRejected):
            seat = event.seat
            if seat in away:
                expected[version] = f"connection lost at #{away[seat]}"
            elif seat == 2:  # SEATS: carol is a bot seat
                expected[version] = "bot seat"
    assert any(why.startswith("connection lost") for why in expected.values())
    lines = report.transcript()
    for entry in timeline.entries:
        actor = entry.actor
        if entry.version in expected:
            assert actor is not None and actor.bot, entry
            why = expected[entry.version]
            mark = "bot seat" if why == "bot seat" else f"bot for {actor.player}: {why}"
            assert actor.mark == mark
            assert any(line.startswith(f"#{entry.version} ") and f"[{mark}]" in line
                       for line in lines)  # fmt: skip
        elif actor is not None:
            assert not actor.bot and actor.mark == "", entry


def _settled(operator: Operator, hand_id: str) -> HandSettled:
    events = [e for _, e in decoded(operator.store.read_stream(f"hand-{hand_id}"))]
    return next(e for e in events if isinstance(e, HandSettled))


def test_the_ct_arithmetic_ends_in_the_ledger(operator: Operator) -> None:
    """§10.2, computed here: bm = base × multiplier; the cap 24 bounds the landlord's
    side 2·bm, each share then moving 24 // 2; the rake 1/20 of each winner's capped
    gain, rounded down; no escape (nobody dropped)."""
    hand_id = operator.hands["ct"]
    report, timeline = _timeline(operator, hand_id)
    settled = _settled(operator, hand_id)
    arithmetic = timeline.arithmetic
    assert arithmetic is not None and arithmetic.scoring == "ct_points"
    bm = settled.base * settled.multiplier.total
    unit = bm if 2 * bm <= 24 else 12
    landlord_won = settled.ledger.deltas[settled.landlord] > 0
    winner_shares = 2 if landlord_won else 1
    rake = math.floor(Fraction(winner_shares * unit, 20))
    assert arithmetic.step("base × multiplier").value == bm
    assert arithmetic.step("cap").value == unit
    assert arithmetic.step("rake").value == rake
    assert arithmetic.step("winner").text.startswith(
        f"the {'landlord' if landlord_won else 'farmers'} "
    )
    # The ledger's own lines agree with those figures ...
    for line in settled.ledger.lines:
        if line.reason == "rake" and line.seat is not None:
            assert line.amount == -rake
        if line.reason == "win":
            assert line.amount == (2 if line.seat == settled.landlord else 1) * bm
    # ... and the account ends in the ledger's figures, seat by seat.
    totals = {t.seat: t.total for t in arithmetic.totals}
    assert [totals[s] for s in range(3)] == list(settled.ledger.deltas)
    assert totals[None] == settled.ledger.system
    lines = report.transcript()
    assert f"        base × multiplier: {settled.base} × {settled.multiplier.total} (" in "\n".join(
        lines
    )
    for seat in range(3):
        assert any(
            line.strip().startswith(f"seat {seat} ") and line.endswith(
                f"= {settled.ledger.deltas[seat]:+d}"
            ) for line in lines
        ), seat  # fmt: skip


def test_the_laizi_arithmetic_with_its_wildcard_factor_ends_in_the_ledger(
    operator: Operator,
) -> None:
    """§10.3, computed here: X = base × multiplier × 2 (the landlord's shares), × 1/4 in
    a wildcard room, at most the hand cap 10000; each farmer's share ⌊X / 2 × 100⌋;
    fee 5 from each player; balances far from any limit."""
    hand_id = operator.hands["laizi"]
    report, timeline = _timeline(operator, hand_id)
    settled = _settled(operator, hand_id)
    arithmetic = timeline.arithmetic
    assert arithmetic is not None and arithmetic.scoring == "beans"
    x = Fraction(settled.base * settled.multiplier.total * 2)
    factored = x / 4
    capped = min(factored, Fraction(10000))
    unit = math.floor(capped / 2 * 100)
    assert arithmetic.step("X").value == str(x)
    assert Fraction(str(arithmetic.step("wildcard factor").value)) == factored
    assert Fraction(str(arithmetic.step("hand cap").value)) == capped
    assert arithmetic.step("room coefficient").value == unit
    assert arithmetic.step("fee").value == 5
    text = "\n".join(report.transcript())
    assert f"× 1/4 = {arithmetic.step('wildcard factor').value}" in text
    assert f"× 100⌋ = {unit}" in text
    landlord_won = settled.ledger.deltas[settled.landlord] > 0
    assert landlord_won == (settled.ledger.deltas[settled.landlord] + 5 > 0)
    side = Side.LANDLORD if landlord_won else Side.FARMERS
    for line in settled.ledger.lines:
        if line.reason == "loss":
            assert line.amount == -(unit if side is Side.LANDLORD else 2 * unit)
        if line.reason == "fee" and line.seat is not None:
            assert line.amount == -5
    totals = {t.seat: t.total for t in arithmetic.totals}
    assert [totals[s] for s in range(3)] == list(settled.ledger.deltas)
    assert (
        totals[None]
        == settled.ledger.system
        == 15 + sum(line.amount for line in settled.ledger.lines if line.reason == "rounding")
    )


def test_the_json_keeps_its_keys_and_adds_the_timeline(operator: Operator) -> None:
    hand_id = operator.hands["ct"]
    done = ddz(operator.data, "audit", hand_id, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {"hand_id", "stream_id", "events", "verdict", "failed_check", "message", "checks",
            "transcript", "timeline"} <= set(report)  # fmt: skip
    timeline = report["timeline"]
    assert len(timeline["entries"]) == report["events"]
    assert timeline["arithmetic"]["totals"][-1]["name"] == "system"
    assert all(entry["at"] and entry["at"].endswith("+00:00") for entry in timeline["entries"])


def test_the_file_is_built_alike_from_sqlite_and_postgresql(
    store: SqlEventStore, tmp_path: Path
) -> None:
    """``build_evidence`` reads through the store's contract: the file of a hand stored
    in either backend verifies against the keys that signed it."""
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    PRODUCERS.publish(settings.event_keyring_path)
    hand_id = record_hand(
        store, VARIANTS["tiandi"], random.Random(8), signers=PRODUCERS, key=_recorder(settings)
    )
    keys = _public(settings)
    data = build_evidence(store, hand_id, keys).to_bytes()
    report = verify_evidence(data, published_keys(keys))
    assert report.verdict == "clean", report.message
    assert report.hand_id == hand_id and report.audit is not None and report.audit.clean
