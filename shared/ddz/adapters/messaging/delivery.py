"""The values a publish returns and a consumer's handler gets: the answer to a publish,
one message of an atomic batch, a delivered message and what its reply subject says of
its delivery, and ``Reject`` for a message that can never be processed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from nats.aio.msg import Msg

from ddz.adapters.messaging.server import MSG_ID


class Reject(Exception):
    """Raise from a handler for a message that can never be processed (it is terminated
    at once, not redelivered). Any other exception means "try again later"."""


class DeliveryTokens(NamedTuple):
    """What a JetStream message's reply subject says of its delivery."""

    delivered: int  # times it was delivered, this one included
    stream_seq: int
    pending: int  # messages of the stream the consumer has not sent yet: its lag


def delivery_of(reply: str | None) -> DeliveryTokens | None:
    """The delivery a JetStream message's reply subject describes
    (``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>``,
    with a domain and an account hash after ``ACK`` and a token at the end on newer
    servers), None if it is not one (a test's hand-made message). ``Msg.metadata`` without
    its timestamp's datetime, which costs more than the rest of a message's handling."""
    tokens = (reply or "").split(".")
    if len(tokens) < 9 or tokens[0] != "$JS" or tokens[1] != "ACK":
        return None
    at = 0 if len(tokens) == 9 else 2
    try:
        return DeliveryTokens(int(tokens[4 + at]), int(tokens[5 + at]), int(tokens[8 + at]))
    except ValueError:
        return None


def delivery_from(msg: Msg) -> DeliveryTokens:
    """``delivery_of`` the message's reply, else what nats-py reads of it (``Msg.metadata``,
    which raises if the message did not come from JetStream)."""
    tokens = delivery_of(msg.reply)
    if tokens is None:
        meta = msg.metadata
        tokens = DeliveryTokens(meta.num_delivered, meta.sequence.stream, meta.num_pending)
    return tokens


@dataclass(frozen=True, slots=True)
class Published:
    """JetStream's answer to a publish: the stream sequence, and whether it was a duplicate."""

    seq: int
    duplicate: bool


@dataclass(frozen=True, slots=True)
class BatchMessage:
    """One message of an atomic batch. ``expected_last_subject_seq`` (with its filter
    ``expected_subject``) is checked against the stream as it was before the batch, so
    only the first message of each filter's side should carry it."""

    subject: str
    envelope: bytes
    event_id: str
    expected_last_subject_seq: int | None = None
    expected_subject: str | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message handed to a durable subscription's handler."""

    subject: str
    data: bytes
    headers: Mapping[str, str]
    stream_seq: int
    num_delivered: int

    @property
    def event_id(self) -> str:
        return self.headers.get(MSG_ID, "")


Handler = Callable[[Delivery], Awaitable[None]]
