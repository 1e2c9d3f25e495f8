"""The tamper-evident hash chain of a stream and the signature of its head.

Each stored event's ``hash`` is ``sha256(prev || envelope)`` where ``prev`` is the
previous event's hash of the same stream as 32 raw bytes (32 zero bytes for the first
event) and ``envelope`` the EventEnvelope bytes exactly as stored. Nothing is ever
re-serialised: the chain covers the bytes that were published.

A head signature is ``HMAC-SHA256(key, "ddz.v1/head\\n<stream_id>\\n<version>\\n<hash>")``
in hex: it pins the whole chain up to ``version`` to the holder of the operator's key.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

GENESIS_HASH = "0" * 64
"""``prev_hash`` of the first event of every stream."""

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
    """HMAC-SHA256 hex signature of a stream's head."""
    if not key:
        raise ValueError("the audit key is empty")
    message = head_message(stream_id, head_version, head_hash)
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def verify_head(
    key: bytes, stream_id: str, head_version: int, head_hash: str, signature: str
) -> bool:
    """Whether ``signature`` is the signature of this head under ``key`` (constant time)."""
    return hmac.compare_digest(sign_head(key, stream_id, head_version, head_hash), signature)
