"""The stack's nats-server with the configuration ``ddz up`` writes (``nats_auth``):
a stranger is refused, and each service's user may publish, subscribe and manage only
what its service needs."""

from __future__ import annotations

from pathlib import Path

import nats
import nats.errors
import nats.js.errors
import pytest
from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.nats_auth import connect_options
from ddz.adapters.messaging.subjects import stream_id_for, subject_for
from ddz.adapters.runtime.nats_server import NatsServer
from nats.js.api import ConsumerConfig
from nats_auth_kit import VIOLATION, WAIT, Connect, Errors, settings_for

HAND_SETTLED = subject_for(stream_id_for("hand", "forged"), "hand_settled")


async def test_a_connection_without_credentials_is_refused(server: NatsServer) -> None:
    errors = Errors()
    with pytest.raises((nats.errors.Error, OSError)) as refused:
        await nats.connect(
            server.url, error_cb=errors.callback, allow_reconnect=False, connect_timeout=WAIT
        )
    seen = "\n".join([str(refused.value), *errors.seen]).lower()
    assert "authorization violation" in seen


async def test_settlement_cannot_forge_a_hand_settled(connect: Connect) -> None:
    errors = Errors()
    settlement = await connect("settlement", errors)
    await settlement.publish(HAND_SETTLED, b'{"forged": true}')
    await settlement.flush(WAIT)
    seen = (await errors.violation()).lower()
    assert VIOLATION in seen and "publish" in seen and HAND_SETTLED.lower() in seen
    tools = await connect(nats_auth.TOOLS)
    with pytest.raises(nats.js.errors.NotFoundError):
        await tools.jetstream().get_last_msg("DDZ", HAND_SETTLED)  # JetStream kept none


async def test_only_the_services_that_see_cards_may_subscribe_to_internal(
    connect: Connect,
) -> None:
    bot_errors = Errors()
    bot = await connect("bot", bot_errors)
    await bot.subscribe("ddz.v1.internal.>")
    await bot.flush(WAIT)  # the server answers SUB before this PING
    settlement_errors = Errors()
    settlement = await connect("settlement", settlement_errors)
    await settlement.subscribe("ddz.v1.internal.>")
    await settlement.flush(WAIT)
    seen = (await settlement_errors.violation()).lower()
    assert VIOLATION in seen and "subscription" in seen
    await bot.flush(WAIT)
    assert bot_errors.seen == []


async def test_settlements_consumer_keeps_its_filter(connect: Connect) -> None:
    errors = Errors()
    js = (await connect("settlement", errors)).jetstream(timeout=2)
    for config in (
        ConsumerConfig(name="settlement", durable_name="settlement", filter_subject="ddz.v1.>"),
        ConsumerConfig(durable_name="settlement", filter_subject="ddz.v1.internal.>"),
    ):
        with pytest.raises((nats.errors.Error, TimeoutError)):
            await js.add_consumer("DDZ", config)
    assert VIOLATION in (await errors.violation()).lower()


async def test_no_user_reads_another_users_replies(connect: Connect) -> None:
    errors = Errors()
    bot = await connect("bot", errors)
    await bot.subscribe("_INBOX.settlement.>")
    await bot.flush(WAIT)
    assert VIOLATION in (await errors.violation()).lower()


async def test_settlement_may_not_make_or_change_the_stream(
    server: NatsServer, data_dir: Path
) -> None:
    options = connect_options(settings_for(data_dir).bus, "settlement")
    bus = await EventBus.connect(server.url, max_reconnect_attempts=0, **options)
    try:
        info = await bus.js.stream_info("DDZ")  # looking is allowed
        assert info.config.name == "DDZ"
        with pytest.raises((nats.errors.Error, TimeoutError)):
            await bus.js.delete_stream("DDZ")
        assert (await bus.js.stream_info("DDZ")).config.name == "DDZ"
    finally:
        await bus.close()
