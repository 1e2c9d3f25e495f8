"""gRPC calls between the services: ``DDZ_RPC_TIMEOUT``, ``DDZ_MAX_MESSAGE_BYTES``,
``DDZ_MAX_CONCURRENT_RPCS``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ddz.environment import float_of, int_of

DEFAULT_MAX_CONCURRENT_RPCS = 2000
"""Calls in flight one server takes at once (``DDZ_MAX_CONCURRENT_RPCS``); more are
refused RESOURCE_EXHAUSTED."""
MAX_CONCURRENT_RPCS_OF: Mapping[str, int] = {"table": 5000}
"""Services whose own default differs: the table, where each seated person holds a
``WatchHand`` stream open for as long as they sit. One table process serves about 3,000
people on its one core (0.6 of a core for 1,800 on the 2-core machine of
docs/BENCHMARKS.md), so 5,000 binds only past what its CPU allows, where 2,000 turned
people away at 2,000 with cores to spare."""


@dataclass(frozen=True, slots=True)
class RpcSettings:
    rpc_timeout: float = 5.0
    max_message_bytes: int = 1024 * 1024
    max_concurrent_rpcs: int | None = None  # DDZ_MAX_CONCURRENT_RPCS; None: each its own

    def concurrent_rpcs_of(self, service: str) -> int:
        """The calls in flight ``service``'s server takes at once: the setting when it
        is set, else the service's own default."""
        if self.max_concurrent_rpcs is not None:
            return self.max_concurrent_rpcs
        return MAX_CONCURRENT_RPCS_OF.get(service, DEFAULT_MAX_CONCURRENT_RPCS)


def rpc_from_env(env: Mapping[str, str]) -> RpcSettings:
    return RpcSettings(
        rpc_timeout=float_of(env, "DDZ_RPC_TIMEOUT", 5.0),
        max_message_bytes=int_of(
            env, "DDZ_MAX_MESSAGE_BYTES", 1024 * 1024, low=1024, high=64 * 1024 * 1024
        ),
        max_concurrent_rpcs=(
            int_of(env, "DDZ_MAX_CONCURRENT_RPCS", 0, low=1, high=1_000_000) or None
        ),
    )
