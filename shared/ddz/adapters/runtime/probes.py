"""Asking a running service how it is: its gRPC health, over a blocking channel with this
process's certificate (health checks, scripts, ``ddz status``)."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ddz.adapters.rpc.grpc_client import channel_credentials, channel_target, list_tls_options
from ddz.adapters.security.tls_files import TlsSetupError
from ddz.config.calling import CallSettings

SERVING = health_pb2.HealthCheckResponse.SERVING


def blocking_channel(address: str, settings: CallSettings) -> grpc.Channel:
    """A synchronous channel to ``address`` (health checks, scripts): TLS with this
    process's certificate as ``grpc_client.channel_credentials`` says. A service's
    instances (a comma list, ``--scale``) are one target: the first that answers, its
    certificate checked for the first one's host (a list is no host name)."""
    credentials = channel_credentials(settings)
    target = channel_target(address)
    if credentials is None:
        return grpc.insecure_channel(target)
    return grpc.secure_channel(target, credentials, options=list_tls_options(address))


def health_status(
    address: str, timeout: float = 1.0, service: str = "", *, settings: CallSettings
) -> int | None:
    """The health status at ``address`` (``SERVING`` = 1), or None if nothing answers;
    asked over TLS as ``settings`` say, with this process's certificate: the internal
    services let no one in without one."""
    try:
        channel = blocking_channel(address, settings)
    except TlsSetupError:
        return None  # no certificate to ask with: nothing of ours can be running here
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError:
            return None
    status: int = reply.status
    return status
