"""Every file of a data dir made by ``ddz init``, damaged as an operator's disk, editor
or copy damages it, and the data dir itself where it cannot be used: the real ``ddz``
command (a subprocess) answers with one line ``ddz: error: <the file>: <what is wrong>;
<what to do>``, exit code 2, no traceback, and writes nothing over the damaged file.

Damages: corrupted (garbage in the middle), truncated (its first half), empty, a
directory where the file belongs, and unreadable (mode 000, the command run as
``nobody``: root reads any file, so a permission test run as root could not fail). The
files: the CA's key and certificate, a service's certificate and key, a NATS nkey seed,
the login key and its JWKS, the table's seat-token key, an event signing key and the
event keyring (``ddz init``); the store and the rooms file (``ddz up``, the rooms file
refused by the table service the stack starts); ``stack.json`` (``ddz simulate``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ddz.adapters.runtime.stack_env import settings_env, with_free_ports
from ddz.adapters.store import upgrade_store
from ddz.config import Settings

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
TIMEOUT = 90  # bound on one command (never a timed assertion)
ROOMS = """
opening_balance = 10000

[[rooms]]
id = "classic"
variant = "classic"
"""


def corrupted(path: Path) -> None:
    data = path.read_bytes()
    middle = len(data) // 2
    path.write_bytes(data[: middle - 8] + b"\x00\xff{not-a-key}\xfe\x00" + data[middle + 8 :])


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def empty(path: Path) -> None:
    path.write_bytes(b"")


def directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def unreadable(path: Path) -> None:
    path.chmod(0)


DAMAGES: dict[str, Callable[[Path], None]] = {
    "corrupted": corrupted,
    "truncated": truncated,
    "empty": empty,
    "directory": directory,
    "unreadable": unreadable,
}

INIT_FILES = (
    "keys/ca.key",
    "tls/ca.crt",
    "tls/table.crt",
    "tls/settlement.key",
    "nats/settlement.nk",
    "keys/login.key",
    "keys/login.jwks.json",
    "keys/table-token.key",
    "keys/events/dealer.key",
    "keys/event-keyring.json",
)
# A bounded set for every run (each file, each damage at least once); the whole matrix
# with ``-m slow``.
QUICK = {
    ("keys/ca.key", "corrupted"), ("tls/ca.crt", "truncated"), ("tls/table.crt", "empty"),
    ("tls/settlement.key", "directory"), ("nats/settlement.nk", "corrupted"),
    ("nats/settlement.nk", "unreadable"), ("keys/login.key", "truncated"),
    ("keys/login.jwks.json", "corrupted"), ("keys/login.jwks.json", "empty"),
    ("keys/table-token.key", "corrupted"), ("keys/table-token.key", "truncated"),
    ("keys/events/dealer.key", "unreadable"), ("keys/event-keyring.json", "directory"),
}  # fmt: skip


def cases(files: tuple[str, ...], damages: tuple[str, ...]) -> list[object]:
    return [
        pytest.param(name, damage, id=f"{name}-{damage}",
                     marks=() if (name, damage) in QUICK else pytest.mark.slow)
        for name in files for damage in damages
    ]  # fmt: skip


@dataclass(frozen=True)
class Seen:
    """A file's bytes (or a directory's listing) and its mtime, to compare after."""

    content: bytes | tuple[str, ...]
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> Seen:
        content = tuple(sorted(os.listdir(path))) if path.is_dir() else path.read_bytes()
        return cls(content, path.stat().st_mtime_ns)


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    """A directory ``nobody`` may enter (pytest's own are root's, 0700)."""
    path = Path(tempfile.mkdtemp(prefix="ddz-bad-files-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def pristine(base: Path) -> Path:
    """A data dir as ``ddz init`` makes it, with a store migrated to the current schema."""
    data_dir = base / "pristine"
    done = ddz(["init"], data_dir)
    assert done.returncode == 0, done.stderr
    store = data_dir / "ddz.sqlite3"
    upgrade_store(Settings.from_env({"DDZ_DATA_DIR": str(data_dir)}).store.database_url)
    with contextlib.closing(sqlite3.connect(store)) as connection:  # all of it in the file
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert store.stat().st_size > 4096 and not store.with_name("ddz.sqlite3-wal").exists()
    (data_dir / "rooms.toml").write_text(ROOMS, encoding="utf-8")
    return data_dir


def fresh(pristine: Path, base: Path, name: str) -> Path:
    data_dir = base / name.replace("/", "-")
    shutil.rmtree(data_dir, ignore_errors=True)
    shutil.copytree(pristine, data_dir)
    return data_dir


def ddz(
    args: list[str], data_dir: Path, *, as_nobody: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    environment.update(env or {"DDZ_DATA_DIR": str(data_dir)})
    command = [sys.executable, "-m", "ddz.entrypoints.cli", *args]
    with subprocess.Popen(
        NOBODY + command if as_nobody else command, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=environment, cwd="/",
    ) as process:  # fmt: skip
        try:
            stdout, stderr = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:  # it started where it should have refused:
            process.terminate()  # ``ddz up`` stops what it started on SIGTERM
            stdout, stderr = process.communicate(timeout=TIMEOUT)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def assert_one_line(done: subprocess.CompletedProcess[str], *named: str) -> str:
    """Exit 2, one ``ddz: error:`` line naming ``named``, last on stderr; before it at
    most the command's own progress lines (``ddz: starting ...``), never a log tail."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, f"exit {done.returncode}: {done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-3000:]
    errors = [line for line in lines if line.startswith("ddz: error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], done.stderr[-3000:]
    assert all(line.startswith("ddz: ") for line in lines), done.stderr[-3000:]
    for text in named:
        assert text in errors[0], errors[0]
    assert "; " in errors[0], f"no advice: {errors[0]}"  # what is wrong; what to do
    return errors[0]


def damage(data_dir: Path, name: str, how: str) -> tuple[Path, Seen]:
    path = data_dir / name
    DAMAGES[how](path)
    if how == "unreadable":
        subprocess.run(["chown", "-R", "nobody:nogroup", str(data_dir)], check=True)
    return path, Seen.of(path)


@pytest.mark.parametrize(("name", "how"), cases(INIT_FILES, tuple(DAMAGES)))
def test_ddz_init_refuses_a_damaged_file_in_one_line(
    pristine: Path, base: Path, name: str, how: str
) -> None:
    data_dir = fresh(pristine, base, f"init-{name}-{how}")
    path, before = damage(data_dir, name, how)
    done = ddz(["init"], data_dir, as_nobody=how == "unreadable")
    assert_one_line(done, str(path))
    assert Seen.of(path) == before, f"{path} was written over"


@pytest.mark.parametrize(
    ("name", "how"),
    [pytest.param("ddz.sqlite3", "corrupted", id="store-corrupted"),
     pytest.param("ddz.sqlite3", "directory", id="store-directory", marks=pytest.mark.slow),
     pytest.param("ddz.sqlite3", "schema", id="store-wrong-schema"),
     pytest.param("ddz.sqlite3", "truncated", id="store-truncated", marks=pytest.mark.slow),
     pytest.param("ddz.sqlite3", "unreadable", id="store-unreadable", marks=pytest.mark.slow)],
)  # fmt: skip
def test_ddz_up_refuses_a_store_it_cannot_use_in_one_line(
    pristine: Path, base: Path, name: str, how: str
) -> None:
    data_dir = fresh(pristine, base, f"up-{how}")
    path = data_dir / name
    if how == "schema":  # a SQLite file, of something else than a ddz event store
        path.unlink()
        with sqlite3.connect(path) as other:
            other.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
            other.execute("INSERT INTO alembic_version VALUES ('not-a-ddz-revision')")
        before = Seen.of(path)
    else:
        path, before = damage(data_dir, name, how)
    done = ddz(["up", "--nats-port", "0"], data_dir, as_nobody=how == "unreadable")
    assert_one_line(done, str(path))
    assert Seen.of(path) == before, f"{path} was written over"


@pytest.mark.parametrize("how", ["corrupted", pytest.param("directory", marks=pytest.mark.slow)])
def test_a_service_that_refuses_its_rooms_file_is_one_line_of_ddz_up(
    pristine: Path, base: Path, how: str
) -> None:
    """The table service reads the rooms file: it exits 2 with one line, which ``ddz up``
    shows as its own (not the service's log tail)."""
    data_dir = fresh(pristine, base, f"rooms-{how}")
    path, before = damage(data_dir, "rooms.toml", how)
    settings = with_free_ports(
        Settings.from_env({"DDZ_DATA_DIR": str(data_dir), "DDZ_ROOMS_FILE": str(path)})
    )
    done = ddz(["up", "--nats-port", "0"], data_dir, env=settings_env(settings))
    line = assert_one_line(done, str(path), "table: rooms file")
    assert "table.log" in line  # where to read more
    assert Seen.of(path) == before, f"{path} was written over"


@pytest.mark.parametrize(
    "how", ["corrupted", *(pytest.param(h, marks=pytest.mark.slow) for h in ("empty", "directory"))]
)
def test_a_tool_refuses_a_stack_json_it_cannot_read(pristine: Path, base: Path, how: str) -> None:
    data_dir = fresh(pristine, base, f"stack-json-{how}")
    (data_dir / "stack.json").write_text('{"version": 1, "pid": 1, "addresses": {}}\n')
    path, before = damage(data_dir, "stack.json", how)
    done = ddz(["simulate", "--hands", "1"], data_dir)
    assert_one_line(done, str(path))
    assert Seen.of(path) == before, f"{path} was written over"


QUICK_DATA_DIRS = {("init", "a-file"), ("init", "under-a-file"), ("init", "unwritable"),
                   ("up", "a-file"), ("demo", "unwritable")}  # fmt: skip


@pytest.mark.parametrize(
    ("command", "how"),
    [pytest.param(command, how, id=f"{command[0]}-{how}",
                  marks=() if (command[0], how) in QUICK_DATA_DIRS else pytest.mark.slow)
     for command in (["init"], ["up", "--nats-port", "0"], ["demo"])
     for how in ("a-file", "under-a-file", "unwritable")],
)  # fmt: skip
def test_a_data_dir_that_cannot_be_used_is_one_line(
    base: Path, command: list[str], how: str
) -> None:
    place = base / f"data-dir-{command[0]}-{how}"
    shutil.rmtree(place, ignore_errors=True)
    place.mkdir()
    place.chmod(0o755)
    blocker = place / "blocker"
    blocker.write_text("an operator's file\n")
    data_dir = {"a-file": blocker, "under-a-file": blocker / "ddz", "unwritable": place}[how]
    before = Seen.of(place)
    done = ddz(command, data_dir, as_nobody=how == "unwritable")
    assert_one_line(done, str(data_dir if how != "under-a-file" else blocker))
    assert Seen.of(place) == before and blocker.read_text() == "an operator's file\n"
