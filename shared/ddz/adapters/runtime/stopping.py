"""A request to stop that the stack and its supervisor both look at."""

from __future__ import annotations

import time
from typing import Protocol


class Stop(Protocol):
    """A request to stop that the stack and the supervisor look at (a
    ``threading.Event`` is one; so is ``SignalStop``)."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float) -> bool: ...


class SignalStop:
    """A stop that a signal handler sets. ``threading.Event.set`` takes the event's lock,
    which the main thread the signal interrupted may be holding inside ``wait``: the
    handler would wait for it forever. Setting this takes no lock."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        """Sleep ``timeout`` seconds, or less once set; True when set."""
        deadline = time.monotonic() + timeout
        while not self._set and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))
        return self._set
