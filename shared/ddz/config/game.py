"""The game's clocks, the table's rooms and abuse limits, and the bots:
``DDZ_TURN_TIMEOUT`` and the other clocks, ``DDZ_ROOMS_FILE``, ``DDZ_SEAT_*``,
``DDZ_JOIN_*``, ``DDZ_MOVE_*``, ``DDZ_TABLE_ADVERTISE``, ``DDZ_BOT_*``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ddz.environment import float_of, host_port_of, int_of, path_of
from ddz.player_kinds import DEFAULT_PLAYER, PLAYER_KINDS

BOT_PARTITIONS_MAX = 64
"""A bot partition is whole subject buckets (``ddz.adapters.messaging.subjects.BUCKETS``,
64): no more partitions than buckets."""


@dataclass(frozen=True, slots=True)
class ClockSettings:
    """How long a turn, a dropped stream and a stalled hand may last (table and bot)."""

    turn_timeout: float = 20.0  # a turn's seconds (a room's own turn_seconds at most this)
    timeouts_to_autoplay: int = 2  # timeouts in a row that put a seat in auto-play; 0: never
    autoplay_turn_timeout: float = 3.0  # a turn's seconds in auto-play (at most turn_timeout)
    reconnect_grace: float = 30.0  # a dropped stream not back this long: disconnected
    stall_margin: float = 5.0  # a hand idle turn_timeout + this long: its seat on turn is dropped


def clocks_from_env(env: Mapping[str, str]) -> ClockSettings:
    return ClockSettings(
        turn_timeout=float_of(env, "DDZ_TURN_TIMEOUT", 20.0),
        timeouts_to_autoplay=int_of(env, "DDZ_TIMEOUTS_TO_AUTOPLAY", 2, low=0, high=100),
        autoplay_turn_timeout=float_of(env, "DDZ_AUTOPLAY_TURN_TIMEOUT", 3.0),
        reconnect_grace=float_of(env, "DDZ_RECONNECT_GRACE", 30.0),
        stall_margin=float_of(env, "DDZ_STALL_MARGIN", 5.0),
    )


@dataclass(frozen=True, slots=True)
class TableSettings:
    """The table service's rooms, seat tokens and abuse limits (docs/SECURITY.md "Abuse
    limits"), and where its other instances dial it."""

    rooms_file: Path | None = None  # None: the rooms shipped with the table service
    seat_token_ttl: float = 15 * 60.0  # DDZ_SEAT_TOKEN_TTL: seconds a seat token lasts
    join_rate: float = 1.0  # DDZ_JOIN_RATE: a player's JoinRoom/RefreshSeatToken per second
    join_burst: int = 10  # DDZ_JOIN_BURST: ...and how many at once
    move_rate: float = 20.0  # DDZ_MOVE_RATE: a player's moves and hints per second
    move_burst: int = 100  # DDZ_MOVE_BURST: ...and how many at once
    seat_streams: int = 4  # DDZ_SEAT_STREAMS: WatchHand streams open at once per seat
    # DDZ_TABLE_ADVERTISE: host:port the other table instances dial this one at while it
    # is the active one; "": where it listens (loopback for a wildcard host).
    table_advertise: str = ""


def table_from_env(env: Mapping[str, str]) -> TableSettings:
    return TableSettings(
        rooms_file=path_of(env, "DDZ_ROOMS_FILE"),
        seat_token_ttl=float_of(env, "DDZ_SEAT_TOKEN_TTL", 15 * 60.0),
        join_rate=float_of(env, "DDZ_JOIN_RATE", 1.0),
        join_burst=int_of(env, "DDZ_JOIN_BURST", 10, low=1, high=1_000_000),
        move_rate=float_of(env, "DDZ_MOVE_RATE", 20.0),
        move_burst=int_of(env, "DDZ_MOVE_BURST", 100, low=1, high=1_000_000),
        seat_streams=int_of(env, "DDZ_SEAT_STREAMS", 4, low=1, high=1000),
        table_advertise=host_port_of(env, "DDZ_TABLE_ADVERTISE"),
    )


@dataclass(frozen=True, slots=True)
class BotSettings:
    bot_player: str = DEFAULT_PLAYER  # one of ddz.player_kinds.PLAYER_KINDS
    bot_max_ms: float = 250.0  # wall-clock cap on one strong-bot decision
    bot_partitions: int = 1  # DDZ_BOT_PARTITIONS: >1 shares the hands among bot instances


def bot_from_env(env: Mapping[str, str]) -> BotSettings:
    bot_player = env.get("DDZ_BOT_PLAYER", "").strip().lower() or DEFAULT_PLAYER
    if bot_player not in PLAYER_KINDS:
        raise ValueError(
            f"DDZ_BOT_PLAYER must be one of {', '.join(PLAYER_KINDS)}, got {bot_player!r}"
        )
    return BotSettings(
        bot_player=bot_player,
        bot_max_ms=float_of(env, "DDZ_BOT_MAX_MS", 250.0),
        bot_partitions=int_of(env, "DDZ_BOT_PARTITIONS", 1, low=1, high=BOT_PARTITIONS_MAX),
    )
