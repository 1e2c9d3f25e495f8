"""Signed bearer tokens (issue 7, ``ddz.adapters.tokens``): what verifies, what does not,
and where the keys come from."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import time
from pathlib import Path

import pytest
from ddz.adapters import tokens
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


# --- malformed tokens: TokenError, and nothing parsed before the signature holds ------------


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def signed(body: bytes, key: bytes) -> str:
    """A token whose (base64url) body is ``body``, signed with ``key`` as ``sign`` does."""
    text = b64(body)
    mac = hmac.new(key, f"ddz1.{text}".encode("ascii"), hashlib.sha256).digest()
    return f"ddz1.{text}.{b64(mac)}"


def test_a_token_of_nested_brackets_is_a_token_error_not_a_recursion_error() -> None:
    brackets = b"[" * 1_500
    for token, why in [
        ("[" * 1_500, "not a ddz1 token"),
        (f"ddz1.{b64(brackets)}.{b64(b'x')}", "bad token signature"),  # 2,010 characters
        # Signed, then parsed: 1,400 fit in a token with a whole signature.
        (signed(brackets[:1_400], KEYS["seat"]), "malformed token claims"),
        (signed(b'{"a":' * 240 + b"1" + b"}" * 240, KEYS["player"]), "malformed token claims"),
    ]:
        with pytest.raises(TokenError, match=why):
            verify(token, KEYS)


def test_nothing_in_the_claims_is_parsed_before_the_signature_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_parsing(*args: object, **kw: object) -> object:
        raise AssertionError("claims parsed before the signature was checked")

    monkeypatch.setattr(tokens.json, "loads", no_parsing)
    good = sign(new_claims("seat", "ann", 60, table="t1", seat=0), KEYS["seat"])
    head, body, _mac = good.split(".")
    for token in (f"{head}.{body}.{b64(b'y' * 32)}", f"ddz1.{b64(b'[' * 1_500)}.AAAA"):
        with pytest.raises(TokenError, match="signature"):
            verify(token, KEYS)


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("ddz1." + "A" * 3_000 + ".AA", "too long"),
        ("ddz1.\x00eyJ9.AA", "printable ASCII"),
        ("ddz1.eyJ9\u00e9.AA", "printable ASCII"),
        ("ddz1.eyJ9.\udcff", "printable ASCII"),
        ("ddz1.eyJ9\n.AA", "printable ASCII"),
        ("ddz1.eyJ9.AA.AA", "not a ddz1 token"),
        ("ddz1.eyJ9", "not a ddz1 token"),
        ("ddz1..AA", "base64url"),
        ("ddz1.eyJ9=.AA", "base64url"),
        ("ddz1.ey+9.AA", "base64url"),
        ("ddz1.e.AA", "base64url"),
        ("ddz1.eyJ9. AA", "base64url"),
    ],
)
def test_malformed_tokens_say_why(token: str, why: str) -> None:
    with pytest.raises(TokenError, match=why):
        verify(token, KEYS)


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": "9999999999"},
        {"exp": 9999999999.0},
        {"exp": True},
        {"player": 7},
        {"player": None},
        {"nonce": ["n"]},
        {"seat": "0"},
        {"seat": False},
        {"table": 1},
        {"kind": "admin"},
        {"kind": None},
        {"extra": 1},
        {"exp": None},
    ],
)
def test_signed_claims_of_the_wrong_shape_are_malformed(claims: dict[str, object]) -> None:
    good = {"kind": "player", "player": "ann", "exp": int(time.time()) + 60, "nonce": "n"}
    with pytest.raises(TokenError, match="malformed token"):
        verify(signed(json.dumps({**good, **claims}).encode(), KEYS["player"]), KEYS)
    for name in ("kind", "player", "exp", "nonce"):  # each one missing
        missing = {k: v for k, v in good.items() if k != name}
        with pytest.raises(TokenError, match="malformed token"):
            verify(signed(json.dumps(missing).encode(), KEYS["player"]), KEYS)
    for body in (b"[]", b"null", b"1", b"\xff\xfe", b"", b'"claims"', b"9" * 5_000 + b"1"[:0]):
        with pytest.raises(TokenError):
            verify(signed(body[:1_400], KEYS["player"]), KEYS)


def test_a_signature_is_read_in_its_one_spelling() -> None:
    """Another base64 spelling of the same MAC (its last character's unused bits set) is
    not the signature: one token, one string."""
    token = sign(new_claims("player", "ann", 60), KEYS["player"])
    head, body, mac = token.split(".")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(mac[-1])
    respelled = (
        f"{head}.{body}.{mac[:-1]}{alphabet[last | 0b11 if last & 0b11 == 0 else last & ~0b11]}"
    )
    assert base64.urlsafe_b64decode(respelled.split(".")[2] + "=") == base64.urlsafe_b64decode(
        mac + "="
    )
    with pytest.raises(TokenError, match="signature"):
        verify(respelled, KEYS)
    assert verify(token, KEYS).player == "ann"


def test_fuzzed_tokens_are_token_errors_or_the_token_itself() -> None:
    """Random and mutated tokens: ``verify`` raises ``TokenError`` and nothing else, and a
    mutation never verifies (seeded; the seed is in the failure)."""
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    originals = [
        sign(new_claims("seat", "ann", 600, table="t1", seat=0), KEYS["seat"]),
        sign(new_claims("operator", "op", 600), KEYS["operator"]),
    ]
    for _ in range(3_000):
        token = rng.choice(originals)
        for _ in range(rng.randrange(1, 4)):
            token = mutated(rng, token)
        if token in originals:
            continue
        try:
            verify(token, KEYS)
        except TokenError:
            continue
        except Exception as exc:
            pytest.fail(f"seed {seed}: {token[:80]!r} raised {exc!r}")
        pytest.fail(f"seed {seed}: {token[:80]!r} verified")


ODD = '\x00\x7f\u00e9\u4e2d\U0001f0a1\u202e\udcff[]{}"=+/ .'


def mutated(rng: random.Random, token: str) -> str:
    """``token`` with one change: a character inserted or bit-flipped, cut short, a
    segment repeated, brackets pushed in, or another body under its signature."""
    i = rng.randrange(len(token) + 1)
    parts = token.split(".")
    change = rng.randrange(6)
    if change == 0:
        return token[:i] + rng.choice(ODD) + token[i:]
    if change == 1 and i < len(token):
        return token[:i] + chr(ord(token[i]) ^ (1 << rng.randrange(8))) + token[i + 1 :]
    if change == 2:
        return token[:i]
    if change == 3:
        return token + "." + rng.choice(parts)
    if change == 4:
        return token[:i] + "[" * rng.randrange(1, 800) + token[i:]
    return f"ddz1.{b64(rng.randbytes(rng.randrange(0, 900)))}.{parts[-1]}"
