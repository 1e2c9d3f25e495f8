"""The console's and the play front's own settings (their ports are the network's):
``DDZ_CONSOLE_SESSION_TTL``, ``DDZ_TRACE_URL``, ``DDZ_PLAY_GUESTS``; and how ``ddz up``
supervises its children (``DDZ_RESTART_*``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ddz.environment import bool_of, float_of, int_of, trace_url_of

CONSOLE_SESSION_TTL = 30 * 60.0
"""Seconds a console session lasts after sign-in (``DDZ_CONSOLE_SESSION_TTL``)."""


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    """The dispute desk (services/console; docs/OPERATIONS.md "The dispute desk")."""

    console_session_ttl: float = CONSOLE_SESSION_TTL  # DDZ_CONSOLE_SESSION_TTL
    # DDZ_TRACE_URL: a trace's page in the operator's tracing UI, "{trace_id}" in it; the
    # desk links each event's trace id there (blank: the id is shown as text)
    trace_url: str = ""


def console_from_env(env: Mapping[str, str]) -> ConsoleSettings:
    return ConsoleSettings(
        console_session_ttl=float_of(env, "DDZ_CONSOLE_SESSION_TTL", CONSOLE_SESSION_TTL),
        trace_url=trace_url_of(env),
    )


@dataclass(frozen=True, slots=True)
class PlaySettings:
    play_guests: bool = False  # DDZ_PLAY_GUESTS: the page may make guests' player tokens


def play_from_env(env: Mapping[str, str]) -> PlaySettings:
    return PlaySettings(play_guests=bool_of(env, "DDZ_PLAY_GUESTS", False))


@dataclass(frozen=True, slots=True)
class SupervisionSettings:
    restart_limit: int = 5  # restarts of one child `ddz up` allows in restart_window
    restart_window: float = 60.0  # seconds; one more exit in it is a crash loop


def supervision_from_env(env: Mapping[str, str]) -> SupervisionSettings:
    return SupervisionSettings(
        restart_limit=int_of(env, "DDZ_RESTART_LIMIT", 5, low=0, high=1000),
        restart_window=float_of(env, "DDZ_RESTART_WINDOW", 60.0),
    )
