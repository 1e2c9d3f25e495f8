"""Malformed input at the table service is a clean refusal, and nothing secret reaches a
log: the whole suite in this process, its logs written as JSON lines to a file.

- a bearer token of 1,500 ``[`` (bare, base64url inside a ``ddz1`` token, and signed with
  the service's own seat key or as a JWT with the login's key) is UNAUTHENTICATED, never
  INTERNAL;
- a seeded corpus of 10,000 random and mutated tokens (bit flips, truncation, repeated
  segments, nested brackets, huge numbers, unicode, NUL bytes, other schemes, bodies
  signed with the right keys but not claims, JWTs of other algorithms) sent to a few
  RPCs: every answer is
  UNAUTHENTICATED, or PERMISSION_DENIED for a valid token that does not give the call;
  those no gRPC client can send (not printable ASCII) are put to the service's own gate;
- malformed requests (bytes that are no message, odd fields) are refused as a client's
  error, never INTERNAL;
- after all that, and after an audit step and a rules step were made to fail, no key,
  no token and no live hand's seed is in any log line.

The corpus's seed is printed in every failure; ``FUZZ_SEED=<seed>`` replays it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import io
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.adapters.security.token_keys import LoginKey, login_key
from ddz.adapters.security.tokens import (
    AUDIENCE,
    AUTH_HEADER,
    ISSUER,
    bearer,
    issue,
    new_claims,
    operator_token,
    player_token,
    sign,
    table_token_key,
)
from ddz.adapters.telemetry.logging import configure_logging
from ddz.application.errors import Kind, Refusal
from ddz.domain.hand import SeedRequired
from ddz.v1 import audit_pb2, dealer_pb2, hand_events_pb2, table_pb2
from suite_kit import AUDIT_KEY, Suite, eventually
from table_kit import join

pytestmark = pytest.mark.suite(turn_timeout=600.0)  # the hand stays in play throughout

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED
CORPUS_SIZE = 10_000
AT_ONCE = 200  # calls in flight together
SEED = int(os.environ.get("FUZZ_SEED") or random.SystemRandom().randrange(2**32))

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
PRINTABLE = "".join(map(chr, range(0x20, 0x7F)))
JSONISH = '[]{}":,0123456789.eE-+ truefalsnul\\'
ODD_CHARS = "\x00\x01\t\n\r\x7f\x80é中🂡\u202e\ufeff\udcff"
"""Characters a header cannot carry, or that are not ASCII (a lone surrogate too)."""


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


LOGIN_HEADER = base64.urlsafe_b64encode(b'{"alg":"EdDSA",').decode()
"""How every login token begins (its header's first 15 bytes, a whole base64 group)."""


def login_secrets(login: LoginKey) -> dict[str, str]:
    """The login's private key as a log could show it: PEM lines, raw hex, base64url."""
    raw = login.private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    pem = login.private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "login key (PEM)": pem.splitlines()[1],
        "login key (hex)": raw.hex(),
        "login key (base64url)": b64(raw),
    }


def brackets(n: int = 1_500) -> bytes:
    return b"[" * n


# --- the suite, its logs, a hand in play ------------------------------------------------------


@pytest.fixture
def log_file(suite: Suite) -> Iterator[Any]:
    """Every service's log (and the standard library's) as JSON lines in one file, INFO
    and up (one line per refused call, with its reason)."""
    path = suite.settings.log_dir / "suite.log"
    configure_logging(replace(suite.settings, log_level="INFO"), service="suite", log_file=path)
    try:
        yield path
    finally:
        configure_logging(suite.settings, service="pytest", stream=io.StringIO())


@dataclass
class Hand:
    """A hand in play: Ann's seat of it, her table and her seat token."""

    hand_id: str
    seat: int
    table_id: str
    token: str


async def hand_in_play(suite: Suite) -> Hand:
    ann, ben = await asyncio.gather(
        join(suite.player("ann"), "classic"), join(suite.player("ben"), "classic")
    )
    assert ann.table.table_id == ben.table.table_id
    return Hand(ann.hand_id, ann.seat, ann.table.table_id, ann.token)


Rpc = Callable[[Any, list[tuple[str, str]]], Awaitable[Any]]


def rpcs(hand: Hand) -> dict[str, Rpc]:
    """The calls the corpus is sent to: an operator's, a table's and two of a seat's."""
    return {
        "OpenTable": lambda s, md: s.OpenTable(
            table_pb2.OpenTableRequest(variant="classic"), metadata=md
        ),
        "GetTable": lambda s, md: s.GetTable(
            table_pb2.GetTableRequest(table_id=hand.table_id), metadata=md
        ),
        "GetView": lambda s, md: s.GetView(
            table_pb2.GetViewRequest(hand_id=hand.hand_id, seat=hand.seat), metadata=md
        ),
        "Play": lambda s, md: s.Play(
            table_pb2.PlayRequest(hand_id=hand.hand_id, seat=hand.seat, cards="3"), metadata=md
        ),
    }


async def refused(rpc: Rpc, stub: Any) -> grpc.aio.AioRpcError:
    try:
        await rpc(stub, [])
    except grpc.aio.AioRpcError as exc:
        return exc
    raise AssertionError("answered")


# --- the token that raised RecursionError ---------------------------------------------------


async def test_a_token_of_nested_brackets_is_unauthenticated(suite: Suite, log_file: Any) -> None:
    hand = await hand_in_play(suite)
    settings = suite.settings
    body = b64(brackets())
    signed_body = b64(brackets(1_400))  # what fits in a token with a whole signature
    tokens = {
        "[" * 1_500: "not a ddz1 token",
        f"ddz1.{body}.{b64(b'x')}": "bad token signature",
        # Signed with the service's own seat key, or as the login: the signature holds,
        # the claims do not.
        f"ddz1.{signed_body}.{sign_body(signed_body, table_token_key(settings))}": "claims",
        login_signed(brackets(1_300), login_key(settings)): "claims",
    }
    for token, why in tokens.items():
        for name, rpc in rpcs(hand).items():
            exc = await refused(rpc, suite.table_as(token))
            assert exc.code() is UNAUTHENTICATED, (name, exc.code(), exc.details())
            assert error_reason(exc) == "UNAUTHENTICATED"
            details = exc.details() or ""
            assert details.startswith("invalid token") and why in details, details
    # A header bigger than gRPC's metadata limit is refused by gRPC itself.
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await rpcs(hand)["GetTable"](
            suite.table_as(None), [(AUTH_HEADER, "Bearer " + "[" * 20_000)]
        )
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED


def sign_body(body: str, key: bytes) -> str:
    """The signature ``sign`` would give a token with this (base64url) body."""
    return b64(hmac.new(key, f"ddz1.{body}".encode("ascii"), hashlib.sha256).digest())


def login_signed(payload: bytes, key: LoginKey) -> str:
    """A JWS the login's key signs (EdDSA, its kid) whose payload is ``payload``."""
    return jwt.api_jws.encode(payload, key.private, algorithm="EdDSA", headers={"kid": key.kid})


def login_claims(**changes: Any) -> dict[str, Any]:
    """Claims of a player token as the login signs them, with ``changes``."""
    now = int(time.time())
    good = {"iss": ISSUER, "aud": AUDIENCE, "sub": "zed", "kind": "player", "iat": now,
            "exp": now + 600, "jti": "n"}  # fmt: skip
    return {**good, **changes}


# --- the corpus -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    header: str  # the whole ``authorization`` value
    expected: grpc.StatusCode
    how: str  # which generator made it, for the failure message


class Corpus:
    """Header values for the fuzz, from a seeded ``random.Random``.

    ``valid`` are real tokens of this suite (mutated, never sent as they are);
    ``wrong`` are valid tokens that give none of the calls (PERMISSION_DENIED);
    ``seat_key`` (the table's) and ``login`` (the login's) sign bodies that are not
    claims."""

    def __init__(
        self, rng: random.Random, valid: list[str], wrong: list[str], seat_key: bytes,
        login: LoginKey,
    ) -> None:  # fmt: skip
        self.rng = rng
        self.valid = valid
        self.wrong = wrong
        self.seat_key = seat_key
        self.login = login
        self.exact = {t.strip() for t in [*valid, *wrong]}

    def cases(self, n: int) -> list[Case]:
        makers: list[tuple[int, Callable[[], str], grpc.StatusCode]] = [
            (20, self.random_text, UNAUTHENTICATED),
            (15, self.bomb_token, UNAUTHENTICATED),
            (30, self.mutated, UNAUTHENTICATED),
            (10, self.signed_junk, UNAUTHENTICATED),
            (10, self.login_junk, UNAUTHENTICATED),
            (5, self.other_algorithm, UNAUTHENTICATED),
            (4, self.expired, UNAUTHENTICATED),
            (4, self.other_scheme, UNAUTHENTICATED),
            (2, self.signed_odd, DENIED),
            (2, self.wrong_token, DENIED),
        ]
        weights = [w for w, _, _ in makers]
        out: list[Case] = []
        while len(out) < n:
            (_, maker, expected) = self.rng.choices(makers, weights)[0]
            value = maker()
            token = value.partition(" ")[2] if value.startswith("Bearer ") else value
            if expected is UNAUTHENTICATED and token.strip() in self.exact:
                continue  # a mutation that changed nothing that counts
            out.append(Case(value, expected, maker.__name__))
        return out

    # Each returns a whole header value.

    def random_text(self) -> str:
        rng = self.rng
        alphabet = rng.choice([B64 + ".", PRINTABLE, JSONISH, B64 + "." + ODD_CHARS])
        size = rng.choice(
            [rng.randrange(0, 64), rng.randrange(64, 2_100), rng.randrange(2_000, 6_000)]
        )
        text = "".join(rng.choice(alphabet) for _ in range(size))
        return f"Bearer {rng.choice(['', 'ddz1.'])}{text}"

    def bomb_token(self) -> str:
        rng = self.rng
        n = rng.randrange(50, 1_600)
        body = rng.choice([
            brackets(n),
            b'{"a":' * n + b"1" + b"}" * n,
            b"[{" * (n // 2),
            b"9" * rng.randrange(1, 4_000),
            b'{"kind":"operator","player":"x","exp":' + b"9" * rng.randrange(1, 1_400) + b"}",
            '{"kind":"opérateur","player":"\u0000"}'.encode(),
            b"\xff\xfe\x00" * rng.randrange(1, 100),
            rng.randbytes(rng.randrange(0, 1_200)),
        ])  # fmt: skip
        signature = rng.choice(
            [b64(rng.randbytes(32)), "", "A", "=", b64(rng.randbytes(rng.randrange(1, 64)))]
        )
        return f"Bearer ddz1.{b64(body)}.{signature}"

    def mutated(self) -> str:
        rng = self.rng
        token = rng.choice(self.valid)
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            token = rng.choice(MUTATIONS)(rng, token)
        return f"Bearer {token}"

    def signed_junk(self) -> str:
        """A body the service's own key signs that is not claims of the right kind."""
        rng = self.rng
        exp = int(time.time()) + 600
        good: dict[str, Any] = {"kind": "seat", "player": "zed", "exp": exp, "nonce": "n"}
        missing = rng.choice(list(good))
        junk = rng.choice([
            brackets(rng.randrange(10, 1_500)),
            json.dumps([good] * rng.randrange(1, 20)).encode(),
            json.dumps({**good, "exp": str(exp)}).encode(),
            json.dumps({**good, "exp": float(exp)}).encode(),
            json.dumps({**good, "exp": True}).encode(),
            json.dumps({**good, "player": ["zed"]}).encode(),
            json.dumps({**good, "seat": "0"}).encode(),
            json.dumps({**good, "kind": rng.choice(["admin", "", "OPERATOR", None, 1])}).encode(),
            json.dumps({**good, "extra": {"a": [1] * 50}}).encode(),
            json.dumps({k: v for k, v in good.items() if k != missing}).encode(),
            b"\xff" + json.dumps(good).encode(),
            b"null",
            b"",
            # Claims of the login's kinds under the table's key: the table service
            # mints seat tokens, never a player or operator token.
            json.dumps({**good, "kind": "operator"}).encode(),
            json.dumps({**good, "kind": "player"}).encode(),
        ])  # fmt: skip
        body = b64(junk)
        return f"Bearer ddz1.{body}.{sign_body(body, self.seat_key)}"

    def login_junk(self) -> str:
        """A payload the login's key signs that is not claims of a login token."""
        rng = self.rng
        good = login_claims()
        missing = rng.choice(list(good))
        junk = rng.choice([
            brackets(rng.randrange(10, 1_300)),
            json.dumps([good] * rng.randrange(1, 8)).encode(),
            json.dumps({**good, "exp": str(good["exp"])}).encode(),
            json.dumps({**good, "exp": float(good["exp"])}).encode(),
            json.dumps({**good, "exp": rng.choice([True, None, [1]])}).encode(),
            json.dumps({**good, "sub": rng.choice([["zed"], 7, None])}).encode(),
            json.dumps({**good, "aud": rng.choice(["ddz-bot", "", ["x"], None])}).encode(),
            json.dumps({**good, "iss": rng.choice(["ddz-table", "", None])}).encode(),
            json.dumps({**good, "kind": rng.choice(["seat", "admin", "", None, 1])}).encode(),
            json.dumps({k: v for k, v in good.items() if k != missing}).encode(),
            json.dumps({**good, "exp": good["iat"] - rng.randrange(1, 10**6)}).encode(),
            b"\xff" + json.dumps(good).encode(),
            b"null",
            b"",
        ])  # fmt: skip
        return f"Bearer {login_signed(junk, self.login)}"

    def other_algorithm(self) -> str:
        """Operator claims under another algorithm: ``none``, or HS256 with the login's
        public key (or the table's seat key) as the secret -- key confusion."""
        rng = self.rng
        claims = json.dumps(login_claims(kind="operator", sub="op")).encode()
        alg = rng.choice(["none", "None", "HS256", "HS512", "RS256", "ES256", "EdDSA "])
        header = json.dumps({"alg": alg, "typ": "JWT", "kid": self.login.kid}).encode()
        signing_input = f"{b64(header)}.{b64(claims)}"
        public = self.login.private.public_key()
        secret = rng.choice([
            public.public_bytes(serialization.Encoding.PEM,
                                serialization.PublicFormat.SubjectPublicKeyInfo),
            public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw),
            self.seat_key,
        ])  # fmt: skip
        signature = rng.choice(
            ["", b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())]
        )
        return f"Bearer {signing_input}.{signature}"

    def signed_odd(self) -> str:
        """Claims the login's key signs, odd but valid: a player nobody seated."""
        rng = self.rng
        player = rng.choice(["z\u0000\u202ed", "[" * 300, "", "é中🂡", "x" * 300])
        exp = rng.choice([10 ** rng.randrange(20, 900), 2**63, int(time.time()) + 60])
        claims = login_claims(sub=player, exp=exp)
        payload = json.dumps(claims, ensure_ascii=rng.random() < 0.5).encode()
        return f"Bearer {login_signed(payload, self.login)}"

    def wrong_token(self) -> str:
        return f"Bearer {self.rng.choice(self.wrong)}"

    def expired(self) -> str:
        if self.rng.random() < 0.5:
            claims = new_claims("seat", "zed", -self.rng.randrange(1, 10**6), table="t", seat=0)
            return f"Bearer {sign(claims, self.seat_key)}"
        return f"Bearer {issue(self.login, 'player', 'zed', -self.rng.randrange(1, 10**6))}"

    def other_scheme(self) -> str:
        token = self.rng.choice(self.valid)
        return self.rng.choice([
            f"Basic {token}", f"Bearer{token}", token, "Bearer", "", "Bearer  ", f"Token {token}",
            f"Bearer {token} {token}", f"Bearer {token},{token}",
        ])  # fmt: skip


def _flip(rng: random.Random, token: str) -> str:
    i = rng.randrange(len(token)) if token else 0
    if not token:
        return "\x00"
    return token[:i] + chr(ord(token[i]) ^ (1 << rng.randrange(8))) + token[i + 1 :]


def _truncate(rng: random.Random, token: str) -> str:
    return token[: rng.randrange(len(token))] if token else token


def _repeat_segment(rng: random.Random, token: str) -> str:
    parts = token.split(".")
    i = rng.randrange(len(parts))
    parts.insert(rng.randrange(len(parts) + 1), parts[i])
    return ".".join(parts)


def _drop_or_swap(rng: random.Random, token: str) -> str:
    parts = token.split(".")
    if len(parts) > 1 and rng.random() < 0.5:
        i, j = rng.sample(range(len(parts)), 2)
        parts[i], parts[j] = parts[j], parts[i]
    else:
        parts.pop(rng.randrange(len(parts)))
    return ".".join(parts)


def _nest(rng: random.Random, token: str) -> str:
    """The claims' JSON wrapped in brackets (re-encoded, the old signature kept), or
    brackets pushed into the text."""
    parts = token.split(".")
    n = rng.randrange(1, 1_200)
    if len(parts) == 3 and rng.random() < 0.5:
        try:
            claims = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        except ValueError:
            claims = b"{}"
        parts[1] = b64(b"[" * n + claims + b"]" * n)
        return ".".join(parts)
    i = rng.randrange(len(token) + 1)
    return token[:i] + rng.choice("[{") * min(n, 400) + token[i:]


def _huge_number(rng: random.Random, token: str) -> str:
    parts = token.split(".")
    if len(parts) == 3:
        try:
            claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        except (ValueError, RecursionError):  # an earlier mutation's
            claims = {}
        if isinstance(claims, dict):
            field = rng.choice(["exp", "seat", "player", "nonce"])
            claims[field] = rng.choice([10 ** rng.randrange(19, 1_200), -(2**63), 2**64, 1e308])
            parts[1] = b64(json.dumps(claims).encode())
            return ".".join(parts)
    return token + "9" * rng.randrange(1, 500)


def _unicode(rng: random.Random, token: str) -> str:
    i = rng.randrange(len(token) + 1)
    return token[:i] + "".join(rng.choices(ODD_CHARS, k=rng.randrange(1, 4))) + token[i:]


def _noise(rng: random.Random, token: str) -> str:
    return rng.choice([
        token + "=", token + "==", token.upper(), token.lower(), token + token,
        token.replace("-", "+").replace("_", "/"), token.replace(".", ". ", 1), "ddz1." + token,
    ])  # fmt: skip


MUTATIONS = [
    _flip,
    _truncate,
    _repeat_segment,
    _drop_or_swap,
    _nest,
    _huge_number,
    _unicode,
    _noise,
]


def sendable(header: str) -> bool:
    """What a gRPC client puts in a header: printable ASCII (HTTP/2 field values), within
    gRPC's 8 KiB for a call's metadata (over that, gRPC itself may refuse the call)."""
    return all(" " <= c <= "~" for c in header) and len(header) <= 7_000


async def test_a_fuzzed_corpus_of_tokens_is_unauthenticated_and_nothing_secret_is_logged(
    suite: Suite, log_file: Any, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    hand = await hand_in_play(suite)
    settings = suite.settings
    rng = random.Random(SEED)
    elsewhere = sign(
        new_claims("seat", "zed", 600, table="elsewhere", seat=0), table_token_key(settings)
    )
    valid = [operator_token(settings), hand.token, player_token(settings, "ann"), elsewhere]
    wrong = [player_token(settings, "zed"), elsewhere]
    login = login_key(settings)
    cases = Corpus(rng, valid, wrong, table_token_key(settings), login).cases(CORPUS_SIZE)
    calls = rpcs(hand)
    stub = suite.table_as(None)
    gate = suite.running["table"].service.handlers.gate  # type: ignore[attr-defined]
    failures: list[str] = []

    async def probe(case: Case, name: str) -> None:
        if not sendable(case.header):  # no client can send it: the service's own gate
            try:
                gate.caller(bearer([(AUTH_HEADER, case.header)]))
            except Refusal as refusal:
                if refusal.kind is not Kind.UNAUTHENTICATED:
                    failures.append(f"gate {case.how} {case.header[:80]!r}: {refusal}")
                return
            except Exception as exc:
                failures.append(f"gate {case.how} {case.header[:80]!r}: raised {exc!r}")
                return
            failures.append(f"gate {case.how} {case.header[:80]!r}: accepted")
            return
        try:
            await calls[name](stub, [(AUTH_HEADER, case.header)])
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            if code is not case.expected or error_reason(exc) != case.expected.name:
                failures.append(
                    f"{name} {case.how} {case.header[:80]!r}: {code.name} {exc.details()!r}"
                )
        else:
            failures.append(f"{name} {case.how} {case.header[:80]!r}: answered")

    started = time.monotonic()
    names = list(calls)
    for at in range(0, len(cases), AT_ONCE):
        batch = cases[at : at + AT_ONCE]
        await asyncio.gather(*(probe(c, names[(at + i) % len(names)]) for i, c in enumerate(batch)))
    elapsed = time.monotonic() - started
    assert not failures, (
        f"FUZZ_SEED={SEED}: {len(failures)} of {len(cases)} wrong ({elapsed:.0f} s), e.g.\n"
        + "\n".join(failures[:20])
    )

    # Exceptions in services whose frames hold secrets: a failing audit step (the
    # audit key) and a failing rules step holding a live hand's seed.
    seed = await failing_steps(suite, hand, monkeypatch)
    sent = (c.header for c in cases if "ddz1." in c.header or "eyJ" in c.header)
    tokens = [*valid, *wrong, *sent]
    secrets = {
        "audit key": AUDIT_KEY,
        "table token key": table_token_key(settings).decode(),
        **login_secrets(login),
        "seed (hex)": seed.hex(),
        # Bytes are shown by their repr (cut after a few dozen characters), in JSON escaped.
        "seed (repr)": repr(seed)[2:26],
        "seed (repr, in JSON)": json.dumps(repr(seed)[2:26])[1:-1],
        "seed (base64)": base64.b64encode(seed).decode(),
        **{f"token {t[:20]}...": t.partition(" ")[2] or t for t in rng.sample(tokens, 300)},
        **{f"signature of token {i}": t.rsplit(".", 1)[-1] for i, t in enumerate(valid)},
        **private_key_files(settings.data_dir),
    }
    captured = capfd.readouterr()
    logs = {
        p.name: p.read_text(encoding="utf-8", errors="replace")
        for p in settings.log_dir.glob("*.log")
    }
    logs.update({"stdout": captured.out, "stderr": captured.err})
    assert "rpc_failed" in logs["suite.log"], "the failing steps were not logged"
    assert '"code": "UNAUTHENTICATED"' in logs["suite.log"]
    for where, text in logs.items():
        assert "ddz1." not in text, f"FUZZ_SEED={SEED}: a token is in {where}"
        assert LOGIN_HEADER not in text, f"FUZZ_SEED={SEED}: a login token is in {where}"
        for what, secret in secrets.items():
            if len(secret) >= 8:
                assert secret not in text, f"FUZZ_SEED={SEED}: the {what} is in {where}"


def private_key_files(data_dir: Path) -> dict[str, str]:
    """The start of every private key the suite's data dir holds (TLS and CA keys, the
    producers' event signing keys, the login and audit keys, NATS seeds), by file."""
    found: dict[str, str] = {}
    for pattern in ("keys/**/*.key", "tls/*.key", "nats/*.nk"):
        for path in data_dir.glob(pattern):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            body = "".join(line for line in lines if line and not line.startswith("-----"))
            found[f"private key {path.relative_to(data_dir)}"] = body[:40]
    assert any("tls/" in name for name in found), f"no TLS key in {data_dir}"
    assert any("events/" in name for name in found), f"no event signing key in {data_dir}"
    return found


async def failing_steps(suite: Suite, hand: Hand, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """Make the recorder's audit of the hand and the rules' next decision on it fail;
    the seed of the hand (which the rules now hold)."""
    import services.recorder.handlers as recorder
    import services.rules.handlers as rules

    def failing_audit(events: Any, key: bytes, *args: Any, **kw: Any) -> Any:
        raise RuntimeError("an audit step failed")

    monkeypatch.setattr(recorder, "audit_hand", failing_audit)

    async def audit_failed() -> bool:
        try:
            await suite.audit.AuditHand(audit_pb2.AuditHandRequest(hand_id=hand.hand_id))
        except grpc.aio.AioRpcError as exc:
            if exc.code() is grpc.StatusCode.NOT_FOUND:
                return False  # not stored yet
            return exc.code() is grpc.StatusCode.INTERNAL
        return False

    assert await eventually(audit_failed)

    def failing_decide(state: Any, command: Any, seed: bytes | None = None) -> Any:
        if seed is None:
            raise SeedRequired("the rules fetch the seed first")
        raise RuntimeError("a rules step failed")

    monkeypatch.setattr(rules, "decide", failing_decide)
    view = (
        await suite.table.GetView(table_pb2.GetViewRequest(hand_id=hand.hand_id, seat=hand.seat))
    ).view
    turn = view.turn if view.HasField("turn") else hand.seat
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await suite.table.Bid(
            table_pb2.BidRequest(
                hand_id=hand.hand_id, seat=turn, action=hand_events_pb2.BID_ACTION_PASS
            )
        )
    assert caught.value.code() is grpc.StatusCode.INTERNAL, caught.value.details()
    monkeypatch.undo()
    answer = await suite.dealer.GetSeed(dealer_pb2.GetSeedRequest(hand_id=hand.hand_id))
    return bytes(answer.seed)


# --- malformed requests -----------------------------------------------------------------------

CLIENT_ERRORS = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.OUT_OF_RANGE,
}
"""A refusal that blames the request; INTERNAL and UNKNOWN would blame the service."""

UNDECODABLE = {
    "bad UTF-8": b"\x0a\x02\xff\xfe",
    "truncated": b"\x0a\x10abc",
    "nested groups": b"\x0b" * 5_000 + b"\x0c" * 5_000,
    "varint overflow": b"\x10" + b"\xff" * 11,
    "nested length-delimited": b"\x0a\x7f" * 3 + b"\x00" * 10,
}


async def test_malformed_requests_are_refused_as_the_clients_error(
    suite: Suite, log_file: Any
) -> None:
    hand = await hand_in_play(suite)
    rng = random.Random(SEED)
    tls = grpc.ssl_channel_credentials(suite.settings.tls_ca_path.read_bytes())
    channel = grpc.aio.secure_channel(suite.settings.address("table"), tls)
    metadata = [(AUTH_HEADER, f"Bearer {operator_token(suite.settings)}")]
    problems: list[str] = []
    try:
        for rpc in ("GetTable", "GetView", "Play", "StartHand", "WatchHand"):
            path = f"/ddz.v1.TableService/{rpc}"
            call: Any = (
                channel.unary_stream(path) if rpc == "WatchHand" else channel.unary_unary(path)
            )
            for what, data in UNDECODABLE.items():
                try:
                    answer = call(data, metadata=metadata, timeout=10)
                    if rpc == "WatchHand":
                        async for _ in answer:
                            break
                    else:
                        await answer
                    problems.append(f"{rpc} {what}: answered")
                except grpc.aio.AioRpcError as exc:
                    if exc.code() is not grpc.StatusCode.INVALID_ARGUMENT:
                        problems.append(f"{rpc} {what}: {exc.code().name} {exc.details()}")
    finally:
        await channel.close()
    # A refusal quoting a 100 kB id is cut short, not lost to gRPC's limit on its size.
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await suite.table.GetTable(table_pb2.GetTableRequest(table_id="x" * 100_000))
    assert caught.value.code() is grpc.StatusCode.NOT_FOUND
    assert len(caught.value.details() or "") < 1_100
    for request, call_name in odd_requests(rng, hand):
        problems += await refused_as_clients_error(getattr(suite.table, call_name), request)
    for seeds, shown in client_seed_cases(rng):
        opened = await suite.table.OpenTable(
            table_pb2.OpenTableRequest(variant="classic", seats=BOTS)
        )
        request = table_pb2.StartHandRequest(
            table_id=opened.table.table_id, client_seeds=seeds, show_before_deal=shown
        )
        problems += await refused_as_clients_error(suite.table.StartHand, request)
    assert not problems, f"FUZZ_SEED={SEED}:\n" + "\n".join(problems)


async def refused_as_clients_error(rpc: Any, request: Any) -> list[str]:
    """What is wrong with the answer to ``request`` (nothing: answered, or refused with
    one of ``CLIENT_ERRORS``)."""
    try:
        await rpc(request, timeout=20)
    except grpc.aio.AioRpcError as exc:
        if exc.code() not in CLIENT_ERRORS:
            shown = str(request)[:100]
            return [f"{type(request).__name__}({shown!r}): {exc.code().name} {exc.details()}"]
    return []


def odd_strings(rng: random.Random) -> list[str]:
    return [
        "", " ", "\x00", "é中🂡", "\u202e", "x" * 100_000, "[" * 1_500, "../../etc/passwd",
        "%s%n", "hand-" + "0" * 64, "".join(rng.choice(PRINTABLE) for _ in range(300)),
    ]  # fmt: skip


def odd_requests(rng: random.Random, hand: Hand) -> Iterator[tuple[Any, str]]:
    """Requests whose fields are odd (huge, unicode, NUL, out of range), as the
    operator, who gets past every token check."""
    for text in odd_strings(rng):
        yield table_pb2.GetTableRequest(table_id=text), "GetTable"
        yield table_pb2.GetViewRequest(hand_id=text, seat=0), "GetView"
        yield table_pb2.PlayRequest(hand_id=hand.hand_id, seat=hand.seat, cards=text), "Play"
        yield table_pb2.PlayRequest(hand_id=text, seat=0, cards="3"), "Play"
        yield table_pb2.OpenTableRequest(variant=text), "OpenTable"
        yield table_pb2.OpenTableRequest(variant="classic", table_id=text), "OpenTable"
        yield table_pb2.StartHandRequest(table_id=text), "StartHand"
        yield table_pb2.TableSuggestRequest(hand_id=text, seat=0), "Suggest"
        yield table_pb2.HintRequest(hand_id=text, seat=0), "Hint"
    for seat in (3, 2**31, 2**32 - 1):
        yield table_pb2.GetViewRequest(hand_id=hand.hand_id, seat=seat), "GetView"
        yield table_pb2.PassRequest(hand_id=hand.hand_id, seat=seat), "Pass"
        yield (
            table_pb2.BidRequest(hand_id=hand.hand_id, seat=seat, action=99, score=2**32 - 1),
            "Bid",
        )
        yield (
            table_pb2.ShowCardsRequest(hand_id=hand.hand_id, seat=seat, cards_held=2**32 - 1),
            "ShowCards",
        )
    yield (
        table_pb2.OpenTableRequest(
            variant="classic", seats=[table_pb2.SeatSpec(player_id="\x00" * 1_000)] * 50
        ),
        "OpenTable",
    )


BOTS = [table_pb2.SeatSpec(player_id=f"bot-{i}", is_bot=True) for i in range(3)]


def client_seed_cases(rng: random.Random) -> list[tuple[list[bytes], list[int]]]:
    """``StartHand``'s client seeds (any bytes: empty, odd lengths, many, big) and
    seats that show before the deal (out of range, repeated)."""
    return [
        ([b""], []),
        ([b"\x00"] * 1_000, []),
        ([rng.randbytes(rng.randrange(0, 257)) for _ in range(12)], []),
        ([rng.randbytes(60_000)], []),
        ([rng.randbytes(900_000)], []),
        ([rng.randbytes(4)] * 150_000, []),
        ([rng.randbytes(64)] * 2, []),
        ([], [3]),
        ([], [2**32 - 1]),
        ([], [0, 0, 1, 2]),
    ]
