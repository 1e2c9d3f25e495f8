"""Seat commands <-> protobuf: the ``command`` oneof of a DecideRequest and of a
recorded ``CommandRejected``, and rank-count card notation.

``command_from_pb`` decodes what is stored as it always was (replays never change);
``command_from_request`` and ``play_counts`` are for commands arriving now, and refuse
an empty play as malformed cards wherever it enters.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from ddz.domain.cards import NUM_RANKS, CardNotationError, format_counts, parse_ranks
from ddz.domain.hand import (
    Bid,
    Command,
    CommandRejected,
    Disconnect,
    Escape,
    Pass,
    Play,
    Reconnect,
    RejectReason,
    Resume,
    SeatCommand,
    ShowCards,
    TimeOut,
)
from ddz.v1 import hand_events_pb2 as pb

from .errors import CodecError, MalformedCards
from .values import (
    _BID_ACTION,
    _DISCONNECT_REASON,
    _opt,
    ms_from_timestamp,
    ms_to_timestamp,
    reading_from_pb,
    reading_to_pb,
)

COMMAND_FIELD = "command"
"""The oneof of DecideRequest and CommandRejected that holds the command."""

_COMMAND_TYPES: dict[type[Any], str] = {
    Bid: "bid",
    ShowCards: "show_cards",
    Play: "play",
    Pass: "pass",
    Disconnect: "disconnect",
    Reconnect: "reconnect",
    Escape: "escape",
    TimeOut: "time_out",
    Resume: "resume",
}


def command_type(command: Command) -> str:
    """The oneof field name of a command: "bid", "play", ..."""
    try:
        return _COMMAND_TYPES[type(command)]
    except KeyError:
        raise CodecError(f"{type(command).__name__} is not sent to the rules service") from None


def command_to_pb(command: Command) -> tuple[str, Message]:
    """(oneof field name, its message) for a command; the seat travels beside it."""
    match command:
        case Bid():
            return "bid", pb.BidCommand(
                action=_BID_ACTION.encode(command.action), score=command.score,
                by_bot=command.by_bot,
            )  # fmt: skip
        case ShowCards():
            msg = pb.ShowCardsCommand()
            if command.cards_held is not None:
                msg.cards_held = command.cards_held
            return "show_cards", msg
        case Play():
            play = pb.PlayCommand(cards=format_rank_counts(command.cards), by_bot=command.by_bot)
            if command.declared is not None:
                play.declared.CopyFrom(reading_to_pb(command.declared))
            return "play", play
        case Pass():
            return "pass", pb.PassCommand(by_bot=command.by_bot)
        case Disconnect():
            return "disconnect", pb.DisconnectCommand(
                reason=_DISCONNECT_REASON.encode(command.reason)
            )
        case Reconnect():
            return "reconnect", pb.ReconnectCommand()
        case Escape():
            return "escape", pb.EscapeCommand()
        case TimeOut():
            return "time_out", pb.TimeOutCommand(
                deadline=ms_to_timestamp(command.deadline_ms), turn_seconds=command.turn_seconds,
                auto_play_after=command.auto_play_after,
            )  # fmt: skip
        case Resume():
            return "resume", pb.ResumeCommand()
    raise CodecError(f"{type(command).__name__} is not sent to the rules service")


def set_command(target: Message, command: Command) -> None:
    """Fill the ``command`` oneof of a DecideRequest or CommandRejected."""
    name, msg = command_to_pb(command)
    getattr(target, name).CopyFrom(msg)


def command_from_pb(seat: int, source: Message) -> SeatCommand:
    """The domain command in the ``command`` oneof of a DecideRequest or CommandRejected.

    ``CodecError`` when there is none or it is malformed (``MalformedCards`` for card
    notation). The seat is not checked here: an unknown seat is the rules' refusal.
    """
    which = source.WhichOneof(COMMAND_FIELD)
    if which is None:
        raise CodecError("no command given (one of bid, show_cards, play, pass, ...)")
    body = getattr(source, which)
    match which:
        case "bid":
            if body.action == 0:
                raise CodecError("a bid needs an action (pass, call or grab)")
            return Bid(seat, _BID_ACTION.decode(body.action), body.score, body.by_bot)
        case "show_cards":
            return ShowCards(seat, _opt(body, "cards_held"))
        case "play":
            declared = reading_from_pb(body.declared) if body.HasField("declared") else None
            return Play(seat, parse_rank_counts(body.cards), declared, body.by_bot)
        case "pass":
            return Pass(seat, body.by_bot)
        case "disconnect":
            return Disconnect(seat, _DISCONNECT_REASON.decode_optional(body.reason))
        case "time_out":
            return TimeOut(
                seat, ms_from_timestamp(body.deadline), body.turn_seconds, body.auto_play_after
            )
        case "resume":
            return Resume(seat)
        case "reconnect":
            return Reconnect(seat)
        case "escape":
            return Escape(seat)
    raise CodecError(f"unknown command {which!r}")  # pragma: no cover - oneof is closed


NO_CARDS = "no cards given: to pass, send pass"
"""Why a play that names no card is malformed, wherever it enters."""


def command_from_request(seat: int, request: Message) -> SeatCommand:
    """The command a DecideRequest carries now: ``command_from_pb``, and an empty play
    is ``MalformedCards`` (as at the table's Play), not a play the rules refuse.

    Stored commands are decoded by ``command_from_pb`` alone: a ``CommandRejected``
    recorded with an empty play still reads back as it was written.
    """
    command = command_from_pb(seat, request)
    if isinstance(command, Play) and not any(command.cards):
        raise MalformedCards(NO_CARDS)
    return command


def play_counts(text: str) -> tuple[int, ...]:
    """The rank counts of a play's card text; ``MalformedCards`` if it is not
    notation or names no card (a pass is its own command)."""
    counts = parse_rank_counts(text)
    if not any(counts):
        raise MalformedCards(NO_CARDS)
    return counts


MAX_CARD_TEXT = 256  # more than any hand (ct: 30 cards); longer text is not a play


def parse_rank_counts(text: str) -> tuple[int, ...]:
    """Rank notation (§1) -> counts, or ``MalformedCards`` with a one-line reason."""
    counts = _COUNTS.get(text)
    if counts is None:
        counts = _parse_rank_counts(text)
        if len(_COUNTS) >= _COUNTS_MAX:
            _COUNTS.clear()
        _COUNTS[text] = counts
    return counts


# The same few plays are sent and refused over and over ("3", "33", "JQKA2" ...).
_COUNTS: dict[str, tuple[int, ...]] = {}
_COUNTS_MAX = 4096


def _parse_rank_counts(text: str) -> tuple[int, ...]:
    if len(text) > MAX_CARD_TEXT:
        raise MalformedCards(f"card text too long ({len(text)} characters)")
    try:
        counts = parse_ranks(text)
    except CardNotationError as exc:
        raise MalformedCards(str(exc)) from None
    if len(counts) != NUM_RANKS:  # pragma: no cover - parse_ranks always gives 15
        raise MalformedCards("cards must be 15 rank counts")
    return counts


def format_rank_counts(counts: tuple[int, ...]) -> str:
    """Counts -> canonical rank notation (low rank first)."""
    return format_counts(counts)


def _rejected_to_pb(e: CommandRejected) -> pb.CommandRejected:
    msg = pb.CommandRejected(
        seat=e.seat,
        command_type=command_type(e.command),
        reason=e.reason.value,
        message=e.message,
        request_id=e.request_id,
    )
    set_command(msg, e.command)
    return msg


def _rejected_from_pb(m: pb.CommandRejected) -> CommandRejected:
    command = command_from_pb(m.seat, m)
    if command_type(command) != m.command_type:
        raise CodecError(f"command_type {m.command_type!r} does not match the command")
    reason = _REASONS.get(m.reason)
    if reason is None:
        raise CodecError(f"unknown reject reason {m.reason!r}")
    return CommandRejected(command, reason, m.message, m.request_id)


_REASONS = {reason.value: reason for reason in RejectReason}
