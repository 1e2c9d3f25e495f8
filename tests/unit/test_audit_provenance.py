"""The audit's ``producer_signature`` check on sample hands (``ddz.audit.store.sample``, signed
as the dealer and the rules service sign theirs): it passes only with the producers'
keyring, and an audit without one fails it, in one hand's audit and in ``--all``."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters.store import StoredEvent, StreamSignature, chain, create_store
from ddz.adapters.store.keys import Keyring, signer_of
from ddz.audit import audit_hand
from ddz.audit.checks.results import PRODUCER_SIGNATURE
from ddz.audit.store.bulk import audit_all
from ddz.audit.store.sample import Mischief, SampleKeys, record_hand
from ddz.domain.ruleset import VARIANTS
from ddz.v1 import envelope_pb2

PRODUCERS = SampleKeys.generate()
RECORDER = signer_of(Ed25519PrivateKey.generate())
HEADS = Keyring(public={RECORDER.key_id: RECORDER.public_key})


def _recorded(url: str, hands: int = 1) -> list[str]:
    store = create_store(url, upgrade=True)
    rng = random.Random(31)
    try:
        return [
            record_hand(store, VARIANTS["classic"], rng, signers=PRODUCERS, key=RECORDER,
                        odds=Mischief(refuse=0.1))
            for _ in range(hands)
        ]  # fmt: skip
    finally:
        store.close()


def _rows(url: str, hand_id: str) -> tuple[list[StoredEvent], list[StreamSignature]]:
    store = create_store(url)
    try:
        stream_id = f"hand-{hand_id}"
        return store.read_stream(stream_id), store.read_signatures(stream_id)
    finally:
        store.close()


def test_sample_events_are_signed_by_their_producers_and_audit_clean(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'events.sqlite3'}"
    (hand_id,) = _recorded(url)
    rows, signatures = _rows(url, hand_id)
    keys = [envelope_pb2.EventEnvelope.FromString(r.envelope).producer_key_id for r in rows]
    dealer, rules = PRODUCERS.signers["dealer"].key_id, PRODUCERS.signers["rules"].key_id
    assert rows[0].type == "hand_started" and keys[0] == dealer
    assert {k for r, k in zip(rows, keys, strict=True) if r.type == "hand_settled"} == {rules}
    assert set(keys) == {dealer, rules}
    report = audit_hand(rows, HEADS.with_events(PRODUCERS.keyring), signatures)
    assert report.clean, report.message
    (check,) = [c for c in report.checks if c.name == PRODUCER_SIGNATURE]
    assert check.detail == f"{len(rows)} events, each signed by its producer ({dealer}, {rules})"


def test_an_audit_without_an_event_keyring_fails_producer_signature(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'events.sqlite3'}"
    hand_ids = _recorded(url, hands=3)
    rows, signatures = _rows(url, hand_ids[0])
    for keys in (HEADS, b"an hmac key"):  # a keyring without events; HMAC key bytes
        report = audit_hand(rows, keys, signatures)
        assert report.failed_check == PRODUCER_SIGNATURE
        assert [c.name for c in report.checks] == ["hash_chain", PRODUCER_SIGNATURE]
        assert "no event keyring given" in report.message
        assert "DDZ_EVENT_KEYRING" in report.message
    for workers in (1, 2):
        every = audit_all(url, HEADS, workers=workers, batch=1)
        assert (every.hands, every.clean, every.failed) == (3, 0, 3)
        assert every.failed_by_check[PRODUCER_SIGNATURE] == 3
        assert audit_all(url, HEADS.with_events(PRODUCERS.keyring), workers=workers).clean == 3


def test_events_under_other_keys_or_of_a_producer_not_allowed_fail(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'events.sqlite3'}"
    (hand_id,) = _recorded(url)
    rows, signatures = _rows(url, hand_id)
    strangers = HEADS.with_events(SampleKeys.generate().keyring)
    unknown = audit_hand(rows, strangers, signatures)
    assert unknown.failed_check == PRODUCER_SIGNATURE
    assert "event #1 " in unknown.message and "unknown key" in unknown.message

    # The settlement signed again by the dealer's key, the chain recomputed over it: the
    # dealer may not sign a settlement.
    index = next(i for i, r in enumerate(rows) if r.type == "hand_settled")
    envelope = envelope_pb2.EventEnvelope.FromString(rows[index].envelope)
    rows[index] = dataclasses.replace(rows[index], envelope=PRODUCERS.seal(envelope, "dealer"))
    previous = chain.GENESIS_HASH
    for i, row in enumerate(rows):
        rows[i] = row = dataclasses.replace(
            row, prev_hash=previous, hash=chain.chain_hash(previous, row.envelope)
        )
        previous = row.hash
    report = audit_hand(rows, HEADS.with_events(PRODUCERS.keyring), signatures)
    assert report.failed_check == PRODUCER_SIGNATURE
    assert f"event #{index + 1} " in report.message
    assert "signed by 'dealer', which may not sign it" in report.message
