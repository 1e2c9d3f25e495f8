"""Why an event's bytes are refused, as plain errors a use case can catch: ``CodecError``,
bytes that do not make a valid domain value (``ddz.adapters.codec``), and ``BadEvent``, an
envelope not signed by a key allowed to sign it (``ddz.adapters.security.event_signing``,
which raises it)."""

from __future__ import annotations

from ddz.application.errors import Kind, Reason, Refusal


class CodecError(Refusal, ValueError):
    """Bytes or a message that do not make a valid domain value: an invalid request."""

    REASON = Reason.INVALID_ARGUMENT

    def __init__(self, message: str) -> None:
        super().__init__(Kind.INVALID, self.REASON, message)


class BadEvent(CodecError):
    """An envelope that is not signed, or not by a key allowed to sign it: refused by
    every consumer. ``why`` is one of ``unsigned``, ``unknown_key``, ``bad_signature``,
    ``not_allowed``; the message names the event, never a key."""

    def __init__(self, why: str, detail: str, stream_id: str = "", version: int = 0) -> None:
        super().__init__(detail)
        self.why = why
        self.stream_id = stream_id  # the event's claims, for log lines
        self.version = version
