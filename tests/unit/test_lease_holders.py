"""Whose lease may be taken at once (``lease.holder_is_gone``): a holder of this host whose
process no longer runs, or an earlier run of this process's pid; never a live process,
a lease this process holds, or a holder on another host."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from ddz.adapters.messaging.lease import _HOLDERS_HERE, holder_is_gone, instance_id

HOST = socket.gethostname()


def test_a_holder_whose_process_has_ended_is_gone() -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert holder_is_gone(f"recorder-{HOST}-{int(ended.stdout)}-a1b2c3".encode())
    assert holder_is_gone(f"table-{HOST}-{int(ended.stdout)}-a1b2c3@127.0.0.1:50055".encode())


def test_a_live_process_is_not_gone() -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as child:
        try:
            assert not holder_is_gone(f"recorder-{HOST}-{child.pid}-a1b2c3".encode())
        finally:
            child.kill()


def test_this_process_is_gone_only_as_an_earlier_run() -> None:
    earlier = f"bot-{HOST}-{os.getpid()}-ffffff"
    assert earlier not in _HOLDERS_HERE
    assert holder_is_gone(earlier.encode())  # same pid, not a lease of ours: a run before
    ours = instance_id("bot")
    _HOLDERS_HERE.add(ours)
    try:
        assert not holder_is_gone(ours.encode())
    finally:
        _HOLDERS_HERE.discard(ours)


def test_a_holder_on_another_host_or_unreadable_is_never_judged() -> None:
    assert not holder_is_gone(b"recorder-some-other-host-1-a1b2c3")
    assert not holder_is_gone(b"recorder")
    assert not holder_is_gone(b"")
    assert not holder_is_gone(f"recorder-{HOST}-notapid-a1b2c3".encode())
