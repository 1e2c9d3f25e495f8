"""The keys an audit verifies head signatures with, found from the settings.

Public: the Ed25519 keyring (``DDZ_AUDIT_PUBLIC_KEYS``, else
``<data dir>/keys/audit-public.json``), all an auditor needs for hands signed since
Ed25519; and the producers' event keyring (``DDZ_EVENT_KEYRING``, else
``<data dir>/keys/event-keyring.json``) every event's signature is checked with.
Secret, and only for hands signed before it: the operator's HMAC key
(``DDZ_AUDIT_KEY``, else ``<data dir>/audit.key``) when it is there. Nothing is ever
created here: a made-up key would only make every signature fail.
"""

from __future__ import annotations

from ddz.adapters.security.event_signing import EventKeyring
from ddz.adapters.store.keys import Keyring, read_public_keys
from ddz.config.security import AUDIT_KEY_FILE, KeySettings


class NoAuditKeys(LookupError):
    """Neither a public keyring nor an HMAC key to verify signatures with."""


def existing_hmac_key(settings: KeySettings) -> bytes:
    """The operator's HMAC key if configured or kept in the data directory, else b""."""
    if settings.audit_key:
        return settings.audit_key
    path = settings.data_dir / AUDIT_KEY_FILE
    if path.is_file():
        return path.read_text(encoding="ascii").strip().encode("ascii")
    return b""


def auditor_keyring(settings: KeySettings, *, public_only: bool = False) -> Keyring:
    """The public keyring of the settings, plus the HMAC key of older hands when it is
    available (unless ``public_only``). ``ValueError`` for a keyring file that is not
    one; ``NoAuditKeys`` when there is nothing to verify with."""
    path = settings.audit_public_keys_path
    public = read_public_keys(path) if path.is_file() else {}
    hmac_key = b"" if public_only else existing_hmac_key(settings)
    keyring = Keyring.of_hmac(hmac_key, settings.audit_key_id).with_public(public)
    events_path = settings.event_keyring_path  # public too: the producers' keys
    if events_path.is_file():
        keyring = keyring.with_events(EventKeyring(events_path))
    if not keyring:
        raise NoAuditKeys(
            f"no audit key: no public keyring at {path} (DDZ_AUDIT_PUBLIC_KEYS)"
            + ("" if public_only else " and no DDZ_AUDIT_KEY (nor its file) for HMAC-signed hands")
        )
    return keyring
