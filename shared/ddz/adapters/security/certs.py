"""A local certificate authority and one certificate per identity, for gRPC over TLS.

``ensure_certificates(data_dir)`` (``ddz up``, ``ddz init``, the tests) makes what is
missing and keeps what is there:

- ``<data dir>/keys/ca.key``: the CA's private key (EC P-256, 0600). Not in ``tls/``:
  the services read ``tls/``, and none of them needs to sign a certificate.
- ``<data dir>/tls/ca.crt``: the CA certificate every process trusts (``DDZ_TLS_CA``).
- ``<data dir>/tls/<identity>.crt`` and ``.key`` (0600) for each service and for
  ``operator`` (the project's tools). A certificate's identity is its URI SAN
  ``spiffe://ddz/<identity>``; its DNS SANs are the identity and ``localhost``, its IP
  SAN 127.0.0.1, so a client that dials a service by name or on loopback can check it;
  plus every host the settings place a service on (``suite_hosts``: ``DDZ_HOST``, the
  hosts of ``DDZ_<NAME>_ADDR``, ``DDZ_<NAME>_LISTEN`` and ``DDZ_TABLE_ADVERTISE``), so a
  client that dials one by its address (a health check, a player at the table's) can
  check it too. A certificate that lacks one of them is issued again.

A certificate is issued again when it is missing, no longer signed by the CA, or
expires within ``RENEW_BEFORE``; removing a file and running ``ddz init`` rotates it.
EC P-256 because every TLS stack gRPC builds on (BoringSSL, OpenSSL) takes it.
"""

from __future__ import annotations

import datetime
import fcntl
import ipaddress
import os
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ddz.adapters.files.data_files import REMAKE, BadFile, ensure_dir, read_bytes
from ddz.config.network import SERVICE_PORTS, NetworkSettings
from ddz.config.security import OPERATOR, SPIFFE_PREFIX, TLS_DIR

IDENTITIES: tuple[str, ...] = (*SERVICE_PORTS, OPERATOR)
"""Everyone that gets a certificate: the six services and the operator's tools."""
CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"  # under <data dir>/keys/, beside the other private keys
KEYS_DIR = "keys"
LOCK_FILE = ".certs.lock"
CA_DAYS = 3650
LEAF_DAYS = 365
RENEW_BEFORE = datetime.timedelta(days=30)


class CertificateError(BadFile):
    """A certificate or key file that is there but is not what it should be: refused,
    never issued again over it (a CA key is the only copy of the local CA)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(path, problem, REMAKE)


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """Where ``ensure_certificates`` keeps the CA and each identity's files."""

    data_dir: Path

    @property
    def tls_dir(self) -> Path:
        return self.data_dir / TLS_DIR

    @property
    def ca_cert(self) -> Path:
        return self.tls_dir / CA_CERT_FILE

    @property
    def ca_key(self) -> Path:
        return self.data_dir / KEYS_DIR / CA_KEY_FILE

    def cert(self, identity: str) -> Path:
        return self.tls_dir / f"{identity}.crt"

    def key(self, identity: str) -> Path:
        return self.tls_dir / f"{identity}.key"


def spiffe_id(identity: str) -> str:
    return f"{SPIFFE_PREFIX}{identity}"


def suite_hosts(network: NetworkSettings, table_advertise: str = "") -> tuple[str, ...]:
    """The hosts (addresses or names) the settings place the suite's services on
    (``network``, and ``TableSettings.table_advertise``), other than loopback and
    wildcards: what its certificates must name besides 127.0.0.1."""
    targets = [network.host, table_advertise, *network.listen.values()]
    for target in network.addresses.values():
        targets += target.split(",")
    found: list[str] = []
    for target in targets:
        target = target.strip()
        if not target or "://" in target:  # dns:///name:port: a name, not one host
            continue
        host = target.rsplit(":", 1)[0] if target.count(":") == 1 or "]" in target else target
        host = host.strip("[]")
        if host and host not in _SELF and host not in found:
            found.append(host)
    return tuple(found)


_SELF = frozenset({"127.0.0.1", "localhost", "0.0.0.0", "::", "::1"})


def ensure_certificates(
    data_dir: Path, identities: Iterable[str] = IDENTITIES, hosts: Iterable[str] = ()
) -> TlsFiles:
    """The CA and a certificate for each of ``identities`` under ``data_dir``, made
    when missing (or about to expire, or from another CA, or not naming one of
    ``hosts``, ``suite_hosts``); existing ones are kept."""
    files = TlsFiles(data_dir)
    for directory in (files.tls_dir, files.ca_key.parent):
        ensure_dir(directory, "directory of the TLS files", mode=0o700)
    # One maker at a time: two processes starting on a fresh data dir make one CA.
    with open(files.ca_key.parent / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ca_key, ca_cert = _ensure_ca(files)
        extra = [_san(host) for host in hosts]
        for identity in identities:
            _ensure_leaf(files, identity, ca_key, ca_cert, extra)
    return files


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _ensure_ca(files: TlsFiles) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    if files.ca_key.exists() and files.ca_cert.exists():
        key = _load_key(files.ca_key)
        cert = _load_cert(files.ca_cert)
        if cert.public_key() == key.public_key() and not _expiring(cert):
            return key, cert
        # A CA about to expire (or whose key was replaced): a new one, and new leaves.
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name("ddz local CA")
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _replace(files.ca_key, _key_pem(key))
    _replace(files.ca_cert, cert.public_bytes(serialization.Encoding.PEM), mode=0o644)
    return key, cert


def _ensure_leaf(
    files: TlsFiles,
    identity: str,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    extra: Sequence[x509.GeneralName] = (),
) -> None:
    cert_path, key_path = files.cert(identity), files.key(identity)
    if cert_path.exists() and key_path.exists():
        cert = _load_cert(cert_path)
        if (
            _signed_by(cert, ca_cert)
            and not _expiring(cert)
            and cert.public_key() == _load_key(key_path).public_key()
            and set(extra) <= set(_sans(cert))
        ):
            return
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    sans: list[x509.GeneralName] = [
        x509.UniformResourceIdentifier(spiffe_id(identity)),
        x509.DNSName(identity),
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    sans += [name for name in extra if name not in sans]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(identity))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(min(now + datetime.timedelta(days=LEAF_DAYS), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    # The key first: a reader that finds the new certificate finds its key too.
    _replace(key_path, _key_pem(key))
    _replace(cert_path, cert.public_bytes(serialization.Encoding.PEM), mode=0o644)


def _sans(cert: x509.Certificate) -> list[x509.GeneralName]:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return list(ext.value)


def _name(common_name: str) -> x509.Name:
    return x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "ddz"),
        x509.NameAttribute(NameOID.COMMON_NAME, common_name),
    ])  # fmt: skip


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not ca, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
        encipher_only=False, decipher_only=False,
    )  # fmt: skip


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _expiring(cert: x509.Certificate) -> bool:
    return cert.not_valid_after_utc - _now() < RENEW_BEFORE


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    data = read_bytes(path, "TLS private key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise CertificateError(path, "not a PEM private key") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertificateError(path, "not an EC private key")
    return key


def _load_cert(path: Path) -> x509.Certificate:
    data = read_bytes(path, "TLS certificate")
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError:
        raise CertificateError(path, "not a PEM certificate") from None


def _replace(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``path`` whole (a temporary file renamed over it), ``mode`` from the start."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
