"""The TableService over gRPC-Web, apart from the page: a client in Node.js written
from the protos (web/test/play_hand.test.mjs, ``@connectrpc/connect-node``) lists the
rooms, is refused without a token and for another seat, and plays a whole hand of
classic with the table's hints against two bots, through the suite's web front."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from play_web_kit import WEB, PlaySuite, node_modules, play_suite


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaySuite]:
    with play_suite(tmp_path_factory.mktemp("play-node")) as running:
        yield running


def node_test(suite: PlaySuite, token: str, room: str) -> subprocess.CompletedProcess[str]:
    node_modules()
    env = {**suite.env, "PLAY_URL": suite.url, "PLAY_CA": str(suite.ca),
           "PLAY_TOKEN": token, "PLAY_ROOM": room}  # fmt: skip
    return subprocess.run(
        ["node", "--test", "--test-reporter=spec", str(Path("test") / "play_hand.test.mjs")],
        cwd=WEB, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_node_client_plays_a_hand_of_classic_over_grpc_web(suite: PlaySuite) -> None:
    done = node_test(suite, suite.token("player", "nora-in-node"), "classic")
    assert done.returncode == 0, done.stdout + done.stderr
    counts = dict(re.findall(r"^\S+ (pass|fail) (\d+)$", done.stdout, re.MULTILINE))
    assert counts == {"pass": "3", "fail": "0"}, done.stdout
