"""Rooms are configuration (RULES.md §11): variant, initial multiplier, N / rake / cap /
fee, minimum balance to join, how long a queued player waits before bots fill the
empty seats, and a turn's seconds (``turn_seconds``; absent: ``DDZ_TURN_TIMEOUT``).

``load_rooms(path)`` reads a TOML file (or JSON, by the ``.json`` suffix) with a top
level ``opening_balance`` and a list ``rooms``; ``path`` None reads ``rooms.toml`` next
to this module (one room per variant). Every mistake is a ``ValueError`` naming the
file, the room and the key, so the service stops at start with one clear line.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ddz.domain import ids
from ddz.domain.ruleset import RuleSet, ruleset_for
from ddz.domain.settlement import BeanEscapeRule, RoomSettings

DEFAULT_ROOMS_FILE = Path(__file__).parents[1] / "rooms.toml"
FIX = "correct it (docs/CONFIG.md, DDZ_ROOMS_FILE), or unset DDZ_ROOMS_FILE for the rooms shipped"
DEFAULT_BOT_FILL_WAIT = 5.0
MAX_BOT_FILL_WAIT = 3600.0

SETTING_KEYS = frozenset(f.name for f in fields(RoomSettings)) - {"bean_escape"}
ESCAPE_KEYS = frozenset(f.name for f in fields(BeanEscapeRule))
ROOM_KEYS = (
    frozenset({"id", "name", "variant", "bot_fill_wait", "bean_escape", "turn_seconds"})
    | SETTING_KEYS
)
MIN_TURN_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Room:
    room_id: str
    name: str
    rules: RuleSet
    settings: RoomSettings
    bot_fill_wait: float
    turn_seconds: float | None = None  # None: DDZ_TURN_TIMEOUT


@dataclass(frozen=True, slots=True)
class Rooms:
    rooms: tuple[Room, ...]
    opening_balance: int

    def get(self, room_id: str) -> Room | None:
        return next((room for room in self.rooms if room.room_id == room_id), None)


def load_rooms(path: Path | None = None) -> Rooms:
    source = path or DEFAULT_ROOMS_FILE
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ValueError(f"rooms file {source}: cannot read it ({why}); {FIX}") from None
    except UnicodeDecodeError:
        raise ValueError(f"rooms file {source}: not text (UTF-8); {FIX}") from None
    try:
        data = json.loads(text) if source.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"rooms file {source}: {exc}; {FIX}") from None
    try:
        return parse_rooms(data, f"rooms file {source}")
    except ValueError as exc:
        raise ValueError(f"{exc}; {FIX}") from None


def parse_rooms(data: Any, source: str = "rooms") -> Rooms:
    if not isinstance(data, Mapping):
        raise ValueError(f"{source}: expected a table with 'opening_balance' and 'rooms'")
    unknown = set(data) - {"opening_balance", "rooms"}
    if unknown:
        raise ValueError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}")
    opening = data.get("opening_balance", 0)
    if isinstance(opening, bool) or not isinstance(opening, int) or opening < 0:
        raise ValueError(f"{source}: opening_balance must be a whole number >= 0")
    items = data.get("rooms")
    if not isinstance(items, list) or not items:
        raise ValueError(f"{source}: 'rooms' must be a non-empty list of rooms")
    rooms = tuple(_room(item, f"{source}: room {n + 1}") for n, item in enumerate(items))
    ids = [room.room_id for room in rooms]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"{source}: room id(s) used twice: {', '.join(duplicates)}")
    return Rooms(rooms, opening)


def _room(item: Any, where: str) -> Room:
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: a room is a table of keys")
    room_id = item.get("id")
    if not ids.is_name(room_id):
        raise ValueError(f"{where}: 'id' must be {ids.NAME_RULE}")
    where = f"{where} ({room_id!r})"
    unknown = set(item) - ROOM_KEYS
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(ROOM_KEYS))})"
        )
    try:
        rules = ruleset_for(str(item.get("variant", "")))
        escape = item.get("bean_escape", {})
        if not isinstance(escape, Mapping) or set(escape) - ESCAPE_KEYS:
            raise ValueError(f"bean_escape takes {', '.join(sorted(ESCAPE_KEYS))}")
        settings = RoomSettings(
            **{key: item[key] for key in SETTING_KEYS if key in item},
            bean_escape=BeanEscapeRule(**escape),
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    wait = item.get("bot_fill_wait", DEFAULT_BOT_FILL_WAIT)
    if (
        isinstance(wait, bool)
        or not isinstance(wait, int | float)
        or not (0 <= wait <= MAX_BOT_FILL_WAIT)
    ):
        raise ValueError(f"{where}: bot_fill_wait must be 0..{MAX_BOT_FILL_WAIT:g} seconds")
    name = item.get("name", room_id)
    if not isinstance(name, str):
        raise ValueError(f"{where}: 'name' must be text")
    turn = item.get("turn_seconds")
    if turn is not None and (
        isinstance(turn, bool) or not isinstance(turn, int | float) or not turn >= MIN_TURN_SECONDS
    ):
        raise ValueError(
            f"{where}: turn_seconds must be a number of seconds >= {MIN_TURN_SECONDS:g}"
        )
    return Room(room_id, name, rules, settings, float(wait), None if turn is None else float(turn))


def check_turn_seconds(rooms: Rooms, most: float) -> None:
    """A room's turn may not be longer than ``DDZ_TURN_TIMEOUT`` (``most``): the bot
    service's stall watchdog times a hand's turn out after that and ``DDZ_STALL_MARGIN``."""
    for room in rooms.rooms:
        if room.turn_seconds is not None and room.turn_seconds > most:
            raise ValueError(
                f"room {room.room_id!r}: turn_seconds {room.turn_seconds:g} is above "
                f"DDZ_TURN_TIMEOUT ({most:g}), which the bot's stall watchdog uses: raise "
                "DDZ_TURN_TIMEOUT to the longest room's turn"
            )
