"""``producer_signature``: every stored event was signed by a producer allowed to sign
it (``ddz.adapters.security.event_signing``), under a key of the auditor's event keyring.

A hand recorded before producers signed (envelope version 0) fails: an unsigned event is
no proof of who made it. So does any hand audited without an event keyring: a check that
could not look proves nothing, and a pass would read as a proof. Runs after
``hash_chain``, which parsed each stored envelope: the signature is verified over the
stored bytes themselves.
"""

from __future__ import annotations

from ddz.adapters.security.event_signing import BadEvent
from ddz.audit.context import Audit, CheckFailed
from ddz.audit.results import PRODUCER_SIGNATURE

NO_KEYRING = (
    "no event keyring given: the producers' public keys (DDZ_EVENT_KEYRING, else "
    "<data dir>/keys/event-keyring.json) are needed to check who made each event"
)


def check_producer_signatures(audit: Audit) -> None:
    keyring = audit.keys.events
    if keyring is None:
        raise CheckFailed(PRODUCER_SIGNATURE, NO_KEYRING)
    signers: set[str] = set()
    for row, envelope in zip(audit.rows, audit.envelopes, strict=True):
        try:
            keyring.check(row.envelope, envelope)
        except BadEvent as exc:
            raise CheckFailed(
                PRODUCER_SIGNATURE, f"event #{row.stream_version} ({row.event_id}): {exc}"
            ) from None
        signers.add(envelope.producer_key_id)
    audit.ok(
        PRODUCER_SIGNATURE,
        f"{len(audit.rows)} events, each signed by its producer ({', '.join(sorted(signers))})",
    )
