"""The one structlog setup of every process (services, ``ddz up``, tools).

JSON lines when stderr is not a terminal (or ``DDZ_LOG_FORMAT=json``), readable console
output otherwise; one line per event with the service name, level, UTC ISO time and
whatever the request bound with ``structlog.contextvars`` (request and hand ids), and
``trace_id``/``span_id`` when the line is logged inside a span (``ddz.adapters.telemetry.tracing``).
Libraries that log through the standard ``logging`` module (grpc, nats, alembic) are
rendered the same way. The audit key is never bound or logged anywhere.

Tracebacks never show the frames' local variables, in either format and for structlog's
own defaults too (a process that never calls ``configure_logging``, such as a test
running services in-process): locals hold keys, tokens and seeds (``verify``'s keys, a
hand's seed, the recorder's audit key), and a log line is not a safe place for them.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from ddz.adapters.telemetry.tracing import add_trace_ids
from ddz.config.telemetry import TelemetrySettings

_open_files: list[TextIO] = []


def configure_logging(
    settings: TelemetrySettings,
    *,
    service: str,
    log_file: Path | bool | None = None,
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and the standard library logging for this process.

    ``log_file``: a path, ``True`` for ``<data dir>/logs/<service>.log``, or ``None`` to
    follow ``DDZ_LOG_TO_FILE``. A log file always gets JSON lines; otherwise output
    goes to ``stream`` (default stderr).
    """
    if log_file is None:
        log_file = settings.log_to_file
    if log_file is True:
        log_file = settings.log_dir / f"{service}.log"
    for handle in _open_files:
        handle.close()
    _open_files.clear()
    if isinstance(log_file, Path):
        log_file.parent.mkdir(parents=True, exist_ok=True)
        out: TextIO = log_file.open("a", encoding="utf-8", buffering=1)
        _open_files.append(out)
    else:
        out = stream if stream is not None else sys.stderr
    as_json = settings.log_format == "json" or (
        settings.log_format == "auto" and (isinstance(log_file, Path) or not out.isatty())
    )
    level = logging.getLevelNamesMapping()[settings.log_level]

    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _ServiceName(service),
        add_trace_ids,  # trace_id, span_id inside a span (ddz.adapters.telemetry.tracing)
    ]
    renderer: Processor
    if as_json:
        shared.append(DICT_TRACEBACKS)
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = console_renderer(colors=out.isatty())

    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.WriteLoggerFactory(file=out),
        # Not cached: module-level loggers must follow a later reconfiguration (tests).
        cache_logger_on_first_use=False,
    )

    # Standard-library loggers (grpc, nats, alembic): same processors and sink, and
    # at least WARNING so their chatter does not drown the services' own lines.
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(level, logging.WARNING))


DICT_TRACEBACKS = structlog.processors.ExceptionRenderer(
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
)
"""``structlog.processors.dict_tracebacks`` without the frames' locals."""


def console_renderer(*, colors: bool) -> structlog.dev.ConsoleRenderer:
    """structlog's console renderer, its tracebacks without the frames' locals."""
    return structlog.dev.ConsoleRenderer(
        colors=colors,
        exception_formatter=structlog.dev.RichTracebackFormatter(
            color_system="truecolor" if colors else None, show_locals=False
        ),
    )


def defaults_without_locals() -> None:
    """structlog's default chain, its console renderer replaced by ``console_renderer``:
    what is printed before (or without) ``configure_logging``."""
    if structlog.is_configured():
        return
    *chain, _renderer = structlog.get_config()["processors"]
    structlog.configure(processors=[*chain, console_renderer(colors=sys.stdout.isatty())])


defaults_without_locals()


class _ServiceName:
    """Adds ``service`` to every line; kept out of contextvars, which RPCs clear."""

    def __init__(self, service: str) -> None:
        self.service = service

    def __call__(self, logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
        event_dict.setdefault("service", self.service)
        return event_dict


def get_logger(**initial: Any) -> structlog.typing.FilteringBoundLogger:
    """A bound logger; bind per-call values with ``structlog.contextvars`` instead."""
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(**initial)
    return logger
