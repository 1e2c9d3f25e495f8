"""The parts a gRPC channel or server of the suite reads, composed from ``Settings``
(``Settings.calling``): where the services are (``network``), who this process is and
whom it trusts (``tls``), the calls' limits (``rpc``) and whether calls are traced
(``telemetry``). Nothing here reads the environment."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ddz.config.network import NetworkSettings
from ddz.config.rpc import RpcSettings
from ddz.config.security import TlsSettings
from ddz.config.telemetry import TelemetrySettings


@dataclass(frozen=True, slots=True)
class CallSettings:
    """What calling another service (or answering one) needs, and nothing else."""

    network: NetworkSettings = field(default_factory=NetworkSettings)
    tls: TlsSettings = field(default_factory=TlsSettings)
    rpc: RpcSettings = field(default_factory=RpcSettings)
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)

    def with_addresses(self, **targets: str) -> CallSettings:
        """A copy that dials the given services at the given targets."""
        return replace(self, network=self.network.with_addresses(**targets))

    def as_identity(self, identity: str) -> CallSettings:
        """A copy that calls other services as ``identity``."""
        return replace(self, tls=self.tls.as_identity(identity))
