"""gRPC calls between the services: ``DDZ_RPC_TIMEOUT``, ``DDZ_MAX_MESSAGE_BYTES``,
``DDZ_MAX_CONCURRENT_RPCS``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ddz.environment import float_of, int_of

DEFAULT_MAX_CONCURRENT_RPCS = 2000
"""Calls in flight one server takes at once (``DDZ_MAX_CONCURRENT_RPCS``); more are
refused RESOURCE_EXHAUSTED. Each watching seat holds one stream open."""


@dataclass(frozen=True, slots=True)
class RpcSettings:
    rpc_timeout: float = 5.0
    max_message_bytes: int = 1024 * 1024
    max_concurrent_rpcs: int = DEFAULT_MAX_CONCURRENT_RPCS  # DDZ_MAX_CONCURRENT_RPCS


def rpc_from_env(env: Mapping[str, str]) -> RpcSettings:
    return RpcSettings(
        rpc_timeout=float_of(env, "DDZ_RPC_TIMEOUT", 5.0),
        max_message_bytes=int_of(
            env, "DDZ_MAX_MESSAGE_BYTES", 1024 * 1024, low=1024, high=64 * 1024 * 1024
        ),
        max_concurrent_rpcs=int_of(
            env, "DDZ_MAX_CONCURRENT_RPCS", DEFAULT_MAX_CONCURRENT_RPCS, low=1, high=1_000_000
        ),
    )
