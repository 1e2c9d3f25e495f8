"""A gRPC channel whose every call carries a bearer token (``authorization: Bearer``):
how a player's client and the ``ddz`` tools call the player-facing table service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from ddz.access.tokens import AUTH_HEADER, SCHEME
from ddz.adapters.rpc.grpc_client import open_channel
from ddz.config.calling import CallSettings


def _with_token(details: Any, token: str, timeout: float | None) -> Any:
    metadata = list(details.metadata or ())
    if not any(k == AUTH_HEADER for k, _ in metadata):  # a call may name its own token
        metadata.append((AUTH_HEADER, f"{SCHEME} {token}"))
    changes: dict[str, Any] = {"metadata": grpc.aio.Metadata(*metadata)}
    if timeout is not None and details.timeout is None:
        changes["timeout"] = timeout
    return details._replace(**changes)


class _UnaryBearer(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self, token: Callable[[], str], timeout: float) -> None:
        self.token = token
        self.timeout = timeout

    async def intercept_unary_unary(
        self, continuation: Callable[[Any, Any], Any], details: Any, request: Any
    ) -> Any:
        return await continuation(_with_token(details, self.token(), self.timeout), request)


class _StreamBearer(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    def __init__(self, token: Callable[[], str]) -> None:
        self.token = token

    async def intercept_unary_stream(
        self, continuation: Callable[[Any, Any], Any], details: Any, request: Any
    ) -> Any:
        return await continuation(_with_token(details, self.token(), None), request)


def bearer_channel(
    settings: CallSettings,
    token: str | Callable[[], str],
    service: str | None = "table",
    *,
    target: str | None = None,
) -> grpc.aio.Channel:
    """A channel whose every call carries ``token`` (or what ``token()``
    returns at call time: a client whose seat token changes), unless the call names
    its own (``bearer_metadata``), with the suite's default
    deadline on unary calls (``DDZ_RPC_TIMEOUT``); streams choose their own. TLS
    without a client certificate (``grpc_client.open_channel``): the token says who
    the caller is, so a player needs only the CA."""
    if target is None:
        if service is None:
            raise ValueError("bearer_channel needs a service name or a target")
        target = settings.network.address(service)
    current: Callable[[], str] = token if callable(token) else (lambda: token)
    return open_channel(
        settings,
        target,
        interceptors=[_UnaryBearer(current, settings.rpc.rpc_timeout), _StreamBearer(current)],
        service=service,
        client_cert=False,
    )


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """The metadata of one call made with ``token`` on a ``bearer_channel`` whose own
    token is another (a seated player's lobby call, made as the player)."""
    return ((AUTH_HEADER, f"{SCHEME} {token}"),)
