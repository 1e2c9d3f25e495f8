"""Who this process is and the keys it holds: gRPC's TLS (``DDZ_TLS_*``,
``DDZ_INSECURE``) and the signing and token keys (``DDZ_AUDIT_*``, ``DDZ_EVENT_*``,
``DDZ_LOGIN_*``, ``DDZ_TABLE_TOKEN_KEY``)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ddz.environment import bool_of, path_of

OPERATOR = "operator"
"""The identity of the project's own tools (``ddz audit``, ``simulate``, ``bench``...)
to the services: their certificate's name (``ddz.adapters.security.certs``)."""
TLS_DIR = "tls"
"""Where under the data dir each identity's certificate and key are by default."""
SPIFFE_PREFIX = "spiffe://ddz/"
"""A certificate's identity is its URI SAN ``spiffe://ddz/<name>``."""
AUDIT_KEY_FILE = "audit.key"


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """gRPC over TLS (``ddz.adapters.security.certs``; docs/SECURITY.md "gRPC"). Unset
    paths are under <data dir>/tls/: ca.crt, <identity>.crt, <identity>.key."""

    data_dir: Path = Path(".ddz")
    tls_ca_file: Path | None = None  # DDZ_TLS_CA: the CA bundle this process trusts
    tls_cert_file: Path | None = None  # DDZ_TLS_CERT: this process's own certificate
    tls_key_file: Path | None = None  # DDZ_TLS_KEY: and its private key
    insecure: bool = False  # DDZ_INSECURE: plaintext gRPC, for local development only
    # Who this process is to the services it calls: a service's name (set by the
    # service runner, ``as_identity``), else the operator's tools. Not read from env.
    identity: str = OPERATOR

    def as_identity(self, identity: str) -> TlsSettings:
        """A copy that calls other services as ``identity`` (a service's own clients)."""
        return replace(self, identity=identity)

    @property
    def tls_ca_path(self) -> Path:
        """The CA bundle gRPC peers are checked against (``DDZ_TLS_CA``)."""
        return self.tls_ca_file or self.data_dir / TLS_DIR / "ca.crt"

    @property
    def tls_cert_path(self) -> Path:
        """This process's certificate (``DDZ_TLS_CERT``, else its identity's)."""
        return self.tls_cert_file or self.data_dir / TLS_DIR / f"{self.identity}.crt"

    @property
    def tls_key_path(self) -> Path:
        """This process's private key (``DDZ_TLS_KEY``, else its identity's)."""
        return self.tls_key_file or self.data_dir / TLS_DIR / f"{self.identity}.key"


def tls_from_env(env: Mapping[str, str], data_dir: Path) -> TlsSettings:
    return TlsSettings(
        data_dir=data_dir,
        tls_ca_file=path_of(env, "DDZ_TLS_CA"),
        tls_cert_file=path_of(env, "DDZ_TLS_CERT"),
        tls_key_file=path_of(env, "DDZ_TLS_KEY"),
        insecure=bool_of(env, "DDZ_INSECURE", False),
    )


@dataclass(frozen=True, slots=True)
class KeySettings:
    """The keys that sign chain heads, events and tokens; unset paths are under
    <data dir>/keys/."""

    data_dir: Path = Path(".ddz")
    audit_key: bytes = field(default=b"", repr=False)
    audit_key_id: str = "k1"
    audit_signing_key_file: Path | None = None  # None: <data dir>/keys/audit-signing.key
    audit_public_keys_file: Path | None = None  # None: <data dir>/keys/audit-public.json
    # Signed events (ddz.adapters.security.event_signing; docs/SECURITY.md "Signed events").
    event_signing_key_file: Path | None = None  # DDZ_EVENT_SIGNING_KEY: this producer's key
    event_keyring_file: Path | None = None  # DDZ_EVENT_KEYRING: the producers' public keys
    table_token_key: bytes = field(default=b"", repr=False)  # empty: a file (token_keys.py)
    login_key_file: Path | None = None  # None: <data dir>/keys/login.key (token_keys.py)
    login_jwks_file: Path | None = None  # None: <data dir>/keys/login.jwks.json

    @property
    def audit_signing_key_path(self) -> Path:
        """The recorder's Ed25519 key that signs chain heads (``DDZ_AUDIT_SIGNING_KEY``)."""
        return self.audit_signing_key_file or self.data_dir / "keys" / "audit-signing.key"

    @property
    def audit_public_keys_path(self) -> Path:
        """The keyring auditors verify heads with (``DDZ_AUDIT_PUBLIC_KEYS``): public."""
        return self.audit_public_keys_file or self.data_dir / "keys" / "audit-public.json"

    def event_signing_key_path(self, producer: str) -> Path:
        """The Ed25519 key ``producer`` signs its events with (``DDZ_EVENT_SIGNING_KEY``,
        else ``<data dir>/keys/events/<producer>.key``)."""
        return self.event_signing_key_file or self.data_dir / "keys" / "events" / f"{producer}.key"

    @property
    def event_keyring_path(self) -> Path:
        """The producers' public keys consumers verify events with (``DDZ_EVENT_KEYRING``)."""
        return self.event_keyring_file or self.data_dir / "keys" / "event-keyring.json"

    def require_audit_key(self) -> bytes:
        """The HMAC key that signed chain heads before Ed25519 (``ddz.audit.evidence.keys`` reads
        it without ever creating one; nothing signs with it any more).

        ``DDZ_AUDIT_KEY`` when set; otherwise a random key kept in
        ``<data dir>/audit.key`` (created on first use, mode 0600), so a fresh local
        stack signs without setup while an operator can supply their own key.
        """
        if self.audit_key:
            return self.audit_key
        path = self.data_dir / AUDIT_KEY_FILE
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                # O_EXCL: when several services start at once, exactly one creates it.
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "w", encoding="ascii") as out:
                    out.write(secrets.token_hex(32) + "\n")
        key = path.read_text(encoding="ascii").strip().encode("ascii")
        if not key:
            raise ValueError(f"audit key file {path} is empty; delete it or set DDZ_AUDIT_KEY")
        return key


def keys_from_env(env: Mapping[str, str], data_dir: Path) -> KeySettings:
    audit_key_id = env.get("DDZ_AUDIT_KEY_ID", "k1").strip() or "k1"
    if not audit_key_id.isascii() or not audit_key_id.isprintable():
        raise ValueError("DDZ_AUDIT_KEY_ID must be printable ASCII")
    return KeySettings(
        data_dir=data_dir,
        audit_key=env.get("DDZ_AUDIT_KEY", "").encode("utf-8"),
        audit_key_id=audit_key_id,
        audit_signing_key_file=path_of(env, "DDZ_AUDIT_SIGNING_KEY"),
        audit_public_keys_file=path_of(env, "DDZ_AUDIT_PUBLIC_KEYS"),
        event_signing_key_file=path_of(env, "DDZ_EVENT_SIGNING_KEY"),
        event_keyring_file=path_of(env, "DDZ_EVENT_KEYRING"),
        table_token_key=env.get("DDZ_TABLE_TOKEN_KEY", "").encode("utf-8"),
        login_key_file=path_of(env, "DDZ_LOGIN_KEY"),
        login_jwks_file=path_of(env, "DDZ_LOGIN_JWKS"),
    )
