"""An operator's hands recorded as the services record them (``record_hand``: events signed
by the dealer's and rules service's keys, heads by the recorder's Ed25519 key kept where
the recorder keeps it), its keys and the ``ddz`` command line, for the tests of evidence
files and the audit's account of a hand (``test_evidence_*``).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ddz.adapters.store import SqlEventStore
from ddz.adapters.store.keys import (
    Ed25519Signer,
    Keyring,
    ensure_signing_key,
)
from ddz.audit.evidence.keys import auditor_keyring
from ddz.audit.evidence.published import PublishedKeys, published_keys
from ddz.audit.store.sample import SampleKeys
from ddz.config import Settings

PRODUCERS = SampleKeys.generate()


RICH = (10**7, 10**7, 10**7)  # balances no bean hand here can reach: no balance limit


@dataclass(frozen=True)
class Operator:
    data: Path
    settings: Settings
    store: SqlEventStore
    hands: dict[str, str]  # what the hand shows -> hand id


def _recorder(settings: Settings) -> Ed25519Signer:
    return ensure_signing_key(
        settings.keys.audit_signing_key_path, settings.keys.audit_public_keys_path
    )


def _public(settings: Settings) -> Keyring:
    return auditor_keyring(settings.keys, public_only=True)


def _fingerprints(keyring_file: Path) -> dict[str, str]:
    """Each key's fingerprint, computed here from the key itself."""
    document = json.loads(keyring_file.read_text())
    return {
        k["key_id"]: "SHA256:" + hashlib.sha256(base64.b64decode(k["public_key"])).hexdigest()
        for k in document["keys"]
    }


def read_published_of(settings: Settings) -> PublishedKeys:
    return published_keys(_public(settings))
