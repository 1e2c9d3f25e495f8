"""A real suite with the players' web front, as ``ddz up`` starts it (on free ports),
for the page's and the gRPC-Web client's tests; player tokens from the real CLI; signing
in on the page, and its screenshots (``DDZ_PLAY_SCREENSHOTS=<dir>``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.runtime.stack_env import settings_env
from ddz.entrypoints.up_cmd import play_url
from playwright.sync_api import Page, expect

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run",
]  # fmt: skip
WEB = ROOT / "web"


@dataclass
class PlaySuite:
    stack: Stack
    url: str
    env: dict[str, str]

    @property
    def ca(self) -> Path:
        return self.stack.settings.tls.tls_ca_path

    def token(self, kind: str, name: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "token", kind, name],
            env=self.env, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return done.stdout.strip()


@contextmanager
def play_suite(data_dir: Path, env: Mapping[str, str] = {}) -> Iterator[PlaySuite]:
    """The whole suite in ``data_dir``; ``env`` adds ``DDZ_*`` settings. The stack runs
    its asyncio in a thread of its own (Playwright's sync API holds this one's loop)."""
    from ddz.config import Settings

    settings = Settings.from_env({"DDZ_DATA_DIR": str(data_dir), **env})
    stack = Stack(settings, ephemeral_ports=True, nats_port=0)
    with ThreadPoolExecutor(1) as worker:
        worker.submit(stack.start).result()
        try:
            full_env = {**os.environ, **settings_env(stack.settings)}
            yield PlaySuite(stack, play_url(stack.settings), full_env)
        finally:
            worker.submit(stack.stop).result()


def node_modules() -> Path:
    """``web/node_modules`` (``npm ci`` when missing). Without Node.js the test skips,
    except in CI (``CI=true``), where it fails: a skipped protocol test is no test."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node and npm are needed for the gRPC-Web client test")
        pytest.skip("node and npm are not installed")
    modules = WEB / "node_modules"
    if not (modules / "@connectrpc" / "connect-node").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=WEB, check=True,
                       timeout=600)  # fmt: skip
    return modules


def sign_in(page: Page, suite: PlaySuite, name: str) -> None:
    page.goto(suite.url)
    page.get_by_label("Player token").fill(suite.token("player", name))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Pick a room")).to_be_visible()


def shoot(page: Page, name: str) -> None:
    directory = os.environ.get("DDZ_PLAY_SCREENSHOTS")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(directory) / f"play-{name}.png"), full_page=True)
