"""The codec's refusals: bytes or a message that do not make a valid domain value."""

from __future__ import annotations

from ddz.application.errors import Kind, Reason, Refusal


class CodecError(Refusal, ValueError):
    """Bytes or a message that do not make a valid domain value: an invalid request."""

    REASON = Reason.INVALID_ARGUMENT

    def __init__(self, message: str) -> None:
        super().__init__(Kind.INVALID, self.REASON, message)


class MalformedCards(CodecError):
    """Card notation a command cannot be built from (``PlayCommand.cards``)."""

    REASON = Reason.MALFORMED_CARDS
