"""Rooms are configuration (RULES.md §11): the shipped rooms file and the
clear errors of a bad one."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from ddz.domain.ruleset import VARIANTS, Scoring

from services.table.use_cases.rooms import (
    DEFAULT_ROOMS_FILE,
    check_turn_seconds,
    load_rooms,
    parse_rooms,
)


def test_the_shipped_rooms_have_one_room_per_variant() -> None:
    rooms = load_rooms(None)
    assert [room.rules.name for room in rooms.rooms] == list(VARIANTS)
    assert rooms.opening_balance > 0
    ct = rooms.get("ct")
    assert ct is not None and ct.settings.rake == Fraction(1, 20) and ct.settings.cap
    for room in rooms.rooms:
        if room.rules.scoring is Scoring.BEANS:  # bean rooms ask a minimum the opening meets
            assert 0 < room.settings.min_balance <= rooms.opening_balance
    assert DEFAULT_ROOMS_FILE.name == "rooms.toml"


def test_json_rooms(tmp_path: Path) -> None:
    path = tmp_path / "rooms.json"
    path.write_text(json.dumps({"opening_balance": 5, "rooms": [
        {"id": "b", "variant": "laizi", "coefficient": 1000, "fee": 50, "min_balance": 5,
         "bot_fill_wait": 0, "bean_escape": {"threshold": 12}},
    ]}))  # fmt: skip
    rooms = load_rooms(path)
    room = rooms.get("b")
    assert room is not None and room.name == "b" and room.bot_fill_wait == 0
    assert (room.settings.coefficient, room.settings.fee) == (1000, 50)
    assert room.settings.bean_escape.threshold == 12
    assert rooms.get("nope") is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"rooms": [{"id": "a", "variant": "classic", "rak": 1}]}, "unknown key.*rak"),
        ({"rooms": [{"id": "a", "variant": "chess"}]}, "unknown variant 'chess'"),
        ({"rooms": [{"id": "a b", "variant": "classic"}]}, "'id' must be"),
        ({"rooms": [{"id": "a", "variant": "ct", "rake": "2"}]}, "rake must be"),
        ({"rooms": [{"id": "a", "variant": "ct", "bot_fill_wait": -1}]}, "bot_fill_wait"),
        ({"rooms": [{"id": "a", "variant": "ct"}, {"id": "a", "variant": "ct"}]}, "twice"),
        ({"rooms": []}, "non-empty"),
        ({"rooms": [{"id": "a", "variant": "ct"}], "opening_balance": -1}, "opening_balance"),
        ({"rooms": [{"id": "a", "variant": "ct"}], "extra": 1}, "unknown key"),
        ({"rooms": [{"id": "a", "variant": "laizi", "bean_escape": {"x": 1}}]}, "bean_escape"),
    ],
)
def test_a_bad_rooms_file_names_the_room_and_the_key(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rooms(data, "rooms.toml")


def test_an_unreadable_or_broken_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read"):
        load_rooms(tmp_path / "missing.toml")
    broken = tmp_path / "rooms.toml"
    broken.write_text("[[rooms]\n")
    with pytest.raises(ValueError, match=str(broken)):
        load_rooms(broken)


def test_a_room_may_set_its_turn_seconds_up_to_the_turn_timeout() -> None:
    rooms = parse_rooms({
        "rooms": [
            {"id": "quick", "variant": "classic", "turn_seconds": 8},
            {"id": "plain", "variant": "ct"},
        ]
    })  # fmt: skip
    assert [room.turn_seconds for room in rooms.rooms] == [8.0, None]  # None: DDZ_TURN_TIMEOUT
    check_turn_seconds(rooms, 20.0)
    with pytest.raises(ValueError, match=r"room 'quick': turn_seconds 8 is above DDZ_TURN_TIMEOUT"):
        check_turn_seconds(rooms, 5.0)
    for bad in (0, 0.5, "10", True):
        with pytest.raises(ValueError, match=r"room 1 \('x'\): turn_seconds must be"):
            parse_rooms({"rooms": [{"id": "x", "variant": "classic", "turn_seconds": bad}]})
