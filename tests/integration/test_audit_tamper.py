"""Tampering is caught, each kind by the check that proves what it broke (``tamper_kit``):
a database writer without the key breaks the hash chain or the signature; an insider
with the recorder's key but no producer's key breaks the producer signatures; an insider
with every key who rewrites history consistently is caught by the commitment, deal,
decisions, multiplier or settlement check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import sqlalchemy as sa
from ddz.adapters.store import SqlEventStore, StoredEvent, chain
from ddz.adapters.store.schema import events, stream_signatures
from ddz.audit import CHECKS, audit_hand
from ddz.audit.store.bulk import audit_all
from ddz.domain.cards import Rank, card_counts
from ddz.domain.hand import CommandRejected, Play, RejectReason
from ddz.domain.hand.events import (
    CardsDealt,
    HandSettled,
    HandStarted,
    Passed,
    PlayMade,
    WildcardDrawn,
)
from ddz.domain.ledger import LedgerLine
from ddz.domain.multipliers import MultiplierBreakdown
from ddz.domain.ruleset import VARIANTS
from ddz.domain.shuffle import in_deck_order
from ddz.v1 import envelope_pb2
from signing_kit import tampered
from tamper_kit import (
    KEY,
    PRODUCERS,
    History,
    _audit,
    _keys,
    _swap_seed,
    decoded,
    first_index,
    flip_payload_byte,
    forge,
    insert_raw,
    rows_of,
    signed_by,
)

from services.recorder.adapters.audits import Audits
from services.recorder.use_cases.handlers import Record, Verdict


def _move_a_card(history: History) -> History:
    i = first_index(history, CardsDealt)
    envelope, dealt = history[i]
    assert isinstance(dealt, CardsDealt)
    started = history[0][1]
    assert isinstance(started, HandStarted)
    hands = [list(h) for h in dealt.hands]
    hands[1].append(hands[0].pop())
    sorted_hands = tuple(in_deck_order(started.rules, h) for h in hands)
    history[i] = (envelope, dataclasses.replace(dealt, hands=sorted_hands))
    return history


def _other_wildcard(history: History) -> History:
    i = first_index(history, WildcardDrawn)
    envelope, drawn = history[i]
    assert isinstance(drawn, WildcardDrawn)
    taken = {e.rank for _, e in history if isinstance(e, WildcardDrawn)}
    other = next(r for r in Rank if r not in taken and r < Rank.BLACK_JOKER)
    history[i] = (envelope, dataclasses.replace(drawn, rank=other))
    return history


def _delete_a_pass(history: History) -> History:
    del history[first_index(history, Passed)]
    return history


def _repeat_a_play(history: History) -> History:
    i = first_index(history, PlayMade)
    history.insert(i + 1, history[i])
    return history


def _swap_pass_and_next(history: History) -> History:
    """A pass and the move after it (by the next seat) swapped: turn order broken."""
    i = next(
        i
        for i, (_, e) in enumerate(history[:-1])
        if isinstance(e, Passed) and isinstance(history[i + 1][1], PlayMade | Passed)
    )
    history[i], history[i + 1] = history[i + 1], history[i]
    return history


def _other_refusal_reason(history: History) -> History:
    i = first_index(history, CommandRejected)
    envelope, rejected = history[i]
    assert isinstance(rejected, CommandRejected)
    other = next(r for r in RejectReason if r is not rejected.reason)
    history[i] = (envelope, dataclasses.replace(rejected, reason=other))
    return history


def _refuse_a_legal_play(history: History) -> History:
    """'My play was refused': a play the rules accept, recorded as refused first."""
    i = first_index(history, PlayMade)
    envelope, made = history[i]
    assert isinstance(made, PlayMade)
    command = Play(made.seat, card_counts(made.cards), made.reading)
    history.insert(
        i, (envelope, CommandRejected(command, RejectReason.DOES_NOT_BEAT, "does not beat"))
    )
    return history


def _settled(history: History) -> tuple[int, HandSettled]:
    i = first_index(history, HandSettled)
    settled_event = history[i][1]
    assert isinstance(settled_event, HandSettled)
    return i, settled_event


def _double_initial_factor(history: History) -> History:
    i, event = _settled(history)
    factors = list(event.multiplier.factors)
    factors[0] = dataclasses.replace(factors[0], factor=factors[0].factor * 2)
    breakdown = MultiplierBreakdown(tuple(factors))
    history[i] = (history[i][0], dataclasses.replace(event, multiplier=breakdown))
    return history


def _charge_a_seat_ten_more(history: History) -> History:
    """'I was charged too much': one seat's line 10 lower, the system 10 richer."""
    i, event = _settled(history)
    ledger = event.ledger
    lines = list(ledger.lines)
    k = next((k for k, line in enumerate(lines) if line.seat is not None), None)
    if k is None:  # nothing moved in this hand (e.g. empty bean balances): charge seat 0
        lines.append(LedgerLine(0, 0, "loss"))
        k = len(lines) - 1
    seat = lines[k].seat
    assert seat is not None
    lines[k] = dataclasses.replace(lines[k], amount=lines[k].amount - 10)
    lines.append(LedgerLine(None, 10, "fee"))
    deltas = list(ledger.deltas)
    deltas[seat] -= 10
    forged = dataclasses.replace(
        ledger, lines=tuple(lines), deltas=(deltas[0], deltas[1], deltas[2]),
        system=ledger.system + 10,
    )  # fmt: skip
    history[i] = (history[i][0], dataclasses.replace(event, ledger=forged))
    return history


def _unknown_engine_version(history: History) -> History:
    started = history[0][1]
    assert isinstance(started, HandStarted)
    history[0] = (history[0][0], dataclasses.replace(started, engine_version="0.9"))
    return history


FORGED: dict[str, tuple[str, Callable[[History], History], str | None]] = {
    # name: (the check that must catch it, the rewrite, a variant that has the material)
    "revealed seed swapped": ("commitment", _swap_seed, None),
    "a card moved between two seats": ("deal", _move_a_card, None),
    "another wildcard rank": ("deal", _other_wildcard, "laizi"),
    "a pass deleted": ("decisions", _delete_a_pass, None),
    "a play duplicated": ("decisions", _repeat_a_play, None),
    "a pass and the next event reordered": ("decisions", _swap_pass_and_next, None),
    "a refusal's reason changed": ("decisions", _other_refusal_reason, None),
    "a legal play recorded as refused": ("decisions", _refuse_a_legal_play, None),
    "a multiplier factor doubled": ("multiplier", _double_initial_factor, None),
    "a settlement line altered": ("settlement", _charge_a_seat_ten_more, None),
    "an unknown engine version": ("engine_version", _unknown_engine_version, None),
}


def test_tampering_is_caught_by_the_right_check(
    store: SqlEventStore, originals: tuple[SqlEventStore, dict[str, list[str]]]
) -> None:
    """Each case alters a different original hand and writes it into the store under
    test (SQLite, PostgreSQL); the audit must name exactly the expected check."""
    source, by_variant = originals
    pool = {variant: list(ids) for variant, ids in by_variant.items()}
    rotation = iter(sorted(VARIANTS) * 10)

    def take(variant: str | None = None) -> str:
        return pool[variant or next(rotation)].pop()

    expected: dict[str, str | None] = {}
    audited: dict[str, str] = {}

    def raw(name: str, check: str | None, edit: Callable[[list[dict[str, object]]], tuple]) -> None:
        hand_id = take()
        stream_id = f"hand-{hand_id}"
        rows = rows_of(source.read_stream(stream_id))
        new_rows, signatures = edit(rows)
        insert_raw(store, new_rows, signatures)
        expected[name], audited[name] = check, hand_id

    def original_signatures(hand_id: str) -> list:
        return source.read_signatures(f"hand-{hand_id}")

    # -- a database writer without the key --------------------------------------------------
    def keep(rows: list, hand: str | None = None) -> tuple:
        return rows, source.read_signatures(rows[0]["stream_id"])

    raw("untouched copy", None, lambda rows: keep(rows))
    raw("one payload byte changed", "hash_chain",
        lambda rows: keep([*rows[:5], flip_payload_byte(rows[5], 3), *rows[6:]]))  # fmt: skip
    raw("an event deleted", "hash_chain",
        lambda rows: keep([*rows[:4], *[{**r, "stream_version": r["stream_version"] - 1}
                                        for r in rows[5:]]]))  # fmt: skip
    raw("the last event deleted", "signature", lambda rows: keep(rows[:-1]))
    raw("an event duplicated", "hash_chain",
        lambda rows: keep([*rows[:5], {**rows[4], "event_id": "copy", "stream_version": 6},
                           *[{**r, "stream_version": r["stream_version"] + 1}
                             for r in rows[5:]]]))  # fmt: skip
    raw("two events reordered", "hash_chain",
        lambda rows: keep([*rows[:4], {**rows[5], "stream_version": 5},
                           {**rows[4], "stream_version": 6}, *rows[6:]]))  # fmt: skip
    raw("re-signed with the wrong key", "signature",
        lambda rows: (rows, [signed_by(b"not the operator's key", rows[0]["stream_id"],
                                       rows[-1])]))  # fmt: skip
    raw("the signature removed", "signature", lambda rows: (rows, []))
    raw("a hand still in play", "incomplete", lambda rows: (rows[:9], []))
    # The seed and the signature removed together: the hand looks unfinished, but it was
    # settled (money moved), so it must end signed: a failure, saying it had ended.
    raw("the revealed seed and the signature removed", "signature", lambda rows: (rows[:-1], []))

    # -- an insider with every key: re-chained, each event and the head re-signed ------------
    for name, (check, rewrite, variant) in FORGED.items():
        hand_id = take(variant)
        stream_id = f"hand-{hand_id}"
        history = rewrite(decoded(source.read_stream(stream_id)))
        forge(store, stream_id, history, KEY, seal=PRODUCERS.seal)
        expected[name], audited[name] = check, hand_id

    # -- an insider with the recorder's key but no producer's, or only the dealer's ---------
    def dealer_signs_settlements(envelope: envelope_pb2.EventEnvelope) -> bytes:
        return PRODUCERS.seal(envelope, "dealer" if envelope.type == HandSettled.TYPE else None)

    for name, seal in (
        ("a settlement line altered without the producers' keys", None),
        ("a settlement line altered and signed by the dealer", dealer_signs_settlements),
    ):
        hand_id = take()
        stream_id = f"hand-{hand_id}"
        history = _charge_a_seat_ten_more(decoded(source.read_stream(stream_id)))
        forge(store, stream_id, history, KEY, seal=seal)
        expected[name], audited[name] = "producer_signature", hand_id

    found = {name: _audit(store, hand_id).failed_check for name, hand_id in audited.items()}
    assert found == expected
    refused = _audit(store, audited["an unknown engine version"]).message
    assert "engine version '0.9'" in refused and "audit it with a build" in refused
    unsigned = _audit(store, audited["a settlement line altered without the producers' keys"])
    assert "hand_settled" in unsigned.message and "does not verify" in unsigned.message
    by_dealer = _audit(store, audited["a settlement line altered and signed by the dealer"])
    assert "signed by 'dealer', which may not sign it" in by_dealer.message
    # The same hands through ``--all``: counted by the check that failed.
    url = store.engine.url.render_as_string(hide_password=False)
    everything = audit_all(url, _keys())
    counts = {check: 0 for check in CHECKS}
    for check in expected.values():
        if check in counts:
            counts[check] += 1
    assert everything.failed_by_check == counts
    assert (everything.clean, everything.incomplete) == (1, 1)
    listed = {f["hand_id"]: f["failed_check"] for f in everything.to_json()["failures"]}
    assert listed == {hand_id: expected[name] for name, hand_id in audited.items()
                      if expected[name] not in (None, "incomplete")}  # fmt: skip
    # Worker processes (each reading its batches in bulk) find the same, listed in the
    # same order as one process does.
    parallel = audit_all(url, _keys(), workers=2, batch=5)
    assert parallel.workers == 2
    assert _without_timing(parallel.to_json()) == _without_timing(everything.to_json())
    cut = _audit(store, audited["the revealed seed and the signature removed"]).message
    assert "ended at #" in cut and "an operator must look" in cut


def _without_timing(report: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in report.items() if k not in ("seconds", "hands_per_s", "workers")}


def test_a_payload_byte_changed_in_any_event_breaks_the_hash_chain(
    originals: tuple[SqlEventStore, dict[str, list[str]]],
) -> None:
    source, by_variant = originals
    for variant in sorted(VARIANTS):
        stream_id = f"hand-{by_variant[variant][0]}"
        rows = rows_of(source.read_stream(stream_id))
        signatures = source.read_signatures(stream_id)
        assert audit_hand(_as_rows(rows), _keys(), signatures).clean
        for index in range(len(rows)):
            for offset in (0, len(rows[index]["payload"]) // 2, -1):
                tampered = [
                    *rows[:index],
                    flip_payload_byte(rows[index], offset),
                    *rows[index + 1 :],
                ]
                report = audit_hand(_as_rows(tampered), _keys(), signatures)
                assert report.failed_check == "hash_chain", (variant, index, report.message)
                assert f"event #{index + 1} " in report.message


def _as_rows(rows: list[dict[str, object]]) -> list[StoredEvent]:
    return [StoredEvent(**row) for row in rows]  # type: ignore[arg-type]


def test_auditing_with_another_key_fails_the_signature_check(
    originals: tuple[SqlEventStore, dict[str, list[str]]],
) -> None:
    source, by_variant = originals
    hand_id = by_variant["ct"][0]
    assert _audit(source, hand_id).clean
    assert _audit(source, hand_id, key=b"someone else's key").failed_check == "signature"


# --- the recorder's own audit: it trusts only the chain it verified as it stored it -------


def _rewrite_from(store: SqlEventStore, stream_id: str, version: int) -> None:
    """An insider with the database's admin rights but no producer's key: event
    ``version`` rewritten (another causation id, its signature kept), and every stored
    hash from it on recomputed, so the chain holds and the next append follows it."""
    with store.engine.begin() as conn:
        if store.engine.dialect.name == "sqlite":
            conn.exec_driver_sql("DROP TRIGGER IF EXISTS events_no_update")
        else:
            conn.exec_driver_sql("ALTER TABLE events DISABLE TRIGGER events_append_only")
        rows = conn.execute(
            sa.select(events.c.stream_version, events.c.envelope, events.c.prev_hash)
            .where(events.c.stream_id == stream_id, events.c.stream_version >= version)
            .order_by(events.c.stream_version)
        ).all()
        previous = rows[0].prev_hash
        for number, envelope, _ in rows:
            if number == version:
                envelope = tampered(envelope)
            row_hash = chain.chain_hash(previous, envelope)
            conn.execute(
                sa.update(events)
                .where(events.c.stream_id == stream_id, events.c.stream_version == number)
                .values(envelope=envelope, prev_hash=previous, hash=row_hash)
            )
            previous = row_hash


def _sign_again(store: SqlEventStore, stream_id: str) -> None:
    """The stream's head signatures replaced by one over its head now, with the
    recorder's key (an insider holding it)."""
    with store.engine.begin() as conn:
        if store.engine.dialect.name == "sqlite":
            conn.exec_driver_sql("DROP TRIGGER IF EXISTS stream_signatures_no_delete")
        else:
            conn.exec_driver_sql(
                "ALTER TABLE stream_signatures DISABLE TRIGGER stream_signatures_append_only"
            )
        conn.execute(sa.delete(stream_signatures).where(stream_signatures.c.stream_id == stream_id))
    store.sign_head(stream_id, KEY, "k1")


async def test_the_recorders_audit_verifies_again_what_it_did_not_see_stored_whole(
    store: SqlEventStore, originals: tuple[SqlEventStore, dict[str, list[str]]]
) -> None:
    """The recorder's background audit skips the producer signatures of a chain it
    verified and stored from its first event, up to the head it remembers. A hand
    altered in the store before its end (re-chained, so the recorder went on appending
    to it and signed its head) and one altered after (re-chained and re-signed with the
    recorder's key) are verified in full, and fail ``producer_signature``; an untouched
    one is clean without a second verification."""
    source, by_variant = originals
    record = Record(
        store, keyring=PRODUCERS.keyring, sign_head=lambda s: store.sign_head(s, KEY, "k1")
    )
    audits = Audits(store, "", _keys())
    clean, before, after = by_variant["classic"][:3]

    def envelopes(hand_id: str) -> list[bytes]:
        return [row.envelope for row in source.read_stream(f"hand-{hand_id}")]

    for hand_id in (clean, after):
        assert {o.verdict for o in await record(envelopes(hand_id))} == {Verdict.STORED}
    stored = store.read_stream(f"hand-{clean}")
    assert record.chains.head(f"hand-{clean}") == (len(stored), stored[-1].hash)
    report = audits._audit(clean, record.chains.head(f"hand-{clean}"))
    assert report is not None and report.clean, report.message
    (check,) = [c for c in report.checks if c.name == "producer_signature"]
    assert check.detail.endswith(f"#1..#{len(stored)} verified as they were stored")

    # Altered mid-hand: the recorder's next append no longer follows the chain it knew.
    first, rest = envelopes(before)[:10], envelopes(before)[10:]
    await record(first)
    _rewrite_from(store, f"hand-{before}", 5)
    assert {o.verdict for o in await record(rest)} == {Verdict.STORED}
    assert store.read_signatures(f"hand-{before}")  # its head signed over the altered chain
    assert record.chains.head(f"hand-{before}") is None
    altered = audits._audit(before, record.chains.head(f"hand-{before}"))
    assert altered is not None and altered.failed_check == "producer_signature"
    assert "event #5 " in altered.message and "does not verify" in altered.message

    # Altered after its end and signed again: the head remembered is not the stored one.
    remembered = record.chains.head(f"hand-{after}")
    assert remembered is not None
    _rewrite_from(store, f"hand-{after}", 5)
    _sign_again(store, f"hand-{after}")
    assert _audit(store, after).failed_check == "producer_signature"  # the hand page's audit
    resigned = audits._audit(after, remembered)
    assert resigned is not None and resigned.failed_check == "producer_signature"
    assert "event #5 " in resigned.message
