"""What the recorder's use cases need from outside, beside the event store
(``ddz.application.event_store.EventStore``): the producers' keys every arrived event is
verified with (``ddz.adapters.security.event_signing.EventKeyring``)."""

from __future__ import annotations

from typing import Protocol

from ddz.v1 import envelope_pb2


class SignedEnvelopes(Protocol):
    def open(self, data: bytes) -> envelope_pb2.EventEnvelope:
        """The envelope ``data``, once its producer's signature is verified and that
        producer may sign its event; raises ``BadEvent`` if not, ``CodecError`` for bytes
        that are not an envelope (``ddz.application.bad_events``)."""
        ...
