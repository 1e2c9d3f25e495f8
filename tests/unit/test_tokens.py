"""Signed bearer tokens (issue 7, ``ddz.adapters.tokens``): what verifies, what does not,
and where the keys come from."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from ddz.adapters.tokens import (
    Claims,
    TokenError,
    bearer,
    new_claims,
    operator_key,
    sign,
    table_token_key,
    verification_keys,
    verify,
)
from ddz.config import Settings

KEYS = {"seat": b"table-key", "player": b"operator-key", "operator": b"operator-key"}


def test_a_signed_token_verifies_to_its_claims() -> None:
    claims = new_claims("seat", "ann", 60, table="t1", seat=2)
    token = sign(claims, KEYS["seat"])
    assert token.startswith("ddz1.") and token.count(".") == 2
    assert verify(token, KEYS) == claims
    player = new_claims("player", "ann", 60)
    assert verify(sign(player, KEYS["player"]), KEYS) == player
    assert claims.nonce != new_claims("seat", "ann", 60, table="t1", seat=2).nonce


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-3] + ("AAA" if t[-3:] != "AAA" else "BBB"),  # signature changed
        lambda t: t.split(".")[0] + "." + t.split(".")[1][:-2] + "xx." + t.split(".")[2],
        lambda t: "ddz2" + t[4:],
        lambda t: t + ".extra",
        lambda t: "",
        lambda t: "x" * 5000,
    ],
)
def test_a_changed_or_malformed_token_is_refused(mangle: object) -> None:
    token = sign(new_claims("seat", "ann", 60, table="t1", seat=0), KEYS["seat"])
    with pytest.raises(TokenError):
        verify(mangle(token), KEYS)  # type: ignore[operator]


def test_keys_are_per_kind_and_expiry_is_checked() -> None:
    # A seat token signed with the operator's key is not a seat token of this service.
    forged = sign(new_claims("seat", "ann", 60, table="t1", seat=0), KEYS["operator"])
    with pytest.raises(TokenError, match="signature"):
        verify(forged, KEYS)
    # An operator token signed with the table key is refused too.
    with pytest.raises(TokenError, match="signature"):
        verify(sign(new_claims("operator", "op", 60), KEYS["seat"]), KEYS)
    old = Claims("player", "ann", int(time.time()) - 1, "n")
    with pytest.raises(TokenError, match="expired"):
        verify(sign(old, KEYS["player"]), KEYS)
    later = Claims("player", "ann", 2_000, "n")
    assert verify(sign(later, KEYS["player"]), KEYS, now=1_999) == later


def test_bearer_metadata() -> None:
    assert bearer([("authorization", "Bearer abc")]) == "abc"
    assert bearer([("x-request-id", "1"), ("Authorization", "bearer  abc ")]) == "abc"
    assert bearer([("authorization", b"Bearer abc")]) == "abc"
    assert bearer([("authorization", "Basic abc")]) == ""  # present, but not a bearer token
    assert bearer([("x-request-id", "1")]) is None
    assert bearer(None) is None


def test_keys_come_from_the_settings_or_the_audit_key(tmp_path: Path) -> None:
    explicit = Settings.from_env(
        {"DDZ_TABLE_TOKEN_KEY": "t-key", "DDZ_OPERATOR_KEY": "o-key",
         "DDZ_DATA_DIR": str(tmp_path)}
    )  # fmt: skip
    assert (table_token_key(explicit), operator_key(explicit)) == (b"t-key", b"o-key")
    assert "t-key" not in repr(explicit) and "o-key" not in repr(explicit)
    derived = Settings.from_env({"DDZ_AUDIT_KEY": "audit", "DDZ_DATA_DIR": str(tmp_path)})
    again = Settings.from_env({"DDZ_AUDIT_KEY": "audit", "DDZ_DATA_DIR": str(tmp_path / "x")})
    assert table_token_key(derived) == table_token_key(again)  # same audit key, same keys
    assert table_token_key(derived) != operator_key(derived)
    other = Settings.from_env({"DDZ_AUDIT_KEY": "other", "DDZ_DATA_DIR": str(tmp_path)})
    assert operator_key(other) != operator_key(derived)
    keys = verification_keys(derived)
    assert keys["player"] == keys["operator"] == operator_key(derived)
