"""The operator's public keyring, as published: every key a hand's record can be signed
under (the producers' event keys and the recorder's head keys), with ids and fingerprints.

    ddz keys export > keyring.json                 # what the operator publishes
    published = read_published(Path("keyring.json"))
    published.vouches_for(key)                     # the same id, the same public key

An evidence file carries the keys it was signed under (``ddz.audit.evidence.file``); those
prove nothing by themselves (whoever forged the file made them too). The published
keyring is what a player or a regulator holds apart from the file: the file's signers
must be in it. Nothing here is secret; HMAC keys of older hands are never exported.

Format (JSON, ``"format": "ddz-public-keyring", "version": 1``)::

    {"format": "ddz-public-keyring", "version": 1,
     "keys": [{"key_id": "ed25519-…", "use": "head", "producer": null,
               "algorithm": "ed25519", "public_key": "<base64 raw 32 bytes>",
               "fingerprint": "SHA256:<hex of sha256(raw public key)>"}, …]}

``use`` is ``head`` (the recorder signs hands' chain heads with it) or ``event`` (a
producer, named by ``producer``, signs events with it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ddz.adapters.security import event_signing
from ddz.adapters.store import chain
from ddz.adapters.store.keys import Keyring, key_id_for, raw_public_key

FORMAT = "ddz-public-keyring"
VERSION = 1
HEAD = "head"
EVENT = "event"
KEY_FIELDS = frozenset({"key_id", "use", "producer", "algorithm", "public_key", "fingerprint"})


class BadKeyring(ValueError):
    """A published keyring (or the keys of an evidence file) that is not one."""


def strict_b64(text: object) -> bytes:
    """The bytes of base64 ``text`` in its one canonical spelling. Python's decoder takes
    the spare bits of a last character as they come: two spellings of the same bytes,
    so a character changed in a file could go unnoticed. ``ValueError`` otherwise."""
    raw = base64.b64decode(str(text), validate=True)
    if base64.b64encode(raw).decode("ascii") != text:
        raise ValueError("not canonical base64")
    return raw


def fingerprint(raw: bytes) -> str:
    """``SHA256:`` and the hex SHA-256 of a raw public key: what people compare."""
    return "SHA256:" + hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True, slots=True)
class PublicKey:
    """One public key and what it signs."""

    key_id: str
    use: str  # HEAD or EVENT
    raw: bytes  # the 32-byte raw Ed25519 public key
    producer: str | None = None  # EVENT keys: the producer

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.raw)

    @property
    def ed25519(self) -> Ed25519PublicKey:
        return Ed25519PublicKey.from_public_bytes(self.raw)

    def to_json(self) -> dict[str, Any]:
        return {
            "key_id": self.key_id,
            "use": self.use,
            "producer": self.producer,
            "algorithm": chain.ED25519,
            "public_key": base64.b64encode(self.raw).decode("ascii"),
            "fingerprint": self.fingerprint,
        }

    @classmethod
    def from_json(cls, entry: object, where: str) -> PublicKey:
        """One entry, checked: its id must be the one its key derives (an id relabelled
        onto another key fails), its fingerprint the key's, and the entry exactly the one
        ``to_json`` writes for that key: no field more or less, a head key's ``producer``
        null. Nothing of an entry is left unread, so nothing in it can change unnoticed."""
        if not isinstance(entry, dict):
            raise BadKeyring(f"{where}: a key entry is not an object")
        if set(entry) != KEY_FIELDS:
            fields = ", ".join(sorted(map(str, set(entry) ^ KEY_FIELDS)))
            raise BadKeyring(
                f"{where}: key {entry.get('key_id')!r} has other fields than a key entry's "
                f"({fields})"
            )
        key_id, use, producer = entry.get("key_id"), entry.get("use"), entry.get("producer")
        if not isinstance(key_id, str) or use not in (HEAD, EVENT):
            raise BadKeyring(f"{where}: a key entry needs a key_id and a use (head or event)")
        if entry.get("algorithm") != chain.ED25519:
            raise BadKeyring(f"{where}: key {key_id!r} is not an {chain.ED25519} key")
        try:
            raw = strict_b64(entry.get("public_key"))
            public = Ed25519PublicKey.from_public_bytes(raw)
        except (binascii.Error, ValueError):
            raise BadKeyring(
                f"{where}: key {key_id!r} is not a base64 raw Ed25519 public key"
            ) from None
        if use == EVENT and (
            not isinstance(producer, str) or producer not in event_signing.PRODUCERS
        ):
            raise BadKeyring(f"{where}: event key {key_id!r} names no producer")
        expected = (
            key_id_for(public) if use == HEAD else event_signing.key_id_for(str(producer), public)
        )
        if key_id != expected:
            raise BadKeyring(
                f"{where}: key id {key_id!r} does not name its public key (that key's id "
                f"is {expected!r})"
            )
        if entry.get("fingerprint") != fingerprint(raw):
            raise BadKeyring(f"{where}: the fingerprint of key {key_id!r} is not its key's")
        if use == HEAD and producer is not None:
            raise BadKeyring(
                f"{where}: head key {key_id!r} names a producer ({producer!r}); a head key's "
                "producer is null"
            )
        return cls(key_id, str(use), raw, producer if use == EVENT else None)


@dataclass(frozen=True)
class PublishedKeys:
    """Public keys by id."""

    keys: Mapping[str, PublicKey]

    def vouches_for(self, key: PublicKey) -> bool:
        """Whether this keyring holds ``key``: the same entry (id, public key, use and
        producer), so a file's key entry that differs from the published one in any
        field is not vouched for."""
        held = self.keys.get(key.key_id)
        return held is not None and held.to_json() == key.to_json()

    def keyring(self) -> Keyring:
        """The auditor's ``Keyring`` of these keys: head keys and the event keyring."""
        heads = {k.key_id: k.ed25519 for k in self.keys.values() if k.use == HEAD}
        producers = {
            k.key_id: event_signing.ProducerKey(str(k.producer), k.ed25519)
            for k in self.keys.values()
            if k.use == EVENT
        }
        return Keyring().with_public(heads).with_events(event_signing.EventKeyring(keys=producers))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "keys": [self.keys[k].to_json() for k in sorted(self.keys)],
        }


def keys_of(entries: Iterable[object], where: str) -> dict[str, PublicKey]:
    keys: dict[str, PublicKey] = {}
    for entry in entries:
        key = PublicKey.from_json(entry, where)
        if key.key_id in keys:
            raise BadKeyring(f"{where}: key id {key.key_id!r} appears twice")
        keys[key.key_id] = key
    return keys


def published_keys(keyring: Keyring) -> PublishedKeys:
    """The public keys of an auditor's ``Keyring`` (never its HMAC keys)."""
    keys = {
        key_id: PublicKey(key_id, HEAD, raw_public_key(public))
        for key_id, public in keyring.public.items()
    }
    if keyring.events is not None:
        for key_id, (producer, raw) in keyring.events.to_plain().items():
            keys[key_id] = PublicKey(key_id, EVENT, raw, producer)
    return PublishedKeys(keys)


def read_published(path: Path) -> PublishedKeys:
    """The keyring ``ddz keys export`` wrote; ``BadKeyring`` naming the file otherwise."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadKeyring(f"keyring {path} cannot be read: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise BadKeyring(f"keyring {path} is not a {FORMAT} file (made by `ddz keys export`)")
    if document.get("version") != VERSION:
        raise BadKeyring(
            f"keyring {path} is version {document.get('version')!r}; this build reads {VERSION}"
        )
    entries = document.get("keys")
    if not isinstance(entries, list):
        raise BadKeyring(f"keyring {path}: 'keys' must be a list")
    return PublishedKeys(keys_of(entries, f"keyring {path}"))
