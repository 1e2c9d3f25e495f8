"""Auditing many hands at once: one poisoned hand is one failure among passes, hands left
incomplete too long are listed, and a check that crashes fails that hand only.
"""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters.store import SqlEventStore
from ddz.adapters.store import chain as hash_chain
from ddz.adapters.store.keys import Keyring, signer_of
from ddz.audit.store.bulk import audit_all
from tamper_kit import _audit, _keys, _signed_store, insert_raw, rows_of


def test_one_poisoned_hand_is_one_failure_among_passes(store: SqlEventStore) -> None:
    """``--all`` audits each hand on its own: a row whose envelope is no envelope (its
    hashes recomputed, so the chain itself holds) fails its hand, and so (on SQLite,
    which stores whatever type it is given) does a row whose envelope was written as
    text; the other hands audit clean, in one process or in workers."""
    recorder = signer_of(Ed25519PrivateKey.generate())
    public = _keys(Keyring(public={recorder.key_id: recorder.public_key}))
    source, ids = _signed_store(recorder, 5, seed=12)
    genuine, garbage, text = [ids[0], ids[3], ids[4]], ids[1], ids[2]
    for hand_id in genuine:
        stream_id = f"hand-{hand_id}"
        insert_raw(store, rows_of(source.read_stream(stream_id)), source.read_signatures(stream_id))
    rows = rows_of(source.read_stream(f"hand-{garbage}"))
    rows[3] = {**rows[3], "envelope": b"\xff\xff\xff not an envelope"}
    prev = "0" * 64
    for row in rows:
        row["prev_hash"] = prev
        row["hash"] = prev = hash_chain.chain_hash(prev, row["envelope"])
    insert_raw(store, rows, source.read_signatures(f"hand-{garbage}"))
    expected = {garbage: "hash_chain"}
    if store.engine.dialect.name == "sqlite":
        rows = rows_of(source.read_stream(f"hand-{text}"))
        insert_raw(store, [*rows[:1], *rows[2:]], source.read_signatures(f"hand-{text}"))
        columns = ", ".join(rows[1])
        with store.engine.begin() as conn:
            top = conn.exec_driver_sql("SELECT max(position) FROM events").scalar()
            values = {**rows[1], "position": top + 1, "envelope": "text, not bytes"}
            conn.exec_driver_sql(
                f"INSERT INTO events ({columns}) VALUES ({', '.join('?' * len(rows[1]))})",
                tuple(values[c] for c in rows[1]),
            )
        expected[text] = "hash_chain"
    url = store.engine.url.render_as_string(hide_password=False)
    for workers in (1, 2):
        report = audit_all(url, public, workers=workers, batch=2)
        found = {f.hand_id: f.failed_check for f in report.failures}
        assert found == expected, report.to_json()["failures"]
        assert (report.clean, report.failed) == (len(genuine), len(expected))
    source.close()


def test_hands_left_incomplete_too_long_are_listed(store: SqlEventStore) -> None:
    recorder = signer_of(Ed25519PrivateKey.generate())
    public = _keys(Keyring(public={recorder.key_id: recorder.public_key}))
    source, (done, cut) = _signed_store(recorder, 2, seed=13)
    for hand_id, keep in ((done, None), (cut, 6)):
        stream_id = f"hand-{hand_id}"
        signatures = source.read_signatures(stream_id) if keep is None else []
        insert_raw(store, rows_of(source.read_stream(stream_id))[:keep], signatures)
    last = source.read_stream(f"hand-{cut}")[5].occurred_at
    assert last is not None
    url = store.engine.url.render_as_string(hide_password=False)
    at = last.timestamp()
    fresh = audit_all(url, public, incomplete_after=60, now=at + 59)
    assert (fresh.clean, fresh.incomplete, fresh.stale) == (1, 1, [])
    stale = audit_all(url, public, incomplete_after=60, now=at + 61).to_json()
    assert stale["incomplete_after"] == 60 and stale["failed"] == 0
    (listed,) = stale["stale_incomplete"]
    assert listed["hand_id"] == cut and listed["idle_seconds"] == pytest.approx(61, abs=0.1)
    assert listed["last_event_at"] == last.isoformat()
    source.close()


def test_a_check_that_crashes_fails_that_hand_only(
    originals: tuple[SqlEventStore, dict[str, list[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ddz.audit import run

    source, by_variant = originals

    def crashing(audit: object) -> None:
        raise KeyError("a record nobody foresaw")

    steps = tuple((crashing, n) if n == "deal" else (s, n) for s, n in run._STEPS)
    monkeypatch.setattr(run, "_STEPS", steps)
    report = _audit(source, by_variant["classic"][0])
    assert report.failed_check == "deal"
    assert "could not run on this record (KeyError" in report.message
    assert [c.name for c in report.checks] == ["hash_chain", "producer_signature", "signature",
                                               "engine_version", "commitment", "deal"]  # fmt: skip
