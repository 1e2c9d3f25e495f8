"""A standby table instance's calls, sent on to the active one as they came.

Every TableService method is served by one generic handler (``Switch``): the active
instance's own servicer while it is active, else a ``Forwarder`` that sends the call's
request bytes undecoded (no deserializer), with the caller's metadata (the bearer
token, the request id; not the transport's own headers), its remaining deadline and
its cancellation, to the active instance, and gives the caller back what the active
answered: the response, or its status code, details and trailing metadata (the
ErrorInfo reason) unchanged. So any instance serves any table's calls, and the players'
load balancer may send a call to any of them.

The channel to the active instance is TLS checking that the peer holds the suite's
``table`` certificate (its DNS SAN ``table``, whatever address it is dialled at), or
plaintext under ``DDZ_INSECURE``. It never sends a call twice. A call the active
instance could not be sent at all (its connection refused: it died) waits, within the
caller's deadline and ``UNREACHED_PATIENCE``, for the lease to change hands, and is then
served by whoever holds it: this instance, once it has taken over, or the new active
one. Any other failure, and a standby whose active instance is unknown, answers
UNAVAILABLE at once, saying why, and the callers' channels retry what
``grpc_client.REPEATS`` allows (a second instance retrying too would multiply the
attempts).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, NoReturn, TypeAlias

import grpc
import structlog
from ddz.adapters.rpc.grpc_client import KEEPALIVE, RECONNECT_BACKOFF_MS, error_info
from ddz.adapters.security.tls_files import read_tls_file
from ddz.adapters.telemetry import metrics
from ddz.adapters.telemetry.tracing import client_interceptors
from ddz.application.errors import Refusal
from ddz.config.calling import CallSettings

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]
Metadata: TypeAlias = tuple[tuple[str, str | bytes], ...]

FORWARDED_BY = "ddz-forwarded-by"
"""Metadata a forwarded call carries (the standby's holder id): an instance that is not
active refuses such a call rather than forwarding it again, so two instances that
disagree for a moment about the active one never pass a call back and forth."""
CERTIFICATE_NAME = "table"
"""The DNS SAN the active instance's certificate must have."""
TRANSPORT_HEADERS = frozenset({
    "content-type", "te", "user-agent", "host", "connection", "keep-alive",
    "proxy-connection", "transfer-encoding", "upgrade",
})  # fmt: skip
"""Headers of the caller's HTTP/2 stream, not of its call: the forwarded call has its own
(and ``grpc-*``, ``:pseudo`` headers: deadline, encoding, path)."""
STATUS_DETAILS = "grpc-status-details-bin"
"""The one ``grpc-*`` trailer passed back: the rich status (ErrorInfo and its reason)."""
CLOSE_GRACE = 1.0
"""Seconds the calls on a channel to a former active instance may still take."""
UNREACHED_PATIENCE = 30.0
"""Seconds at most a call the active instance could not be sent waits for another one
(a dead holder's lease is free within its TTL, 10 s by default, and taken at once)."""
NEVER_SENT = "failed to connect to all addresses"
"""How gRPC says that a call failed before it was sent: no connection could be made."""

log = structlog.get_logger("ddz.table.forwarding")


def passed_on(metadata: Iterable[tuple[str, Any]] | None, *, keep: str = "") -> Metadata:
    """``metadata`` without the transport's headers (``keep``: one ``grpc-*`` to keep)."""
    return tuple(
        (key, value)
        for key, value in metadata or ()
        if key == keep
        or not (key.startswith((":", "grpc-")) or key in TRANSPORT_HEADERS or key == FORWARDED_BY)
    )


def remaining(context: Context) -> float | None:
    """The caller's deadline, as the time left (None: it set none, nor does its forward:
    a JoinRoom may wait as long as its caller lets it; the caller going away cancels)."""
    left: float | None = context.time_remaining()
    return None if left is None else max(0.0, left)


def forwarding_channel(settings: CallSettings, address: str) -> grpc.aio.Channel:
    """A channel to the active instance at ``address``: no retries, no waiting for it."""
    initial, most = RECONNECT_BACKOFF_MS
    options: list[tuple[str, Any]] = [
        ("grpc.max_receive_message_length", settings.rpc.max_message_bytes),
        ("grpc.max_send_message_length", settings.rpc.max_message_bytes),
        ("grpc.enable_retries", 0),
        ("grpc.initial_reconnect_backoff_ms", initial),
        ("grpc.max_reconnect_backoff_ms", most),
        *KEEPALIVE,
    ]
    if settings.tls.insecure:
        return grpc.aio.insecure_channel(
            address, options=options, interceptors=client_interceptors()
        )
    credentials = grpc.ssl_channel_credentials(
        root_certificates=read_tls_file(settings.tls.tls_ca_path, "CA")
    )
    # The table is player facing, so its clients set no name override (they check the
    # name they dial); an instance dialled by address must still be the table.
    options.append(("grpc.ssl_target_name_override", CERTIFICATE_NAME))
    return grpc.aio.secure_channel(
        address, credentials, options=options, interceptors=client_interceptors()
    )


class Unreached(Refusal):
    """The forwarded call could not be sent: the active instance is not there."""


class Forwarder:
    """Sends calls to the active instance (``point_at``), or refuses them UNAVAILABLE
    with the reason ``refuse`` gave (none known, taking over, stepped down)."""

    def __init__(self, settings: CallSettings, holder: str) -> None:
        self.settings = settings
        self.holder = holder  # this instance's, sent with each forwarded call
        self.target: str | None = None  # the active instance's address
        self.why_not = "no active table instance is known yet"
        self._channel: grpc.aio.Channel | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._taking_over: asyncio.Event | None = None  # set once it is over, either way
        self._changed = asyncio.Event()  # set (and replaced) whenever the target changes
        self._for_now = False  # no target, but one is expected soon (``refuse``)

    @property
    def generation(self) -> asyncio.Event:
        """Set once the active instance as this one knows it changes after now."""
        return self._changed

    async def changed(self, since: asyncio.Event, context: Context) -> bool:
        """Wait, within the caller's deadline and ``UNREACHED_PATIENCE``, until the target
        changed after ``since`` (``generation``) and any take-over has settled; False if
        it did not."""
        left = remaining(context)
        patience = UNREACHED_PATIENCE if left is None else min(left, UNREACHED_PATIENCE)
        try:
            async with asyncio.timeout(patience):
                await since.wait()
        except TimeoutError:
            return False
        await self.settled(context)
        return True

    def _moved(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def hold(self, why: str) -> None:
        """This instance is taking over: calls wait (``settled``) until it serves them
        itself or gives up, rather than be refused while the tables are folded back."""
        self.refuse(why)
        self._taking_over = asyncio.Event()
        self._moved()

    def release(self) -> None:
        """The take-over is over (the instance is active, or it stepped down)."""
        if self._taking_over is not None:
            self._taking_over.set()
            self._taking_over = None
            self._moved()

    async def settled(self, context: Context) -> None:
        """Wait while a take-over is under way, within the caller's deadline."""
        taking_over = self._taking_over
        if taking_over is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(remaining(context)):
                await taking_over.wait()

    def point_at(self, address: str, holder: str) -> None:
        if address != self.target:
            self._drop_channel()
            self.target = address
            self._channel = forwarding_channel(self.settings, address)
            log.info("table_forwarding", to=address, active=holder)
            self._moved()

    def refuse(self, why: str, *, for_now: bool = False) -> None:
        """Forward nothing, saying ``why``; ``for_now``: an instance is expected to take
        the lease soon, so a call that could not be sent waits for it (``changed``)."""
        if self.target is not None:
            log.info("table_not_forwarding", why=why)
        self._drop_channel()
        self.target = None
        self.why_not = why
        self._for_now = for_now
        self.release()
        self._moved()

    def _drop_channel(self) -> None:
        if self._channel is not None:
            task = asyncio.ensure_future(self._channel.close(CLOSE_GRACE))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
            self._channel = None

    def _route(self, context: Context) -> tuple[grpc.aio.Channel, str]:
        metadata = context.invocation_metadata() or ()
        if any(key == FORWARDED_BY for key, _value in metadata):
            raise Refusal.unavailable(
                "table: a forwarded call reached a table instance that is not the active one "
                "(the instances disagree about it for a moment); try again"
            )
        if self._channel is None or self.target is None:
            refused = Unreached if self._for_now else Refusal
            raise refused.unavailable(f"table: {self.why_not}; try again")
        return self._channel, self.target

    def _outgoing(self, context: Context) -> Metadata:
        return (*passed_on(context.invocation_metadata()), (FORWARDED_BY, self.holder))

    def handler(self, method: str, streaming: bool) -> grpc.RpcMethodHandler:
        """The forwarding handler of ``method`` (``/ddz.v1.TableService/Play``)."""
        rpc = method.rsplit("/", 1)[-1]
        if streaming:

            async def stream(request: bytes, context: Context) -> AsyncIterator[bytes]:
                with _counted(rpc, context):
                    async for response in self._stream(method, request, context):
                        yield response

            return grpc.unary_stream_rpc_method_handler(stream)

        async def unary(request: bytes, context: Context) -> bytes:
            with _counted(rpc, context):
                return await self._unary(method, request, context)

        return grpc.unary_unary_rpc_method_handler(unary)

    async def _unary(self, method: str, request: bytes, context: Context) -> bytes:
        channel, address = self._route(context)
        call = channel.unary_unary(method)(
            request, timeout=remaining(context), metadata=self._outgoing(context)
        )
        try:
            response: bytes = await call
        except grpc.aio.AioRpcError as error:
            await _answer_failure(context, error, address)
        await _pass_initial(context, call)
        context.set_trailing_metadata(passed_on(await call.trailing_metadata()))
        return response

    async def _stream(self, method: str, request: bytes, context: Context) -> AsyncIterator[bytes]:
        channel, address = self._route(context)
        call = channel.unary_stream(method)(
            request, timeout=remaining(context), metadata=self._outgoing(context)
        )
        try:
            await _pass_initial(context, call)
            async for response in call:
                yield response
            context.set_trailing_metadata(passed_on(await call.trailing_metadata()))
        except grpc.aio.AioRpcError as error:
            await _answer_failure(context, error, address)
        finally:
            call.cancel()  # the caller went away (or it is over: a no-op)

    async def close(self) -> None:
        self._drop_channel()
        for task in list(self._closing):
            with contextlib.suppress(Exception):
                await task


async def _pass_initial(context: Context, call: Any) -> None:
    initial = passed_on(await call.initial_metadata())
    if initial:
        await context.send_initial_metadata(initial)


async def _answer_failure(context: Context, error: grpc.aio.AioRpcError, address: str) -> NoReturn:
    """End the caller's call as the active instance ended the forwarded one; a call the
    transport failed (no answer of the active instance: it is gone, or not yet there)
    is UNAVAILABLE with the reason (``Unreached`` if it was never sent)."""
    code = error.code()
    if code is grpc.StatusCode.UNAVAILABLE and error_info(error) is None:
        refused = Unreached if NEVER_SENT in (error.details() or "") else Refusal
        raise refused.unavailable(
            f"table: the active table instance at {address} cannot be reached "
            f"({error.details() or code.name}); try again"
        ) from None
    await context.abort(
        code, error.details() or "", passed_on(error.trailing_metadata(), keep=STATUS_DETAILS)
    )
    raise AssertionError("unreachable: abort raises")  # pragma: no cover


@contextlib.contextmanager
def _counted(rpc: str, context: Context) -> Iterator[None]:
    """Count the forwarded call under the code it ended with (``ddz_table_forwarded``)."""
    code = "OK"
    try:
        yield
    except BaseException as exc:
        code = _code_of(exc, context)
        raise
    finally:
        metrics.table_forwarded(rpc, code)


def _code_of(exc: BaseException, context: Context) -> str:
    if isinstance(exc, Refusal):
        return "UNAVAILABLE"
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return "CANCELLED"
    code = context.code()
    return code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"


class Switch(grpc.GenericRpcHandler):  # type: ignore[misc]
    """Every method of the service, served locally while ``active()`` (the handlers of
    the generated servicer), else forwarded. Asked for each call, so an instance that
    takes over serves its next call itself; a call that came while it was taking over
    waits for that and is then served here (``Forwarder.settled``)."""

    def __init__(
        self,
        local: Mapping[str, grpc.RpcMethodHandler],
        forwarder: Forwarder,
        active: Callable[[], bool],
    ) -> None:
        self.local = dict(local)
        self.forwarder = forwarder
        self.active = active
        self.standby = {
            method: self._standby(handler, forwarder.handler(method, handler.response_streaming))
            for method, handler in self.local.items()
        }

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method: str = handler_call_details.method
        local = self.local.get(method)
        if local is None:
            return None
        return local if self.active() else self.standby[method]

    def _standby(
        self, local: grpc.RpcMethodHandler, forwarded: grpc.RpcMethodHandler
    ) -> grpc.RpcMethodHandler:
        """Wait out a take-over, then serve here if it made this instance the active one
        (the request decoded now: a forwarded call is never decoded), else forward; a
        forward that could not be sent is dispatched again once the active one changed."""
        forwarder, active = self.forwarder, self.active
        decode, encode = local.request_deserializer, local.response_serializer
        if local.response_streaming:

            async def stream(request: bytes, context: Context) -> AsyncIterator[bytes]:
                await forwarder.settled(context)
                while not active():
                    since = forwarder.generation
                    try:
                        async for forwarded_response in forwarded.unary_stream(request, context):
                            yield forwarded_response
                        return
                    except Unreached:  # raised before anything was sent on
                        if not await forwarder.changed(since, context):
                            raise
                async for response in local.unary_stream(decode(request), context):
                    yield encode(response)

            return grpc.unary_stream_rpc_method_handler(stream)

        async def unary(request: bytes, context: Context) -> bytes:
            await forwarder.settled(context)
            while not active():
                since = forwarder.generation
                try:
                    return bytes(await forwarded.unary_unary(request, context))
                except Unreached:
                    if not await forwarder.changed(since, context):
                        raise
            return bytes(encode(await local.unary_unary(decode(request), context)))

        return grpc.unary_unary_rpc_method_handler(unary)


class Registered:
    """Stands in for a server to a generated ``add_*Servicer_to_server``: keeps the
    method handlers it registers, by full method name (``/package.Service/Method``).
    The generated code also registers them as "registered methods", which a server
    looks up before any generic handler: given to the real server, they would never
    let a call be forwarded."""

    def __init__(self) -> None:
        self.handlers: dict[str, grpc.RpcMethodHandler] = {}

    def add_generic_rpc_handlers(self, handlers: Iterable[Any]) -> None:
        pass  # the same handlers as the registered ones below

    def add_registered_method_handlers(
        self, service: str, handlers: Mapping[str, grpc.RpcMethodHandler]
    ) -> None:
        for name, handler in handlers.items():
            self.handlers[f"/{service}/{name}"] = handler


def servicer_handlers(add: Callable[[Any, Any], None], servicer: Any) -> dict[str, Any]:
    """The method handlers ``add(servicer, server)`` (generated code) would register."""
    registered = Registered()
    add(servicer, registered)
    return registered.handlers
