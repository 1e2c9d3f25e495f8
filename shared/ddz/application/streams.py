"""Stream ids and their buckets, as plain values: what a use case reads of a stream id.

A stream id is ``<category>-<id>`` (``hand-7f3a…``, ``table-12``; ``stream_parts``). Its
entity's bucket, ``crc32(id) % BUCKETS`` (``bucket_of``), is part of every subject of the
stream (``ddz.adapters.messaging.subjects``), and a hand's partition of ``count`` is its
bucket modulo ``count`` (``partition_of``): the bot's partitions and the rules routing's
key. Never changed: a reader of the stream computes a stream's bucket from its id.
"""

from __future__ import annotations

import re
import zlib

BUCKETS = 64
"""Buckets of the subject layout. Part of every subject: never changed (a reader of the
stream computes a stream's bucket from its id)."""

_STREAM_ID = re.compile(r"([a-z][a-z_]*)-([A-Za-z0-9_-]+)")


def stream_parts(stream_id: str) -> tuple[str, str]:
    """``("hand", "7f3a")`` for ``"hand-7f3a"``."""
    match = _STREAM_ID.fullmatch(stream_id)
    if not match:
        raise ValueError(
            f"stream id {stream_id!r} must look like <category>-<id> "
            "(category a-z_, id letters, digits, _ or -)"
        )
    return match.group(1), match.group(2)


def bucket_of(entity_id: str) -> int:
    """The subject bucket of a stream's entity (``crc32(id) % BUCKETS``)."""
    return zlib.crc32(entity_id.encode()) % BUCKETS


def partition_of(hand_id: str, count: int) -> int:
    """The partition of ``count`` that ``hand_id`` belongs to: its subject bucket modulo
    ``count`` (the bot's partitions, ``DDZ_BOT_PARTITIONS``; the rules routing's key)."""
    return bucket_of(hand_id) % count
