"""All settings of the suite, read once from ``DDZ_*`` environment variables.

``Settings.from_env()`` is the only place that reads the environment; it composes one
frozen part per concern, each read by its own function in its own module (``bus``,
``store``, ``network``, ``security``, ``rpc``, ``game``, ``telemetry``, ``fronts``).
Entry points build the ``Settings``; everything else receives only the part it needs
(``settings.bus``, ``settings.tls``, ``settings.calling`` for gRPC...). Every variable
is documented in ``docs/CONFIG.md``. A bad value raises ``ValueError`` naming the
variable, so the CLI prints one clear line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from ddz.config.bus import BusSettings, bus_from_env
from ddz.config.calling import CallSettings
from ddz.config.fronts import (
    ConsoleSettings,
    PlaySettings,
    SupervisionSettings,
    console_from_env,
    play_from_env,
    supervision_from_env,
)
from ddz.config.game import (
    BotSettings,
    ClockSettings,
    TableSettings,
    bot_from_env,
    clocks_from_env,
    table_from_env,
)
from ddz.config.network import NetworkSettings, network_from_env
from ddz.config.rpc import RpcSettings, rpc_from_env
from ddz.config.security import KeySettings, TlsSettings, keys_from_env, tls_from_env
from ddz.config.store import StoreSettings, store_from_env
from ddz.config.telemetry import TelemetrySettings, telemetry_from_env

RETIRED: Mapping[str, str] = MappingProxyType(
    {
        "DDZ_OPERATOR_KEY": "player and operator tokens are JWTs signed with the login key "
        "(DDZ_LOGIN_KEY) and verified with its public keys (DDZ_LOGIN_JWKS); "
        "see docs/SECURITY.md",
    }
)
"""Variables a deployment may still set that no longer mean anything: refused by name, so
a setting that would be ignored stops the service instead."""


@dataclass(frozen=True, slots=True)
class Settings:
    """One immutable snapshot of the configuration, one part per concern. Build it with
    ``from_env``; hand each module only the part it reads."""

    data_dir: Path = Path(".ddz")
    store: StoreSettings = field(default_factory=StoreSettings)
    bus: BusSettings = field(default_factory=BusSettings)
    network: NetworkSettings = field(default_factory=NetworkSettings)
    tls: TlsSettings = field(default_factory=TlsSettings)
    keys: KeySettings = field(default_factory=KeySettings)
    rpc: RpcSettings = field(default_factory=RpcSettings)
    clocks: ClockSettings = field(default_factory=ClockSettings)
    table: TableSettings = field(default_factory=TableSettings)
    bot: BotSettings = field(default_factory=BotSettings)
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)
    console: ConsoleSettings = field(default_factory=ConsoleSettings)
    play: PlaySettings = field(default_factory=PlaySettings)
    supervision: SupervisionSettings = field(default_factory=SupervisionSettings)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every ``DDZ_*`` variable (from ``os.environ`` unless given)."""
        env = os.environ if environ is None else environ
        for name, instead in RETIRED.items():
            if env.get(name, "").strip():
                raise ValueError(f"{name} is no longer read: {instead}")
        data_dir = Path(env.get("DDZ_DATA_DIR", "").strip() or ".ddz").expanduser().resolve()
        return cls(
            data_dir=data_dir,
            store=store_from_env(env, data_dir),
            bus=bus_from_env(env, data_dir),
            network=network_from_env(env),
            tls=tls_from_env(env, data_dir),
            keys=keys_from_env(env, data_dir),
            rpc=rpc_from_env(env),
            clocks=clocks_from_env(env),
            table=table_from_env(env),
            bot=bot_from_env(env),
            telemetry=telemetry_from_env(env, data_dir),
            console=console_from_env(env),
            play=play_from_env(env),
            supervision=supervision_from_env(env),
        )

    @property
    def calling(self) -> CallSettings:
        """The parts a gRPC channel or server reads (``ddz.config.calling``)."""
        return CallSettings(self.network, self.tls, self.rpc, self.telemetry)

    def with_addresses(self, **targets: str) -> Settings:
        """A copy in which clients dial the given services at the given targets."""
        return replace(self, network=self.network.with_addresses(**targets))

    def as_identity(self, identity: str) -> Settings:
        """A copy that calls other services as ``identity`` (a service's own clients)."""
        return replace(self, tls=self.tls.as_identity(identity))
