"""The table's verified tokens (``ddz.access.table_tokens``): a token's signature is
checked once, and the token is then known by its exact text; an expired token is still
refused at the moment ``verify`` refuses it, a withdrawn login key's tokens as soon as
the key file is read again, and what never verified is never remembered."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.access import table_tokens, tokens
from ddz.access.table_tokens import SignedTokens, VerifiedTokens
from ddz.access.token_keys import LoginKey, LoginKeys, login_jwks_path
from ddz.access.tokens import (
    TokenError,
    TokenKeys,
    issue,
    new_claims,
    sign,
    verification_keys,
    verify,
)
from ddz.config import Settings

LOGIN = LoginKey.of(Ed25519PrivateKey.generate())
SEAT_KEY = b"table-key"
KEYS = TokenKeys(SEAT_KEY, LoginKeys(None, {LOGIN.kid: LOGIN.private.public_key()}))


class Verifications:
    """``verify`` as the table tokens call it, counted."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, token: str, keys: TokenKeys) -> tokens.Claims:
        self.count += 1
        return verify(token, keys)


@pytest.fixture
def verifications(monkeypatch: pytest.MonkeyPatch) -> Verifications:
    counted = Verifications()
    monkeypatch.setattr(table_tokens, "verify", counted)
    return counted


def at(monkeypatch: pytest.MonkeyPatch, moment: float) -> None:
    monkeypatch.setattr(time, "time", lambda: moment)


def test_a_seat_token_is_verified_once_and_refused_the_moment_it_expires(
    monkeypatch: pytest.MonkeyPatch, verifications: Verifications
) -> None:
    start = float(int(time.time()))
    at(monkeypatch, start)
    token = sign(new_claims("seat", "ann", 10, table="t1", seat=2, now=start), SEAT_KEY)
    signed = SignedTokens(KEYS)
    first = signed.caller(token)
    assert (first.kind, first.player_id, first.table_id, first.seat) == ("seat", "ann", "t1", 2)
    at(monkeypatch, start + 9.999)
    assert signed.caller(token) == first
    assert verifications.count == 1  # known by its text: the signature is not checked again
    at(monkeypatch, start + 10)  # its exp: where ``verify`` itself refuses it
    with pytest.raises(TokenError, match="expired"):
        verify(token, KEYS)
    with pytest.raises(TokenError, match="expired"):
        signed.caller(token)
    with pytest.raises(TokenError, match="expired"):
        signed.caller(token)  # forgotten, verified again: still expired
    assert verifications.count == 2
    assert len(signed.verified) == 0


def test_a_login_token_is_refused_the_moment_it_expires(
    monkeypatch: pytest.MonkeyPatch, verifications: Verifications
) -> None:
    token = issue(LOGIN, "player", "bob", 30)
    exp = int(json.loads(tokens._unb64(token.split(".")[1]))["exp"])
    signed = SignedTokens(KEYS)
    assert signed.caller(token).player_id == "bob"
    at(monkeypatch, exp - 0.001)
    assert signed.caller(token).player_id == "bob"
    at(monkeypatch, exp)
    with pytest.raises(TokenError, match="expired"):
        signed.caller(token)
    assert verifications.count == 1


def test_a_token_that_does_not_verify_is_never_remembered(verifications: Verifications) -> None:
    good = sign(new_claims("seat", "ann", 60, table="t1", seat=0), SEAT_KEY)
    forged = sign(new_claims("seat", "ann", 60, table="t1", seat=1), b"not-the-table-key")
    signed = SignedTokens(KEYS)
    signed.caller(good)
    for _ in range(2):
        with pytest.raises(TokenError, match="signature"):
            signed.caller(forged)
        with pytest.raises(TokenError):
            signed.caller(good + "x")  # not the exact text of a known token
    assert verifications.count == 5
    assert len(signed.verified) == 1


def test_a_withdrawn_login_key_refuses_its_tokens_once_the_file_is_read_again(
    tmp_path: Path,
) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    old = tokens.operator_token(settings.keys)  # makes the login key and publishes it
    signed = SignedTokens(verification_keys(settings.keys))
    assert signed.caller(old).operator
    assert signed.caller(old).operator  # remembered
    new = LoginKey.of(Ed25519PrivateKey.generate())
    login_jwks_path(settings.keys).write_text(json.dumps({"keys": [new.jwk]}))
    # A token of the new key makes the service read the file again; from then on the
    # old key is gone, remembered tokens or not.
    assert signed.caller(issue(new, "operator", "op", 60)).operator
    with pytest.raises(TokenError, match="unknown login key"):
        signed.caller(old)


def test_the_memory_is_bounded_and_forgets_the_oldest_first() -> None:
    signed = SignedTokens(KEYS, verified=VerifiedTokens(size=2))
    seat_tokens = [
        sign(new_claims("seat", f"p{n}", 60, table="t1", seat=n), SEAT_KEY) for n in range(3)
    ]
    for token in seat_tokens:
        signed.caller(token)
    assert len(signed.verified) == 2
    assert signed.verified.get(seat_tokens[0], KEYS.login.keys) is None
    known = signed.verified.get(seat_tokens[2], KEYS.login.keys)
    assert known is not None and known.player_id == "p2"
    with pytest.raises(ValueError):
        VerifiedTokens(size=0)
