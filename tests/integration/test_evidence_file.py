"""Evidence files (``ddz.audit.evidence.file``) of hands recorded as the services record them
(``evidence_kit``):

- ``ddz audit HAND --export-bundle`` writes a file that ``ddz audit --bundle`` verifies
  in a directory with no store and no key, against ``ddz keys export``'s keyring;
- any changed byte fails it, with a named check (seeded: the seed is printed on failure);
- a file re-signed whole by another operator's keys is internally consistent, says only
  that, and fails against the published keyring.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_kit import ddz, ddz_here
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters.store import create_store
from ddz.adapters.store.keys import (
    Keyring,
    read_public_keys,
    signer_of,
)
from ddz.audit.evidence.file import NotEvidence, build_evidence, canonical, verify_evidence
from ddz.audit.store.sample import SampleKeys
from evidence_kit import Operator, _fingerprints, _public, read_published_of
from tamper_kit import decoded, forge

CHECK_NAMES = {
    "file", "keys", "events", "hash_chain", "producer_signature", "signature",
    "engine_version", "commitment", "deal", "decisions", "multiplier", "settlement",
    "transcript",
}  # fmt: skip


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
    recorder_keys = read_public_keys(operator.settings.keys.audit_public_keys_path)
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


def test_a_key_entry_edited_without_touching_what_was_signed_fails(
    operator: Operator, tmp_path: Path
) -> None:
    """Nothing signed changes when a key entry gains a field or a head key names a
    producer, but a verifier that calls such a file clean vouches for bytes nobody
    wrote: the file fails ``keys``, on its own and against the published keyring, and a
    keyring whose entry differs from what ``ddz keys export`` wrote is refused too."""
    hand_id = operator.hands["laizi"]
    data = build_evidence(operator.store, hand_id, _public(operator.settings)).to_bytes()
    published = read_published_of(operator.settings)

    def head(d: dict[str, Any]) -> dict[str, Any]:
        return next(k for k in d["keys"] if k["use"] == "head")

    def edited(change: Callable[[dict[str, Any]], None]) -> bytes:
        document = json.loads(data)
        change(document)
        return canonical(document)

    noted = edited(lambda d: d["keys"][0].update(note="checked by the operator"))
    produced = edited(lambda d: head(d).update(producer="rules"))
    for forged in (noted, produced):
        for keyring in (None, published):
            failure = verify_evidence(forged, keyring).failure
            assert failure is not None and failure.name == "keys", failure
    assert "other fields than a key entry's (note)" in str(verify_evidence(noted).failure)
    assert "a head key's producer is null" in str(verify_evidence(produced).failure)

    keyring = tmp_path / "keyring.json"
    assert ddz(operator.data, "keys", "export", "--out", str(keyring)).returncode == 0
    bundle = tmp_path / "hand.json"
    bundle.write_bytes(produced)
    done = ddz(tmp_path, "audit", "--bundle", str(bundle), "--keys", str(keyring))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith(f"{hand_id}: keys check failed: ")
    # A published keyring is held to the same form: an entry with a field more is no
    # keyring (exit 2, one line), not a keyring that vouches for more than it says.
    document = json.loads(keyring.read_text())
    document["keys"][0]["note"] = "x"
    keyring.write_text(json.dumps(document))
    bundle.write_bytes(data)
    bad = ddz(tmp_path, "audit", "--bundle", str(bundle), "--keys", str(keyring))
    assert bad.returncode == 2 and "other fields than a key entry's" in bad.stderr, bad.stderr


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
    done = ddz_here(tmp_path, "audit", "--bundle", str(changed))
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
    assert ddz_here(operator.data, "keys", "export", "--out", str(keyring)).returncode == 0

    alone = ddz_here(tmp_path, "audit", "--bundle", str(bundle))
    assert alone.returncode == 0, alone.stdout
    assert "only internal consistency was checked" in alone.stdout
    assert forger_recorder.key_id in alone.stdout  # the fingerprints printed are the forger's
    assert not set(_fingerprints(keyring).values()) & set(alone.stdout.split())

    against = ddz_here(tmp_path, "audit", "--bundle", str(bundle), "--keys", str(keyring))
    assert against.returncode == 1, against.stdout
    last = against.stdout.splitlines()[-1]
    assert last.startswith(f"{hand_id}: published_keys check failed: the ")
    assert "is not in the published keyring" in last


def test_a_hand_in_play_has_no_evidence_file_and_bad_input_is_one_line(
    operator: Operator, tmp_path: Path
) -> None:
    done = ddz_here(operator.data, "audit", "no-such-hand", "--export-bundle", str(tmp_path / "x"))
    assert done.returncode == 2 and done.stderr.startswith("ddz: error: no hand 'no-such-hand'")
    missing = ddz_here(tmp_path, "audit", "--bundle", str(tmp_path / "none.json"))
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith("ddz: error: cannot read the evidence file")
    (tmp_path / "bad-keyring.json").write_text("{}")
    (tmp_path / "some.json").write_text("{}")
    bad = ddz_here(tmp_path, "audit", "--bundle", str(tmp_path / "some.json"), "--keys",
              str(tmp_path / "bad-keyring.json"))  # fmt: skip
    assert bad.returncode == 2 and "is not a ddz-public-keyring file" in bad.stderr
    alone = ddz_here(tmp_path, "audit", "--keys", str(tmp_path / "bad-keyring.json"))
    assert alone.returncode == 2 and "--keys KEYRING goes with --bundle FILE" in alone.stderr
    # A hand still in play: its cards are secret, so no file.
    hand_id = operator.hands["ct"]
    in_play = create_store("sqlite:///:memory:", upgrade=True)
    played = operator.store.read_stream(f"hand-{hand_id}")[:6]  # dealt and bid: in play
    in_play.append(f"hand-{hand_id}", 0, [event.envelope for event in played])
    with pytest.raises(NotEvidence, match="still in play"):
        build_evidence(in_play, hand_id, _public(operator.settings))
    in_play.close()
