"""The desk's sessions where every console instance sees them: the recorder's
``DeskService`` session calls on the real store (SQLite and PostgreSQL), and the
operator's ``ddz desk end-sessions STAFF`` (the real CLI, in a process of its own),
which ends every session of one staff member at once and leaves the others'."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from cli_kit import ddz
from ddz.adapters.service_db import schema, upgrade_service_db
from ddz.adapters.service_db.desk_sessions import DeskSessions
from ddz.adapters.service_db.hand_index import HandIndex
from ddz.adapters.store import SqlEventStore, create_store
from ddz.application.errors import Kind, Refusal
from ddz.v1 import desk_pb2

from services.recorder.desk_servicer import DeskServicer

CONTEXT: Any = None  # the servicer's calls read nothing of it


def digest() -> str:
    return hashlib.sha256(secrets.token_bytes(32)).hexdigest()


async def test_sessions_open_check_and_end_through_the_recorder(store: SqlEventStore) -> None:
    upgrade_service_db(store.engine)
    desk = DeskServicer(HandIndex(store.engine))
    sam, sam_too, ada = digest(), digest(), digest()
    later = time.time() + 600
    for who, role, session in (("sam", "support", sam), ("sam", "support", sam_too),
                               ("ada", "auditor", ada)):  # fmt: skip
        await desk.OpenSession(desk_pb2.OpenSessionRequest(
            digest=session, staff=who, role=role, expires_at=later), CONTEXT)  # fmt: skip
    found = await desk.CheckSession(desk_pb2.CheckSessionRequest(digest=sam), CONTEXT)
    assert (found.open, found.staff, found.role) == (True, "sam", "support")
    # sign-out: one session
    ended = await desk.EndSessions(desk_pb2.EndSessionsRequest(digest=sam), CONTEXT)
    assert ended.ended == 1
    assert not (await desk.CheckSession(desk_pb2.CheckSessionRequest(digest=sam), CONTEXT)).open
    # the operator: every one of a staff member's
    ended = await desk.EndSessions(desk_pb2.EndSessionsRequest(staff="sam"), CONTEXT)
    assert ended.ended == 1
    assert not (await desk.CheckSession(desk_pb2.CheckSessionRequest(digest=sam_too),
                                        CONTEXT)).open  # fmt: skip
    assert (await desk.CheckSession(desk_pb2.CheckSessionRequest(digest=ada), CONTEXT)).open
    # a new process on the same database sees the same (a console restart, kill -9)
    again = create_store(store_url(store))
    try:
        assert DeskSessions(again.engine).find(sam) is None
        assert DeskSessions(again.engine).find(ada) is not None
    finally:
        again.close()


@pytest.mark.parametrize(
    "request_",
    [
        desk_pb2.OpenSessionRequest(digest="x", staff="sam", role="support", expires_at=1e10),
        desk_pb2.OpenSessionRequest(digest="a" * 64, staff="sam\n", role="support"),
        desk_pb2.OpenSessionRequest(digest="a" * 64, staff="sam", role="admin"),
    ],
    ids=["bad-digest", "staff-with-newline", "unknown-role"],
)
async def test_a_bad_session_is_an_invalid_argument(
    store: SqlEventStore, request_: desk_pb2.OpenSessionRequest
) -> None:
    upgrade_service_db(store.engine)
    desk = DeskServicer(HandIndex(store.engine))
    with pytest.raises(Refusal) as caught:
        await desk.OpenSession(request_, CONTEXT)
    assert caught.value.kind is Kind.INVALID
    with pytest.raises(Refusal):
        await desk.EndSessions(desk_pb2.EndSessionsRequest(), CONTEXT)
    good = desk_pb2.OpenSessionRequest(digest="b" * 64, staff="sam", role="support",
                                       expires_at=time.time() + 60)  # fmt: skip
    await desk.OpenSession(good, CONTEXT)
    with pytest.raises(Refusal, match="opened already"):  # a repeat is refused, not an error
        await desk.OpenSession(good, CONTEXT)


def store_url(store: SqlEventStore) -> str:
    return store.engine.url.render_as_string(hide_password=False)


def test_ddz_desk_end_sessions_ends_one_staff_members_sessions(tmp_path: Path) -> None:
    database = tmp_path / "ddz.sqlite3"  # the data dir's own store, as ``ddz up`` makes it
    made = create_store(f"sqlite:///{database}", upgrade=True)
    try:
        upgrade_service_db(made.engine)
        sessions = DeskSessions(made.engine)
        sams, ada = [digest(), digest()], digest()
        for session in sams:
            sessions.open(session, "sam", "support", time.time() + 600)
        sessions.open(ada, "ada", "auditor", time.time() + 600)
        done = ddz(tmp_path, "desk", "end-sessions", "sam", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"staff": "sam", "ended": 2}
        assert all(sessions.find(s) is None for s in sams)
        assert sessions.find(ada) is not None
        again = ddz(tmp_path, "desk", "end-sessions", "sam")
        assert again.returncode == 0 and "sam has no open desk session" in again.stdout
        bad = ddz(tmp_path, "desk", "end-sessions", "sam\n")
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
        assert "STAFF must be a staff name" in bad.stderr
    finally:
        made.close()


def test_ddz_desk_end_sessions_without_a_store_is_one_line(tmp_path: Path) -> None:
    done = ddz(tmp_path, "desk", "end-sessions", "sam")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "no event store" in done.stderr


def test_the_sessions_migration_matches_the_schema(store: SqlEventStore) -> None:
    upgrade_service_db(store.engine)
    upgrade_service_db(store.engine)  # again: nothing changes
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), schema.metadata)
    assert [d for d in diff if "desk_sessions" in repr(d)] == []
