"""Head signatures: Ed25519 by key id, verified with public keys only and failing closed;
HMAC signatures of older hands still verifying with the HMAC key; the key files."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters.store import StreamSignature, chain
from ddz.adapters.store.keys import (
    HmacSigner,
    Keyring,
    UnknownKey,
    ensure_signing_key,
    publish_public_key,
    read_public_keys,
    signer_of,
)
from ddz.audit.evidence.keys import NoAuditKeys, auditor_keyring
from ddz.config import Settings

HEAD = ("hand-42", 17, "ab" * 32)
K1 = signer_of(Ed25519PrivateKey.generate())
K2 = signer_of(Ed25519PrivateKey.generate())


def signed(signer: object, head: tuple[str, int, str] = HEAD) -> StreamSignature:
    sign = signer.sign  # type: ignore[attr-defined]
    return StreamSignature(
        *head,
        sign(*head),
        signer.key_id,
        signer.algorithm,  # type: ignore[attr-defined]
    )


def test_a_head_signed_by_k1_verifies_with_k1s_public_key_only() -> None:
    signature = signed(K1)
    assert signature.algorithm == chain.ED25519 and len(signature.signature) == 128
    assert signature.key_id != K2.key_id
    Keyring(public={K1.key_id: K1.public_key}).verify(signature)  # returns: valid
    # k2's public key filed under k1's id: the signature does not verify
    with pytest.raises(InvalidSignature):
        Keyring(public={K1.key_id: K2.public_key}).verify(signature)
    # a keyring of k2 alone does not know k1's id
    with pytest.raises(UnknownKey):
        Keyring(public={K2.key_id: K2.public_key}).verify(signature)


@pytest.mark.parametrize(
    "change",
    [
        lambda s: StreamSignature(s.stream_id, s.head_version + 1, *_rest(s)),
        lambda s: StreamSignature("hand-43", s.head_version, *_rest(s)),
        lambda s: StreamSignature(
            s.stream_id, s.head_version, "cd" * 32, s.signature, s.key_id, s.algorithm
        ),
        lambda s: StreamSignature(
            s.stream_id, s.head_version, s.head_hash, _flip(s.signature), s.key_id, s.algorithm
        ),
        lambda s: StreamSignature(
            s.stream_id, s.head_version, s.head_hash, s.signature.upper(), s.key_id, s.algorithm
        ),
        lambda s: StreamSignature(
            s.stream_id, s.head_version, s.head_hash, "not hex", s.key_id, s.algorithm
        ),
        lambda s: StreamSignature(
            s.stream_id, s.head_version, s.head_hash, s.signature[:-2], s.key_id, s.algorithm
        ),
    ],
    ids=["version", "stream", "hash", "signature byte", "upper-case hex", "not hex", "short"],
)
def test_a_tampered_head_or_signature_fails(change: object) -> None:
    keys = Keyring(public={K1.key_id: K1.public_key})
    with pytest.raises(InvalidSignature):
        keys.verify(change(signed(K1)))  # type: ignore[operator]


def _rest(s: StreamSignature) -> tuple[str, str, str, str]:
    return s.head_hash, s.signature, s.key_id, s.algorithm


def _flip(hex_text: str) -> str:
    raw = bytearray(bytes.fromhex(hex_text))
    raw[0] ^= 1
    return raw.hex()


def test_an_unknown_key_id_or_algorithm_fails() -> None:
    keys = Keyring(public={K1.key_id: K1.public_key})
    genuine = signed(K1)
    for other in (
        StreamSignature(*HEAD, genuine.signature, "ed25519-unknown", chain.ED25519),
        StreamSignature(*HEAD, genuine.signature, K1.key_id, "rsa"),
        StreamSignature(*HEAD, genuine.signature, K1.key_id, chain.HMAC_SHA256),
    ):
        assert not keys.holds(other)
        with pytest.raises(UnknownKey):
            keys.verify(other)
    assert keys.holds(genuine)
    with pytest.raises(InvalidSignature):
        Keyring().verify(genuine)  # nothing held: fails closed


def test_hmac_era_heads_still_verify_with_the_hmac_key() -> None:
    old = signed(HmacSigner(b"operator key", "k1"))
    assert old.algorithm == chain.HMAC_SHA256
    assert old.signature == chain.sign_head(b"operator key", *HEAD)  # the bytes signed then
    Keyring.of_hmac(b"operator key", "k1").verify(old)
    with pytest.raises(InvalidSignature):
        Keyring.of_hmac(b"another key", "k1").verify(old)
    with pytest.raises(UnknownKey):  # a public keyring alone cannot check HMAC signatures
        Keyring(public={K1.key_id: K1.public_key}).verify(old)
    both = Keyring.of_hmac(b"operator key", "k1").with_public({K1.key_id: K1.public_key})
    both.verify(old)
    both.verify(signed(K1))
    assert "operator key" not in repr(both)


def test_keyring_survives_the_trip_to_a_worker_process() -> None:
    keys = Keyring.of_hmac(b"h", "k1").with_public({K1.key_id: K1.public_key})
    again = Keyring.from_plain(keys.to_plain())
    again.verify(signed(K1))
    again.verify(signed(HmacSigner(b"h", "k1")))


def test_the_signing_key_is_made_once_private_and_its_public_key_published(
    tmp_path: Path,
) -> None:
    key_file, keyring_file = tmp_path / "keys" / "audit-signing.key", tmp_path / "pub.json"
    signer = ensure_signing_key(key_file, keyring_file)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert ensure_signing_key(key_file, keyring_file).key_id == signer.key_id  # reused
    keyring = read_public_keys(keyring_file)
    assert list(keyring) == [signer.key_id]
    Keyring(public=keyring).verify(signed(signer))
    assert "PRIVATE" not in keyring_file.read_text()
    # Rotation: a new key file gets a new id; the keyring keeps the old one.
    rotated = ensure_signing_key(tmp_path / "keys" / "next.key", keyring_file)
    assert rotated.key_id != signer.key_id
    both = Keyring(public=read_public_keys(keyring_file))
    both.verify(signed(signer))
    both.verify(signed(rotated))
    with pytest.raises(ValueError, match="names another key"):
        publish_public_key(keyring_file, signer.key_id, rotated.public_key)


@pytest.mark.parametrize("content", ["[]", "{", '{"k": "not base64!"}', '{"k": "AAAA"}'], ids=str)
def test_a_bad_keyring_file_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "pub.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="audit keyring"):
        read_public_keys(path)


def test_the_auditor_keyring_from_the_settings(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    assert settings.keys.audit_signing_key_path == tmp_path / "keys" / "audit-signing.key"
    assert settings.keys.audit_public_keys_path == tmp_path / "keys" / "audit-public.json"
    with pytest.raises(NoAuditKeys, match="no audit key"):
        auditor_keyring(settings.keys)
    signer = ensure_signing_key(
        settings.keys.audit_signing_key_path, settings.keys.audit_public_keys_path
    )
    public = auditor_keyring(settings.keys)
    assert set(public.public) == {signer.key_id} and not public.hmac
    with_hmac = auditor_keyring(
        Settings.from_env({"DDZ_DATA_DIR": str(tmp_path), "DDZ_AUDIT_KEY": "s3cret"}).keys
    )
    assert dict(with_hmac.hmac) == {"k1": b"s3cret"}
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({}))
    moved = Settings.from_env(
        {"DDZ_DATA_DIR": str(tmp_path), "DDZ_AUDIT_PUBLIC_KEYS": str(elsewhere),
         "DDZ_AUDIT_SIGNING_KEY": str(tmp_path / "other.key"), "DDZ_AUDIT_KEY": "s3cret"}
    )  # fmt: skip
    assert moved.keys.audit_public_keys_path == elsewhere
    assert moved.keys.audit_signing_key_path == tmp_path / "other.key"
    with pytest.raises(NoAuditKeys):
        auditor_keyring(moved.keys, public_only=True)
