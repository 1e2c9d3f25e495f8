"""Every id the suite takes (player, room, table, hand, staff) is matched whole
(``ddz.domain.ids``): ``re.match`` with ``$`` let ``"carol\\n"`` through, which then
looked like ``carol`` at the desk and in logs. Each place an id comes in refuses it."""

from __future__ import annotations

import time

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.access.staff_tokens import TokenError, issue_staff, verify_staff
from ddz.access.token_keys import LoginKey, LoginKeys
from ddz.access.tokens import TokenKeys, issue, verify
from ddz.adapters.messaging.subjects import stream_id_for, stream_parts, subject_for
from ddz.application.errors import Refusal
from ddz.domain import ids
from ddz.entrypoints.play_cmd import player_name

from services.console.use_cases.handlers import check_hand_id, check_player
from services.table.use_cases.rooms import parse_rooms
from services.table.use_cases.tables import TableError, check_id

LOGIN = LoginKey.of(Ed25519PrivateKey.generate())
KEYS = LoginKeys(None, {LOGIN.kid: LOGIN.private.public_key()})
TRAILING = ["carol\n", "carol\r\n", "\ncarol", "car\nol", "carol ", ""]


@pytest.mark.parametrize("value", TRAILING)
def test_the_grammar_refuses_a_trailing_newline(value: str) -> None:
    assert not ids.is_name(value) and not ids.is_hand_id(value)
    assert not ids.is_staff_name(value)
    assert ids.is_name("carol") and ids.is_hand_id("7f3a" * 8) and ids.is_staff_name("sam@ops")


@pytest.mark.parametrize("value", TRAILING)
def test_the_table_refuses_such_a_player_or_table_id(value: str) -> None:
    with pytest.raises(TableError, match="must be 1-64 letters"):
        check_id("player id", value)


def test_a_room_id_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ValueError, match="'id' must be"):
        parse_rooms({"rooms": [{"id": "classic\n", "variant": "classic"}]}, "rooms.toml")


def test_a_stream_id_or_event_type_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ValueError, match="must look like"):
        stream_parts("hand-7f3a\n")
    with pytest.raises(ValueError, match="must look like"):
        stream_id_for("hand", "7f3a\n")
    with pytest.raises(ValueError, match="subject token"):
        subject_for("hand-7f3a", "cards_played\n")
    assert stream_parts("hand-7f3a") == ("hand", "7f3a")


def test_a_player_token_whose_subject_ends_in_a_newline_is_refused() -> None:
    keys = TokenKeys(b"seat-key" * 4, KEYS)
    assert verify(issue(LOGIN, "player", "carol", 60), keys).player == "carol"
    with pytest.raises(ValueError, match="subject is a player id"):
        verify(issue(LOGIN, "player", "carol\n", 60), keys)


def test_a_staff_token_whose_name_ends_in_a_newline_is_refused() -> None:
    import jwt

    raw = {
        "iss": "ddz-login", "aud": "ddz-console", "sub": "carol\n", "kind": "staff",
        "role": "auditor", "iat": int(time.time()), "exp": int(time.time()) + 60, "jti": "x",
    }  # fmt: skip
    token = jwt.encode(raw, LOGIN.private, algorithm="EdDSA", headers={"kid": LOGIN.kid})
    with pytest.raises(TokenError, match="staff name"):
        verify_staff(token, KEYS)
    with pytest.raises(ValueError, match="staff name"):
        issue_staff(LOGIN, "carol\n", "auditor")


@pytest.mark.parametrize("value", TRAILING)
def test_the_desk_refuses_such_a_hand_or_player_id(value: str) -> None:
    with pytest.raises(Refusal, match="a hand id is"):
        check_hand_id(value)
    with pytest.raises(Refusal, match="a player id is"):
        check_player(value)


def test_ddz_play_refuses_such_a_name() -> None:
    with pytest.raises(ValueError, match="--name must be"):
        player_name("carol\n")
