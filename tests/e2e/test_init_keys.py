"""``ddz init`` makes every key an audit needs, and says so (docs/CLI.md "ddz init"): the
producers' event signing keys and the recorder's audit signing key, each with the public
keyring that ``ddz keys export`` then publishes, so an operator who starts services one
by one can hand auditors the keyring before the first hand."""

from __future__ import annotations

import json
from pathlib import Path

from cli_kit import ddz


def test_init_makes_the_event_keys_and_the_audit_signing_key_and_names_them(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    done = ddz(data, "init")
    assert done.returncode == 0, done.stderr
    keys = data / "keys"
    for producer in ("dealer", "rules", "table"):
        assert (keys / "events" / f"{producer}.key").is_file(), producer
    assert (keys / "audit-signing.key").is_file()
    assert (keys / "audit-signing.key").stat().st_mode & 0o077 == 0  # private: 0600
    assert f"{keys / 'events' / '{dealer,rules,table}.key'}" in done.stdout
    assert f"(public: {keys / 'event-keyring.json'})" in done.stdout
    assert f"{keys / 'audit-signing.key'}  (public: {keys / 'audit-public.json'})" in done.stdout
    help_text = ddz(data, "init", "--help").stdout
    assert "event signing keys" in help_text and "audit signing key" in help_text

    exported = ddz(data, "keys", "export")
    assert exported.returncode == 0, exported.stderr
    published = json.loads(exported.stdout)["keys"]
    assert sorted((k["use"], k["producer"]) for k in published) == [
        ("event", "dealer"), ("event", "rules"), ("event", "table"), ("head", None),
    ]  # fmt: skip
