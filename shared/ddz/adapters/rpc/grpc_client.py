"""What every gRPC client in the suite shares: channels, error reasons, and the way back
from a failed call to a ``Refusal``.

The rule: every outgoing call has a deadline. Channels from ``make_channel`` enforce it
for unary calls (``timeout=settings.rpc.rpc_timeout`` unless the caller passed one) and pass
the caller's request id on (``x-request-id``) so logs of both sides line up.
Server-streaming calls (a player's event stream) are long-lived by design and choose
their own deadline.

Riding through a restart: every call waits for the server to be reachable (gRPC's
``waitForReady``: a call made while a service restarts is sent when it is back, within
the call's deadline), and the calls that are safe to send again (``REPEATS``) are
retried by the channel on UNAVAILABLE (gRPC's own retry policy, ``service_config``),
the deadline spanning every attempt. A stream cut part-way is the caller's to resume
from its last position (``resumed``).

Every channel is TLS (``open_channel``, the one way a channel to a service is made):
it trusts the suite's CA (``DDZ_TLS_CA``) and presents this process's certificate
(``TlsSettings.identity``: a service's own inside a service, ``operator`` in the tools),
which the internal services require and authorize by (``ddz.access.rights``). A
channel to an internal service dialled by name checks that the server's certificate is
that service's (its DNS SAN). Player channels (``client_cert=False``) present none:
the table service asks none, bearer tokens say who they are. ``DDZ_INSECURE``:
plaintext, for local development only.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

import grpc
import structlog
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from ddz.access.rights import PLAYER_FACING
from ddz.adapters.rpc.grpc_server import ERROR_DOMAIN, REQUEST_ID_HEADER, STATUS_OF
from ddz.adapters.security.tls_files import read_tls_file
from ddz.adapters.telemetry.health import ACTIVE_TABLE
from ddz.adapters.telemetry.tracing import client_interceptors, configure_tracing
from ddz.application.errors import Kind, Reason, Refusal
from ddz.config.calling import CallSettings
from ddz.config.security import OPERATOR

T = TypeVar("T")

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


@dataclass(frozen=True, slots=True)
class Repeat:
    """Whether the channel sends a call again after UNAVAILABLE (the server went away
    with the call in flight, or answered that it cannot serve now), and why."""

    retried: bool
    why: str


READ = Repeat(True, "a read: asking again changes nothing")


def keyed(why: str) -> Repeat:
    """Retried: a repeat of a call that was applied is refused by its key."""
    return Repeat(True, why)


def once(why: str) -> Repeat:
    """Never sent twice: it waits for a restarting server, but a call that may have
    reached it fails to its caller (who knows whether to try again)."""
    return Repeat(False, why)


REPEATS: Mapping[str, Repeat] = MappingProxyType({
    "ddz.v1.DealerService/Deal": keyed(
        "the table names the hand: its seed is stored under the hand id before anything "
        "is published, so a repeat is ALREADY_EXISTS, never a second deal"),
    "ddz.v1.DealerService/CancelDeal": keyed(
        "the hand id is the key: a repeat finds the cancellation, or the seed of a deal "
        "that had begun, and answers as the first"),
    "ddz.v1.DealerService/GetSeed": READ,
    "ddz.v1.RulesService/Decide": once(
        "the table sends a person's bid, play and pass (and its own reconnect and escape) "
        "without expected_version: a repeat is refused NOT_YOUR_TURN only while the turn "
        "is elsewhere; once the others have passed round to the seat again (bots answer "
        "in milliseconds), the same play or pass would be applied a second time"),
    "ddz.v1.RulesService/DecideBatch": keyed(
        "its one caller, the bot, sends every command with expected_version: a repeat of "
        "an applied command is a VERSION_CONFLICT outcome, decided again from the feed"),
    "ddz.v1.RulesService/GetPublicState": READ,
    "ddz.v1.BotService/Suggest": READ,
    "ddz.v1.BotService/GetStats": READ,
    "ddz.v1.SettlementService/GetBalance": READ,
    "ddz.v1.SettlementService/GetLedger": READ,
    "ddz.v1.SettlementService/ListLedgers": READ,
    "ddz.v1.RecorderService/ReadStream": READ,
    "ddz.v1.RecorderService/ReadAll": READ,
    "ddz.v1.AuditService/AuditHand": READ,
    "ddz.v1.AuditService/AuditAll": READ,
    "ddz.v1.DeskService/FindHands": READ,
    "ddz.v1.DeskService/GetHandSummary": READ,
    "ddz.v1.DeskService/ListAccess": READ,
    "ddz.v1.DeskService/GetEvidence": READ,
    "ddz.v1.DeskService/ListTables": READ,
    "ddz.v1.DeskService/LogAccess": once(
        "appends a line to the access log: a repeat would log the page twice; the console "
        "shows no page whose opening it could not log, so staff open it again"),
    "ddz.v1.DeskService/OpenSession": once(
        "opens a session under a secret the console just made: a repeat of one that was "
        "applied is refused (the session exists), so staff sign in again instead"),
    "ddz.v1.DeskService/CheckSession": READ,
    "ddz.v1.DeskService/EndSessions": Repeat(
        True, "ending sessions that are ended already changes nothing"),
    "ddz.v1.TableService/OpenTable": once(
        "without a table id every call opens another table"),
    "ddz.v1.TableService/GetTable": READ,
    "ddz.v1.TableService/StartHand": once(
        "deals the table's next hand: refused while one is in play, but a bot hand may "
        "be over before the repeat arrives, which would deal another"),
    "ddz.v1.TableService/Bid": once(
        "bidding comes round to a seat again (robbing the landlord): a repeat may bid twice"),
    "ddz.v1.TableService/ShowCards": once(
        "a repeat of a show that happened is refused WRONG_PHASE: the player would read "
        "their own show as refused"),
    "ddz.v1.TableService/Play": once("goes to RulesService.Decide without expected_version"),
    "ddz.v1.TableService/Pass": once("goes to RulesService.Decide without expected_version"),
    "ddz.v1.TableService/GetView": keyed(
        "a read; a disconnected person's call also ends the disconnect, which a repeat "
        "finds done"),
    "ddz.v1.TableService/WatchHand": keyed(
        "a read, like GetView; gRPC sends a stream again only before its first update, "
        "a stream cut later is resumed by its caller from the last position (resumed)"),
    "ddz.v1.TableService/Suggest": keyed("a read of the bot's move, like GetView"),
    "ddz.v1.TableService/Hint": keyed("a read of the bot's move, like GetView"),
    "ddz.v1.TableService/Resume": once(
        "a repeat after auto-play ended is refused WRONG_PHASE: the player would read "
        "their resume as refused"),
    "ddz.v1.TableService/ListRooms": READ,
    "ddz.v1.TableService/JoinRoom": once(
        "queues the player: a repeat while queued is ALREADY_EXISTS, the first call's "
        "answer (the seat token) lost"),
    "ddz.v1.TableService/LeaveRoom": once(
        "an escape when a hand is in play; a repeat is refused (the seat's tokens are revoked)"),
    "ddz.v1.TableService/RefreshSeatToken": keyed(
        "mints a new seat token for the same seat: a repeat mints another, as good"),
    "ddz.v1.TableService/NextHand": once(
        "marks the seat ready: a repeat after the deal would be a call for the hand after"),
    "ddz.v1.TableService/GetHandEvidence": READ,
    "grpc.health.v1.Health/Check": READ,
    "grpc.health.v1.Health/List": READ,
    "grpc.health.v1.Health/Watch": READ,
})  # fmt: skip
"""Every RPC a client of the suite makes, by full name (``package.Service/Method``):
whether the channel may send it again. A unit test keeps it equal to the protos."""

RETRY_POLICY: Mapping[str, Any] = MappingProxyType({
    "maxAttempts": 5,  # gRPC's own cap
    "initialBackoff": "0.1s",
    "maxBackoff": "1s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
})  # fmt: skip
"""gRPC waits a random time up to the backoff (0.1 s, doubling, at most 1 s) between
attempts; every attempt is inside the call's one deadline. With ``waitForReady`` an
attempt made while the server is down waits for it rather than failing."""

RECONNECT_BACKOFF_MS = (200, 1000)
"""A channel whose server went away tries again after 0.2 s, then at most every second
(gRPC's defaults grow to two minutes: a restarted service would be found late)."""


def service_config(health_name: str | None = None) -> str:
    """The ``grpc.service_config`` of every channel: ``waitForReady`` for every call,
    gRPC's retry policy for the ones ``REPEATS`` retries; with ``health_name``, calls
    go only to the instances whose health says SERVING for that name."""
    retried: list[dict[str, str]] = []
    for name, repeat in REPEATS.items():
        if repeat.retried:
            service, method = name.split("/")
            retried.append({"service": service, "method": method})
    config: dict[str, Any] = {
        # Several instances behind one target (a comma list, a DNS name with several
        # addresses): calls spread over those that answer, one that died is skipped.
        "loadBalancingConfig": [{"round_robin": {}}],
        "methodConfig": [
            {"name": retried, "waitForReady": True, "retryPolicy": dict(RETRY_POLICY)},
            {"name": [{}], "waitForReady": True},  # every other method: no retry
        ],
    }
    if health_name is not None:
        # gRPC's client-side health checking: each instance's Health/Watch of the name.
        config["healthCheckConfig"] = {"serviceName": health_name}
    return json.dumps(config)


def health_name_for(target: str, service: str | None) -> str | None:
    """The health name a channel's calls are balanced by: the active table instance's
    (``health.ACTIVE_TABLE``) on a list of table instances, so that players' calls go
    to the active one rather than through a standby's forwarding hop; else none."""
    return ACTIVE_TABLE if "," in target and service in (None, "table") else None


def channel_target(target: str) -> str:
    """The gRPC target for an address as ``NetworkSettings.address`` gives it: one target as it
    is; a comma list of ``ip:port`` (the instances of a service, ``ddz up --scale``) as
    gRPC's ``ipv4:`` (or ``ipv6:``) list, which the channel's round_robin spreads calls
    over. A list of names has no such form: a name with several instances is one
    ``dns:///`` target."""
    if "," not in target:
        return target
    families = set()
    for part in target.split(","):
        host = part.rsplit(":", 1)[0].strip("[]")
        try:
            families.add(ipaddress.ip_address(host).version)
        except ValueError:
            raise ValueError(
                f"several addresses in {target!r} must be IP addresses (host:port each); "
                "a name with several instances is one dns:/// target"
            ) from None
    if len(families) > 1:
        raise ValueError(f"the addresses in {target!r} mix IPv4 and IPv6")
    return f"ipv{families.pop()}:{target}"


KEEPALIVE: tuple[tuple[str, int], ...] = (
    # A ping every 30 s, calls or not, answered within 10 s: a server that went away
    # without closing the connection (a partition, a killed node) is noticed. The
    # servers take pings every 10 s at most (``grpc_server.KEEPALIVE``).
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),  # 0: keep pinging an idle connection
)


def channel_options(
    settings: CallSettings, health_name: str | None = None
) -> list[tuple[str, Any]]:
    """The options of every channel to a service of the suite (``make_channel``,
    ``bearer.bearer_channel``): message limits, waiting and retries, balancing by
    ``health_name``, reconnecting, keepalive."""
    initial, most = RECONNECT_BACKOFF_MS
    return [
        ("grpc.max_receive_message_length", settings.rpc.max_message_bytes),
        ("grpc.max_send_message_length", settings.rpc.max_message_bytes),
        ("grpc.enable_retries", 1),
        ("grpc.service_config", service_config(health_name)),
        ("grpc.initial_reconnect_backoff_ms", initial),
        ("grpc.max_reconnect_backoff_ms", most),
        *KEEPALIVE,
    ]


def channel_credentials(
    settings: CallSettings, *, client_cert: bool = True
) -> grpc.ChannelCredentials | None:
    """TLS trusting ``DDZ_TLS_CA`` and, with ``client_cert``, presenting this process's
    certificate (``TlsSettings.tls_cert_path``); None under ``DDZ_INSECURE``. A player's
    channel with no CA configured and none in the data dir trusts the system's roots
    (a table service with a public certificate)."""
    if settings.tls.insecure:
        return None
    ca_path = settings.tls.tls_ca_path
    if not client_cert:
        ca = read_tls_file(ca_path, "CA") if settings.tls.tls_ca_file or ca_path.exists() else None
        return grpc.ssl_channel_credentials(root_certificates=ca)
    return grpc.ssl_channel_credentials(
        root_certificates=read_tls_file(ca_path, "CA"),
        private_key=read_tls_file(settings.tls.tls_key_path, "key"),
        certificate_chain=read_tls_file(settings.tls.tls_cert_path, "certificate"),
    )


def tls_options(service: str | None) -> list[tuple[str, Any]]:
    """Dialling an internal service by name: its certificate must name it (a DNS SAN),
    whatever address it is reached at; any other certificate of the CA is refused."""
    if service is None or service in PLAYER_FACING:
        return []
    return [("grpc.ssl_target_name_override", service)]


def open_channel(
    settings: CallSettings,
    target: str,
    *,
    interceptors: Sequence[Any] = (),
    service: str | None = None,
    client_cert: bool = True,
) -> grpc.aio.Channel:
    """The one way a channel to a service of the suite is made (``make_channel``,
    ``bearer.bearer_channel``): TLS as ``channel_credentials`` says, the suite's
    options, ``interceptors``."""
    # A tool's first channel turns its tracing on when OTEL_TRACES_EXPORTER asks (a
    # service's runner has done so already); the tracing interceptors come first, so the
    # call's span covers the others and its metadata carries the traceparent.
    configure_tracing(settings.telemetry, service=tool_name(settings))
    interceptors = [*client_interceptors(), *interceptors]
    credentials = channel_credentials(settings, client_cert=client_cert)
    options = channel_options(settings, health_name_for(target, service))
    if credentials is None:
        return grpc.aio.insecure_channel(
            channel_target(target),
            options=options,
            interceptors=interceptors,
        )
    return grpc.aio.secure_channel(
        channel_target(target),
        credentials,
        options=[*options, *(tls_options(service) or list_tls_options(target))],
        interceptors=interceptors,
    )


def tool_name(settings: CallSettings) -> str:
    """The traces' name of this process: its service, or ``cli`` for the operator's tools."""
    return "cli" if settings.tls.identity == OPERATOR else settings.tls.identity


def list_tls_options(target: str) -> list[tuple[str, Any]]:
    """A list of instances has no one name: their certificate is checked against the
    first one's address (a local stack's certificates name 127.0.0.1)."""
    if "," not in target:
        return []
    first_host = target.split(",")[0].rsplit(":", 1)[0].strip("[]")
    return [("grpc.ssl_target_name_override", first_host)]


def make_channel(
    settings: CallSettings, service: str | None = None, *, target: str | None = None
) -> grpc.aio.Channel:
    """A channel to ``service`` (its configured address) or to ``target``, as this
    process's identity (``settings.tls.identity``)."""
    if target is None:
        if service is None:
            raise ValueError("make_channel needs a service name or a target")
        target = settings.network.address(service)
    return open_channel(
        settings, target, interceptors=[_Defaults(settings.rpc.rpc_timeout)], service=service
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


CUT: frozenset[grpc.StatusCode] = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED}
)
"""How a stream ends that its server did not finish: the connection went (UNAVAILABLE),
or the server cancelled it while stopping (CANCELLED; our own cancel is CancelledError)."""


RESUME_PAUSE = 0.05
"""Seconds between a cut and the stream opened again (a server that cuts every stream
at once is not asked in a busy loop)."""


async def resumed(
    service: str,
    channel: grpc.aio.Channel,
    open_stream: Callable[[int], AsyncIterator[T]],
    position: Callable[[T], int],
    *,
    after: int = 0,
    patience: float,
    on_cut: Callable[[grpc.StatusCode], None] | None = None,
) -> AsyncIterator[T]:
    """The items of a server stream that resumes where it was cut: ``open_stream(p)``
    sends what comes after position ``p``, and after a cut it is opened again from the
    last position seen, so nothing is missed or repeated. A cut server that is not back
    within ``patience`` s, or any other failure, is a ``Refusal``. ``on_cut`` hears of
    each cut (a screen may say it is resuming)."""
    stalled_since: float | None = None  # the first cut since the last item
    while True:
        try:
            async for item in open_stream(after):
                after = position(item)
                stalled_since = None
                yield item
            return
        except grpc.aio.AioRpcError as error:
            if error.code() not in CUT:
                raise refusal_from(error, service) from None
            if on_cut is not None:
                on_cut(error.code())
        now = time.monotonic()
        stalled_since = now if stalled_since is None else stalled_since
        try:
            left = stalled_since + patience - now
            if left <= 0:
                raise TimeoutError
            async with asyncio.timeout(left):
                await channel.channel_ready()
            await asyncio.sleep(min(RESUME_PAUSE, left))  # a server that cuts at once
        except TimeoutError:
            raise Refusal(
                Kind.UNAVAILABLE,
                Reason.REASON_UNSPECIFIED,
                f"{service}: the stream was cut and the service is not back after {patience:g} s",
            ) from None
