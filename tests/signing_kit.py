"""Event signing keys for tests that publish or read events without a suite: one test
key per producer (made in this process, never written anywhere) and the keyring of
their public halves. Tests on a suite use the suite's own keys instead
(``ensure_signer(suite.settings, name)``, ``event_keyring(suite.settings)``), as its
services find them in its data dir."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters.event_signing import PRODUCERS, EventKeyring, EventSigner, may_sign
from ddz.v1 import envelope_pb2

SIGNERS = {name: EventSigner.of(name, Ed25519PrivateKey.generate()) for name in PRODUCERS}
DEALER, RULES, TABLE = SIGNERS["dealer"], SIGNERS["rules"], SIGNERS["table"]
KEYRING = EventKeyring(keys={signer.key_id: signer.public for signer in SIGNERS.values()})


def signer_for(stream_id: str, event_type: str) -> EventSigner:
    """The producer's key that may sign this event (the rules for most hand events)."""
    return next(s for s in (RULES, DEALER, TABLE) if may_sign(s.producer, stream_id, event_type))


def sealed(data: bytes | envelope_pb2.EventEnvelope) -> bytes:
    """``data`` (unsigned envelope bytes, or a message) signed by its producer."""
    envelope = envelope_pb2.EventEnvelope.FromString(data) if isinstance(data, bytes) else data
    return signer_for(envelope.stream_id, envelope.type).seal(envelope)


def tampered(data: bytes) -> bytes:
    """Signed ``data`` with one field changed and its signature kept (a forger's edit)."""
    envelope = envelope_pb2.EventEnvelope.FromString(data)
    envelope.ClearField("signature")
    envelope.causation_id += "!"
    return envelope.SerializeToString() + data[-66:]
