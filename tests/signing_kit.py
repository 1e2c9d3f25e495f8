"""Event signing keys for tests that publish or read events without a suite: one test
key per producer (made in this process, never written anywhere) and the keyring of
their public halves. Tests on a suite use the suite's own keys instead
(``ensure_signer(suite.settings.keys, name)``, ``event_keyring(suite.settings.keys)``), as
its services find them in its data dir. ``hand_envelopes``: a self-played hand's events,
enveloped and signed as the services publish them."""

from __future__ import annotations

import random

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters.codec import envelope_for
from ddz.adapters.security.event_signing import PRODUCERS, EventKeyring, EventSigner, may_sign
from ddz.domain.players import GreedyPlayer
from ddz.domain.ruleset import CLASSIC
from ddz.domain.selfplay import play_hand
from ddz.domain.settlement import RoomSettings
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


def hand_envelopes(hand_id: str = "h1", seed: int = 5) -> list[bytes]:
    """Every event of a self-played hand, enveloped as the services publish them."""
    players = [GreedyPlayer(random.Random(seat)) for seat in range(3)]
    events, _ = play_hand(CLASSIC, RoomSettings(), players, bytes([seed]) * 32, hand_id=hand_id)
    return [
        sealed(envelope_for(f"hand-{hand_id}", version, event, "cause", "corr", "test",
                            event_id=f"{hand_id}-{version}"))
        for version, event in enumerate(events, start=1)
    ]  # fmt: skip
