"""The keys of the tokens, one per purpose, none derived from another.

- The login's private key (Ed25519, PEM, mode 0600): signs player and operator tokens.
  Only the operator's login holds it -- here, the ``ddz`` tools that act as that login
  (``play``, ``simulate``, ``bench``, ``demo``, the driver). ``DDZ_LOGIN_KEY`` names the
  file; default ``<data dir>/keys/login.key``.
- The login's public keys: a JWKS file (``DDZ_LOGIN_JWKS``; default
  ``<data dir>/keys/login.jwks.json``), keys by ``kid``, so a login can rotate: publish
  the new key next to the old, sign with the new, drop the old once its tokens expired.
  The table service reads only this file, and refuses one that holds a private part.
- The table's seat-token key (HMAC, ``DDZ_TABLE_TOKEN_KEY``, else
  ``<data dir>/keys/table-token.key``): the table service alone mints and checks seat
  tokens with it.

Missing files are created on first use (``ddz up`` creates them all at start), so a
fresh machine needs no setup; creation is ``O_EXCL``-safe when processes start at once.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ddz.adapters.files.data_files import REMAKE, BadFile, read_bytes
from ddz.adapters.files.key_files import create_file, ensure_ed25519_key
from ddz.adapters.security.event_signing import ensure_event_keys
from ddz.config.security import KeySettings

HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")
KEYS_DIR = "keys"
LOGIN_KEY_FILE = "login.key"
LOGIN_JWKS_FILE = "login.jwks.json"
TABLE_TOKEN_KEY_FILE = "table-token.key"
TABLE_TOKEN_KEY_HEX = 64  # the file holds 32 random bytes as hex digits
TABLE_TOKEN_KEY_FIX = f"{REMAKE} (seat tokens it signed are then refused: players sit again)"
JWKS_FIX = (
    "restore it from a backup, or remove it and run `ddz init` to publish this data dir's "
    "login key again"
)


class KeyFileError(BadFile):
    """A key file that is there but is not a key of the kind it should hold: refused at
    start, never written over."""

    def __init__(self, path: Path, problem: str, fix: str = REMAKE) -> None:
        super().__init__(path, problem, fix)


def login_key_path(settings: KeySettings) -> Path:
    return settings.login_key_file or settings.data_dir / KEYS_DIR / LOGIN_KEY_FILE


def login_jwks_path(settings: KeySettings) -> Path:
    return settings.login_jwks_file or settings.data_dir / KEYS_DIR / LOGIN_JWKS_FILE


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_jwk(public: Ed25519PublicKey) -> dict[str, str]:
    """The JWK of a public key, its ``kid`` the RFC 7638 thumbprint (same key, same kid)."""
    members = {"crv": "Ed25519", "kty": "OKP", "x": _b64(_raw(public))}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode())
    return {**members, "kid": _b64(digest.digest()), "alg": "EdDSA", "use": "sig"}


@dataclass(frozen=True, slots=True)
class LoginKey:
    """The login's signing key and the ``kid`` its tokens name."""

    kid: str
    private: Ed25519PrivateKey = field(repr=False)

    @classmethod
    def of(cls, private: Ed25519PrivateKey) -> LoginKey:
        return cls(public_jwk(private.public_key())["kid"], private)

    @property
    def jwk(self) -> dict[str, str]:
        return public_jwk(self.private.public_key())


def login_key(settings: KeySettings) -> LoginKey:
    """The login's private key, created (and its public key published) when missing."""
    path = login_key_path(settings)
    ensure_ed25519_key(path)
    fix = f"{REMAKE} (tokens it signed are then refused: log in again)"
    data = read_bytes(path, "login key", fix)
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise KeyFileError(path, "the login key is not a PEM private key", fix) from None
    if not isinstance(private, Ed25519PrivateKey):
        raise KeyFileError(
            path, "the login key is not an Ed25519 key (login tokens are EdDSA)", fix
        )
    key = LoginKey.of(private)
    publish(login_jwks_path(settings), key.jwk)
    return key


def read_jwks(path: Path) -> dict[str, Ed25519PublicKey]:
    """The public keys of a JWKS file by ``kid`` (a missing file: none)."""
    try:
        data = read_bytes(path, "login's public keys (JWKS)", JWKS_FIX)
    except FileNotFoundError:
        return {}
    try:
        entries = json.loads(data.decode("utf-8")).get("keys")
    except (ValueError, AttributeError):
        entries = None
    if not isinstance(entries, list):
        raise KeyFileError(path, "not a JWKS (a JSON object with 'keys')", JWKS_FIX)
    return dict(_public_key(path, entry) for entry in entries)


def _public_key(path: Path, entry: Any) -> tuple[str, Ed25519PublicKey]:
    if not isinstance(entry, Mapping) or "d" in entry:
        # The table service holds public keys only: a private part here is a mistake.
        raise KeyFileError(path, "a key that is not a public JWK", JWKS_FIX)
    kid, x = entry.get("kid"), entry.get("x")
    if entry.get("kty") != "OKP" or entry.get("crv") != "Ed25519" or not isinstance(x, str):
        raise KeyFileError(path, f"key {kid!r} is not an Ed25519 public key", JWKS_FIX)
    if not isinstance(kid, str) or not kid:
        raise KeyFileError(path, "a key without a kid", JWKS_FIX)
    try:
        raw = base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
        return kid, Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise KeyFileError(path, f"key {kid!r} is not an Ed25519 public key", JWKS_FIX) from None


def publish(path: Path, jwk: Mapping[str, str]) -> None:
    """Add ``jwk`` to the JWKS at ``path`` unless its ``kid`` is there (rename: readers
    see the old file or the new one, never half of one)."""
    read_jwks(path)  # a broken file is refused (naming it), not overwritten
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        document = {"keys": []}
    if any(entry.get("kid") == jwk["kid"] for entry in document["keys"]):
        return
    document["keys"].append(dict(jwk))
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    temp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)


class LoginKeys:
    """The login's public keys by ``kid``, read from the JWKS file; an unknown ``kid``
    re-reads the file when it changed, so a rotated-in key is used without a restart."""

    def __init__(self, path: Path | None, keys: Mapping[str, Ed25519PublicKey] = {}) -> None:
        self.path = path
        self.keys = dict(keys)
        self._seen: tuple[int, int] | None = None
        self._reload()

    def _stamp(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def _reload(self) -> None:
        stamp = self._stamp()
        if self.path is None or stamp is None or stamp == self._seen:
            return
        self.keys = read_jwks(self.path)
        self._seen = stamp

    def get(self, kid: str) -> Ed25519PublicKey | None:
        if kid not in self.keys:
            with contextlib.suppress(KeyFileError):  # half-edited by hand: keep what we had
                self._reload()
        return self.keys.get(kid)


def table_token_key(settings: KeySettings) -> bytes:
    """The seat-token key: ``DDZ_TABLE_TOKEN_KEY``, else ``<data dir>/keys/table-token.key``
    (created when missing: the table's own key, which no other party needs)."""
    if settings.table_token_key:
        return settings.table_token_key
    path = settings.data_dir / KEYS_DIR / TABLE_TOKEN_KEY_FILE
    if not path.exists():
        create_file(path, secrets.token_hex(TABLE_TOKEN_KEY_HEX // 2).encode("ascii"))
    key = read_bytes(path, "table's seat-token key", TABLE_TOKEN_KEY_FIX).strip()
    if len(key) != TABLE_TOKEN_KEY_HEX or not all(c in HEX_DIGITS for c in key):
        # Anything else was not made here: a damaged or half-written key signs seat
        # tokens anyone may forge (an empty one, or a few letters), so none is taken.
        raise KeyFileError(
            path, f"not a seat-token key ({TABLE_TOKEN_KEY_HEX} hex digits)", TABLE_TOKEN_KEY_FIX
        )
    return key


def ensure_keys(settings: KeySettings) -> None:
    """Every key a local stack needs, created where missing (``ddz up`` at start)."""
    table_token_key(settings)
    login_key(settings)
    ensure_event_keys(settings)
