"""Signed heads: Ed25519 heads verify with the public keyring alone, forgeries and hands
signed short of their end fail, and hands signed before the switch to Ed25519 audit as
they did after the migration.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters.store import SignatureConflict, SqlEventStore, create_store, upgrade_store
from ddz.adapters.store.keys import Ed25519Signer, Keyring, signer_of
from ddz.adapters.store.schema import events
from ddz.domain.hand.events import SeedRevealed
from tamper_kit import (
    KEY,
    PRODUCERS,
    _audit,
    _signed_store,
    _swap_seed,
    decoded,
    forge,
    insert_raw,
    rows_of,
    signed_by,
)


def test_ed25519_heads_verify_with_the_public_keyring_alone_and_forgeries_fail(
    store: SqlEventStore,
) -> None:
    recorder, forger = (
        signer_of(Ed25519PrivateKey.generate()),
        signer_of(Ed25519PrivateKey.generate()),
    )
    public = Keyring(public={recorder.key_id: recorder.public_key})
    source, (genuine, *others) = _signed_store(recorder, 3, seed=11)
    report = _audit(source, genuine, key=public)
    assert report.clean, report.message
    assert report.key_id == recorder.key_id
    assert report.checks[2].detail.startswith("head #")
    assert "ed25519" in report.checks[2].detail
    # Someone with the database's password and the producers' keys, but not the
    # recorder's, rewrites a hand (its seed, so the rest of the chain is consistent, each
    # event signed again) and signs the new head with an Ed25519 key of their own:
    # claiming the recorder's key id, or a key id of their own.
    history = _swap_seed(decoded(source.read_stream(f"hand-{others[0]}")))
    forge(store, f"hand-{others[0]}", history, _claiming(forger, recorder.key_id),
          seal=PRODUCERS.seal)  # fmt: skip
    history = _swap_seed(decoded(source.read_stream(f"hand-{others[1]}")))
    forge(store, f"hand-{others[1]}", history, forger, seal=PRODUCERS.seal)
    claimed = _audit(store, others[0], key=public)
    assert claimed.failed_check == "signature"
    assert "does not verify under ed25519 key id" in claimed.message
    own = _audit(store, others[1], key=public)
    assert own.failed_check == "signature"
    assert f"signed only under ed25519 {forger.key_id}" in own.message
    # The HMAC key alone does not vouch for Ed25519 heads.
    assert _audit(source, genuine).failed_check == "signature"
    source.close()


def _claiming(forger: Ed25519Signer, key_id: str) -> Ed25519Signer:
    """A forger's Ed25519 key, writing someone else's key id beside its signatures."""
    return dataclasses.replace(forger, key_id=key_id)


def test_a_settled_hand_signed_short_of_its_end_fails(
    originals: tuple[SqlEventStore, dict[str, list[str]]], store: SqlEventStore
) -> None:
    """The end (the revealed seed) cut off, the signature kept: settled, so not merely
    incomplete."""
    source, by_variant = originals
    hand_id = by_variant["classic"][2]
    stream_id = f"hand-{hand_id}"
    rows = rows_of(source.read_stream(stream_id))
    assert rows[-1]["type"] == SeedRevealed.TYPE
    insert_raw(store, rows[:-1], [signed_by(KEY, stream_id, rows[-2])])
    report = _audit(store, hand_id)
    assert report.failed_check == "signature", report.message
    assert "settled at #" in report.message


def test_hands_signed_before_the_switch_audit_as_they_did_after_the_migration(
    tmp_path: Path, originals: tuple[SqlEventStore, dict[str, list[str]]]
) -> None:
    """A store made at revision 0001 (no ``algorithm`` column), holding an HMAC-signed
    hand, upgraded: the old signature reads as HMAC and still verifies with the HMAC key;
    a new Ed25519 signature is stored beside it under its own key id."""
    source, by_variant = originals
    hand_id = by_variant["ct"][1]
    stream_id = f"hand-{hand_id}"
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    upgrade_store(url, "0001")
    old = create_store(url)
    with old.engine.begin() as conn:
        conn.execute(
            # The columns of revision 0001: no trace_id yet (revision 0003).
            sa.insert(events), [{**r, "position": i + 1} for i, r in
                                enumerate(rows_of(source.read_stream(stream_id)))
                                if r.pop("trace_id", None) is None]
        )  # fmt: skip
        for s in source.read_signatures(stream_id):
            conn.exec_driver_sql(
                "INSERT INTO stream_signatures (stream_id, head_version, head_hash, signature, "
                "key_id) VALUES (?, ?, ?, ?, ?)",
                (s.stream_id, s.head_version, s.head_hash, s.signature, s.key_id),
            )
    old.close()
    store = create_store(url, upgrade=True)
    (signature,) = store.read_signatures(stream_id)
    assert signature.algorithm == "hmac-sha256"
    assert _audit(store, hand_id).clean  # with the HMAC key, as before
    recorder = signer_of(Ed25519PrivateKey.generate())
    public = Keyring(public={recorder.key_id: recorder.public_key})
    assert _audit(store, hand_id, key=public).failed_check == "signature"
    # the recorder's Ed25519 signature: stored with its algorithm, idempotent
    new = store.sign_head(stream_id, recorder)
    assert (new.algorithm, new.key_id) == ("ed25519", recorder.key_id)
    assert store.sign_head(stream_id, recorder) == new
    assert [s.algorithm for s in store.read_signatures(stream_id)] == ["hmac-sha256", "ed25519"]
    with pytest.raises(SignatureConflict):
        store.sign_head(
            stream_id, _claiming(signer_of(Ed25519PrivateKey.generate()), recorder.key_id)
        )
    assert _audit(store, hand_id, key=public).clean
    assert _audit(store, hand_id).clean
    store.close()
