"""A hand's events read from the bus into its fold (``ddz.application.hand_fold``): one
envelope as an entry (``entry_of``), the whole hand read straight from JetStream
(``read_fold``), and what becomes of an event offered to a feed (``Verdict``)."""

from __future__ import annotations

import enum

from ddz.adapters.codec import decode_event
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.security.event_signing import EventKeyring
from ddz.application.hand_fold import Entry, HandFold
from ddz.v1 import envelope_pb2


def entry_of(envelope: envelope_pb2.EventEnvelope) -> Entry:
    """The entry of a parsed envelope (``CodecError`` if its event does not decode)."""
    event = decode_event(envelope.type, envelope.type_version, envelope.payload)
    return Entry(int(envelope.stream_version), envelope, event)


async def read_fold(
    bus: EventBus,
    hand_id: str,
    *,
    keep_log: bool = False,
    archive: hand_stream.HandArchive | None = None,
    keyring: EventKeyring,
) -> HandFold | None:
    """The hand read straight from JetStream, folded (None: no such hand on the bus).
    ``ValueError`` when ``hand_id`` cannot be a hand id; ``HandAgedOut`` (a NOT_FOUND
    refusal) when the bus no longer has its first events and ``archive`` is not given."""
    read, _cursor = await hand_stream.read(bus, hand_id, archive, keyring=keyring)
    if not read:
        return None
    fold = HandFold(hand_id, keep_log)
    for item in read:
        fold.offer(Entry(int(item.envelope.stream_version), item.envelope, item.event))
    return fold


class Verdict(enum.Enum):
    """What the feed tells JetStream about one message it was given."""

    ACK = "ack"  # applied (or a duplicate, or not ours): never again
    NAK = "nak"  # failed: again after a delay
    TERM = "term"  # never applicable (not an envelope), or failed too often
