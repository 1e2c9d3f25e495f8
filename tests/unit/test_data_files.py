"""The files of a data dir refused as ``BadFile`` (one line: the file, what is wrong,
what to do), where they were accepted or raised another library's error: a seat-token
key that is not one, an nkey seed with a wrong character (nkeys reads it as another
key), a login JWKS that is not JSON, the data dir where a file is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ddz.access.token_keys import (
    login_jwks_path,
    login_key,
    table_token_key,
)
from ddz.adapters.files.data_files import BadFile, ensure_dir
from ddz.adapters.messaging import nats_auth
from ddz.config import Settings


def settings_in(data_dir: Path) -> Settings:
    return Settings.from_env({"DDZ_DATA_DIR": str(data_dir)})


@pytest.mark.parametrize("text", ["", "secret", "g" * 64, "ab" * 16, "ab" * 33])
def test_a_seat_token_key_that_is_not_one_is_refused_and_kept(tmp_path: Path, text: str) -> None:
    settings = settings_in(tmp_path)
    made = table_token_key(settings.keys)
    assert len(made) == 64 and int(made, 16) >= 0  # what it makes: 64 hex digits
    path = tmp_path / "keys" / "table-token.key"
    path.write_text(text)
    with pytest.raises(BadFile) as refused:
        table_token_key(settings.keys)
    assert str(refused.value).startswith(f"{path}: not a seat-token key")
    assert "ddz init" in str(refused.value)
    assert path.read_text() == text


def test_an_nkey_seed_with_one_wrong_character_is_refused(tmp_path: Path) -> None:
    public = nats_auth.ensure_seed(tmp_path, "bot")
    path = nats_auth.seed_path(tmp_path, "bot")
    seed = path.read_bytes().strip()
    assert nats_auth.ensure_seed(tmp_path, "bot") == public
    position = len(seed) // 2
    changed = b"A" if seed[position : position + 1] != b"A" else b"B"
    path.write_bytes(seed[:position] + changed + seed[position + 1 :] + b"\n")
    with pytest.raises(BadFile, match="not a NATS user nkey seed"):
        nats_auth.ensure_seed(tmp_path, "bot")


def test_a_login_jwks_that_is_not_json_is_named(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    login_key(settings.keys)
    path = login_jwks_path(settings.keys)
    assert json.loads(path.read_text())["keys"]
    path.write_text('{"keys": [')
    with pytest.raises(BadFile) as refused:
        login_key(settings.keys)
    assert str(refused.value).startswith(f"{path}: not a JWKS")
    assert path.read_text() == '{"keys": ['


def test_a_data_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("mine")
    with pytest.raises(BadFile, match="the data dir is not a directory; point DDZ_DATA_DIR"):
        ensure_dir(blocker)
    with pytest.raises(BadFile, match="a file where a directory belongs"):
        ensure_dir(blocker / "ddz")
    assert blocker.read_text() == "mine"
