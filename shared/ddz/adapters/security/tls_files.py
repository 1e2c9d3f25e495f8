"""A process's own TLS files, read as gRPC takes them: the PEM bytes of its CA,
certificate and key, and the same files as ``grpcurl`` flags. Making them is
``certs.ensure_certificates``'s; reading them needs no X.509 library, so a service
starts without loading one."""

from __future__ import annotations

from pathlib import Path

from ddz.config.security import TlsSettings


class TlsSetupError(ValueError):
    """A TLS file a process needs is missing or unreadable (the message says how to
    make it); a ``ValueError``, so the CLI and the service runner print one line."""


def read_tls_file(path: Path, what: str) -> bytes:
    """The PEM bytes of one of this process's TLS files (``what``: certificate, key, CA)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TlsSetupError(
            f"no TLS {what} at {path}: run `ddz init` (or `ddz up`) with this DDZ_DATA_DIR, "
            "set DDZ_TLS_CA/DDZ_TLS_CERT/DDZ_TLS_KEY, or DDZ_INSECURE=1 for plaintext "
            "local development"
        ) from None
    except OSError as exc:
        raise TlsSetupError(f"cannot read the TLS {what} at {path}: {exc.strerror}") from None
    if b"-----BEGIN " not in data:
        raise TlsSetupError(f"the TLS {what} at {path} is not PEM")
    return data


def grpcurl_flags(settings: TlsSettings, *, client_cert: bool = True) -> str:
    """``grpcurl``'s TLS flags for this process's files: the CA and, with
    ``client_cert``, its certificate (the tools': the operator's); ``-plaintext`` under
    ``DDZ_INSECURE``."""
    if settings.insecure:
        return "-plaintext"
    flags = f"-cacert {settings.tls_ca_path}"
    if client_cert:
        flags += f" -cert {settings.tls_cert_path} -key {settings.tls_key_path}"
    return flags
