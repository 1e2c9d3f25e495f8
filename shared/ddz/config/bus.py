"""The event bus: which NATS servers, who this process is to them, and the DDZ stream a
starting service creates (``DDZ_NATS_*``, ``DDZ_STREAM_*``, ``DDZ_LEASE_TTL``,
``DDZ_ATOMIC_DECISIONS``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from ddz.environment import bool_of, float_of, int_of, limit_of, path_of
from ddz.urls import nats_servers, redacted_servers

DEFAULT_STREAM_MAX_AGE = 7 * 24 * 3600.0
"""Seconds an event stays on the bus by default (``DDZ_STREAM_MAX_AGE``): readers of an
older hand go to the recorder's store."""
MAX_STREAM_REPLICAS = 5  # JetStream's own limit


@dataclass(frozen=True, slots=True)
class BusSettings:
    """How this process reaches NATS JetStream."""

    data_dir: Path = Path(".ddz")  # the services' own NATS seeds are under <data dir>/nats/
    nats_url: str = ""
    # How often the nats-server ``ddz up`` starts syncs JetStream files to disk
    # (``DDZ_NATS_SYNC``): "" = the server's default (every 2 minutes), "always", or a
    # duration such as "1s" (docs/OPERATIONS.md, "What a crash can lose").
    nats_sync: str = ""
    # Who this process is to NATS (none set: no credentials, or the service's own seed
    # under ``<data dir>/nats/``, see ``ddz.adapters.messaging.nats_auth``) and TLS to NATS.
    nats_creds_file: Path | None = None
    nats_nkey_seed_file: Path | None = None
    nats_user: str = ""
    nats_password: str = field(default="", repr=False)
    nats_ca_file: Path | None = None
    nats_cert_file: Path | None = None
    nats_key_file: Path | None = None
    # The DDZ stream as a starting service creates it (an existing one is left alone).
    stream_replicas: int = 1  # 3 on a cluster of three
    stream_max_age: float | None = DEFAULT_STREAM_MAX_AGE  # seconds; None: no limit
    stream_max_bytes: int | None = None  # None: no limit
    atomic_decisions: bool = True  # a decision's events as one JetStream atomic batch
    # Instances (ddz.adapters.messaging.lease; docs/ARCHITECTURE.md "Instances").
    lease_ttl: float = 20.0  # DDZ_LEASE_TTL: seconds a dead holder's lease outlives it

    def __repr__(self) -> str:
        """Without the password and the URL's passwords: settings end up in tracebacks,
        logs and test reports."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        shown["nats_url"] = redacted_servers(self.nats_url)
        return f"BusSettings({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def nats_servers(self) -> tuple[str, ...]:
        """The NATS servers to connect to (empty: the default local server)."""
        return nats_servers(self.nats_url) if self.nats_url else ()

    @property
    def nats_store_dir(self) -> Path:
        """JetStream's file store when the suite starts its own nats-server."""
        return self.data_dir / "jetstream"


def bus_from_env(env: Mapping[str, str], data_dir: Path) -> BusSettings:
    nats_url = env.get("DDZ_NATS_URL", "").strip()
    if nats_url:
        nats_url = ",".join(nats_servers(nats_url))  # each checked, spaces dropped
    nats_sync = env.get("DDZ_NATS_SYNC", "").strip().lower()
    if nats_sync and not re.fullmatch(r"always|[1-9][0-9]*(ms|s|m|h)", nats_sync):
        raise ValueError(
            f"DDZ_NATS_SYNC must be 'always' or a duration such as 1s or 500ms, got {nats_sync!r}"
        )
    return BusSettings(
        data_dir=data_dir,
        nats_url=nats_url,
        nats_sync=nats_sync,
        nats_creds_file=path_of(env, "DDZ_NATS_CREDS"),
        nats_nkey_seed_file=path_of(env, "DDZ_NATS_NKEY_SEED"),
        nats_user=env.get("DDZ_NATS_USER", "").strip(),
        nats_password=env.get("DDZ_NATS_PASSWORD", ""),
        nats_ca_file=path_of(env, "DDZ_NATS_CA"),
        nats_cert_file=path_of(env, "DDZ_NATS_CERT"),
        nats_key_file=path_of(env, "DDZ_NATS_KEY"),
        stream_replicas=int_of(env, "DDZ_STREAM_REPLICAS", 1, low=1, high=MAX_STREAM_REPLICAS),
        stream_max_age=limit_of(env, "DDZ_STREAM_MAX_AGE", DEFAULT_STREAM_MAX_AGE, float),
        stream_max_bytes=limit_of(env, "DDZ_STREAM_MAX_BYTES", None, int),
        atomic_decisions=bool_of(env, "DDZ_ATOMIC_DECISIONS", True),
        lease_ttl=float_of(env, "DDZ_LEASE_TTL", 20.0),
    )
