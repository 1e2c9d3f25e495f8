"""``DDZ_NATS_SYNC`` reaches the nats-server ``ddz up`` starts: its JetStream files synced
to disk on every write ("always"), at an interval, or at the server's default (every two
minutes), as the server itself reports it (``/varz``). What each costs a hand is in
docs/BENCHMARKS.md ("JetStream sync policy")."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from ddz.adapters.messaging import nats_auth
from ddz.adapters.runtime.nats_server import free_port, start_nats_server
from ddz.config import Settings

TWO_MINUTES_NS = 120 * 10**9


@pytest.mark.parametrize(
    ("setting", "always", "interval_ns"),
    [("", False, TWO_MINUTES_NS), ("always", True, None), ("250ms", False, 250 * 10**6)],
)
def test_the_stack_servers_sync_policy_is_the_setting(
    tmp_path: Path, setting: str, always: bool, interval_ns: int | None
) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path), "DDZ_NATS_SYNC": setting})
    config = nats_auth.write_config(settings.data_dir, sync_interval=settings.bus.nats_sync)
    monitor = free_port("127.0.0.1")
    with config.open("a", encoding="utf-8") as more:
        more.write(f"http_port: {monitor}\n")  # to read the policy back, as an operator can
    server = start_nats_server(tmp_path / "store", port=0, config_file=config)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/varz", timeout=10) as answer:
            jetstream = json.load(answer)["jetstream"]["config"]
    finally:
        server.stop()
    assert bool(jetstream.get("sync_always")) is always
    if interval_ns is not None:
        assert jetstream["sync_interval"] == interval_ns


@pytest.mark.parametrize("bad", ["never", "0s", "1 s", "fast"])
def test_a_sync_policy_the_server_does_not_know_is_refused_at_start(bad: str) -> None:
    with pytest.raises(ValueError, match="DDZ_NATS_SYNC"):
        Settings.from_env({"DDZ_NATS_SYNC": bad})
