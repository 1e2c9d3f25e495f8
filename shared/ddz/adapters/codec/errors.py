"""The codec's refusals: bytes or a message that do not make a valid domain value."""

from __future__ import annotations

from ddz.application.bad_events import CodecError as CodecError
from ddz.application.errors import Reason


class MalformedCards(CodecError):
    """Card notation a command cannot be built from (``PlayCommand.cards``)."""

    REASON = Reason.MALFORMED_CARDS
