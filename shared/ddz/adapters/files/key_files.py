"""Key files made once on a fresh machine: written whole or not at all, mode 0600, and
when several processes start at once exactly one creates each (the others read it)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def create_file(path: Path, data: bytes) -> bool:
    """Write ``data`` to a new ``path`` (mode 0600, in a 0700 directory when it makes
    one) whole or not at all: False when another process made it first."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.link(temp, path)  # fails if the file exists: one creator wins
        return True
    except FileExistsError:
        return False
    finally:
        temp.unlink(missing_ok=True)


def ensure_ed25519_key(path: Path) -> None:
    """A new Ed25519 private key (PEM, PKCS #8) at ``path`` unless one is there."""
    if path.exists():
        return
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    create_file(path, pem)
