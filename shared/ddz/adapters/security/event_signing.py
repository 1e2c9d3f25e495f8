"""Signed events: each producer signs every envelope it publishes (Ed25519), and every
consumer opens an envelope here, with the producers' public keys, before it acts on it.

    signer = ensure_signer(settings.keys, "rules")   # the producer's own key
    data = signer.seal(envelope)                     # the bytes to publish and store
    envelope = event_keyring(settings.keys).open(data)  # BadEvent unless signed and allowed

**What is signed.** The producer serialises the envelope with ``envelope_version`` 1 and
its ``producer_key_id`` and no ``signature``, signs exactly those bytes, and appends the
``signature`` field's encoding (tag ``0x7a``, length 64, the signature) at the end. A
verifier checks those 66 trailing bytes and verifies the bytes before them as they are:
nothing is re-serialised, so a protobuf library that serialises differently never
changes what was signed, and the bytes the recorder stores and the audit hashes are the
ones the producer signed.

**Who may sign what** (``SIGNERS``, data beside ``nats_auth.ROLES``): a key belongs to one
producer (the keyring says which; the key id names it too), and a producer signs only
the events its service makes: a rules key cannot sign a table's events, a dealer's key
cannot sign a ``hand_settled``. So a valid NATS user of some service that publishes a
forged envelope gets nowhere without a producer's private key.

**Keys.** One Ed25519 key per producer (dealer, rules, table), PEM, mode 0600:
``DDZ_EVENT_SIGNING_KEY``, else ``<data dir>/keys/events/<producer>.key``, made by
``ddz up`` (``token_keys.ensure_keys``) or by the producer at start. Its public half goes
into the keyring ``DDZ_EVENT_KEYRING`` (else ``<data dir>/keys/event-keyring.json``):
``{key_id: {"producer": ..., "public_key": base64 raw}}``, nothing secret. Keys rotate by
id: a new key gets a new id, the keyring keeps the old ones (old events still verify),
and a consumer that meets an id it does not hold re-reads the file if it changed.

**Two libraries, one key.** Keys are made, stored and read with ``cryptography`` (PEM, as
every other key of the suite); the signing and verifying of events, three verifies of
every event across the suite, is libsodium's (PyNaCl, which the NATS nkey logins already
need): the same Ed25519 signatures, verified in half the time (docs/BENCHMARKS_HISTORY.md, "signed
events with libsodium"), and stricter about what it accepts: OpenSSL's verify takes the
identity point as a public key, under which one signature verifies for every message.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from google.protobuf.message import DecodeError
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from ddz.adapters.codec import CodecError, decode_event, envelope_and_bytes
from ddz.adapters.files.data_files import REMAKE, BadFile, read_bytes
from ddz.adapters.files.key_files import ensure_ed25519_key
from ddz.adapters.telemetry import metrics
from ddz.application.bad_events import BadEvent as BadEvent
from ddz.config.security import KeySettings
from ddz.domain.hand import Recorded
from ddz.v1 import envelope_pb2

__all__ = [
    "ENVELOPE_VERSION",
    "PRODUCERS",
    "SIGNERS",
    "BadEvent",
    "EventKeyring",
    "EventSigner",
    "ProducerKey",
    "ensure_event_keys",
    "ensure_signer",
    "event_keyring",
]

ENVELOPE_VERSION = 1
"""``EventEnvelope.envelope_version`` of a signed envelope (0: made before signing)."""
SIGNATURE_FIELD = 15
SIGNATURE_SIZE = 64
TRAILER = bytes([SIGNATURE_FIELD << 3 | 2, SIGNATURE_SIZE])  # the field's tag and length
SEALED_TAIL = len(TRAILER) + SIGNATURE_SIZE

PRODUCERS = ("dealer", "rules", "table")
SIGNING_KEY_FIX = f"{REMAKE} (the events it signed still verify: the keyring keeps its public key)"
KEYRING_FIX = (
    "restore it from a backup, or remove it and run `ddz init` to list this data dir's "
    "producers again"
)
"""The services that publish events (``nats_auth.ROLES``: the users with a publish list)."""

ANY = "*"
SIGNERS: Mapping[tuple[str, str], frozenset[str]] = {
    # (stream category, event type) -> the producers whose keys may sign it; ANY: every
    # other type of that category. A hand is started by the dealer (its deal) and decided
    # by the rules service (moves, re-deals, the end, the settlement and the seed).
    ("hand", "hand_started"): frozenset({"dealer"}),
    ("hand", "hand_ended"): frozenset({"rules"}),
    ("hand", "hand_settled"): frozenset({"rules"}),
    ("hand", "seed_revealed"): frozenset({"rules"}),
    ("hand", ANY): frozenset({"dealer", "rules"}),
    ("table", ANY): frozenset({"table"}),
}


def may_sign(producer: str, stream_id: str, event_type: str) -> bool:
    """Whether ``producer``'s key may sign an event of ``event_type`` on ``stream_id``."""
    category = stream_id.split("-", 1)[0]
    allowed = SIGNERS.get((category, event_type), SIGNERS.get((category, ANY), frozenset()))
    return producer in allowed


# --- signing ---------------------------------------------------------------------------


def key_id_for(producer: str, public_key: Ed25519PublicKey) -> str:
    """``<producer>-ed25519-`` and 16 hex digits of the raw key's SHA-256: the id names
    its producer, and a new key gets a new id by itself."""
    digest = hashlib.sha256(_raw(public_key)).hexdigest()[:16]
    return f"{producer}-ed25519-{digest}"


@dataclass(frozen=True, slots=True)
class EventSigner:
    """A producer's signing key."""

    producer: str
    key_id: str
    private_key: Ed25519PrivateKey = field(repr=False)
    _sodium: SigningKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        seed = self.private_key.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )  # fmt: skip
        object.__setattr__(self, "_sodium", SigningKey(seed))

    @classmethod
    def of(cls, producer: str, private_key: Ed25519PrivateKey) -> EventSigner:
        return cls(producer, key_id_for(producer, private_key.public_key()), private_key)

    @property
    def public(self) -> ProducerKey:
        return ProducerKey(self.producer, self.private_key.public_key())

    def seal(self, envelope: envelope_pb2.EventEnvelope) -> bytes:
        """The signed bytes of ``envelope`` (which gets its version, key id and
        signature set, so it is the very message those bytes parse to)."""
        envelope.envelope_version = ENVELOPE_VERSION
        envelope.producer_key_id = self.key_id
        envelope.ClearField("signature")
        signed: bytes = envelope.SerializeToString()
        signature: bytes = self._sodium.sign(signed).signature
        envelope.signature = signature
        return signed + TRAILER + signature


def sealed_envelope(
    signer: EventSigner,
    stream_id: str,
    version: int,
    event: Recorded,
    causation_id: str,
    correlation_id: str,
    producer: str,
    *,
    event_id: str | None = None,
) -> tuple[envelope_pb2.EventEnvelope, bytes]:
    """``codec.envelope_and_bytes``, signed by ``signer``: the hand streams' events."""
    return envelope_and_bytes(
        stream_id, version, event, causation_id, correlation_id, producer,
        event_id=event_id, serialise=signer.seal,
    )  # fmt: skip


# --- verifying -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProducerKey:
    """A public key of the keyring and the producer it belongs to."""

    producer: str
    public_key: Ed25519PublicKey = field(repr=False)
    _sodium: VerifyKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_sodium", VerifyKey(_raw(self.public_key)))

    def verify(self, signature: bytes, signed: bytes) -> bool:
        """Whether ``signature`` is this key's Ed25519 signature of ``signed``."""
        try:
            self._sodium.verify(signed, signature)
        except BadSignatureError:
            return False
        return True


class EventKeyring:
    """The producers' public keys by id, read from the keyring file (``path``) and/or
    given (``keys``); an unknown id re-reads the file when it changed, so a producer
    that made or rotated its key after this consumer started is believed."""

    def __init__(self, path: Path | None = None, keys: Mapping[str, ProducerKey] = {}) -> None:
        self.path = path
        self.given = dict(keys)
        self.keys = dict(keys)
        self._seen: tuple[int, int] | None = None
        self._reload()

    def __repr__(self) -> str:
        return f"EventKeyring({self.path}, {sorted(self.keys)})"

    def _stamp(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat() if self.path is not None else None
        except FileNotFoundError:
            return None
        return None if stat is None else (stat.st_mtime_ns, stat.st_size)

    def _reload(self) -> None:
        stamp = self._stamp()
        if self.path is None or stamp is None or stamp == self._seen:
            return
        self.keys = {**read_keyring(self.path), **self.given}
        self._seen = stamp

    def get(self, key_id: str) -> ProducerKey | None:
        if key_id not in self.keys:
            with contextlib.suppress(ValueError):  # half-edited by hand: keep what we had
                self._reload()
        return self.keys.get(key_id)

    def with_keys(self, keys: Mapping[str, ProducerKey]) -> EventKeyring:
        return EventKeyring(self.path, {**self.given, **keys})

    def to_plain(self) -> dict[str, tuple[str, bytes]]:
        """Plain values (for a worker process to rebuild it: ``from_plain``)."""
        self._reload()
        return {k: (v.producer, _raw(v.public_key)) for k, v in self.keys.items()}

    @classmethod
    def from_plain(cls, plain: Mapping[str, tuple[str, bytes]]) -> EventKeyring:
        return cls(None, {k: ProducerKey(p, Ed25519PublicKey.from_public_bytes(raw))
                          for k, (p, raw) in plain.items()})  # fmt: skip

    def open(self, data: bytes) -> envelope_pb2.EventEnvelope:
        """The envelope in ``data`` once its producer's signature verifies over it and
        that producer may sign its event; ``BadEvent`` (a ``CodecError``) if not."""
        try:
            envelope: envelope_pb2.EventEnvelope = envelope_pb2.EventEnvelope.FromString(data)
        except DecodeError as exc:
            raise CodecError("not an EventEnvelope") from exc
        self.check(data, envelope)
        return envelope

    def decode(self, data: bytes) -> tuple[envelope_pb2.EventEnvelope, Recorded]:
        """``codec.decode_envelope`` of a verified envelope."""
        envelope = self.open(data)
        return envelope, decode_event(envelope.type, envelope.type_version, envelope.payload)

    def check(
        self, data: bytes, envelope: envelope_pb2.EventEnvelope, *, verify: bool = True
    ) -> None:
        """Returns only if ``data`` (which parses to ``envelope``) is signed by a key
        this keyring holds, of a producer allowed to sign its event. ``verify=False``
        checks all of that but the Ed25519 signature itself: only for bytes whose
        signature was verified before and that are known to be the same bytes (the
        audit of a chain the recorder verified as it stored it)."""
        try:
            self._check(data, envelope, verify)
        except BadEvent as exc:
            exc.stream_id, exc.version = envelope.stream_id, int(envelope.stream_version)
            metrics.event_refused(exc.why)
            raise

    def _check(self, data: bytes, envelope: envelope_pb2.EventEnvelope, verify: bool) -> None:
        # Every event read is checked here: its name is written only for a refusal.
        def name() -> str:
            kind = envelope.type or "an event"
            return f"{kind} #{envelope.stream_version} of {envelope.stream_id!r}"

        if envelope.envelope_version != ENVELOPE_VERSION or not envelope.producer_key_id:
            raise BadEvent(
                "unsigned",
                f"{name()} is not signed by its producer (envelope version "
                f"{envelope.envelope_version})",
            )
        if (
            len(data) < SEALED_TAIL
            or data[-SEALED_TAIL:-SIGNATURE_SIZE] != TRAILER
            or envelope.signature != data[-SIGNATURE_SIZE:]
        ):
            raise BadEvent("unsigned", f"{name()}: its signature is not the envelope's last field")
        key = self.get(envelope.producer_key_id)
        if key is None:
            raise BadEvent(
                "unknown_key", f"{name()}: signed under unknown key {envelope.producer_key_id!r}"
            )
        if verify and not key.verify(envelope.signature, data[:-SEALED_TAIL]):
            raise BadEvent(
                "bad_signature",
                f"{name()}: the signature does not verify under key {envelope.producer_key_id!r}",
            )
        if not envelope.producer_key_id.startswith(f"{key.producer}-") or not may_sign(
            key.producer, envelope.stream_id, envelope.type
        ):
            raise BadEvent(
                "not_allowed", f"{name()}: signed by {key.producer!r}, which may not sign it"
            )


# --- files -----------------------------------------------------------------------------


def _raw(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def read_keyring(path: Path) -> dict[str, ProducerKey]:
    """The keyring file at ``path`` (missing: empty); ``ValueError`` naming the file for
    anything but ``{key_id: {"producer": str, "public_key": base64 raw Ed25519}}``."""
    try:
        data = read_bytes(path, "event keyring", KEYRING_FIX)
    except FileNotFoundError:
        return {}
    try:
        entries = json.loads(data.decode("utf-8"))
    except ValueError:  # not UTF-8, or not JSON
        raise BadFile(path, "the event keyring is not JSON", KEYRING_FIX) from None
    if not isinstance(entries, dict):
        raise BadFile(path, "the event keyring is not a JSON object {key_id: entry}", KEYRING_FIX)
    keys = {}
    for key_id, entry in entries.items():
        try:
            if "private" in entry or not isinstance(entry["producer"], str):
                raise ValueError
            raw = base64.b64decode(str(entry["public_key"]), validate=True)
            keys[str(key_id)] = ProducerKey(
                entry["producer"], Ed25519PublicKey.from_public_bytes(raw)
            )
        except (TypeError, KeyError, binascii.Error, ValueError):
            raise BadFile(
                path,
                f"the event keyring's key {key_id!r} is not "
                '{"producer": ..., "public_key": base64 raw Ed25519}',
                KEYRING_FIX,
            ) from None
    return keys


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer of the keyring at a time (producers starting at once each add a key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _holds(current: Mapping[str, ProducerKey], path: Path, key_id: str, key: ProducerKey) -> bool:
    """True when the keyring holds ``key_id`` as ``key``; refuses an id naming another."""
    known = current.get(key_id)
    if known is None:
        return False
    if _raw(known.public_key) != _raw(key.public_key) or known.producer != key.producer:
        raise ValueError(f"event keyring {path}: key id {key_id!r} names another key")
    return True


def publish_key(path: Path, key_id: str, key: ProducerKey) -> None:
    """Add ``key_id`` to the keyring at ``path``, keeping every other key; refuses an id
    that names another key. The file is replaced whole, never seen half written. A key
    already there is not written again: a keyring mounted read-only (a Kubernetes
    ConfigMap) that holds the producer's key is all it needs."""
    if path.is_file() and _holds(read_keyring(path), path, key_id, key):
        return
    with _locked(path):
        current = read_keyring(path)
        if _holds(current, path, key_id, key):
            return
        current[key_id] = key
        entries = {
            k: {"producer": v.producer, "public_key": base64.b64encode(_raw(v.public_key)).decode()}
            for k, v in sorted(current.items())
        }
        fd, temporary = tempfile.mkstemp(prefix=".event-keyring-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(entries, out, indent=2)
                out.write("\n")
            os.chmod(temporary, 0o644)  # public: anyone may read it
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def load_signer(path: Path, producer: str) -> EventSigner:
    data = read_bytes(path, "event signing key", SIGNING_KEY_FIX)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise BadFile(
            path, "the event signing key is not a PEM private key", SIGNING_KEY_FIX
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise BadFile(path, "the event signing key is not an Ed25519 key", SIGNING_KEY_FIX)
    return EventSigner.of(producer, key)


def ensure_signer(settings: KeySettings, producer: str) -> EventSigner:
    """``producer``'s signing key (created when missing, mode 0600 in a 0700 directory;
    one creator wins when several start at once), its public key added to the keyring."""
    if producer not in PRODUCERS:
        raise ValueError(f"{producer!r} publishes no events; producers: {', '.join(PRODUCERS)}")
    path = settings.event_signing_key_path(producer)
    ensure_ed25519_key(path)
    signer = load_signer(path, producer)
    publish_key(settings.event_keyring_path, signer.key_id, signer.public)
    return signer


def event_keyring(settings: KeySettings) -> EventKeyring:
    """The keyring consumers verify events with (public keys only; never created here)."""
    return EventKeyring(settings.event_keyring_path)


def ensure_event_keys(settings: KeySettings) -> None:
    """Every producer's key and the keyring (``ddz up`` at start, a fresh data dir).
    With ``DDZ_EVENT_SIGNING_KEY`` set the key is one producer's own: none made here."""
    if settings.event_signing_key_file is None:
        for producer in PRODUCERS:
            ensure_signer(settings, producer)
