"""The NATS users ``ddz up`` makes (``nats_auth``): who may publish and read what, and
which credentials a process connects with."""

from __future__ import annotations

import dataclasses
import stat
from pathlib import Path

import nkeys
import pytest
from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.nats_auth import PROVISION, ROLES, connect_options, permissions
from ddz.adapters.runtime.stack_env import settings_env
from ddz.config import Settings


def allowed(name: str, kind: str) -> list[str]:
    return permissions(name)[kind]["allow"]


def test_only_the_dealer_and_rules_publish_hand_events() -> None:
    publishers = {name for name in ROLES if "ddz.v1.hand.>" in allowed(name, "publish")}
    internal = {name for name in ROLES if "ddz.v1.internal.hand.>" in allowed(name, "publish")}
    assert publishers == internal == {"dealer", "rules"}
    assert {name for name in ROLES if "ddz.v1.table.>" in allowed(name, "publish")} == {"table"}
    for name in ("settlement", "recorder"):  # they only consume
        assert not [s for s in allowed(name, "publish") if s.startswith("ddz.")]


def test_only_the_services_that_see_cards_subscribe_to_internal_events() -> None:
    readers = {name for name in ROLES if "ddz.v1.internal.>" in allowed(name, "subscribe")}
    # and the operator's tools, which read whole hands (as ``ddz audit`` reads the store)
    assert readers == {"rules", "bot", "table", "recorder", nats_auth.TOOLS}


def test_only_a_user_that_sees_the_cards_may_get_stored_messages() -> None:
    """``STREAM.MSG.GET`` names its subject in the body, where no permission looks."""
    getters = {name for name in ROLES if "$JS.API.STREAM.MSG.GET.DDZ" in allowed(name, "publish")}
    assert getters == {"dealer", "rules", "bot", "table", nats_auth.TOOLS}
    assert all(nats_auth.sees_cards(name) for name in getters)
    assert not nats_auth.sees_cards("settlement")
    direct = [s for s in allowed("settlement", "publish") if "DIRECT.GET" in s]
    assert direct == ["$JS.API.DIRECT.GET.DDZ.ddz.v1.hand.*.*.hand_started"]
    blind = dataclasses.replace(ROLES["settlement"], reads_messages=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(ROLES, "settlement", blind)
        with pytest.raises(ValueError, match=r"no STREAM\.MSG\.GET"):
            permissions("settlement")


def test_only_the_provisioning_user_may_make_the_stream() -> None:
    for name in ROLES:
        assert not [s for s in allowed(name, "publish") if "STREAM.CREATE" in s or s == "$JS.API.>"]
        assert allowed(name, "subscribe")[-1] == f"_INBOX.{name}.>"
    assert allowed(PROVISION, "publish") == ["$JS.API.>"]


def test_settlements_consumer_is_pinned_to_hand_settled() -> None:
    creates = [s for s in allowed("settlement", "publish") if "CREATE" in s]
    assert creates == ["$JS.API.CONSUMER.CREATE.DDZ.settlement.ddz.v1.hand.*.*.hand_settled"]


def test_seeds_are_private_and_stable(tmp_path: Path) -> None:
    config = nats_auth.write_config(tmp_path)
    seed = nats_auth.seed_path(tmp_path, "bot")
    assert stat.S_IMODE(seed.stat().st_mode) == 0o600
    public = nkeys.from_seed(bytearray(seed.read_bytes().strip())).public_key.decode()
    assert public in config.read_text() and seed.read_text() not in config.read_text()
    assert nats_auth.ensure_seed(tmp_path, "bot") == public  # made once, kept


def test_credentials_come_from_the_settings_then_the_data_dir(tmp_path: Path) -> None:
    base = {"DDZ_DATA_DIR": str(tmp_path)}
    assert connect_options(Settings.from_env(base).bus, "bot") == {}  # no auth: as before
    nats_auth.write_config(tmp_path)
    found = connect_options(Settings.from_env(base).bus, "bot")
    assert found == {
        "nkeys_seed": str(nats_auth.seed_path(tmp_path, "bot")),
        "inbox_prefix": "_INBOX.bot",
    }
    creds = Settings.from_env({**base, "DDZ_NATS_CREDS": "/run/bot.creds"})
    assert connect_options(creds.bus, "bot")["user_credentials"] == "/run/bot.creds"
    user = Settings.from_env({**base, "DDZ_NATS_USER": "bot", "DDZ_NATS_PASSWORD": "s3cret"})
    assert connect_options(user.bus, "bot")["password"] == "s3cret"
    assert "s3cret" not in repr(user)  # never logged
    assert Settings.from_env(settings_env(user)) == user  # children get the same


def test_tls_to_nats_takes_the_ca_and_the_client_certificate(tmp_path: Path) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ddz-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(1)
        .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    (tmp_path / "c.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "k.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    base = {"DDZ_DATA_DIR": str(tmp_path)}
    assert "tls" not in connect_options(Settings.from_env(base).bus, "bot")
    settings = Settings.from_env(
        {**base, "DDZ_NATS_CA": str(tmp_path / "c.pem"),
         "DDZ_NATS_CERT": str(tmp_path / "c.pem"), "DDZ_NATS_KEY": str(tmp_path / "k.pem")}
    )  # fmt: skip
    context = connect_options(settings.bus, "bot")["tls"]
    assert context.get_ca_certs()[0]["subject"] == ((("commonName", "ddz-test"),),)
    assert Settings.from_env(settings_env(settings)) == settings
