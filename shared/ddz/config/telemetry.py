"""Logs and traces: ``DDZ_LOG_LEVEL``, ``DDZ_LOG_FORMAT``, ``DDZ_LOG_TO_FILE``, and
OpenTelemetry's own ``OTEL_TRACES_EXPORTER`` and protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ddz.environment import bool_of, traces_of

LogFormat = Literal["json", "console", "auto"]
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "console", "auto")


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    data_dir: Path = Path(".ddz")  # logs go to <data dir>/logs/
    log_level: str = "INFO"
    log_format: LogFormat = "auto"
    log_to_file: bool = False
    # Traces (ddz.adapters.telemetry.tracing; docs/OPERATIONS.md "Traces"): OpenTelemetry's
    # own variables, not DDZ_*; the SDK reads the rest (endpoint, sampler, resource) itself.
    traces_exporter: str = ""  # OTEL_TRACES_EXPORTER: "" (unset or none: off), otlp, console
    traces_protocol: str = "http/protobuf"  # OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, or grpc

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"


def telemetry_from_env(env: Mapping[str, str], data_dir: Path) -> TelemetrySettings:
    log_level = env.get("DDZ_LOG_LEVEL", "INFO").strip().upper() or "INFO"
    if log_level not in LOG_LEVELS:
        raise ValueError(f"DDZ_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {log_level!r}")
    log_format = env.get("DDZ_LOG_FORMAT", "auto").strip().lower() or "auto"
    if log_format not in LOG_FORMATS:
        raise ValueError(
            f"DDZ_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}"
        )
    traces_exporter, traces_protocol = traces_of(env)
    return TelemetrySettings(
        data_dir=data_dir,
        log_level=log_level,
        log_format=log_format,  # checked against LOG_FORMATS above
        log_to_file=bool_of(env, "DDZ_LOG_TO_FILE", False),
        traces_exporter=traces_exporter,
        traces_protocol=traces_protocol,
    )
