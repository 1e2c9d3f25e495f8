"""A seeded corpus of 10,000 random and mutated tokens (``fuzz_kit``: bit flips,
truncation, repeated segments, nested brackets, huge numbers, unicode, NUL bytes, other
schemes, bodies signed with the right keys but not claims, JWTs of other algorithms) sent
to a few RPCs of the table service: every answer is UNAUTHENTICATED, or
PERMISSION_DENIED for a valid token that does not give the call; those no gRPC client
can send (not printable ASCII) are put to the service's own gate. After all that, and
after an audit step and a rules step were made to fail, no key, no token and no live
hand's seed is in any log line.

The corpus's seed is printed in every failure; ``FUZZ_SEED=<seed>`` replays it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from ddz.access.token_keys import LoginKey, login_key
from ddz.access.tokens import (
    AUTH_HEADER,
    bearer,
    new_claims,
    operator_token,
    player_token,
    sign,
    table_token_key,
)
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.application.errors import Kind, Refusal
from ddz.domain.hand import SeedRequired
from ddz.v1 import audit_pb2, dealer_pb2, hand_events_pb2, table_pb2
from fuzz_kit import SEED, Case, Corpus, Hand, b64, hand_in_play, rpcs
from suite_kit import AUDIT_KEY, Suite, eventually

pytestmark = pytest.mark.suite(turn_timeout=600.0)  # the hand stays in play throughout


CORPUS_SIZE = 10_000


AT_ONCE = 200  # calls in flight together


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
        new_claims("seat", "zed", 600, table="elsewhere", seat=0), table_token_key(settings.keys)
    )
    valid = [
        operator_token(settings.keys),
        hand.token,
        player_token(settings.keys, "ann"),
        elsewhere,
    ]
    wrong = [player_token(settings.keys, "zed"), elsewhere]
    login = login_key(settings.keys)
    cases = Corpus(rng, valid, wrong, table_token_key(settings.keys), login).cases(CORPUS_SIZE)
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
        "table token key": table_token_key(settings.keys).decode(),
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
        for p in settings.telemetry.log_dir.glob("*.log")
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
    import services.recorder.adapters.audits as recorder
    import services.rules.use_cases.handlers as rules

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
