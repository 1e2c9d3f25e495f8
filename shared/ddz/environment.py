"""Reading one ``DDZ_*`` variable for ``Settings.from_env``: typed, bounded, defaulted, and
refused with one ``ValueError`` that names the variable (never its value when it may be a
secret)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

N = TypeVar("N", int, float)

TRACES_EXPORTERS = ("", "none", "otlp", "console")
TRACES_PROTOCOLS = ("http/protobuf", "grpc")


def host_port_of(env: Mapping[str, str], name: str) -> str:
    """One ``host:port`` (``[::1]:50055`` for IPv6), or "" when unset."""
    raw = env.get(name, "").strip()
    if not raw:
        return ""
    host, _, port = raw.rpartition(":")
    if (
        not host
        or not port.isdigit()
        or not 1 <= int(port) <= 65535
        or any(c.isspace() or c in "@,/" for c in raw)
    ):
        raise ValueError(f"{name} must be host:port (e.g. 10.0.0.5:50055), got {raw!r}")
    return raw


def path_of(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(name, "").strip()
    return Path(raw).expanduser().resolve() if raw else None


def float_of(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


def web_port_of(env: Mapping[str, str], name: str, default: int) -> int:
    """A web server's port (``DDZ_CONSOLE_WEB_PORT``, ``DDZ_PLAY_WEB_PORT``); 0: any free one."""
    return int_of(env, name, default, low=0, high=65535)


def int_of(env: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")
    return value


def limit_of(
    env: Mapping[str, str], name: str, default: N | None, kind: Callable[[str], N]
) -> N | None:
    """A positive limit; ``0`` (or ``none``) for no limit at all."""
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("none", "unlimited"):
        return None
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(
            f"{name} must be a positive number, or 0 for no limit, got {raw!r}"
        ) from None
    if value == 0:
        return None
    if not 0 < value < float("inf"):
        raise ValueError(f"{name} must be a positive number, or 0 for no limit, got {raw!r}")
    return value


def bool_of(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, got {raw!r}")


def trace_url_of(env: Mapping[str, str]) -> str:
    url = env.get("DDZ_TRACE_URL", "").strip()
    if url and (not url.startswith(("https://", "http://")) or "{trace_id}" not in url):
        raise ValueError(
            "DDZ_TRACE_URL is an http(s) address with {trace_id} in it, such as "
            "https://grafana.example/explore?traceId={trace_id}"
        )
    return url


def traces_of(env: Mapping[str, str]) -> tuple[str, str]:
    """OpenTelemetry's own variables (not DDZ_*): the exporter ("" when unset or none:
    off) and the OTLP protocol."""
    traces_exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if traces_exporter not in TRACES_EXPORTERS:
        raise ValueError(
            f"OTEL_TRACES_EXPORTER must be one of {', '.join(TRACES_EXPORTERS)}, "
            f"got {traces_exporter!r}"
        )
    traces_protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "").strip()
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip()
        or "http/protobuf"
    ).lower()
    if traces_protocol not in TRACES_PROTOCOLS:
        raise ValueError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL must be one of {', '.join(TRACES_PROTOCOLS)}, "
            f"got {traces_protocol!r}"
        )
    return "" if traces_exporter == "none" else traces_exporter, traces_protocol
