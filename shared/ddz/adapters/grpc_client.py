"""What every gRPC client in the suite shares: channels, error reasons, and the way back
from a failed call to a ``Refusal``.

The rule: every outgoing call has a deadline. Channels from ``make_channel`` enforce it
for unary calls (``timeout=settings.rpc_timeout`` unless the caller passed one) and pass
the caller's request id on (``x-request-id``) so logs of both sides line up.
Server-streaming calls (a player's event stream) are long-lived by design and choose
their own deadline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import structlog
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from ddz.adapters.grpc_server import ERROR_DOMAIN, REQUEST_ID_HEADER, STATUS_OF
from ddz.application.errors import Kind, Reason, Refusal
from ddz.config import Settings

KIND_OF: dict[grpc.StatusCode, Kind] = {code: kind for kind, code in STATUS_OF.items()}
"""The kind of refusal a status code stands for (codes not listed: ``Kind.INTERNAL``)."""


class _Defaults(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Adds the default deadline and the bound request id to unary calls."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    async def intercept_unary_unary(
        self, continuation: Callable[[Any, Any], Any], details: Any, request: Any
    ) -> Any:
        timeout = self.timeout if details.timeout is None else details.timeout
        metadata = list(details.metadata or ())
        request_id = structlog.contextvars.get_contextvars().get("request_id")
        if request_id and not any(key == REQUEST_ID_HEADER for key, _ in metadata):
            metadata.append((REQUEST_ID_HEADER, str(request_id)))
        details = details._replace(timeout=timeout, metadata=grpc.aio.Metadata(*metadata))
        return await continuation(details, request)


def make_channel(
    settings: Settings, service: str | None = None, *, target: str | None = None
) -> grpc.aio.Channel:
    """An insecure channel to ``service`` (its configured address) or to ``target``."""
    if target is None:
        if service is None:
            raise ValueError("make_channel needs a service name or a target")
        target = settings.address(service)
    return grpc.aio.insecure_channel(
        target,
        options=[
            ("grpc.max_receive_message_length", settings.max_message_bytes),
            ("grpc.max_send_message_length", settings.max_message_bytes),
        ],
        interceptors=[_Defaults(settings.rpc_timeout)],
    )


def error_info(error: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    """The ``google.rpc.ErrorInfo`` of a failed call (``AioRpcError``), if it has one."""
    try:
        status = rpc_status.from_call(error)
    except (ValueError, AttributeError):
        return None
    if status is None:
        return None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            if info.domain == ERROR_DOMAIN:
                return info
    return None


def error_reason(error: grpc.RpcError) -> str | None:
    """The ``ddz.v1.Reason`` name of a failed call (``"NOT_YOUR_TURN"``), or None when
    the error carries no ErrorInfo of ours (deadline exceeded, size limit, ...)."""
    info = error_info(error)
    return info.reason if info is not None else None


def refusal_from(error: grpc.RpcError, service: str) -> Refusal:
    """What another service's failed call means to our caller: the same kind and reason,
    the message prefixed with the service's name."""
    code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
    reason = error_reason(error) or Reason.REASON_UNSPECIFIED
    details = error.details() if callable(getattr(error, "details", None)) else ""
    try:
        known = Reason(reason)
    except ValueError:
        known = Reason.REASON_UNSPECIFIED
    return Refusal(KIND_OF.get(code, Kind.INTERNAL), known, f"{service}: {details or code.name}")


async def ask(service: str, method: Callable[[Any], Any], request: Any) -> Any:
    """``await method(request)`` on a stub of ``service``; a failure is a ``Refusal``."""
    try:
        return await method(request)
    except grpc.aio.AioRpcError as error:
        raise refusal_from(error, service) from None
