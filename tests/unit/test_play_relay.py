"""The players' web front's use cases (services/play/use_cases/handlers.py: the relay, guests) and
its mapping of the table's status codes to Connect's."""

from __future__ import annotations

import re

import grpc
import pytest
from ddz.application.errors import Reason, Refusal

from services.play.adapters.gateway import SERVICE, connect_code, endpoints
from services.play.use_cases.handlers import GUEST_TTL, Guests, Relay


def test_a_unary_call_without_a_deadline_gets_the_relays_and_a_stream_none() -> None:
    relay = Relay(unary_deadline=120.0, longest=3600.0)
    assert relay.deadline(None, stream=False) == 120.0
    assert relay.deadline(None, stream=True) is None
    assert relay.deadline(2500, stream=False) == 2.5
    assert relay.deadline(10_000_000, stream=True) == 3600.0  # never longer than an hour
    assert relay.deadline(-5, stream=False) == 0.0


def test_only_the_token_and_a_request_id_go_on() -> None:
    sent = Relay.metadata({"authorization": "Bearer t", "cookie": "c=1", "x-request-id": "r1",
                           "x-forwarded-for": "10.0.0.1"})  # fmt: skip
    assert sent == [("authorization", "Bearer t"), ("x-request-id", "r1")]
    anonymous = dict(Relay.metadata({}))
    assert "authorization" not in anonymous and len(anonymous["x-request-id"]) == 32
    assert len(dict(Relay.metadata({"x-request-id": "x" * 500}))["x-request-id"]) == 64


ERRORS = [code for code in grpc.StatusCode if code != grpc.StatusCode.OK]


@pytest.mark.parametrize("code", ERRORS)
def test_every_grpc_error_has_its_connect_code(code: grpc.StatusCode) -> None:
    assert connect_code(code).name == code.name.replace("CANCELLED", "CANCELED")


def test_every_method_of_the_table_is_served_with_its_streaming() -> None:
    served = endpoints(forward=_Forward())  # type: ignore[arg-type]
    assert {path.rsplit("/", 1)[1] for path in served} == {m.name for m in SERVICE.methods}
    streams = {
        p.rsplit("/", 1)[1] for p, e in served.items() if type(e).__name__.endswith("ServerStream")
    }
    assert streams == {"WatchHand"}


class _Forward:
    def unary(self, method: object) -> object:
        return lambda request, ctx: None

    def stream(self, method: object) -> object:
        return lambda request, ctx: None


def test_guests_get_fresh_names_at_most_so_many_a_minute() -> None:
    now = [100.0]
    signed: list[tuple[str, float]] = []
    guests = Guests(lambda name, ttl: signed.append((name, ttl)) or f"token-of-{name}",
                    per_minute=3, clock=lambda: now[0])  # fmt: skip
    names = [guests.token()[0] for _ in range(3)]
    assert len(set(names)) == 3 and all(re.fullmatch(r"guest-[0-9a-f]{8}", n) for n in names)
    assert [ttl for _name, ttl in signed] == [GUEST_TTL] * 3
    with pytest.raises(Refusal) as refused:
        guests.token()
    assert refused.value.reason == Reason.RATE_LIMITED
    now[0] += 60.0  # a minute later: room again
    name, token = guests.token()
    assert token == f"token-of-{name}"
