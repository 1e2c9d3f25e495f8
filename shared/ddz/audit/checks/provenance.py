"""``producer_signature``: every stored event was signed by a producer allowed to sign
it (``ddz.adapters.security.event_signing``), under a key of the auditor's event keyring.

A hand recorded before producers signed (envelope version 0) fails: an unsigned event is
no proof of who made it. So does any hand audited without an event keyring: a check that
could not look proves nothing, and a pass would read as a proof. Runs after
``hash_chain``, which parsed each stored envelope: the signature is verified over the
stored bytes themselves.

A caller that verified the signatures itself as it stored the events (the recorder's
background audit, ``Audit.verified_through``) names the head of what it verified: its
version and hash as the store computed them when it wrote them. ``hash_chain`` has just
recomputed every stored hash from the stored bytes and the previous hash, so a stored
row at that version with that hash means the bytes of every event up to it are the ones
verified (a second set of bytes with the same chain hash would be a SHA-256 collision);
their signatures are not verified again, only the rest of this check (signed, by a known
key of a producer allowed to sign the event). Events after that head (a refusal stored
later), and every event when the head's hash differs (the store was altered, or it is
not the chain the caller wrote), are verified in full.
"""

from __future__ import annotations

from ddz.adapters.security.event_signing import BadEvent
from ddz.audit.checks.context import Audit, CheckFailed
from ddz.audit.checks.results import PRODUCER_SIGNATURE

NO_KEYRING = (
    "no event keyring given: the producers' public keys (DDZ_EVENT_KEYRING, else "
    "<data dir>/keys/event-keyring.json) are needed to check who made each event"
)


def check_producer_signatures(audit: Audit) -> None:
    keyring = audit.keys.events
    if keyring is None:
        raise CheckFailed(PRODUCER_SIGNATURE, NO_KEYRING)
    signers: set[str] = set()
    verified = _verified_before(audit)
    for row, envelope in zip(audit.rows, audit.envelopes, strict=True):
        try:
            keyring.check(row.envelope, envelope, verify=row.stream_version > verified)
        except BadEvent as exc:
            raise CheckFailed(
                PRODUCER_SIGNATURE, f"event #{row.stream_version} ({row.event_id}): {exc}"
            ) from None
        signers.add(envelope.producer_key_id)
    when = f"; #1..#{verified} verified as they were stored" if verified else ""
    audit.ok(
        PRODUCER_SIGNATURE,
        f"{len(audit.rows)} events, each signed by its producer ({', '.join(sorted(signers))})"
        + when,
    )


def _verified_before(audit: Audit) -> int:
    """Up to which version the caller's own verification holds (0: none)."""
    if audit.verified_through is None:
        return 0
    version, head_hash = audit.verified_through
    rows = audit.rows
    if not 1 <= version <= len(rows) or rows[version - 1].stream_version != version:
        return 0
    return version if rows[version - 1].hash == head_hash else 0
