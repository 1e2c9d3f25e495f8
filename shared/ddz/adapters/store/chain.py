"""The tamper-evident hash chain of a stream and the signature of its head.

Each stored event's ``hash`` is ``sha256(prev || envelope)`` where ``prev`` is the
previous event's hash of the same stream as 32 raw bytes (32 zero bytes for the first
event) and ``envelope`` the EventEnvelope bytes exactly as stored. Nothing is ever
re-serialised: the chain covers the bytes that were published.

A head signature covers the exact bytes of ``head_message``
(``"ddz.v1/head\\n<stream_id>\\n<version>\\n<hash>"``) and pins the whole chain up to
``version``. Heads are signed with Ed25519 (``ED25519``): the recorder alone holds the
private key, and anyone holding the public key can verify without being able to forge.
Hands recorded before that were signed with ``HMAC-SHA256`` (``HMAC_SHA256``), which
verifies only with the operator's secret key; those signatures stay checkable as they were.

Verifiers fail closed: they return nothing and raise ``InvalidSignature`` for any
signature that is not exactly the right one.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

# The chain's plain values are part of the store's contract (the use cases read them).
from ddz.application.event_store import ED25519 as ED25519
from ddz.application.event_store import GENESIS_HASH as GENESIS_HASH
from ddz.application.event_store import HMAC_SHA256 as HMAC_SHA256

SIGNATURE_DOMAIN = b"ddz.v1/head"


def chain_hash(prev_hash: str, envelope: bytes) -> str:
    """The hash of an event whose predecessor has ``prev_hash``."""
    return hashlib.sha256(bytes.fromhex(prev_hash) + envelope).hexdigest()


def first_broken_link(links: Iterable[tuple[str, str, bytes]]) -> int | None:
    """Index of the first ``(prev_hash, hash, envelope)`` that breaks the chain, or None.

    The links must be one stream's events in version order from version 1.
    """
    expected_prev = GENESIS_HASH
    for index, (prev_hash, own_hash, envelope) in enumerate(links):
        if prev_hash != expected_prev or chain_hash(prev_hash, envelope) != own_hash:
            return index
        expected_prev = own_hash
    return None


def head_message(stream_id: str, head_version: int, head_hash: str) -> bytes:
    return b"\n".join(
        (
            SIGNATURE_DOMAIN,
            stream_id.encode("utf-8"),
            str(head_version).encode(),
            head_hash.encode(),
        )
    )


def sign_head(key: bytes, stream_id: str, head_version: int, head_hash: str) -> str:
    """HMAC-SHA256 hex signature of a stream's head (the signatures of older hands)."""
    if not key:
        raise ValueError("the audit key is empty")
    message = head_message(stream_id, head_version, head_hash)
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def verify_head(
    key: bytes, stream_id: str, head_version: int, head_hash: str, signature: str
) -> bool:
    """Whether ``signature`` is the signature of this head under ``key`` (constant time)."""
    return hmac.compare_digest(sign_head(key, stream_id, head_version, head_hash), signature)


def check_hmac_head(
    key: bytes, stream_id: str, head_version: int, head_hash: str, signature: str
) -> None:
    """Returns only when ``signature`` is this head's HMAC under ``key``; else raises
    ``InvalidSignature`` (the fail-closed form of ``verify_head``)."""
    if not verify_head(key, stream_id, head_version, head_hash, signature):
        raise InvalidSignature("the HMAC of the head does not match")


def sign_head_ed25519(
    private_key: Ed25519PrivateKey, stream_id: str, head_version: int, head_hash: str
) -> str:
    """Ed25519 signature of a stream's head, in hex (128 characters). Deterministic:
    signing the same head again gives the same signature."""
    return private_key.sign(head_message(stream_id, head_version, head_hash)).hex()


def check_ed25519_head(
    public_key: Ed25519PublicKey, stream_id: str, head_version: int, head_hash: str,
    signature: str,
) -> None:  # fmt: skip
    """Returns only when ``signature`` is this head's Ed25519 signature by the holder of
    ``public_key``; else raises ``InvalidSignature`` (a malformed signature too)."""
    try:
        raw = bytes.fromhex(signature)
    except ValueError:
        raise InvalidSignature("the signature is not hex") from None
    if raw.hex() != signature:  # one spelling only: lower-case, no spaces
        raise InvalidSignature("the signature is not in canonical hex")
    public_key.verify(raw, head_message(stream_id, head_version, head_hash))
