"""Bearer tokens (``ddz.access.tokens``): login tokens (EdDSA JWTs the operator's login
signs, checked with its public keys only) and seat tokens (``ddz1``, HMAC, the table's
own); what verifies, what does not, and where the keys come from."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.access import tokens
from ddz.access.token_keys import (
    KeyFileError,
    LoginKey,
    LoginKeys,
    ensure_keys,
    login_jwks_path,
    login_key,
    login_key_path,
    read_jwks,
)
from ddz.access.tokens import (
    AUDIENCE,
    ISSUER,
    Claims,
    TokenError,
    TokenKeys,
    bearer,
    issue,
    new_claims,
    sign,
    table_token_key,
    verification_keys,
    verify,
)
from ddz.config import Settings

LOGIN = LoginKey.of(Ed25519PrivateKey.generate())
SEAT_KEY = b"table-key"
KEYS = TokenKeys(SEAT_KEY, LoginKeys(None, {LOGIN.kid: LOGIN.private.public_key()}))


def claims_of(**changes: object) -> dict[str, object]:
    now = int(time.time())
    good: dict[str, object] = {
        "iss": ISSUER, "aud": AUDIENCE, "sub": "ann", "kind": "player", "iat": now,
        "exp": now + 60, "jti": "j" * 32,
    }  # fmt: skip
    return {k: v for k, v in {**good, **changes}.items() if v is not None}


def login_jwt(key: LoginKey = LOGIN, **changes: object) -> str:
    return jwt.encode(claims_of(**changes), key.private, algorithm="EdDSA",
                      headers={"kid": key.kid})  # fmt: skip


def test_a_signed_token_verifies_to_its_claims() -> None:
    claims = new_claims("seat", "ann", 60, table="t1", seat=2)
    token = sign(claims, SEAT_KEY)
    assert token.startswith("ddz1.") and token.count(".") == 2
    assert verify(token, KEYS) == claims
    assert claims.nonce != new_claims("seat", "ann", 60, table="t1", seat=2).nonce
    for kind in ("player", "operator"):
        login = issue(LOGIN, kind, "ann", 60)
        header = jwt.get_unverified_header(login)
        assert header["alg"] == "EdDSA" and header["kid"] == LOGIN.kid
        got = verify(login, KEYS)
        assert (got.kind, got.player, got.table, got.seat) == (kind, "ann", "", None)
        assert got.expires - time.time() <= 60
    assert issue(LOGIN, "player", "ann", 60) != issue(LOGIN, "player", "ann", 60)  # jti


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
@pytest.mark.parametrize("kind", ["seat", "player"])
def test_a_changed_or_malformed_token_is_refused(mangle: object, kind: str) -> None:
    if kind == "seat":
        token = sign(new_claims("seat", "ann", 60, table="t1", seat=0), SEAT_KEY)
    else:
        token = issue(LOGIN, "player", "ann", 60)
    with pytest.raises(TokenError):
        verify(mangle(token), KEYS)  # type: ignore[operator]


def test_the_table_key_makes_seat_tokens_only_and_expiry_is_checked() -> None:
    # Whatever the table key signs, a ddz1 token of another kind is no token of ours:
    # the table service can mint seat tokens, never a player or operator token.
    for kind in ("operator", "player"):
        with pytest.raises(TokenError, match="signature"):
            verify(sign(new_claims(kind, "op", 60), SEAT_KEY), KEYS)  # type: ignore[arg-type]
    # A seat token signed with another key is refused.
    with pytest.raises(TokenError, match="signature"):
        verify(sign(new_claims("seat", "ann", 60, table="t", seat=0), b"other"), KEYS)
    old = Claims("seat", "ann", int(time.time()) - 1, "n", "t", 0)
    with pytest.raises(TokenError, match="expired"):
        verify(sign(old, SEAT_KEY), KEYS)
    with pytest.raises(TokenError, match="expired"):
        verify(issue(LOGIN, "player", "ann", -1), KEYS)
    # A JWT claiming to be a seat token: the login signs no seat tokens.
    with pytest.raises(TokenError, match="player or operator"):
        verify(login_jwt(kind="seat"), KEYS)
    with pytest.raises(ValueError):
        issue(LOGIN, "seat", "ann", 60)


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"aud": "somebody-else"}, "audience"),
        ({"iss": "another-login"}, "issuer"),
        ({"aud": None}, "aud"),
        ({"iss": None}, "iss"),
        ({"kind": None}, "kind"),
        ({"sub": None}, "sub"),
        ({"iat": None}, "iat"),
        ({"exp": None}, "exp"),
        ({"jti": None}, "jti"),
        ({"kind": "admin"}, "player or operator"),
        ({"sub": 7}, "sub"),
        ({"exp": float(time.time() + 60)}, "exp"),
        ({"exp": "9999999999"}, "exp"),
        ({"iat": "now"}, "iat"),
    ],
)
def test_login_claims_are_checked(changes: dict[str, object], why: str) -> None:
    with pytest.raises(TokenError, match=f"(?i){why}"):
        verify(login_jwt(**changes), KEYS)


def test_a_login_token_of_an_unknown_key_is_refused() -> None:
    stranger = LoginKey.of(Ed25519PrivateKey.generate())
    with pytest.raises(TokenError, match="unknown login key"):
        verify(issue(stranger, "operator", "op", 60), KEYS)
    # The stranger's key under our kid: the signature does not hold.
    with pytest.raises(TokenError, match="signature"):
        verify(issue(LoginKey(LOGIN.kid, stranger.private), "operator", "op", 60), KEYS)
    no_kid = jwt.encode(claims_of(), LOGIN.private, algorithm="EdDSA")
    with pytest.raises(TokenError, match="kid"):
        verify(no_kid, KEYS)


def segments(header: dict[str, object], claims: dict[str, object]) -> str:
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"


def test_key_confusion_and_alg_none_are_refused() -> None:
    public = LOGIN.private.public_key()
    pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    operator = claims_of(kind="operator")
    for secret in (pem, raw, LOGIN.jwk["x"].encode(), SEAT_KEY):
        # HS256 "signed" with the public key as the secret (by hand: PyJWT refuses to).
        signing_input = segments({"alg": "HS256", "typ": "JWT", "kid": LOGIN.kid}, operator)
        mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        with pytest.raises(TokenError, match="EdDSA"):
            verify(f"{signing_input}.{b64(mac)}", KEYS)
    for alg in ("none", "None", "NONE"):
        unsigned = segments({"alg": alg, "kid": LOGIN.kid}, operator) + "."
        with pytest.raises(TokenError):
            verify(unsigned, KEYS)
        with pytest.raises(TokenError, match="EdDSA"):
            verify(unsigned + "AA", KEYS)
    none = jwt.encode(operator, None, algorithm="none", headers={"kid": LOGIN.kid})
    with pytest.raises(TokenError, match="EdDSA"):
        verify(none + "AA", KEYS)


def test_bearer_metadata() -> None:
    assert bearer([("authorization", "Bearer abc")]) == "abc"
    assert bearer([("x-request-id", "1"), ("Authorization", "bearer  abc ")]) == "abc"
    assert bearer([("authorization", b"Bearer abc")]) == "abc"
    assert bearer([("authorization", "Basic abc")]) == ""  # present, but not a bearer token
    assert bearer([("x-request-id", "1")]) is None
    assert bearer(None) is None


# --- keys: one per purpose, none derived, made where missing ---------------------------------


def test_keys_are_made_in_the_data_dir_and_derive_from_nothing(tmp_path: Path) -> None:
    one = Settings.from_env({"DDZ_AUDIT_KEY": "audit", "DDZ_DATA_DIR": str(tmp_path / "a")})
    two = Settings.from_env({"DDZ_AUDIT_KEY": "audit", "DDZ_DATA_DIR": str(tmp_path / "b")})
    ensure_keys(one.keys)
    ensure_keys(two.keys)
    # The same audit key, different keys: none is derived from the audit key.
    assert table_token_key(one.keys) != table_token_key(two.keys)
    assert login_key(one.keys).kid != login_key(two.keys).kid
    assert b"audit" not in table_token_key(one.keys)
    for path in (login_key_path(one.keys), tmp_path / "a" / "keys" / "table-token.key"):
        assert path.stat().st_mode & 0o777 == 0o600, path
    # Again: the same keys (made once, then read).
    assert login_key(one.keys).kid == login_key(one.keys).kid and table_token_key(
        one.keys
    ) == table_token_key(one.keys)
    # The JWKS holds the public key only, and the table's keys verify the login's tokens.
    jwks = json.loads(login_jwks_path(one.keys).read_text())
    assert [set(k) for k in jwks["keys"]] == [{"kty", "crv", "x", "kid", "alg", "use"}]
    keys = verification_keys(one.keys)
    assert verify(tokens.operator_token(one.keys), keys).kind == "operator"
    assert verify(tokens.player_token(one.keys, "ann"), keys).player == "ann"
    with pytest.raises(TokenError, match="unknown login key"):
        verify(tokens.operator_token(two.keys), keys)
    assert not hasattr(keys, "private") and "private" not in repr(keys)


def test_keys_come_from_the_settings(tmp_path: Path) -> None:
    explicit = Settings.from_env(
        {"DDZ_TABLE_TOKEN_KEY": "t-key", "DDZ_DATA_DIR": str(tmp_path),
         "DDZ_LOGIN_KEY": str(tmp_path / "mine.pem"),
         "DDZ_LOGIN_JWKS": str(tmp_path / "published.json")}
    )  # fmt: skip
    assert table_token_key(explicit.keys) == b"t-key"
    assert "t-key" not in repr(explicit)
    key = login_key(explicit.keys)
    assert (tmp_path / "mine.pem").exists()
    assert list(read_jwks(tmp_path / "published.json")) == [key.kid]
    assert not (tmp_path / "keys" / "login.key").exists()


def test_login_keys_rotate_by_kid(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    keys = verification_keys(settings.keys)  # before any key exists: an empty set
    old = tokens.operator_token(settings.keys)  # makes the login key and publishes it
    assert verify(old, keys).kind == "operator"  # the file changed: read again
    # Rotation: a new key published beside the old; tokens of both verify.
    new = LoginKey.of(Ed25519PrivateKey.generate())
    document = json.loads(login_jwks_path(settings.keys).read_text())
    document["keys"].append(new.jwk)
    login_jwks_path(settings.keys).write_text(json.dumps(document))
    assert verify(issue(new, "operator", "op", 60), keys).player == "op"
    assert verify(old, verification_keys(settings.keys)).kind == "operator"
    # The old key withdrawn: its tokens are refused by a service that reads the file anew.
    document["keys"] = [new.jwk]
    login_jwks_path(settings.keys).write_text(json.dumps(document))
    with pytest.raises(TokenError, match="unknown login key"):
        verify(old, verification_keys(settings.keys))


def test_a_jwks_with_a_private_key_or_no_keys_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    private = jwt.algorithms.OKPAlgorithm.to_jwk(LOGIN.private, as_dict=True)
    for document in ({"keys": [private]}, {"keys": {}}, [], {"keys": [{"kty": "RSA"}]}):
        path.write_text(json.dumps(document))
        with pytest.raises(KeyFileError):
            read_jwks(path)
    path.write_text("{")
    with pytest.raises(KeyFileError):
        LoginKeys(path)


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
        (signed(brackets[:1_400], SEAT_KEY), "malformed token claims"),
        (signed(b'{"a":' * 240 + b"1" + b"}" * 240, SEAT_KEY), "malformed token claims"),
    ]:
        with pytest.raises(TokenError, match=why):
            verify(token, KEYS)


def test_nothing_in_the_claims_is_parsed_before_the_signature_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_parsing(*args: object, **kw: object) -> object:
        raise AssertionError("claims parsed before the signature was checked")

    monkeypatch.setattr(tokens.json, "loads", no_parsing)
    good = sign(new_claims("seat", "ann", 60, table="t1", seat=0), SEAT_KEY)
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
    good = {"kind": "seat", "player": "ann", "exp": int(time.time()) + 60, "nonce": "n"}
    with pytest.raises(TokenError, match="malformed token"):
        verify(signed(json.dumps({**good, **claims}).encode(), SEAT_KEY), KEYS)
    for name in ("kind", "player", "exp", "nonce"):  # each one missing
        missing = {k: v for k, v in good.items() if k != name}
        with pytest.raises(TokenError, match="malformed token"):
            verify(signed(json.dumps(missing).encode(), SEAT_KEY), KEYS)
    for body in (b"[]", b"null", b"1", b"\xff\xfe", b"", b'"claims"', b"9" * 5_000 + b"1"[:0]):
        with pytest.raises(TokenError):
            verify(signed(body[:1_400], SEAT_KEY), KEYS)


def test_a_signature_is_read_in_its_one_spelling() -> None:
    """Another base64 spelling of the same MAC (its last character's unused bits set) is
    not the signature: one token, one string."""
    token = sign(new_claims("seat", "ann", 60, table="t1", seat=0), SEAT_KEY)
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
        sign(new_claims("seat", "ann", 600, table="t1", seat=0), SEAT_KEY),
        issue(LOGIN, "operator", "op", 600),
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
