"""The evidence file of a hand: everything ``ddz audit`` checks, in one file that
verifies with no store, no network and no secret.

    evidence = build_evidence(store, "laizi-42", keyring)     # the console, the CLI
    Path("hand.ddz-evidence.json").write_bytes(evidence.to_bytes())
    report = verify_evidence(data, read_published(Path("keyring.json")))

Format ``ddz-evidence`` version 1 (docs/AUDIT.md, "Evidence files"): one JSON object,
written in one canonical form (sorted keys, ASCII, one-space indent, a final newline),
holding the hand's stored events (each envelope's exact bytes in base64, its chain
hashes, its producer's key id and signature), the recorder's signed heads, the public
keys that signed them (id, use, producer, key, fingerprint) and the transcript (lines
and the structured timeline). The verifier re-runs every check of ``audit_hand`` on the
file's own bytes and, besides, holds the file to its form: any byte changed anywhere
fails a named check (``file``, ``keys``, ``events``, one of the audit's checks,
``transcript``).

Keys carried in the file prove only that the file is consistent: a forger re-signing a
whole file carries their own keys. ``verify_evidence(..., published)`` also checks every
signer against the operator's published keyring (``published_keys``); without it the
report says that only internal consistency was checked, with the fingerprints to compare.

The stored events go in and come out through ``bundle_events`` / ``bundle_rows`` only:
the one place that knows how a hand's record is laid out.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError

from ddz.adapters.store import EventStore, StreamSignature, chain
from ddz.adapters.store.keys import Keyring
from ddz.audit.account.report import AuditReport
from ddz.audit.checks.results import CheckResult
from ddz.audit.evidence.published import (
    HEAD,
    BadKeyring,
    PublicKey,
    PublishedKeys,
    keys_of,
    published_keys,
    strict_b64,
)
from ddz.audit.run import audit_hand
from ddz.audit.store.source import HAND_PREFIX, HandRecord, Row, load_hand
from ddz.v1.envelope_pb2 import EventEnvelope

FORMAT = "ddz-evidence"
VERSION = 1
ABOUT = (
    "The evidence file of one Dou Dizhu hand: its stored events, their signatures, the "
    "signed heads, the public keys and the transcript. Verify it with `ddz audit --bundle "
    "FILE --keys KEYRING`, KEYRING being the operator's published keyring (`ddz keys export`)."
)
FIELDS = frozenset({"format", "version", "about", "hand_id", "stream_id", "events", "heads",
                    "keys", "transcript"})  # fmt: skip
EVENT_FIELDS = frozenset({"version", "event_id", "type", "type_version", "prev_hash", "hash",
                          "producer_key_id", "signature", "envelope"})  # fmt: skip
HEAD_FIELDS = frozenset({"head_version", "head_hash", "signature", "key_id", "algorithm"})

FILE = "file"
KEYS = "keys"
EVENTS = "events"
TRANSCRIPT = "transcript"
PUBLISHED_KEYS = "published_keys"

CONSISTENCY_ONLY = (
    "only internal consistency was checked: the file's own keys signed it. Compare these "
    "fingerprints with the operator's published keyring, or run again with --keys KEYRING"
)


class NotEvidence(LookupError):
    """No evidence file can be made: the hand is unknown, or still in play."""


def canonical(document: dict[str, Any]) -> bytes:
    """The one form an evidence file is written in (and must be read in)."""
    text = json.dumps(document, ensure_ascii=True, sort_keys=True, indent=1)
    return (text + "\n").encode("ascii")


# --- the record in and out: the one place that knows its layout -----------------------------


def bundle_events(record: HandRecord) -> list[dict[str, Any]]:
    """The file's entries of a hand's stored events (each envelope's exact bytes)."""
    out = []
    for row in record.events:
        envelope = EventEnvelope.FromString(row.envelope)
        out.append({
            "version": row.stream_version,
            "event_id": row.event_id,
            "type": row.type,
            "type_version": row.type_version,
            "prev_hash": row.prev_hash,
            "hash": row.hash,
            "producer_key_id": envelope.producer_key_id,
            "signature": envelope.signature.hex(),
            "envelope": base64.b64encode(row.envelope).decode("ascii"),
        })  # fmt: skip
    return out


class _Bad(Exception):
    def __init__(self, check: str, detail: str) -> None:
        super().__init__(detail)
        self.check, self.detail = check, detail


def bundle_rows(stream_id: str, entries: object) -> list[Row]:
    """The stored rows of the file's entries, as the file lists them: the audit's hash
    chain then holds each row to its envelope's bytes, as it does a store's rows. Only
    the form is checked here (``EVENTS``); the envelopes' content is the audit's."""
    if not isinstance(entries, list) or not entries:
        raise _Bad(EVENTS, "the file holds no events")
    rows = []
    for index, entry in enumerate(entries, start=1):
        where = f"event entry {index}"
        if not isinstance(entry, dict) or set(entry) != EVENT_FIELDS:
            raise _Bad(EVENTS, f"{where} does not have the fields of format version {VERSION}")
        if not all(type(entry[k]) is int for k in ("version", "type_version")) or not all(
            isinstance(entry[k], str) for k in EVENT_FIELDS - {"version", "type_version"}
        ):
            raise _Bad(EVENTS, f"{where}: a field has the wrong type")
        try:
            data = strict_b64(entry["envelope"])
        except ValueError:
            raise _Bad(EVENTS, f"{where}: its envelope is not base64") from None
        try:
            payload = EventEnvelope.FromString(data).payload
        except DecodeError:
            payload = b""  # the hash chain names it: not the bytes that were hashed
        rows.append(
            Row(entry["event_id"], stream_id, entry["version"], entry["type"],
                entry["type_version"], payload, data, entry["prev_hash"], entry["hash"])
        )  # fmt: skip
    return rows


def check_listed(entries: list[dict[str, Any]], rows: list[Row]) -> None:
    """The key id and signature the file lists beside each envelope are the envelope's
    own (run once the hash chain has held every envelope to its hash)."""
    for entry, row in zip(entries, rows, strict=True):
        envelope = EventEnvelope.FromString(row.envelope)
        if (entry["producer_key_id"], entry["signature"]) != (
            envelope.producer_key_id,
            envelope.signature.hex(),
        ):
            raise _Bad(
                EVENTS,
                f"event #{row.stream_version}: the key id or signature listed beside its "
                "envelope is not the envelope's own (changed after the file was written)",
            )


# --- building -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """A hand's evidence file, made by ``build_evidence``."""

    document: dict[str, Any]
    report: AuditReport  # the audit of the record as the file holds it

    @property
    def hand_id(self) -> str:
        return str(self.document["hand_id"])

    @property
    def file_name(self) -> str:
        return f"hand-{self.hand_id}.ddz-evidence.json"

    def to_bytes(self) -> bytes:
        return canonical(self.document)


def _head(signature: StreamSignature) -> dict[str, Any]:
    return {
        "head_version": signature.head_version,
        "head_hash": signature.head_hash,
        "signature": signature.signature,
        "key_id": signature.key_id,
        "algorithm": signature.algorithm,
    }


def build_evidence(store: EventStore, hand_id: str, keys: Keyring) -> Evidence:
    """The evidence file of ``hand_id``, read from ``store``; ``keys``: the operator's
    public keys (``ddz.audit.evidence.keys.auditor_keyring(settings, public_only=True)``), of
    which the file carries those that signed the hand. ``NotEvidence`` for an unknown
    hand or one still in play (its cards are secret until it ends). A hand that fails
    its audit still gets its file: it fails the same check wherever it is verified."""
    record = load_hand(store, hand_id)
    if record is None:
        raise NotEvidence(f"no hand {hand_id!r} in the event store")
    published = published_keys(keys)
    events = bundle_events(record)
    heads = [
        s for s in record.signatures
        if s.algorithm == chain.ED25519 and published.keys.get(s.key_id, None) is not None
        and published.keys[s.key_id].use == HEAD
    ]  # fmt: skip
    used = {e["producer_key_id"] for e in events} | {s.key_id for s in heads}
    carried = {k: published.keys[k] for k in sorted(used) if k in published.keys}
    rows = bundle_rows(record.stream_id, events)
    report = audit_hand(rows, PublishedKeys(carried).keyring(), heads)
    if report.failed_check == "incomplete":
        raise NotEvidence(
            f"hand {record.hand_id!r} is still in play: its evidence file is made once it "
            "has ended (its cards are secret until then)"
        )
    document = {
        "format": FORMAT,
        "version": VERSION,
        "about": ABOUT,
        "hand_id": record.hand_id,
        "stream_id": record.stream_id,
        "events": events,
        "heads": [_head(s) for s in heads],
        "keys": [key.to_json() for key in carried.values()],
        "transcript": _transcript(report),
    }
    return Evidence(document, report)


def _transcript(report: AuditReport) -> dict[str, Any]:
    # through JSON once: the carried copy compares equal to what a reader parses
    as_json: dict[str, Any] = json.loads(
        json.dumps({"lines": report.transcript(), "timeline": report.timeline().to_json()})
    )
    return as_json


# --- verifying ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvidenceReport:
    """What ``verify_evidence`` found: the checks in order up to the first failure."""

    checks: tuple[CheckResult, ...]
    hand_id: str = ""
    audit: AuditReport | None = None
    signers: tuple[PublicKey, ...] = ()  # the keys the file says signed it
    keyring_checked: bool = False  # the signers were checked against a published keyring
    lines: tuple[str, ...] = field(default=(), repr=False)  # the transcript, when it verified

    @property
    def failure(self) -> CheckResult | None:
        return next((c for c in self.checks if not c.passed), None)

    @property
    def verdict(self) -> str:
        """``clean`` (every check, signers published), ``consistent`` (every check that
        the file alone allows; signers not checked) or ``failed``."""
        if self.failure is not None:
            return "failed"
        return "clean" if self.keyring_checked else "consistent"

    @property
    def message(self) -> str:
        failure = self.failure
        if failure is not None:
            return f"{failure.name} check failed: {failure.detail}"
        if self.keyring_checked:
            return "clean: every check holds and every signer is in the published keyring"
        return (
            "internally consistent: the signers were not checked against a published "
            "keyring (give --keys KEYRING)"
        )

    def to_json(self) -> dict[str, Any]:
        failure = self.failure
        return {
            "hand_id": self.hand_id,
            "verdict": self.verdict,
            "failed_check": None if failure is None else failure.name,
            "message": self.message,
            "keyring_checked": self.keyring_checked,
            "checks": [c.to_json() for c in self.checks],
            "signers": [
                {
                    "key_id": k.key_id,
                    "use": k.use,
                    "producer": k.producer,
                    "fingerprint": k.fingerprint,
                }
                for k in self.signers
            ],
        }


def verify_evidence(data: bytes, published: PublishedKeys | None = None) -> EvidenceReport:
    """Verify an evidence file's bytes; with ``published``, its signers too. Never raises
    for a bad file: every problem is a failed, named check."""
    passed: list[CheckResult] = []
    state = _Verifying()
    try:
        _verify(data, published, passed, state)
    except _Bad as bad:
        passed.append(CheckResult(bad.check, False, bad.detail))
    return EvidenceReport(
        tuple(passed), state.hand_id, state.audit, state.signers,
        published is not None and passed[-1].passed, state.lines,
    )  # fmt: skip


@dataclass
class _Verifying:
    hand_id: str = ""
    audit: AuditReport | None = None
    signers: tuple[PublicKey, ...] = ()
    lines: tuple[str, ...] = ()


def _verify(
    data: bytes, published: PublishedKeys | None, passed: list[CheckResult], state: _Verifying
) -> None:
    document = _read(data)
    stream_id = document["stream_id"]
    state.hand_id = document["hand_id"]
    passed.append(CheckResult(FILE, True, f"{FORMAT} version {VERSION}, in its canonical form"))

    keys = _keys(document)
    state.signers = tuple(keys[k] for k in sorted(keys))
    rows = bundle_rows(stream_id, document["events"])
    heads = _heads(stream_id, document["heads"], keys)
    passed.append(CheckResult(KEYS, True, f"{len(keys)} key(s), each id and fingerprint its key's"))

    report = audit_hand(rows, PublishedKeys(keys).keyring(), heads)
    state.audit = report
    passed.extend(report.checks)
    failure = report.failure
    if failure is not None:
        raise _Bad(failure.name, failure.detail)
    check_listed(document["events"], rows)
    used = {row_key(document, index) for index in range(len(rows))} | {h.key_id for h in heads}
    unused = sorted(set(keys) - used)
    if unused:
        raise _Bad(EVENTS, f"the file carries key {unused[0]!r}, which signs nothing in it")
    passed.append(
        CheckResult(EVENTS, True, f"{len(rows)} event(s), each listed key id and signature its own")
    )

    carried, recomputed = document["transcript"], _transcript(report)
    if carried != _as_carried(recomputed, carried):
        raise _Bad(TRANSCRIPT, _transcript_difference(carried, recomputed))
    state.lines = tuple(recomputed["lines"])
    passed.append(
        CheckResult(TRANSCRIPT, True, "the transcript is the one the events give, line for line")
    )
    if published is None:
        return
    for key in state.signers:
        if not published.vouches_for(key):
            what = "head" if key.use == HEAD else f"{key.producer} event"
            raise _Bad(
                PUBLISHED_KEYS,
                f"the {what} key {key.key_id!r} ({key.fingerprint}) that signed this file is "
                "not in the published keyring: the file was signed by another key than the "
                "operator's",
            )
    passed.append(
        CheckResult(
            PUBLISHED_KEYS, True, f"all {len(state.signers)} signer(s) are in the published keyring"
        )
    )


def row_key(document: dict[str, Any], index: int) -> str:
    return str(document["events"][index]["producer_key_id"])


def _read(data: bytes) -> dict[str, Any]:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _Bad(FILE, f"the file is not JSON ({exc}): it was changed or cut short") from None
    except RecursionError:
        raise _Bad(FILE, "the file nests too deep to be an evidence file") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise _Bad(FILE, f"the file is not a {FORMAT} file")
    if type(document.get("version")) is not int or document.get("version") != VERSION:
        raise _Bad(
            FILE,
            f"the file is {FORMAT} version {document.get('version')!r}; this build reads "
            f"version {VERSION}",
        )
    if set(document) != FIELDS:
        raise _Bad(FILE, f"the file does not have the fields of {FORMAT} version {VERSION}")
    if canonical(document) != data:
        raise _Bad(
            FILE,
            "the file is not in the form it was written in (spacing, order or escapes were "
            "changed after it was written)",
        )
    if document["about"] != ABOUT:
        raise _Bad(FILE, "the file's 'about' text was changed")
    stream_id, hand_id = document["stream_id"], document["hand_id"]
    if not isinstance(stream_id, str) or stream_id != HAND_PREFIX + str(hand_id):
        raise _Bad(FILE, f"the hand id {hand_id!r} is not that of stream {stream_id!r}")
    if not isinstance(document["transcript"], dict):
        raise _Bad(FILE, "the file's transcript is not an object")
    return document


def _keys(document: dict[str, Any]) -> dict[str, PublicKey]:
    entries = document["keys"]
    if not isinstance(entries, list):
        raise _Bad(KEYS, "'keys' is not a list")
    try:
        return keys_of(entries, "the file's keys")
    except BadKeyring as exc:
        raise _Bad(KEYS, str(exc)) from None


def _heads(stream_id: str, entries: object, keys: dict[str, PublicKey]) -> list[StreamSignature]:
    if not isinstance(entries, list):
        raise _Bad(KEYS, "'heads' is not a list")
    heads = []
    for index, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or set(entry) != HEAD_FIELDS:
            raise _Bad(KEYS, f"head {index} does not have the fields of format version {VERSION}")
        key = keys.get(str(entry["key_id"]))
        if entry["algorithm"] != chain.ED25519 or key is None or key.use != HEAD:
            raise _Bad(
                KEYS, f"head {index} is signed under {entry['key_id']!r}, a head key the file "
                "does not carry",
            )  # fmt: skip
        if type(entry["head_version"]) is not int or not all(
            isinstance(entry[k], str) and _lower_hex(entry[k]) for k in ("head_hash", "signature")
        ):
            raise _Bad(KEYS, f"head {index}: its version, hash or signature is malformed")
        heads.append(
            StreamSignature(stream_id, entry["head_version"], entry["head_hash"],
                            entry["signature"], key.key_id, chain.ED25519)
        )  # fmt: skip
    return heads


def _lower_hex(text: str) -> bool:
    """Hex in its one spelling (lower case): ``bytes.fromhex`` takes either case."""
    try:
        return bytes.fromhex(text).hex() == text
    except ValueError:
        return False


def _as_carried(recomputed: Any, carried: Any) -> Any:
    """The recomputed transcript with only the keys the file's own has: a file made
    before the timeline gained a key (an entry's trace id, say) still verifies, every
    key it carries compared. The lines are compared whole."""
    if isinstance(recomputed, dict) and isinstance(carried, dict):
        return {k: _as_carried(v, carried[k]) for k, v in recomputed.items() if k in carried}
    if isinstance(recomputed, list) and isinstance(carried, list):
        if len(recomputed) != len(carried):
            return recomputed
        return [_as_carried(r, c) for r, c in zip(recomputed, carried, strict=True)]
    return recomputed


def _transcript_difference(carried: Any, recomputed: dict[str, Any]) -> str:
    lines = carried.get("lines") if isinstance(carried, dict) else None
    if isinstance(lines, list):
        for number, (a, b) in enumerate(zip(lines, recomputed["lines"], strict=False), start=1):
            if a != b:
                return (
                    f"transcript line {number} reads {str(a)[:80]!r}; the events give "
                    f"{str(b)[:80]!r}"
                )
    return "the file's transcript is not the one its events give"


def signer_lines(report: EvidenceReport) -> list[str]:
    """The signers with their fingerprints, to compare with a published keyring."""
    return [
        f"{key.key_id} ({key.use}{' ' + key.producer if key.producer else ''}): {key.fingerprint}"
        for key in report.signers
    ]
