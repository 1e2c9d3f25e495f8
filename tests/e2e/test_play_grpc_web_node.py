"""The TableService over gRPC-Web, apart from the page: a client in Node.js written
from the protos (web/test/play_hand.test.mjs, ``@connectrpc/connect-node``) lists the
rooms, is refused without a token and for another seat, plays a whole hand of classic
with the table's hints against two bots, through the suite's web front, and fetches the
hand's evidence file (refused to a player who did not sit in it), which ``ddz audit
--bundle`` verifies. The page's bundle and the generated client are checked to be built
from the current sources."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from play_web_kit import WEB, PlaySuite, node_modules, play_suite


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaySuite]:
    with play_suite(tmp_path_factory.mktemp("play-node")) as running:
        yield running


def node_test(
    suite: PlaySuite, token: str, room: str, evidence: Path
) -> subprocess.CompletedProcess[str]:
    node_modules()
    env = {**suite.env, "PLAY_URL": suite.url, "PLAY_CA": str(suite.ca),
           "PLAY_TOKEN": token, "PLAY_ROOM": room, "PLAY_EVIDENCE": str(evidence),
           "PLAY_OTHER_TOKEN": suite.token("player", "otto-not-seated")}  # fmt: skip
    return subprocess.run(
        ["node", "--test", "--test-reporter=spec", str(Path("test") / "play_hand.test.mjs")],
        cwd=WEB, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_node_client_plays_a_hand_of_classic_over_grpc_web(
    suite: PlaySuite, tmp_path: Path
) -> None:
    evidence = tmp_path / "hand.ddz-evidence.json"
    done = node_test(suite, suite.token("player", "nora-in-node"), "classic", evidence)
    assert done.returncode == 0, done.stdout + done.stderr
    counts = dict(re.findall(r"^\S+ (pass|fail) (\d+)$", done.stdout, re.MULTILINE))
    assert counts == {"pass": "3", "fail": "0"}, done.stdout
    # the evidence file the client received verifies offline
    audit = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "audit", "--bundle", str(evidence)],
        env=suite.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_the_vendored_page_and_client_are_built_from_the_current_sources() -> None:
    node_modules()
    done = subprocess.run(
        [sys.executable, "tools/build_play_web.py", "--check"], cwd=WEB.parent,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def connect_json(suite: PlaySuite, method: str, body: dict[str, object],
                 token: str = "") -> tuple[int, dict[str, object]]:  # fmt: skip
    """A Connect-protocol unary call (JSON over HTTP/1.1), as curl would make it."""
    headers = {"content-type": "application/json", "connect-protocol-version": "1"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"{suite.url}/ddz.v1.TableService/{method}", data=json.dumps(body).encode(),
        headers=headers, method="POST",
    )  # fmt: skip
    context = ssl.create_default_context(cafile=str(suite.ca))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_the_connect_protocol_answers_in_json_with_the_tables_refusals(suite: PlaySuite) -> None:
    status, rooms = connect_json(suite, "ListRooms", {})
    assert status == 200
    assert {room["roomId"] for room in rooms["rooms"]} >= {"classic", "laizi"}  # type: ignore[attr-defined]
    status, refused = connect_json(suite, "JoinRoom", {"roomId": "classic"})
    assert status == 401 and refused["code"] == "unauthenticated"
    assert "no token" in str(refused["message"])
    token = suite.token("player", "petra-json")
    status, refused = connect_json(suite, "GetHandEvidence", {"handId": "nohand"}, token)
    assert status in (400, 404) and refused["code"] in ("invalid_argument", "not_found")
    status, refused = connect_json(suite, "Play", {"handId": "h" * 100_000}, token)
    assert status >= 400  # a request far larger than any TableService call: refused unread


def test_the_page_is_served_with_a_strict_content_security_policy(suite: PlaySuite) -> None:
    context = ssl.create_default_context(cafile=str(suite.ca))
    with urllib.request.urlopen(suite.url, context=context, timeout=30) as page:
        policy = page.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert 'name="token"' in page.read().decode()
    # guests may not play here unless the operator says so (DDZ_PLAY_GUESTS)
    with urllib.request.urlopen(f"{suite.url}/guest", context=context, timeout=30) as asked:
        assert json.loads(asked.read()) == {"guests": False}
    refused = urllib.request.Request(f"{suite.url}/guest", method="POST",
                                     headers={"x-ddz-guest": "1"})  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(refused, context=context, timeout=30)
    assert caught.value.code == 404
