"""Malformed requests at the table service (bytes that are no message, odd fields, odd
client seeds) are refused as a client's error, never INTERNAL, and no live hand's seed
reaches a log line.

The seed of the odd requests is printed in every failure; ``FUZZ_SEED=<seed>`` replays it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from ddz.access.tokens import (
    AUTH_HEADER,
    operator_token,
)
from ddz.v1 import table_pb2
from fuzz_kit import PRINTABLE, SEED, Hand, hand_in_play
from suite_kit import Suite

pytestmark = pytest.mark.suite(turn_timeout=600.0)  # the hand stays in play throughout


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
    tls = grpc.ssl_channel_credentials(suite.settings.tls.tls_ca_path.read_bytes())
    channel = grpc.aio.secure_channel(suite.settings.network.address("table"), tls)
    metadata = [(AUTH_HEADER, f"Bearer {operator_token(suite.settings.keys)}")]
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
