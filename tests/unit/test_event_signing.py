"""Signed events (``ddz.adapters.security.event_signing``): what a producer's seal makes, and every
way an envelope fails to open -- tampered, another key, a producer not allowed the
event, unsigned, truncated -- plus the key files a data dir gets."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from ddz.access.token_keys import ensure_keys
from ddz.adapters import codec
from ddz.adapters.codec import CodecError
from ddz.adapters.security.event_signing import (
    ENVELOPE_VERSION,
    TRAILER,
    BadEvent,
    EventKeyring,
    EventSigner,
    ProducerKey,
    ensure_signer,
    event_keyring,
)
from ddz.adapters.telemetry import metrics
from ddz.config import Settings
from ddz.domain.hand.events import SeedRevealed
from ddz.v1 import envelope_pb2
from signing_kit import DEALER, KEYRING, RULES, TABLE, tampered


def hand_event(event_type: str = "seed_revealed", version: int = 9) -> envelope_pb2.EventEnvelope:
    data = codec.envelope_for("hand-h1", version, SeedRevealed("00" * 32), "c", "h1", "rules@x")
    envelope = codec.parse_envelope(data)
    envelope.type = event_type
    return envelope


def refused(why: str) -> float:
    return metrics.REGISTRY.get_sample_value("ddz_events_refused_total", {"why": why}) or 0.0


def why(data: bytes, keyring: EventKeyring = KEYRING) -> str:
    before = {reason: refused(reason) for reason in metrics.REFUSALS}
    with pytest.raises(BadEvent) as caught:
        keyring.open(data)
    # Counted once, under its reason (ddz_events_refused_total: DdzEventsRefused).
    after = {reason: refused(reason) for reason in metrics.REFUSALS}
    assert after == {**before, caught.value.why: before[caught.value.why] + 1}
    return caught.value.why


def test_a_sealed_envelope_is_its_signed_bytes_then_the_signature_field() -> None:
    envelope = hand_event()
    data = RULES.seal(envelope)
    assert data[-66:-64] == TRAILER and data[-64:] == envelope.signature
    opened = KEYRING.open(data)
    assert opened == envelope and opened.SerializeToString() == data
    assert (opened.envelope_version, opened.producer_key_id) == (ENVELOPE_VERSION, RULES.key_id)
    assert opened.producer_key_id.startswith("rules-ed25519-")
    _, event = KEYRING.decode(data)
    assert event == SeedRevealed("00" * 32)


def test_a_tampered_byte_or_another_key_does_not_verify() -> None:
    data = RULES.seal(hand_event())
    assert why(tampered(data)) == "bad_signature"
    flipped = data[:-1] + bytes([data[-1] ^ 1])  # the signature itself
    assert why(flipped) == "bad_signature"
    # A key of its own claiming the rules' key id: the rules' public key refuses it.
    impostor = EventSigner("rules", RULES.key_id, Ed25519PrivateKey.generate())
    assert why(impostor.seal(hand_event())) == "bad_signature"
    # A key the keyring does not hold.
    stranger = EventSigner.of("rules", Ed25519PrivateKey.generate())
    assert why(stranger.seal(hand_event())) == "unknown_key"


def test_a_seal_is_the_keys_own_ed25519_signature_as_any_library_makes_it() -> None:
    # Sealed with libsodium, the key made and kept by cryptography: the signature is
    # RFC 8032's (deterministic), the one OpenSSL makes of the same bytes, and OpenSSL
    # verifies it, so events signed before the change still open.
    envelope = hand_event()
    data = RULES.seal(envelope)
    signed = data[:-66]
    assert RULES.private_key.sign(signed) == envelope.signature
    RULES.public.public_key.verify(envelope.signature, signed)  # raises if not


def test_a_small_order_key_signs_nothing() -> None:
    # The identity point as a public key, and R = identity, S = 0: the equation holds
    # for every message, and OpenSSL's Ed25519 accepts it. A keyring entry like that
    # (written by whoever can write the keyring file) must not open forged events.
    identity = bytes([1]) + bytes(31)
    forged_signature = identity + bytes(32)
    lax = Ed25519PublicKey.from_public_bytes(identity)
    lax.verify(forged_signature, b"any bytes at all")  # the weakness being guarded
    envelope = hand_event()
    envelope.envelope_version, envelope.producer_key_id = ENVELOPE_VERSION, "rules-ed25519-0"
    envelope.ClearField("signature")
    forged = envelope.SerializeToString() + TRAILER + forged_signature
    keyring = EventKeyring(keys={"rules-ed25519-0": ProducerKey("rules", lax)})
    assert why(forged, keyring) == "bad_signature"


@pytest.mark.parametrize(
    ("signer", "stream_id", "event_type"),
    [
        (RULES, "table-t1", "table_opened"),  # a rules key on a table's event
        (DEALER, "hand-h1", "hand_settled"),  # only the rules settle a hand
        (TABLE, "hand-h1", "play_made"),  # the table decides nothing
        (RULES, "hand-h1", "hand_started"),  # only the dealer starts one
    ],
)
def test_a_producer_signs_only_the_events_its_service_makes(
    signer: EventSigner, stream_id: str, event_type: str
) -> None:
    envelope = envelope_pb2.EventEnvelope(stream_id=stream_id, stream_version=1, type=event_type)
    assert why(signer.seal(envelope)) == "not_allowed"


def test_a_key_filed_under_another_producer_is_not_that_producer() -> None:
    # The keyring says the key is the table's; its id says dealer: neither is believed.
    mislabelled = EventKeyring(keys={DEALER.key_id: ProducerKey("table", DEALER.public.public_key)})
    assert why(DEALER.seal(hand_event("cards_dealt")), mislabelled) == "not_allowed"


def test_unsigned_and_truncated_envelopes_are_refused() -> None:
    unsigned = hand_event().SerializeToString()  # an envelope of before signing: version 0
    assert why(unsigned) == "unsigned"
    data = RULES.seal(hand_event())
    assert why(data[:-66]) == "unsigned"  # the signature cut off
    for cut in (1, 30, 65):
        with pytest.raises(CodecError):  # BadEvent or not an envelope at all
            KEYRING.open(data[:-cut])
    # The signature field not last: something appended after it.
    with pytest.raises(CodecError):
        KEYRING.open(data + b"\x0a\x00")


def test_keys_in_a_data_dir_are_private_and_the_keyring_public(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    keyring = event_keyring(settings.keys)  # a consumer that starts before any producer
    ensure_keys(settings.keys)  # what ``ddz up`` does
    keys = tmp_path / "keys" / "events"
    assert sorted(p.name for p in keys.iterdir()) == ["dealer.key", "rules.key", "table.key"]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in keys.iterdir())
    entries = json.loads(settings.keys.event_keyring_path.read_text())
    assert sorted(e["producer"] for e in entries.values()) == ["dealer", "rules", "table"]
    assert "PRIVATE" not in settings.keys.event_keyring_path.read_text()
    rules = ensure_signer(settings.keys, "rules")  # the same key again, not a new one
    assert rules.key_id in entries
    assert keyring.open(rules.seal(hand_event())).producer_key_id == rules.key_id
    assert "PRIVATE" not in repr(rules) and "private_key" not in repr(rules)


def test_a_rotated_key_is_believed_and_the_old_one_still_verifies(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    old = ensure_signer(settings.keys, "rules")
    before = old.seal(hand_event())
    keyring = event_keyring(settings.keys)
    settings.keys.event_signing_key_path("rules").unlink()  # rotate: a new key, a new id
    new = ensure_signer(settings.keys, "rules")
    assert new.key_id != old.key_id
    assert keyring.open(new.seal(hand_event())).producer_key_id == new.key_id  # re-read
    assert keyring.open(before).producer_key_id == old.key_id


def test_a_keyring_with_a_private_part_or_garbage_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    path.write_text(json.dumps({"k": {"producer": "rules", "public_key": "AA==", "private": "x"}}))
    with pytest.raises(ValueError, match="keyring"):
        EventKeyring(path)
    path.write_text("[]")
    with pytest.raises(ValueError, match="keyring"):
        EventKeyring(path)
