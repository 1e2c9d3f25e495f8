"""A bearer token of 1,500 ``[`` at the table service (bare, base64url inside a ``ddz1``
token, and signed with the service's own seat key or as a JWT with the login's key) is
UNAUTHENTICATED, never INTERNAL: the whole suite in this process, its logs written as
JSON lines to a file.
"""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from ddz.access.token_keys import login_key
from ddz.access.tokens import (
    AUTH_HEADER,
    table_token_key,
)
from ddz.adapters.rpc.grpc_client import error_reason
from fuzz_kit import (
    UNAUTHENTICATED,
    Rpc,
    b64,
    brackets,
    hand_in_play,
    login_signed,
    rpcs,
    sign_body,
)
from suite_kit import Suite

pytestmark = pytest.mark.suite(turn_timeout=600.0)  # the hand stays in play throughout


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
        f"ddz1.{signed_body}.{sign_body(signed_body, table_token_key(settings.keys))}": "claims",
        login_signed(brackets(1_300), login_key(settings.keys)): "claims",
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
