"""The trace each stored event arrived in, in the audit's account: ``ddz audit`` reads it
from the store (``StoredEvent.trace_id``), the desk from the recorder's ``ReadStream``
(``audited_report(..., trace_ids)``); the text prints it under its event, the JSON as
``trace_id``. Events stored untraced show none."""

from __future__ import annotations

import random

from ddz.adapters.store import create_store
from ddz.adapters.store.keys import Keyring
from ddz.audit import audit_hand, audited_report
from ddz.audit.store.sample import SampleKeys, record_hand
from ddz.audit.store.source import load_hand
from ddz.domain.ruleset import CLASSIC

KEY = b"k" * 32
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_the_account_shows_each_events_trace() -> None:
    producers = SampleKeys.generate()
    plain = create_store("sqlite:///:memory:", upgrade=True)
    traced = create_store("sqlite:///:memory:", upgrade=True)
    try:
        hand_id = record_hand(plain, CLASSIC, random.Random(7), signers=producers, key=KEY)
        stored = plain.read_stream(f"hand-{hand_id}")
        ids = [TRACE if e.stream_version % 2 else None for e in stored]  # every other one
        traced.append(stored[0].stream_id, 0, [e.envelope for e in stored], ids)
        traced.sign_head(stored[0].stream_id, KEY, "k1")  # the same head, the same key
        keys = Keyring.of_hmac(KEY, "k1").with_events(producers.keyring)
        for store, expected in ((plain, [None] * len(stored)), (traced, ids)):
            record = load_hand(store, hand_id)
            assert record is not None
            report = audit_hand(record.events, keys, record.signatures)
            assert report.clean  # the trace ids are beside the evidence, not in it
            entries = report.timeline().entries
            assert [e.trace_id for e in entries] == [expected[e.version - 1] for e in entries]
            text = "\n".join(report.transcript())
            assert (f"trace {TRACE}" in text) == (store is traced)
            assert report.to_json()["timeline"]["entries"][0]["trace_id"] == expected[0]
        desk = audited_report(f"hand-{hand_id}", [e.envelope for e in stored], (), "", ids)
        assert [e.trace_id for e in desk.timeline().entries] == [
            ids[e.version - 1] for e in desk.timeline().entries
        ]
    finally:
        plain.close()
        traced.close()
