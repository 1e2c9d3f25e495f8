"""The local CA and the per-identity certificates (``ddz.adapters.security.certs``), and the TLS
settings that point at them (``DDZ_TLS_*``, ``DDZ_INSECURE``, ``DDZ_MAX_CONCURRENT_RPCS``)."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from ddz.adapters.runtime.stack_env import settings_env
from ddz.adapters.security.certs import IDENTITIES, ensure_certificates, suite_hosts
from ddz.adapters.security.tls_files import TlsSetupError, grpcurl_flags, read_tls_file
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS
from ddz.config.security import TlsSettings


def certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_one_certificate_per_service_and_the_operator_signed_by_the_local_ca(
    tmp_path: Path,
) -> None:
    files = ensure_certificates(tmp_path)
    assert set(IDENTITIES) == {*SERVICE_PORTS, "operator"}
    ca = certificate(files.ca_cert)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for identity in IDENTITIES:
        cert = certificate(files.cert(identity))
        cert.verify_directly_issued_by(ca)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert sans.get_values_for_type(x509.UniformResourceIdentifier) == [
            f"spiffe://ddz/{identity}"
        ]
        assert sans.get_values_for_type(x509.DNSName) == [identity, "localhost"]
        assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
        assert cert.public_key().curve.name == "secp256r1"


def test_private_keys_are_0600_and_the_ca_key_is_not_where_services_read(tmp_path: Path) -> None:
    files = ensure_certificates(tmp_path)
    assert files.ca_key == tmp_path / "keys" / "ca.key"
    assert not list(files.tls_dir.glob("ca.key"))
    for key in (files.ca_key, *(files.key(identity) for identity in IDENTITIES)):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key
    assert stat.S_IMODE(files.tls_dir.stat().st_mode) == 0o700


def test_running_it_again_keeps_every_file(tmp_path: Path) -> None:
    files = ensure_certificates(tmp_path)
    before = {path: path.read_bytes() for path in (*files.tls_dir.iterdir(), files.ca_key)}
    ensure_certificates(tmp_path)
    assert {path: path.read_bytes() for path in before} == before


def test_a_certificate_of_another_ca_or_without_its_key_is_issued_again(tmp_path: Path) -> None:
    files = ensure_certificates(tmp_path)
    other = ensure_certificates(tmp_path / "other")
    files.cert("rules").write_bytes(other.cert("rules").read_bytes())  # another CA's
    files.key("bot").unlink()
    kept = files.cert("dealer").read_bytes()
    ensure_certificates(tmp_path)
    ca = certificate(files.ca_cert)
    certificate(files.cert("rules")).verify_directly_issued_by(ca)
    assert files.key("bot").exists()
    assert files.cert("dealer").read_bytes() == kept


def test_tls_paths_default_to_the_identity_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    assert (settings.tls.identity, settings.tls.insecure) == ("operator", False)
    assert settings.tls.tls_ca_path == tmp_path / "tls" / "ca.crt"
    assert settings.tls.tls_cert_path == tmp_path / "tls" / "operator.crt"
    rules = settings.as_identity("rules")
    assert (rules.tls.tls_cert_path, rules.tls.tls_key_path) == (
        tmp_path / "tls" / "rules.crt", tmp_path / "tls" / "rules.key"
    )  # fmt: skip
    mounted = Settings.from_env({
        "DDZ_TLS_CA": "/etc/ddz/tls/ca.crt", "DDZ_TLS_CERT": "/etc/ddz/tls/tls.crt",
        "DDZ_TLS_KEY": "/etc/ddz/tls/tls.key", "DDZ_INSECURE": "1",
        "DDZ_MAX_CONCURRENT_RPCS": "50",
    }).as_identity("rules")  # fmt: skip
    assert mounted.tls.tls_cert_path == Path("/etc/ddz/tls/tls.crt")
    assert mounted.tls.tls_key_path == Path("/etc/ddz/tls/tls.key")
    assert mounted.tls.tls_ca_path == Path("/etc/ddz/tls/ca.crt")
    assert (mounted.tls.insecure, mounted.rpc.max_concurrent_rpcs) == (True, 50)
    assert Settings.from_env(settings_env(mounted)) == mounted.as_identity("operator")
    with pytest.raises(ValueError, match="DDZ_MAX_CONCURRENT_RPCS"):
        Settings.from_env({"DDZ_MAX_CONCURRENT_RPCS": "0"})
    with pytest.raises(ValueError, match="DDZ_INSECURE"):
        Settings.from_env({"DDZ_INSECURE": "maybe"})


def test_a_missing_file_says_how_to_make_it(tmp_path: Path) -> None:
    with pytest.raises(TlsSetupError, match=r"no TLS key at .*ddz init.*DDZ_INSECURE=1"):
        read_tls_file(tmp_path / "tls" / "rules.key", "key")
    (tmp_path / "junk.crt").write_text("not a certificate")
    with pytest.raises(TlsSetupError, match="not PEM"):
        read_tls_file(tmp_path / "junk.crt", "certificate")


def test_grpcurl_flags_name_the_files(tmp_path: Path) -> None:
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    tls = tmp_path / "tls"
    assert grpcurl_flags(settings.tls) == (
        f"-cacert {tls}/ca.crt -cert {tls}/operator.crt -key {tls}/operator.key"
    )
    assert grpcurl_flags(settings.tls, client_cert=False) == f"-cacert {tls}/ca.crt"
    assert grpcurl_flags(TlsSettings(insecure=True)) == "-plaintext"


def test_certificates_name_every_host_the_settings_place_a_service_on(tmp_path: Path) -> None:
    """Services on other hosts are dialled at their addresses (a health check, a player at
    the table's): ``ddz init`` with those settings issues certificates that name them, and
    issues again one made before a host was added."""
    ensure_certificates(tmp_path)
    before = certificate(tmp_path / "tls" / "table.crt")
    settings = Settings.from_env({
        "DDZ_DATA_DIR": str(tmp_path), "DDZ_HOST": "10.9.0.11",
        "DDZ_RULES_ADDR": "10.9.0.11:50052,10.9.0.12:50052", "DDZ_TABLE_ADDR": "table.example:443",
        "DDZ_BOT_ADDR": "dns:///bot:50053", "DDZ_DEALER_LISTEN": "0.0.0.0:50051",
    })  # fmt: skip
    hosts = suite_hosts(settings.network, settings.table.table_advertise)
    assert hosts == ("10.9.0.11", "10.9.0.12", "table.example")
    ensure_certificates(tmp_path, hosts=hosts)
    for identity in IDENTITIES:
        cert = certificate(tmp_path / "tls" / f"{identity}.crt")
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert sans.get_values_for_type(x509.IPAddress) == [
            ipaddress.ip_address(a) for a in ("127.0.0.1", "10.9.0.11", "10.9.0.12")
        ]
        assert sans.get_values_for_type(x509.DNSName) == [identity, "localhost", "table.example"]
    assert certificate(tmp_path / "tls" / "table.crt").serial_number != before.serial_number
    again = certificate(tmp_path / "tls" / "table.crt")
    ensure_certificates(tmp_path, hosts=hosts)  # nothing missing: kept
    assert certificate(tmp_path / "tls" / "table.crt").serial_number == again.serial_number
