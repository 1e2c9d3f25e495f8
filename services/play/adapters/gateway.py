"""The TableService for browsers: gRPC-Web and the Connect protocol (``connectrpc``, an
ASGI app) in front of the table's own gRPC port.

Every call is forwarded as it came: the same request message to the same method of the
table, with the caller's ``authorization`` header (their player or seat token), the
caller's deadline, and the request id. The table decides who may do what, refuses in
its own words, and keeps the clocks; its rich status comes back to the browser as it
left the table (code, message, ``google.rpc.ErrorInfo`` among the details). This front
holds no key, reads no token and keeps no state: one boundary for rights and errors,
whatever protocol a player speaks (docs/DECISIONS.md "The table in a browser").

The methods are read from the protos (``TableService``'s descriptor), so a method added
to the service is served here with nothing to change.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeAlias

import grpc
import structlog
from connectrpc._server_shared import EndpointServerStream, EndpointUnary
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_codecs
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from ddz.v1 import table_pb2
from google.protobuf import descriptor, message_factory
from google.rpc import status_pb2
from grpc_status import rpc_status
from protobuf.wkt import Any as AnyDetail

from ..use_cases.handlers import REQUEST_ID, Relay

SERVICE = table_pb2.DESCRIPTOR.services_by_name["TableService"]
PATH = f"/{SERVICE.full_name}"

MAX_REQUEST_BYTES = 64 * 1024
"""A TableService request is a few ids and cards; anything larger is refused unread."""

log = structlog.get_logger("ddz.play")


def connect_code(code: grpc.StatusCode) -> Code:
    """gRPC's status code as Connect's (the same codes; gRPC spells one CANCELLED)."""
    return Code.CANCELED if code == grpc.StatusCode.CANCELLED else Code[code.name]


def refusal_of(error: grpc.aio.AioRpcError) -> ConnectError:
    """The table's refusal, for the browser: its code, message and details as they were."""
    status: status_pb2.Status | None = None
    try:
        status = rpc_status.from_call(error)
    except (ValueError, AttributeError):
        status = None
    details = (
        [ErrorDetail(AnyDetail(type_url=d.type_url, value=d.value)) for d in status.details]
        if status is not None
        else []
    )
    return ConnectError(connect_code(error.code()), error.details() or "", details)


def internal(method: descriptor.MethodDescriptor, metadata: list[tuple[str, str]]) -> ConnectError:
    """A fault of this front itself: logged here with its traceback, and INTERNAL with
    only the request id for the browser (as the suite's gRPC servers answer)."""
    request_id = dict(metadata).get(REQUEST_ID, "")
    log.exception("play_call_failed", method=method.name, request_id=request_id)
    return ConnectError(Code.INTERNAL, f"internal error (request id {request_id})")


class TableForward:
    """Each TableService call of a browser, sent on to the table over ``channel``."""

    def __init__(self, channel: grpc.aio.Channel, relay: Relay | None = None) -> None:
        self.channel = channel
        self.relay = relay or Relay()

    def unary(self, method: descriptor.MethodDescriptor) -> Callable[..., Any]:
        call = self.channel.unary_unary(
            f"{PATH}/{method.name}",
            request_serializer=_serialize,
            response_deserializer=message_factory.GetMessageClass(method.output_type).FromString,
        )

        async def forward(request: Any, ctx: RequestContext[Any, Any]) -> Any:
            metadata = self.relay.metadata(ctx.request_headers)
            timeout = self.relay.deadline(ctx.timeout_ms, stream=False)
            try:
                return await call(request, metadata=metadata, timeout=timeout, wait_for_ready=True)
            except grpc.aio.AioRpcError as error:
                raise refusal_of(error) from None
            except Exception:
                raise internal(method, metadata) from None

        return forward

    def stream(self, method: descriptor.MethodDescriptor) -> Callable[..., Any]:
        call = self.channel.unary_stream(
            f"{PATH}/{method.name}",
            request_serializer=_serialize,
            response_deserializer=message_factory.GetMessageClass(method.output_type).FromString,
        )

        async def forward(request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
            metadata = self.relay.metadata(ctx.request_headers)
            timeout = self.relay.deadline(ctx.timeout_ms, stream=True)
            answers = call(request, metadata=metadata, timeout=timeout)
            try:
                async for answer in answers:
                    yield answer
            except grpc.aio.AioRpcError as error:
                raise refusal_of(error) from None
            except Exception:
                raise internal(method, metadata) from None
            finally:
                answers.cancel()  # the browser went away: so does the table's stream

        return forward


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


Forwarded: TypeAlias = EndpointUnary[Any, Any] | EndpointServerStream[Any, Any]
"""What ``Endpoint.unary`` and ``Endpoint.server_stream`` make (the library names no
public union of them)."""


def endpoints(forward: TableForward) -> Mapping[str, Forwarded]:
    """Every method of ``TableService``, forwarded (the protos say which stream)."""
    found: dict[str, Forwarded] = {}
    for method in SERVICE.methods:
        streams = method.server_streaming
        info = MethodInfo(
            name=method.name,
            service_name=SERVICE.full_name,
            input=message_factory.GetMessageClass(method.input_type),
            output=message_factory.GetMessageClass(method.output_type),
            idempotency_level=IdempotencyLevel.UNKNOWN,
            stream_type=StreamType.SERVER_STREAM if streams else StreamType.UNARY,
        )
        path = f"{PATH}/{method.name}"
        if streams:
            found[path] = Endpoint.server_stream(method=info, function=forward.stream(method))
        else:
            found[path] = Endpoint.unary(method=info, function=forward.unary(method))
    return found


class TableGateway(ConnectASGIApplication[TableForward]):
    """gRPC-Web and Connect (binary and JSON) for ``TableService``, at ``/ddz.v1.TableService/``."""

    def __init__(self, forward: TableForward) -> None:
        super().__init__(
            service=forward, endpoints=endpoints, codecs=google_protobuf_codecs(),
            read_max_bytes=MAX_REQUEST_BYTES,
        )  # fmt: skip

    @property
    def path(self) -> str:
        return PATH
