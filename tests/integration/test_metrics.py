"""Each service's Prometheus metrics, scraped over HTTP while the suite plays.

The suite runs in this process, so its services share one registry and each one's
endpoint serves all of it: the assertions read each service's own series (the
``service`` label) from that service's own endpoint, and compare counters before and
after, never their absolute values (other tests of the process counted too).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from pathlib import Path

import grpc
import metrics_kit
import nats.js.errors
import pytest
from audit_kit import settled
from ddz.adapters import codec
from ddz.adapters.messaging.hand_stream import hand_stream_id
from ddz.adapters.messaging.subjects import subject_for
from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.rpc.grpc_server import full_service_name, start_server
from ddz.adapters.security.certs import ensure_certificates
from ddz.adapters.telemetry.metrics import serve_metrics
from ddz.application.errors import Reason, Refusal
from ddz.config import Settings
from ddz.config.security import OPERATOR
from ddz.domain.hand import Pass, SeatInfo
from ddz.domain.hand.events import HandSettled
from ddz.v1 import recorder_pb2, recorder_pb2_grpc, rules_pb2
from deal_kit import assigned
from metrics_kit import Series, total, value
from suite_kit import Suite, eventually

SEED = 20261201
RPC = "ddz_rpc_handled_total"
CONSUMED = "ddz_events_consumed_total"
PLAYERS = ("alice", "bob", "carol")


async def scrape(address: str) -> Series:
    return await asyncio.to_thread(metrics_kit.scrape, address)


def endpoint(suite: Suite, name: str) -> str:
    exposition = suite.running[name].metrics
    assert exposition is not None, f"{name} serves no metrics"
    return exposition.address


async def hand_settled(suite: Suite, hand_id: str) -> bool:
    subject = subject_for(hand_stream_id(hand_id), HandSettled.TYPE)
    try:
        await suite.bus.js.get_last_msg(suite.bus.stream, subject)
    except nats.js.errors.NotFoundError:
        return False
    return True


async def test_each_service_counts_its_calls_events_and_refusals(suite: Suite) -> None:
    print(f"seed {SEED}")
    rng = random.Random(SEED)
    before = {name: await scrape(endpoint(suite, name)) for name in suite.running}

    # Three bot seats: the bot service plays the hand out through RulesService.Decide.
    hand_id = f"metrics-{uuid.uuid4().hex[:12]}"
    bots = [SeatInfo(p, is_bot=True) for p in PLAYERS[:3]]
    await suite.dealer.Deal(
        await assigned(
            suite.bus, suite.settings, hand_id, seats=bots, client_seeds=[rng.randbytes(8)]
        )
    )
    assert await eventually(lambda: hand_settled(suite, hand_id), timeout=60.0, every=0.1)
    await settled(suite)
    # A move after the end: refused by the rules as data (an OK call), recorded.
    late = rules_pb2.DecideRequest(hand_id=hand_id, seat=0)
    codec.set_command(late, Pass(0))
    assert not (await suite.rules.Decide(late)).accepted
    unknown = rules_pb2.DecideRequest(hand_id=f"missing-{uuid.uuid4().hex[:8]}", seat=0)
    codec.set_command(unknown, Pass(0))
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await suite.rules.Decide(unknown)
    assert refused.value.code() is grpc.StatusCode.NOT_FOUND

    after_dealer = await scrape(endpoint(suite, "dealer"))
    deal = {"service": "dealer", "method": "Deal", "code": "OK"}
    assert value(after_dealer, RPC, **deal) == value(before["dealer"], RPC, **deal) + 1

    after_rules = await scrape(endpoint(suite, "rules"))
    ok = {"service": "rules", "method": "Decide", "code": "OK"}
    assert value(after_rules, RPC, **ok) == value(before["rules"], RPC, **ok) + 1
    batch = {"service": "rules", "method": "DecideBatch", "code": "OK"}
    assert value(after_rules, RPC, **batch) > value(before["rules"], RPC, **batch)  # the bot
    not_found = {"service": "rules", "method": "Decide", "code": "NOT_FOUND"}
    assert value(after_rules, RPC, **not_found) == value(before["rules"], RPC, **not_found) + 1
    timed = {"service": "rules", "method": "Decide"}
    assert value(after_rules, "ddz_rpc_duration_seconds_count", **timed) == (
        value(before["rules"], "ddz_rpc_duration_seconds_count", **timed) + 2
    )
    published = total(after_rules, "ddz_events_published_total", category="hand")
    assert published > total(before["rules"], "ddz_events_published_total", category="hand")
    after_bot = await scrape(endpoint(suite, "bot"))
    assert value(after_bot, "ddz_decision_seconds_count") > value(
        before["bot"], "ddz_decision_seconds_count"
    )

    async def consumed() -> bool:
        now = await scrape(endpoint(suite, "recorder"))
        then = before["recorder"]
        return all(
            value(now, CONSUMED, durable=durable) > value(then, CONSUMED, durable=durable)
            for durable in ("recorder", "settlement", "table", "bot")
        )

    assert await eventually(consumed, timeout=60.0, every=0.2)
    now = await scrape(endpoint(suite, "settlement"))
    assert ("ddz_consumer_pending", frozenset({("durable", "recorder")})) in now
    assert ("ddz_hands_in_play", frozenset({("feed", "table")})) in now


class Faulty(recorder_pb2_grpc.RecorderServiceServicer):
    """Refuses every ReadStream and crashes on every ReadAll."""

    async def ReadStream(self, request: object, context: object) -> recorder_pb2.ReadStreamResponse:
        raise Refusal.precondition(Reason.REASON_UNSPECIFIED, "not today")

    async def ReadAll(self, request: object, context: object) -> recorder_pb2.ReadAllResponse:
        raise RuntimeError("a bug")


async def test_refusals_and_crashes_count_with_their_codes(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path), "DDZ_HOST": "127.0.0.1"})
    service = f"faulty-{uuid.uuid4().hex[:6]}"  # a series of its own in this process
    ensure_certificates(tmp_path, [service, OPERATOR])  # its certificate, and the caller's
    recorder = full_service_name(recorder_pb2, "RecorderService")
    running = await start_server(
        service,
        lambda server: recorder_pb2_grpc.add_RecorderServiceServicer_to_server(Faulty(), server),
        [recorder],
        settings.calling,
        port=0,
    )
    exposition = serve_metrics(service, "127.0.0.1:0")
    try:
        async with make_channel(settings.calling, target=f"127.0.0.1:{running.port}") as channel:
            stub = recorder_pb2_grpc.RecorderServiceStub(channel)
            for call, request, code in (
                (stub.ReadStream, recorder_pb2.ReadStreamRequest(stream_id="hand-1"),
                 grpc.StatusCode.FAILED_PRECONDITION),
                (stub.ReadAll, recorder_pb2.ReadAllRequest(), grpc.StatusCode.INTERNAL),
            ):  # fmt: skip
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await call(request)
                assert caught.value.code() is code
        series = await scrape(exposition.address)
    finally:
        exposition.stop()
        await running.stop(0)
    assert value(series, RPC, service=service, method="ReadStream", code="FAILED_PRECONDITION") == 1
    assert value(series, RPC, service=service, method="ReadAll", code="INTERNAL") == 1
    assert value(series, "ddz_rpc_duration_seconds_count", service=service, method="ReadAll") == 1
