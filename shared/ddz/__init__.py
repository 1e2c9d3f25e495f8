"""Dou Dizhu platform: the code every service shares.

``ddz.domain`` is the pure core (cards, rules, the hand, settlement; no I/O);
``ddz.adapters`` talks to the outside world (event store, NATS, gRPC);
``ddz.entrypoints`` holds the ``ddz`` command line.
"""

ENGINE_VERSION = "1"
"""Bumped whenever a rules or engine change could make an old hand replay differently."""
