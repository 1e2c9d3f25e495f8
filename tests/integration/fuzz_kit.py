"""Tokens and requests that are no such thing, for the tests of malformed input at the
table service (``test_malformed_*``): a hand in play and the RPCs to send them to, and a
seeded corpus of random and mutated tokens (``FUZZ_SEED=<seed>`` replays it).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import jwt
from cryptography.hazmat.primitives import serialization
from ddz.access.token_keys import LoginKey
from ddz.access.tokens import (
    AUDIENCE,
    ISSUER,
    issue,
    new_claims,
    sign,
)
from ddz.v1 import table_pb2
from suite_kit import Suite
from table_kit import join

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED


DENIED = grpc.StatusCode.PERMISSION_DENIED


SEED = int(os.environ.get("FUZZ_SEED") or random.SystemRandom().randrange(2**32))


B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


PRINTABLE = "".join(map(chr, range(0x20, 0x7F)))


JSONISH = '[]{}":,0123456789.eE-+ truefalsnul\\'


ODD_CHARS = "\x00\x01\t\n\r\x7f\x80é中🂡\u202e\ufeff\udcff"
"""Characters a header cannot carry, or that are not ASCII (a lone surrogate too)."""


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def brackets(n: int = 1_500) -> bytes:
    return b"[" * n


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
            (2, self.signed_odd, UNAUTHENTICATED),
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
        """Claims the login's key signs whose subject is no player id (``ddz.domain.ids``:
        a control character, 300 characters, none, not ASCII): not a player token at all."""
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
