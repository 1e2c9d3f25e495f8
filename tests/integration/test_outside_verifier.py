"""The reference outside check (docs/AUDIT.md, "Verifying an evidence file yourself"):
``tests/outside_verifier/verify.js``, written in Node.js from that section alone (Node's
own SHA-256 and Ed25519, protobufjs reading ``protos/`` at run time), over genuine
evidence files of the four variants and the forgeries an outside eye tries: a changed
byte, a whole file re-signed with another key, another operator's keyring, an event
removed, two swapped, a key entry edited. It must accept every genuine file, refuse
every forgery, and agree with ``ddz audit --bundle`` on each.

Node and npm are needed: ``npm ci`` runs in the verifier's folder when its
``node_modules`` is missing. Without them the test skips on a developer's machine and
FAILS under CI=true, so a CI that lost Node does not pass on a skipped outside check.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from audit_kit import play_hand, settled
from cli_kit import ddz
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters.store import create_store
from ddz.adapters.store.keys import Keyring, signer_of
from ddz.audit.evidence.file import ABOUT, build_evidence, canonical, verify_evidence
from ddz.audit.evidence.keys import auditor_keyring
from ddz.audit.evidence.published import published_keys, read_published
from ddz.audit.store.sample import Mischief, SampleKeys, record_hand
from ddz.config import Settings
from ddz.domain.ruleset import VARIANTS
from ddz.domain.settlement import RoomSettings
from ddz.v1 import envelope_pb2, hand_events_pb2
from evidence_kit import RICH, _public, _recorder
from suite_kit import Suite
from tamper_kit import decoded, forge

VERIFIER = Path(__file__).resolve().parents[1] / "outside_verifier"
VARIANT_ROOMS = {
    "classic": RoomSettings(),
    "ct": RoomSettings(rake=Fraction(1, 20), cap=24),
    "laizi": RoomSettings(coefficient=5, fee=2),
    "tiandi": RoomSettings(coefficient=3, fee=1),
}


def _node() -> str:
    """``node``, with the verifier's ``node_modules`` installed from its lock file."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        message = "node and npm are needed for the outside verifier (Node.js 18 or later)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message}: CI runs the outside check", pytrace=False)
        pytest.skip(message)
    if not (VERIFIER / "node_modules" / "protobufjs").is_dir():
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=VERIFIER, capture_output=True,
            text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"npm ci failed in {VERIFIER}: {done.stderr[-2000:]}"
    return node


@dataclass(frozen=True)
class Books:
    """An operator's data dir with a finished hand of each variant, and the keyring it
    publishes (``ddz keys export``)."""

    data: Path
    settings: Settings
    keyring: Path
    files: dict[str, bytes]  # variant -> its hand's evidence file


def _operator(root: Path, seed: int) -> Books:
    data = root / "data"
    settings = Settings.from_env({"DDZ_DATA_DIR": str(data)})
    producers = SampleKeys.generate()
    producers.publish(settings.keys.event_keyring_path)
    recorder = _recorder(settings)
    store = create_store(settings.store.database_url, upgrade=True)
    rng = random.Random(seed)
    files = {}
    for variant, room in VARIANT_ROOMS.items():
        beans = VARIANTS[variant].scoring.value == "beans"
        hand_id = record_hand(
            store, VARIANTS[variant], rng, signers=producers, key=recorder, room=room,
            odds=Mischief(refuse=0.08, disconnect=0.05), balances=RICH if beans else None,
        )  # fmt: skip
        files[variant] = build_evidence(store, hand_id, _public(settings)).to_bytes()
    store.close()
    keyring = root / "keyring.json"
    exported = ddz(data, "keys", "export", "--out", str(keyring))
    assert exported.returncode == 0, exported.stderr
    return Books(data, settings, keyring, files)


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Books, Books]]:
    """Ours, and another operator's (their own keys, their own hands)."""
    yield (
        _operator(tmp_path_factory.mktemp("ours"), 35),
        _operator(tmp_path_factory.mktemp("theirs"), 36),
    )


def _outside(node: str, bundle: Path, keyring: Path) -> dict[str, Any]:
    done = subprocess.run(
        [node, str(VERIFIER / "verify.js"), str(bundle), str(keyring)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    verdict: dict[str, Any] = json.loads(done.stdout)
    assert (done.returncode == 0) == (verdict["verdict"] == "verified"), verdict
    return verdict


def _ours(bundle: Path, keyring: Path) -> str:
    """What ``ddz audit --bundle FILE --keys KEYRING`` answers (``verify_evidence`` over
    ``read_published``, in this process: one command per case would take minutes)."""
    return verify_evidence(bundle.read_bytes(), read_published(keyring)).verdict


def _edited(data: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    document = json.loads(data)
    change(document)
    return canonical(document)


def _changed_byte(data: bytes, marker: str, rng: random.Random) -> bytes:
    """One character changed inside the first value after ``marker``, past its start."""
    text = data.decode("ascii")
    at = text.index(marker, rng.randrange(len(text) // 2)) + len(marker) + 10
    alphabet = "0123456789abcdef" if "signature" in marker else "ABCDEFGHabcdefgh"
    new = next(c for c in alphabet if c != text[at])
    return (text[:at] + new + text[at + 1 :]).encode("ascii")


def _re_signed(books: Books, data: bytes) -> bytes:
    """The hand copied and every event and the head signed again with a forger's keys,
    carried in the file: consistent in itself."""
    hand_id = json.loads(data)["hand_id"]
    store = create_store(books.settings.store.database_url)
    history = decoded(store.read_stream(f"hand-{hand_id}"))
    store.close()
    forger_producers = SampleKeys.generate()
    forger_recorder = signer_of(Ed25519PrivateKey.generate())
    elsewhere = create_store("sqlite:///:memory:", upgrade=True)
    forge(elsewhere, f"hand-{hand_id}", history, forger_recorder, seal=forger_producers.seal)
    keys = (
        Keyring()
        .with_public({forger_recorder.key_id: forger_recorder.public_key})
        .with_events(forger_producers.keyring)
    )
    forged = build_evidence(elsewhere, hand_id, keys)
    elsewhere.close()
    assert forged.report.clean, forged.report.message
    return forged.to_bytes()


def test_the_outside_verifier_accepts_genuine_files_refuses_forgeries_and_agrees(
    books: tuple[Books, Books], tmp_path: Path
) -> None:
    node = _node()
    ours, theirs = books
    seed = random.randrange(2**32)
    rng = random.Random(seed)

    def head(d: dict[str, Any]) -> dict[str, Any]:
        return next(k for k in d["keys"] if k["use"] == "head")

    def drop(d: dict[str, Any]) -> None:
        del d["events"][4]

    def swap(d: dict[str, Any]) -> None:
        d["events"][4], d["events"][5] = d["events"][5], d["events"][4]

    cases: list[tuple[str, bytes, Path, bool]] = []
    for variant, data in ours.files.items():
        cases.append((f"{variant}: genuine", data, ours.keyring, True))
        cases.append((f"{variant}: another operator's keyring", data, theirs.keyring, False))
        cases.append((f"{variant}: a byte of an envelope changed",
                      _changed_byte(data, '"envelope": "', rng), ours.keyring, False))  # fmt: skip
        cases.append((f"{variant}: a byte of a signature changed",
                      _changed_byte(data, '"signature": "', rng), ours.keyring, False))  # fmt: skip
        cases.append((f"{variant}: an event removed", _edited(data, drop), ours.keyring, False))
        cases.append((f"{variant}: two events swapped", _edited(data, swap), ours.keyring, False))
    laizi = ours.files["laizi"]
    cases += [
        ("ct: re-signed whole with another key", _re_signed(ours, ours.files["ct"]),
         ours.keyring, False),
        ("laizi: a key entry with a note",
         _edited(laizi, lambda d: d["keys"][0].update(note="checked")), ours.keyring, False),
        ("laizi: the head key's producer set",
         _edited(laizi, lambda d: head(d).update(producer="rules")), ours.keyring, False),
        ("laizi: the about text changed",
         _edited(laizi, lambda d: d.update(about=d["about"] + " ")), ours.keyring, False),
        ("theirs: genuine, against their own keyring", theirs.files["tiandi"],
         theirs.keyring, True),
    ]  # fmt: skip

    steps: list[str] = []
    for name, data, keyring, genuine in cases:
        bundle = tmp_path / "bundle" / "hand.json"
        bundle.parent.mkdir(exist_ok=True)
        bundle.write_bytes(data)
        outside = _outside(node, bundle, keyring)
        assert (outside["verdict"] == "verified") == genuine, (seed, name, outside)
        ours_verdict = _ours(bundle, keyring)
        assert ours_verdict == ("clean" if genuine else "failed"), (seed, name, ours_verdict)
        steps.append(f"{name}: {outside.get('step', 'verified')}")
    # The command line agrees on a genuine file and a forgery (the same function).
    for data, code in ((ours.files["tiandi"], 0), (_edited(ours.files["tiandi"], swap), 1)):
        bundle.write_bytes(data)
        done = ddz(bundle.parent, "audit", "--bundle", str(bundle), "--keys", str(ours.keyring))
        assert done.returncode == code, done.stdout + done.stderr
    # Each forgery is refused at the step that names it, not by accident of form.
    assert "ct: re-signed whole with another key: published_keys" in steps
    assert "classic: another operator's keyring: published_keys" in steps
    assert "laizi: a key entry with a note: keys" in steps
    assert "laizi: the head key's producer set: keys" in steps
    assert "laizi: the about text changed: file" in steps
    for variant in VARIANT_ROOMS:
        assert f"{variant}: an event removed: hash_chain" in steps
        assert f"{variant}: two events swapped: hash_chain" in steps
        assert f"{variant}: a byte of an envelope changed: hash_chain" in steps


def test_any_byte_changed_outside_the_transcript_is_refused_by_both(
    books: tuple[Books, Books], tmp_path: Path
) -> None:
    """Seeded random places (the seed is in the failure): any printable byte changed
    anywhere but in the unsigned transcript is refused by the outside check and by
    ``ddz audit --bundle``."""
    node = _node()
    ours, _ = books
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    bundle = tmp_path / "hand.json"
    for variant, data in ours.files.items():
        text = data.decode("ascii")
        start, end = text.index('\n "transcript": '), text.rindex('\n "version": ')
        outside_transcript = [*range(start), *range(end, len(data))]
        for place in rng.sample(outside_transcript, 6):
            changed = bytearray(data)
            changed[place] = next(b for b in rng.sample(range(32, 127), 95) if b != data[place])
            bundle.write_bytes(bytes(changed))
            verdict = _outside(node, bundle, ours.keyring)
            where = (seed, variant, place, text[max(0, place - 30) : place + 10])
            assert verdict["verdict"] == "refused", where
            assert _ours(bundle, ours.keyring) == "failed", where


def test_a_changed_transcript_is_the_line_between_the_outside_check_and_the_replay(
    books: tuple[Books, Books], tmp_path: Path
) -> None:
    """The transcript is unsigned display text (docs/AUDIT.md, step 9): a file changed
    only there passes the outside check, whose events are intact, and fails ``ddz audit
    --bundle``, which rebuilds the transcript from the events."""
    node = _node()
    ours, _ = books

    def reword(d: dict[str, Any]) -> None:
        d["transcript"]["lines"][1] += " (and the landlord cheated)"

    bundle = tmp_path / "hand.json"
    bundle.write_bytes(_edited(ours.files["classic"], reword))
    assert _outside(node, bundle, ours.keyring)["verdict"] == "verified"
    done = ddz(tmp_path, "audit", "--bundle", str(bundle), "--keys", str(ours.keyring))
    assert done.returncode == 1 and ": transcript check failed: " in done.stdout.splitlines()[-1]


# What a factor's ``event`` points at, by its reason (RULES.md §9).
CAUSES = {
    "initial": {"hand_started"}, "grab": {"bid_made"}, "show_cards": {"cards_shown"},
    "bomb": {"play_made"}, "sky_bomb": {"play_made"}, "rocket": {"play_made"},
    "spring": {"hand_ended"}, "anti_spring": {"hand_ended"},
}  # fmt: skip


def test_a_factors_event_counts_from_0_without_refusals_as_the_docs_say(
    books: tuple[Books, Books],
) -> None:
    """``Factor.event`` (protos/ddz/v1/hand_events.proto; docs/AUDIT.md "Evidence files"):
    read from the file alone, each factor of ``hand_settled`` names, counted from 0 and
    skipping ``command_rejected``, an event of the kind that multiplies; the transcript
    prints that event's stream version as ``#N``."""
    behind_a_refusal = 0
    for books_of in books:
        for variant, data in books_of.files.items():
            document = json.loads(data)
            envelopes = [
                envelope_pb2.EventEnvelope.FromString(base64.b64decode(e["envelope"]))
                for e in document["events"]
            ]
            folded = [e for e in envelopes if e.type != "command_rejected"]
            settled = hand_events_pb2.HandSettled.FromString(
                next(e.payload for e in envelopes if e.type == "hand_settled")
            )
            text = "\n".join(document["transcript"]["lines"])
            for factor in settled.multiplier.factors:
                if not factor.HasField("event"):
                    continue
                caused_by = folded[factor.event]
                assert caused_by.type in CAUSES[factor.reason], (variant, factor)
                assert f"#{caused_by.stream_version})" in text or (
                    f"#{caused_by.stream_version}," in text
                ), (variant, factor)
                if caused_by.stream_version != factor.event + 1:
                    behind_a_refusal += 1
    assert behind_a_refusal, "no factor after a refusal: the hands prove nothing of the count"


def test_audit_md_quotes_the_about_text_the_verifier_requires() -> None:
    text = (VERIFIER.parents[1] / "docs" / "AUDIT.md").read_text(encoding="utf-8")
    assert f"``{ABOUT}``" in text


async def test_files_of_hands_played_through_the_services_verify_outside(
    core_suite: Suite, tmp_path: Path
) -> None:
    """A hand of each variant dealt by the dealer, decided by the rules service over
    gRPC, recorded and signed by the recorder from NATS: its evidence file, with the
    keyring ``ddz keys export`` writes for that data dir, verifies outside and in
    ``ddz audit --bundle``; the same file with two events swapped fails both."""
    node = _node()
    rng = random.Random(37)
    odds = Mischief(refuse=0.05, disconnect=0.02)
    played = [await play_hand(core_suite, variant, rng, odds) for variant in VARIANTS]
    await settled(core_suite)
    keys = auditor_keyring(core_suite.settings.keys, public_only=True)
    keyring = tmp_path / "keyring.json"
    keyring.write_text(json.dumps(published_keys(keys).to_json(), indent=2) + "\n")
    store = create_store(core_suite.settings.store.database_url)
    try:
        files = {hand.variant: build_evidence(store, hand.hand_id, keys) for hand in played}
    finally:
        store.close()
    bundle = tmp_path / "hand.json"

    def swap(d: dict[str, Any]) -> None:
        d["events"][2], d["events"][3] = d["events"][3], d["events"][2]

    for variant, evidence in files.items():
        assert evidence.report.clean, (variant, evidence.report.message)
        for data, genuine in (
            (evidence.to_bytes(), True),
            (_edited(evidence.to_bytes(), swap), False),
        ):
            bundle.write_bytes(data)
            outside = _outside(node, bundle, keyring)
            assert (outside["verdict"] == "verified") == genuine, (variant, outside)
            assert _ours(bundle, keyring) == ("clean" if genuine else "failed"), variant
