"""The files of a data dir as a person meets them: one error type, ``BadFile``, for a
file (or the data dir itself) that is there but cannot be used.

Its message is one line: the path, what is wrong with it, what to do. It is a
``ValueError``, so the ``ddz`` command line and a service's ``main`` print it as one
line ``ddz: error: ...`` and exit 2, never a traceback. ``read_bytes`` and
``ensure_dir`` turn the operating system's refusals (not readable, a directory where a
file belongs, a file where a directory belongs) into one; each reader of a file checks
what it reads and refuses with ``BadFile`` what is not of its kind, rather than
writing over it: the file may be the only copy of a key.
"""

from __future__ import annotations

import os
from pathlib import Path

REMAKE = "remove it and run `ddz init` to make a new one"
"""What to do about a broken file that ``ddz init`` (or ``ddz up``) makes when missing."""


class BadFile(ValueError):
    """A file or directory that is there but cannot be used: ``path``, what is wrong
    with it (``problem``) and what to do (``fix``), in one line."""

    def __init__(self, path: Path | str, problem: str, fix: str) -> None:
        super().__init__(f"{path}: {problem}; {fix}")
        self.path = Path(path)
        self.problem = problem
        self.fix = fix


def os_problem(exc: OSError) -> str:
    """What an ``OSError`` on a path says, in words (no errno, no repr)."""
    if isinstance(exc, IsADirectoryError):
        return "a directory where a file belongs"
    if isinstance(exc, NotADirectoryError):
        return "a file where a directory belongs (or on its path)"
    if isinstance(exc, PermissionError):
        return "not allowed (permission denied)"
    return (exc.strerror or type(exc).__name__).lower()


def os_fix(exc: OSError, fix: str) -> str:
    """``fix``, or for a permission refusal what makes the file usable instead."""
    if isinstance(exc, PermissionError):
        return "run ddz as the user who owns it, or give this user access to it"
    return fix


def read_bytes(path: Path, what: str, fix: str = REMAKE) -> bytes:
    """The bytes of ``path`` (``FileNotFoundError`` when missing, for the caller to
    make it); any other refusal is a ``BadFile`` naming ``what`` the file is."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BadFile(
            path, f"cannot read the {what}: {os_problem(exc)}", os_fix(exc, fix)
        ) from None


def ensure_dir(
    path: Path, what: str = "data dir", *, mode: int = 0o777, setting: str = "DDZ_DATA_DIR"
) -> Path:
    """``path`` as a directory this process may write in (made with ``mode``, and its
    parents, when missing), else a ``BadFile`` saying why and which ``setting`` moves it."""
    fix = f"point {setting} at a directory you may write in"
    try:
        path.mkdir(mode=mode, parents=True, exist_ok=True)
    except FileExistsError:
        raise BadFile(path, f"the {what} is not a directory", fix) from None
    except OSError as exc:
        raise BadFile(path, f"cannot make the {what}: {os_problem(exc)}", fix) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise BadFile(path, f"cannot write in the {what} (permission denied)", fix)
    return path


def file_error(exc: OSError) -> BadFile | None:
    """The ``BadFile`` of an ``OSError`` that names a file (None when it names none: a
    refused connection is not a file's fault)."""
    if exc.filename is None:
        return None
    return BadFile(exc.filename, os_problem(exc), os_fix(exc, "check the path and what is there"))
