"""What every gRPC service of the suite shares on the server side.

``serve()`` runs a ``grpc.aio`` server with the standard health service (for each
service and for "": SERVING while the service's checks hold, NOT_SERVING while one
fails and once it stops; ``ddz.adapters.telemetry.health``), server reflection (so ``grpcurl``
can list and call it), a request size limit (bigger requests get RESOURCE_EXHAUSTED
from gRPC itself), an interceptor that binds request and hand ids to the structlog
context and writes one log line per call, and a graceful stop on SIGTERM/SIGINT.

Every listener is TLS (``server_credentials``): an internal service requires a client
certificate of the suite's CA in the handshake (mutual TLS), the player-facing table
service asks none (``rights.PLAYER_FACING``). The interceptor authorizes each call by
its caller's certificate identity against ``ddz.access.rights.RIGHTS``: a caller
without the right is refused PERMISSION_DENIED. ``DDZ_INSECURE`` serves plaintext with
no identities and no rights, for local development only, and says so loudly at start.
The servers also bound the calls in flight (``DDZ_MAX_CONCURRENT_RPCS``) and how often
clients may ping (``KEEPALIVE``).

This is the one place a ``Refusal`` (``ddz.application.errors``) becomes a gRPC status:
the interceptor ends any call whose handler raised one with a rich status whose
``google.rpc.ErrorInfo`` carries the ``ddz.v1.Reason`` name (``STATUS_OF`` maps each
kind to its code); ``status_of`` is the same mapping for answers that carry a status
as data (one command of a ``DecideBatch``). A handler that failed because NATS did
not answer (``election.UNANSWERED``: a stream electing a leader) ends UNAVAILABLE, which
its caller may ask again; any other error ends INTERNAL, with its request id.
"""

from __future__ import annotations

import asyncio
import inspect
import signal
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
import structlog
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection
from grpc_status import rpc_status

from ddz.access.identity import peer_identity
from ddz.access.rights import PLAYER_FACING, Right, right_of
from ddz.adapters.messaging.election import UNANSWERED
from ddz.adapters.security.tls_files import read_tls_file
from ddz.adapters.telemetry import metrics
from ddz.adapters.telemetry.health import Check, HealthWatch
from ddz.adapters.telemetry.tracing import server_interceptors
from ddz.application.errors import Kind, Refusal
from ddz.config.calling import CallSettings
from ddz.config.security import TlsSettings

ERROR_DOMAIN = "ddz.v1"
REQUEST_ID_HEADER = "x-request-id"
# Request fields whose value is bound to the log context when a request has them.
CONTEXT_FIELDS = ("hand_id", "table_id", "stream_id")

log = structlog.get_logger("ddz.grpc")

KEEPALIVE: tuple[tuple[str, int], ...] = (
    # The server pings an idle connection every minute and drops a peer that does not
    # answer within 20 s (a player's vanished stream, a dead service) ...
    ("grpc.keepalive_time_ms", 60_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 1),
    # ... and takes a client's pings at most every 10 s, calls or not: a client that
    # pings faster is warned twice, then its connection is closed (GOAWAY).
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.max_ping_strikes", 2),
)
"""Keepalive options of every server (``grpc_client.KEEPALIVE`` is the clients' side,
pinging less often than this allows)."""

STATUS_OF: dict[Kind, grpc.StatusCode] = {
    Kind.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
    Kind.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Kind.EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    Kind.PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
    Kind.CONFLICT: grpc.StatusCode.ABORTED,
    Kind.DENIED: grpc.StatusCode.PERMISSION_DENIED,
    Kind.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Kind.EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Kind.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Kind.TIMEOUT: grpc.StatusCode.DEADLINE_EXCEEDED,
    Kind.INTERNAL: grpc.StatusCode.INTERNAL,
}
"""The gRPC status code of each kind of refusal."""


def full_service_name(pb2_module: Any, service: str) -> str:
    """``"ddz.v1.RecorderService"`` from the generated module, never a string literal."""
    name: str = pb2_module.DESCRIPTOR.services_by_name[service].full_name
    return name


def status_of(refusal: Refusal) -> status_pb2.Status:
    """The rich status of ``refusal``: its code, message and ErrorInfo(reason, domain)."""
    detail = any_pb2.Any()
    detail.Pack(
        error_details_pb2.ErrorInfo(
            reason=refusal.reason.value, domain=ERROR_DOMAIN, metadata=dict(refusal.metadata)
        )
    )
    code = STATUS_OF[refusal.kind]
    return status_pb2.Status(code=code.value[0], message=clipped(refusal.message), details=[detail])


MAX_DETAILS_CHARS = 1_000
"""A refusal's message is cut here: one quoting a huge request field (a 100 kB id) would
otherwise pass gRPC's metadata limit, and the client would see its transport's error."""


def clipped(text: str, limit: int = MAX_DETAILS_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


async def refuse(context: grpc.aio.ServicerContext[Any, Any], refusal: Refusal) -> NoReturn:
    """End the call with ``refusal``'s rich status."""
    structlog.contextvars.bind_contextvars(reason=refusal.reason.value)
    await context.abort_with_status(rpc_status.to_status(status_of(refusal)))
    raise AssertionError("unreachable: abort_with_status raises")  # pragma: no cover


class ContextInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Binds ``request_id``/``rpc`` (and ``hand_id`` etc. when the request has them) to
    structlog's context for the duration of each call, logs one line per call, counts
    it by final code with its duration (``ddz_rpc_*`` of ``ddz.adapters.telemetry.metrics``, under
    ``service``), and turns unexpected exceptions into INTERNAL without leaking their
    text to clients. With ``authorize`` (every TLS server), a call whose caller has no
    right to it (``ddz.access.rights``) is refused PERMISSION_DENIED before its
    handler runs."""

    def __init__(self, service: str = "", *, authorize: bool = False) -> None:
        self.service = service
        self.authorize = authorize

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return None
        method: str = details.method
        request_id = next(
            (value for key, value in details.invocation_metadata or () if key == REQUEST_ID_HEADER),
            None,
        )
        kind, behaviour = _behaviour(handler)
        factory = getattr(grpc, f"{kind}_rpc_method_handler")
        wrapper = _wrap_stream if handler.response_streaming else _wrap_unary
        deserializer = handler.request_deserializer
        right = right_of(method) if self.authorize else None
        return factory(
            wrapper(behaviour, Call(self.service, method, right), request_id),
            request_deserializer=(
                deserializer if handler.request_streaming else _lenient(deserializer)
            ),
            response_serializer=handler.response_serializer,
        )


class Undecodable:
    """What ``_lenient`` hands a call whose request bytes are no message of its type
    (bad UTF-8, truncated, nested too deep): the call refuses it as INVALID_ARGUMENT
    instead of gRPC's own UNKNOWN with the parser's exception in the details."""

    def __init__(self, message_type: str) -> None:
        self.message_type = message_type


def _lenient(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None
    message_type = getattr(getattr(deserializer, "__self__", None), "__name__", "request")

    def decode(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception:  # DecodeError (deep nesting too), or a parser's RecursionError
            return Undecodable(message_type)

    return decode


def _decoded(request: Any) -> None:
    if isinstance(request, Undecodable):
        raise Refusal.invalid(f"malformed request: not a {request.message_type} message")


def _behaviour(handler: grpc.RpcMethodHandler) -> tuple[str, Any]:
    for kind in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
        behaviour = getattr(handler, kind)
        if behaviour is not None:
            return kind, behaviour
    raise ValueError("gRPC handler without a behaviour")


@dataclass(frozen=True, slots=True)
class Call:
    """Which service's which method a wrapped handler serves (``/ddz.v1.RulesService/Decide``),
    and who may call it (None: anyone, on a plaintext server)."""

    service: str
    method: str
    right: Right | None = None

    @property
    def rpc(self) -> str:
        return self.method.rsplit("/", 1)[-1]


def _begin(call: Call, request_id: str | None, request: Any) -> float:
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(request_id=request_id or uuid.uuid4().hex, rpc=call.rpc)
    if hasattr(request, "DESCRIPTOR"):  # a unary request message (not a stream)
        fields = request.DESCRIPTOR.fields_by_name
        bound = {
            name: clipped(getattr(request, name), 200) for name in CONTEXT_FIELDS if name in fields
        }
        structlog.contextvars.bind_contextvars(**{k: v for k, v in bound.items() if v})
    return time.perf_counter()


def _authorized(call: Call, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    if call.right is None:
        return
    caller = peer_identity(context)
    if caller is not None:
        structlog.contextvars.bind_contextvars(caller=caller)
    if not call.right.allows(caller):
        who = caller or "a caller without a client certificate"
        raise Refusal.denied(f"{who} may not call {call.method.lstrip('/')} ({call.right.why})")


def _finish(
    call: Call, started: float, context: grpc.aio.ServicerContext[Any, Any], error: bool
) -> None:
    elapsed = time.perf_counter() - started
    elapsed_ms = round(elapsed * 1000, 3)
    code = context.code()
    name = code.name if isinstance(code, grpc.StatusCode) else ("UNKNOWN" if error else "OK")
    metrics.rpc_finished(call.service, call.rpc, name, elapsed)
    if name == "OK":
        log.debug("rpc", code=name, ms=elapsed_ms)
    else:
        log.info("rpc", code=name, ms=elapsed_ms, details=context.details() or None)
    structlog.contextvars.clear_contextvars()


async def _internal(context: grpc.aio.ServicerContext[Any, Any]) -> NoReturn:
    log.exception("rpc_failed")
    request_id = structlog.contextvars.get_contextvars().get("request_id", "")
    await context.abort(grpc.StatusCode.INTERNAL, f"internal error (request id {request_id})")
    raise AssertionError("unreachable")  # pragma: no cover


def _unanswered(exc: Exception) -> Refusal:
    """A call that failed because NATS did not answer (a stream electing a leader, a node
    out of reach) is UNAVAILABLE, as the bus is: its caller may ask again (the channel
    does, for the calls that are safe to repeat), never an internal error."""
    why = str(exc) or type(exc).__name__
    log.warning("rpc_bus_unanswered", error=why)
    return Refusal.unavailable(f"the event bus did not answer ({why}); try again")


async def _failed(context: grpc.aio.ServicerContext[Any, Any], exc: Exception) -> NoReturn:
    """End a call whose handler raised: a ``Refusal`` as its status, NATS not answering as
    UNAVAILABLE, anything else INTERNAL (the one mapping for unary and streaming calls)."""
    if isinstance(exc, Refusal):
        await refuse(context, exc)
    if isinstance(exc, UNANSWERED):
        await refuse(context, _unanswered(exc))
    await _internal(context)


def _wrap_unary(behaviour: Any, call: Call, request_id: str | None) -> Any:
    async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        started = _begin(call, request_id, request)
        try:
            _authorized(call, context)
            _decoded(request)
            return await behaviour(request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await _failed(context, exc)
        finally:
            _finish(call, started, context, error=False)

    return unary


def _wrap_stream(behaviour: Any, call: Call, request_id: str | None) -> Any:
    if inspect.isasyncgenfunction(behaviour):

        async def generate(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = _begin(call, request_id, request)
            try:
                _authorized(call, context)
                _decoded(request)
                async for response in behaviour(request, context):
                    yield response
            except (grpc.aio.AbortError, asyncio.CancelledError):
                raise
            except Exception as exc:
                await _failed(context, exc)
            finally:
                _finish(call, started, context, error=False)

        return generate
    # Streaming handlers that write with ``context.write`` are plain coroutines.
    return _wrap_unary(behaviour, call, request_id)


def server_credentials(settings: TlsSettings, service_name: str) -> grpc.ServerCredentials:
    """TLS with ``service_name``'s certificate (``DDZ_TLS_CERT``/``DDZ_TLS_KEY``, else
    ``<data dir>/tls/<name>.crt``/``.key``). An internal service requires and verifies a
    client certificate of the CA (``DDZ_TLS_CA``); a player-facing one asks for none."""
    own = settings.as_identity(service_name)
    pair = (read_tls_file(own.tls_key_path, "key"), read_tls_file(own.tls_cert_path, "certificate"))
    if service_name in PLAYER_FACING:
        return grpc.ssl_server_credentials([pair])
    return grpc.ssl_server_credentials(
        [pair], root_certificates=read_tls_file(own.tls_ca_path, "CA"), require_client_auth=True
    )


@dataclass
class RunningServer:
    """A started server; ``port`` is the bound port (useful with port 0)."""

    server: grpc.aio.Server
    port: int
    health: HealthServicer
    watch: HealthWatch
    probe: grpc.aio.Server | None = None  # the plaintext health-only listener, if any

    async def stop(self, grace: float = 5.0) -> None:
        """Report NOT_SERVING, refuse new calls, let calls in flight finish for ``grace`` s."""
        await self.watch.stop()
        await self.health.enter_graceful_shutdown()
        if self.probe is not None:
            await self.probe.stop(0)
        await self.server.stop(grace)


async def start_probe(service_name: str, address: str, health: HealthServicer) -> grpc.aio.Server:
    """A plaintext listener with the health service alone, sharing ``health`` with the
    service's own port: Kubernetes' native gRPC probes cannot speak TLS. What it tells is
    SERVING or NOT_SERVING, nothing else; no other service is registered on it."""
    probe = grpc.aio.server(options=[("grpc.so_reuseport", 0), *KEEPALIVE],
                            maximum_concurrent_rpcs=16)  # fmt: skip
    health_pb2_grpc.add_HealthServicer_to_server(health, probe)
    try:
        bound = probe.add_insecure_port(address)
    except RuntimeError as exc:
        raise OSError(f"{service_name}: cannot listen for probes on {address}: {exc}") from None
    if bound == 0:
        raise OSError(f"{service_name}: cannot listen for probes on {address}")
    await probe.start()
    host = address.rsplit(":", 1)[0]
    log.info("probe_listening", service=service_name, address=f"{host}:{bound}",
             serves="grpc.health.v1.Health")  # fmt: skip
    return probe


async def start_server(
    service_name: str,
    add_servicers: Callable[[grpc.aio.Server], None],
    service_full_names: Sequence[str],
    settings: CallSettings,
    port: int | None = None,
    checks: Mapping[str, Check] | None = None,
    roles: Mapping[str, Check] | None = None,
) -> RunningServer:
    """Build, bind and start the server (``port=None``: the service's configured port),
    its health true to ``checks`` (none: SERVING while it runs) and ``roles``: TLS with
    the service's certificate and its callers' rights, or plaintext under ``DDZ_INSECURE``."""
    credentials = None if settings.tls.insecure else server_credentials(settings.tls, service_name)
    if credentials is None:
        log.warning(
            "insecure_grpc", service=service_name,
            warning="DDZ_INSECURE is set: plaintext gRPC, no caller identities, no rights "
            "checked. Anyone who reaches this port can call every RPC. Local development only.",
        )  # fmt: skip
    server = grpc.aio.server(
        # The call's span outermost (nothing while tracing is off), so what the context
        # interceptor logs and refuses is inside it.
        interceptors=[
            *server_interceptors(),
            ContextInterceptor(service_name, authorize=credentials is not None),
        ],
        options=[
            ("grpc.max_receive_message_length", settings.rpc.max_message_bytes),
            # Without this, Linux lets a second server bind the same port silently.
            ("grpc.so_reuseport", 0),
            *KEEPALIVE,
        ],
        maximum_concurrent_rpcs=settings.rpc.concurrent_rpcs_of(service_name),
    )
    add_servicers(server)
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    reflection.enable_server_reflection(
        (*service_full_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
         reflection.SERVICE_NAME),
        server,
    )  # fmt: skip
    address = settings.network.listen_address(service_name, port)
    try:
        if credentials is None:
            bound = server.add_insecure_port(address)
        else:
            bound = server.add_secure_port(address, credentials)
    except RuntimeError:
        bound = 0  # gRPC's own words name no setting: ours below do
    if bound == 0:
        name = f"DDZ_{service_name.upper()}"
        raise OSError(
            f"{service_name}: cannot listen on {address} (the port is in use, or the host is "
            f"not this machine's): set {name}_PORT to a free port, or {name}_LISTEN"
        )
    watch = HealthWatch(service_name, service_full_names, checks or {}, health, roles=roles)
    await watch.start()  # the first status is set before the first call is taken
    try:
        await server.start()
    except BaseException:
        await watch.stop()
        raise
    log.info("listening", service=service_name, address=f"{address.rsplit(':', 1)[0]}:{bound}",
             tls="off" if credentials is None else (
                 "server" if service_name in PLAYER_FACING else "mutual"))  # fmt: skip
    running = RunningServer(server, bound, health, watch)
    probe_address = settings.network.probe_address(service_name)
    if probe_address is not None:
        try:
            running.probe = await start_probe(service_name, probe_address, health)
        except BaseException:
            await running.stop(0)
            raise
    return running


async def serve(
    service_name: str,
    add_servicers: Callable[[grpc.aio.Server], None],
    service_full_names: Sequence[str],
    settings: CallSettings,
    port: int | None = None,
    *,
    stop: asyncio.Event | None = None,
    grace: float = 5.0,
    on_started: Callable[[RunningServer], Awaitable[None] | None] | None = None,
    checks: Mapping[str, Check] | None = None,
    roles: Mapping[str, Check] | None = None,
) -> None:
    """Run a service until SIGTERM/SIGINT (or ``stop`` is set), then stop gracefully."""
    running = await start_server(
        service_name, add_servicers, service_full_names, settings, port, checks, roles
    )
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)
    for signum in signals:
        loop.add_signal_handler(signum, stop.set)
    try:
        if on_started is not None:
            result = on_started(running)
            if inspect.isawaitable(result):
                await result
        await stop.wait()
        log.info("stopping", service=service_name, grace_s=grace)
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
        await running.stop(grace)
    log.info("stopped", service=service_name)
