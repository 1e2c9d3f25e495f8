"""The keys of head signatures: who signs (``Ed25519Signer``, ``HmacSigner``) and what an
auditor verifies with (``Keyring``), plus their files.

The recorder's private key is a PEM (PKCS#8) file, mode 0600, created once when missing.
Its public half goes into a keyring file beside it, ``{key_id: base64 raw public key}``,
which is all an auditor needs: nothing in it is secret. Keys rotate by id: a new private
key gets a new id (derived from its public key), the keyring keeps every old id, and a
stored signature names the id (and algorithm) it verifies under.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ddz.adapters.files.key_files import ensure_ed25519_key
from ddz.adapters.security.event_signing import EventKeyring
from ddz.adapters.store import chain
from ddz.application.event_store import HeadSigner, StreamSignature

__all__ = ["Ed25519Signer", "HeadSigner", "HmacSigner", "Keyring", "UnknownKey"]

KEY_ID_PREFIX = "ed25519-"
PlainKeys = tuple[dict[str, bytes], dict[str, bytes], dict[str, tuple[str, bytes]] | None]


class UnknownKey(InvalidSignature):
    """A signature under a key id (and algorithm) the keyring does not hold. A kind of
    ``InvalidSignature``: whoever catches that one fails closed on this one too."""


@dataclass(frozen=True, slots=True)
class Ed25519Signer:
    private_key: Ed25519PrivateKey = field(repr=False)
    key_id: str
    algorithm: str = chain.ED25519

    def sign(self, stream_id: str, head_version: int, head_hash: str) -> str:
        return chain.sign_head_ed25519(self.private_key, stream_id, head_version, head_hash)

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()


@dataclass(frozen=True, slots=True)
class HmacSigner:
    """The signing of hands recorded before Ed25519 (kept to make such records)."""

    key: bytes = field(repr=False)
    key_id: str
    algorithm: str = chain.HMAC_SHA256

    def sign(self, stream_id: str, head_version: int, head_hash: str) -> str:
        return chain.sign_head(self.key, stream_id, head_version, head_hash)


@dataclass(frozen=True)
class Keyring:
    """The keys an auditor verifies head signatures with: Ed25519 public keys by id, and
    the HMAC key of older hands when the auditor has it (secret: never shown)."""

    public: Mapping[str, Ed25519PublicKey] = field(
        default_factory=lambda: MappingProxyType({}), repr=False
    )
    hmac: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    events: EventKeyring | None = field(default=None, repr=False)
    """The producers' public keys every event's signature is checked with (the audit's
    ``producer_signature``); None: none at hand, and that check fails."""

    @classmethod
    def of_hmac(cls, key: bytes, key_id: str) -> Keyring:
        return cls(hmac=MappingProxyType({key_id: key} if key else {}))

    def with_public(self, keys: Mapping[str, Ed25519PublicKey]) -> Keyring:
        return Keyring(MappingProxyType({**self.public, **keys}), self.hmac, self.events)

    def with_events(self, events: EventKeyring | None) -> Keyring:
        return Keyring(self.public, self.hmac, events)

    def holds(self, signature: StreamSignature) -> bool:
        """Whether this keyring has the key ``signature`` names."""
        keys: Mapping[str, object] = (
            self.public if signature.algorithm == chain.ED25519 else self.hmac
        )
        return signature.algorithm in _ALGORITHMS and signature.key_id in keys

    def verify(self, signature: StreamSignature) -> None:
        """Returns only when ``signature`` verifies under the key its id names; raises
        ``UnknownKey`` when that key is not held, ``InvalidSignature`` when it does not
        verify."""
        s = signature
        if s.algorithm == chain.ED25519 and s.key_id in self.public:
            chain.check_ed25519_head(
                self.public[s.key_id], s.stream_id, s.head_version, s.head_hash, s.signature
            )
        elif s.algorithm == chain.HMAC_SHA256 and s.key_id in self.hmac:
            chain.check_hmac_head(
                self.hmac[s.key_id], s.stream_id, s.head_version, s.head_hash, s.signature
            )
        else:
            raise UnknownKey(f"no {s.algorithm} key with id {s.key_id!r}")

    def describe(self) -> str:
        """The key ids held, for messages (never a key)."""
        held = [f"{chain.ED25519} {key_id}" for key_id in sorted(self.public)]
        held += [f"{chain.HMAC_SHA256} {key_id}" for key_id in sorted(self.hmac)]
        return ", ".join(held) or "no keys"

    def __bool__(self) -> bool:
        return bool(self.public or self.hmac)

    def to_plain(self) -> PlainKeys:
        """Plain values (raw public keys, HMAC keys, the event keyring's), for a worker
        process to rebuild it."""
        events = None if self.events is None else self.events.to_plain()
        return {k: raw_public_key(v) for k, v in self.public.items()}, dict(self.hmac), events

    @classmethod
    def from_plain(cls, plain: PlainKeys) -> Keyring:
        public, hmac, events = plain
        return cls(
            MappingProxyType({k: Ed25519PublicKey.from_public_bytes(v) for k, v in public.items()}),
            MappingProxyType(dict(hmac)),
            None if events is None else EventKeyring.from_plain(events),
        )


_ALGORITHMS = frozenset({chain.ED25519, chain.HMAC_SHA256})


# --- ids and files -------------------------------------------------------------------------


def raw_public_key(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id_for(public_key: Ed25519PublicKey) -> str:
    """``ed25519-`` and the first 16 hex digits of the raw public key's SHA-256: a new key
    gets a new id by itself, and an id never names two keys by accident."""
    return KEY_ID_PREFIX + hashlib.sha256(raw_public_key(public_key)).hexdigest()[:16]


def signer_of(private_key: Ed25519PrivateKey) -> Ed25519Signer:
    return Ed25519Signer(private_key, key_id_for(private_key.public_key()))


def load_signing_key(path: Path) -> Ed25519Signer:
    """The Ed25519 private key in ``path`` (PEM, PKCS#8, unencrypted)."""
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"audit signing key {path} is not a PEM private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"audit signing key {path} is not an Ed25519 key")
    return signer_of(key)


def ensure_signing_key(path: Path, keyring_path: Path) -> Ed25519Signer:
    """The signing key in ``path``, created first when missing (mode 0600; when several
    processes start at once exactly one creates it); its public key is then added to the
    keyring at ``keyring_path`` if it is not there yet."""
    ensure_ed25519_key(path)
    signer = load_signing_key(path)
    publish_public_key(keyring_path, signer.key_id, signer.public_key)
    return signer


def read_public_keys(path: Path) -> dict[str, Ed25519PublicKey]:
    """The keyring at ``path``: ``{key_id: base64 raw Ed25519 public key}``. ``ValueError``
    naming the file for anything else."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"audit keyring {path} cannot be read: {exc}") from None
    if not isinstance(entries, dict):
        raise ValueError(f"audit keyring {path} must be a JSON object {{key_id: public key}}")
    keys = {}
    for key_id, encoded in entries.items():
        try:
            raw = base64.b64decode(str(encoded), validate=True)
            keys[str(key_id)] = Ed25519PublicKey.from_public_bytes(raw)
        except (binascii.Error, ValueError):
            raise ValueError(
                f"audit keyring {path}: key {key_id!r} is not a base64 raw Ed25519 public key"
            ) from None
    return keys


def publish_public_key(path: Path, key_id: str, public_key: Ed25519PublicKey) -> None:
    """Add ``key_id`` to the keyring at ``path`` (kept: every other key). Refuses an id
    already naming another key. The file is replaced whole, never seen half written."""
    entries: dict[str, str] = {}
    if path.exists():
        current = read_public_keys(path)
        if key_id in current:
            if raw_public_key(current[key_id]) != raw_public_key(public_key):
                raise ValueError(f"audit keyring {path}: key id {key_id!r} names another key")
            return
        entries = {k: base64.b64encode(raw_public_key(v)).decode() for k, v in current.items()}
    entries[key_id] = base64.b64encode(raw_public_key(public_key)).decode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".audit-public-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(entries, out, indent=2, sort_keys=True)
            out.write("\n")
        os.chmod(temporary, 0o644)  # public: anyone may read it
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
