"""Several table instances on one bus (real nats-server): one active, holding the lease
``table`` (the tables, room queues and turn clocks), the others standbys forwarding
every call to it.

- A player's whole flow through a standby: joining a room the bots fill, the hand's
  stream (dropped through the standby: the active instance sees the seat go), moves,
  the next hand; every refused call through the standby comes back as the active
  instance refused it (code, details, ErrorInfo).
- Players joining one room through either instance are each seated exactly once.
- The active instance a process killed with SIGKILL: the standby takes over one lease
  TTL later, the hands in play finish, a seat token issued before acts on it, and a
  person who stays away has the new active instance's turn clock hand the seat to the bot.
- An active instance that loses its lease stops serving at once, and the standby takes
  over.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import grpc
import nats.js.errors
import pytest
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import BUCKET
from ddz.adapters.rpc.grpc_client import error_info, error_reason, make_channel
from ddz.adapters.runtime.nats_server import NatsServer, free_port
from ddz.adapters.runtime.service_runner import RunningService, start_service
from ddz.adapters.telemetry import metrics
from ddz.config import Settings
from ddz.v1 import hand_events_pb2, table_pb2
from google.protobuf import message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from suite_kit import Suite, eventually, running_suite, suite_settings
from table_kit import ENDED, Watcher, act, drive, hint, join, view_of

from services.table.adapters.forwarding import FORWARDED_BY
from services.table.adapters.instances import LEASE
from services.table.app import Role, TableApp

TTL = 2.0
BELOW_TABLE = ("dealer", "rules", "recorder", "settlement", "bot")
TABLE_RPCS = table_pb2.DESCRIPTOR.services_by_name["TableService"].methods
SEAT_RPCS = {m.name for m in TABLE_RPCS if {"hand_id", "seat"} <= set(m.input_type.fields_by_name)}
"""The RPCs that act for a seat of a hand or read its cards."""
TOKEN_FREE = {"ListRooms"}
WAIT = 60.0


@dataclass
class Instance:
    """A table instance started in this process, and the suite's clients of it."""

    running: RunningService
    view: Suite
    lost: list[str] = field(default_factory=list)  # its lease_lost calls

    @property
    def app(self) -> TableApp:
        return cast(TableApp, self.running.service)


@dataclass
class Tables:
    suite: Suite
    instances: list[Instance] = field(default_factory=list)

    async def start(self) -> Instance:
        """Another table instance, on a port of its own it advertises."""
        settings = listening_at(self.suite.settings, free_port("127.0.0.1"))
        lost: list[str] = []
        running = await start_service(
            "table", settings, lease_lost=lambda: lost.append("lease lost")
        )
        address = f"127.0.0.1:{running.port}"
        instance = Instance(
            running, Suite(settings.with_addresses(table=address), self.suite.bus, {}), lost
        )
        self.instances.append(instance)
        return instance

    async def close(self) -> None:
        for instance in reversed(self.instances):  # standbys first: nobody takes over
            await instance.view.close()
            await instance.running.stop(0.1)


def listening_at(settings: Settings, port: int) -> Settings:
    """Settings of a table instance on ``port`` (its metrics on any free one)."""
    network = replace(
        settings.network,
        ports=MappingProxyType({**settings.network.ports, "table": port}),
        metrics_ports=MappingProxyType({**settings.network.metrics_ports, "table": 0}),
    )
    return replace(settings, network=network)


@pytest.fixture
async def tables(bus: EventBus, nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[Tables]:
    """Every service but the table; table instances are started by the test."""
    settings = suite_settings(tmp_path, nats_server.url)
    settings = replace(settings, bus=replace(settings.bus, lease_ttl=TTL))
    async with running_suite(BELOW_TABLE, settings, bus) as suite:
        pair = Tables(suite)
        try:
            yield pair
        finally:
            await pair.close()


def when(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return check()

    return probe


async def serving(view: Suite) -> bool:
    """The instance ``view`` dials says SERVING (as the compose and k8s probes ask)."""
    channel = make_channel(view.settings.calling, "table")
    try:
        answer = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=5
        )
    except grpc.aio.AioRpcError:
        return False
    finally:
        await channel.close()
    return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)


async def lease_holder(bus: EventBus) -> str:
    """Who holds the table's lease now ("" when nobody)."""
    try:
        kv = await bus.js.key_value(BUCKET)
        return (await kv.get(LEASE)).value.decode()
    except nats.js.errors.NotFoundError:
        return ""


async def refusal(call: Awaitable[Any]) -> tuple[Any, ...]:
    """How a call was refused: its code, details and ErrorInfo (reason, metadata)."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    error = caught.value
    info = error_info(error)
    return (error.code(), error.details(), None if info is None else info.SerializeToString())


async def first_update(stream: Any) -> Any:
    async for update in stream:
        return update
    return None


def rpc_call(stub: Any, name: str, **values: Any) -> Awaitable[Any]:
    """The RPC ``name`` through ``stub`` with a request whose fields named in ``values``
    are set (a stream: its first update)."""
    method = table_pb2.DESCRIPTOR.services_by_name["TableService"].methods_by_name[name]
    request = message_factory.GetMessageClass(method.input_type)()
    for field_name, value in values.items():
        if field_name in method.input_type.fields_by_name:
            setattr(request, field_name, value)
    rpc = getattr(stub, method.name)
    if method.server_streaming:
        return first_update(rpc(request, timeout=10))
    return cast(Awaitable[Any], rpc(request, timeout=10))


def forwarded(method: str, code: str = "OK") -> float:
    return float(metrics.TABLE_FORWARDED.labels(method, code)._value.get())


async def my_turn(stub: Any, hand_id: str, seat: int) -> Any:
    async def probe() -> Any:
        view = await view_of(stub, hand_id, seat)
        return view if view.my_turn and seat not in view.disconnected else None

    return await eventually(probe, timeout=WAIT)


async def ended(stub: Any, hand_id: str, seat: int) -> Any:
    async def probe() -> Any:
        view = await view_of(stub, hand_id, seat)
        return view if view.phase == ENDED else None

    return await eventually(probe, timeout=WAIT, every=0.2)


# --- a standby serves every call ------------------------------------------------------------


async def test_a_players_whole_flow_through_a_standby_and_its_refusals_as_the_actives(
    tables: Tables,
) -> None:
    active, standby = await tables.start(), await tables.start()
    assert active.app.role is Role.ACTIVE and standby.app.role is Role.STANDBY
    assert await lease_holder(tables.suite.bus) == active.app.holder
    assert standby.app.forwarder.target == f"127.0.0.1:{active.running.port}"
    assert await serving(standby.view)  # ready: a load balancer may use it
    joins = forwarded("JoinRoom")

    # Ann comes in through the standby only: she joins, the bots fill her table.
    joined = await join(standby.view.player("ann"), "classic")
    assert forwarded("JoinRoom") == joins + 1
    table_id, seat, hand_id = joined.table.table_id, joined.seat, joined.hand_id
    assert active.app.tables.get(table_id) is not None  # the active instance holds it
    assert standby.app.tables.get(table_id) is None
    stub = standby.view.table_as(joined.token)

    # Refused through the standby exactly as by the active instance, for every RPC.
    other_seat = (seat + 1) % 3
    values = {
        "hand_id": hand_id, "seat": other_seat, "table_id": table_id, "room_id": "classic",
        "variant": "classic", "action": hand_events_pb2.BID_ACTION_PASS, "cards": "3",
    }  # fmt: skip
    every_rpc = {m.name for m in TABLE_RPCS} - TOKEN_FREE
    for token, names, code in (
        ("garbage", every_rpc, grpc.StatusCode.UNAUTHENTICATED),
        (joined.token, SEAT_RPCS, grpc.StatusCode.PERMISSION_DENIED),  # another seat's
    ):
        direct, through = active.view.table_as(token), standby.view.table_as(token)
        for name in sorted(names):
            expected = await refusal(rpc_call(direct, name, **values))
            assert expected[0] is code, (name, expected)
            assert await refusal(rpc_call(through, name, **values)) == expected, name
    unknown = table_pb2.GetViewRequest(hand_id="no-such-hand", seat=0)
    expected = await refusal(active.view.table.GetView(unknown))
    assert expected[0] is grpc.StatusCode.NOT_FOUND
    assert await refusal(standby.view.table.GetView(unknown)) == expected
    # A forwarded call that reaches a standby is not passed on again.
    with pytest.raises(grpc.aio.AioRpcError) as looped:
        await stub.GetView(table_pb2.GetViewRequest(hand_id=hand_id, seat=seat),
                           metadata=[(FORWARDED_BY, "another standby")])  # fmt: skip
    assert looped.value.code() is grpc.StatusCode.UNAVAILABLE
    assert "not the active one" in str(looped.value.details())

    # Her stream through the standby: dropping it is her connection going (the active
    # instance hands her seat to the bot); opening it again brings her back.
    watcher = Watcher(stub, hand_id, seat).start()
    await watcher.until(lambda update: update.position >= 1)
    await watcher.drop()
    operator = standby.view.operator()  # her own GetView would end the disconnect itself
    await eventually(lambda: disconnected(operator, hand_id, seat), timeout=WAIT)
    watcher.start()

    async def back() -> bool:
        view = await view_of(operator, hand_id, seat)
        return view.phase == ENDED or seat not in view.disconnected

    await eventually(back, timeout=WAIT)
    end = await drive(stub, watcher)  # her moves, through the standby, to the end
    assert end.phase == ENDED
    assert forwarded("WatchHand") >= 1 and forwarded("WatchHand", "CANCELLED") >= 1

    # The next hand, asked through the standby.
    following = await stub.NextHand(table_pb2.NextHandRequest(table_id=table_id), timeout=WAIT)
    assert following.hand_id and following.hand_id != hand_id
    view = await view_of(stub, following.hand_id, seat)
    assert view.seat == seat and len(view.cards) == 17
    assert standby.app.role is Role.STANDBY and standby.app.tables.get(table_id) is None


async def disconnected(stub: Any, hand_id: str, seat: int) -> bool:
    view = await view_of(stub, hand_id, seat)
    return seat in view.disconnected or view.phase == ENDED


async def test_players_joining_through_either_instance_are_seated_exactly_once(
    tables: Tables,
) -> None:
    first, second = await tables.start(), await tables.start()
    players = [f"p{n}" for n in range(9)]
    via = {p: (first if n % 2 else second).view for n, p in enumerate(players)}
    calls = [join(via[p].player(p), "waiting") for p in players]
    calls.append(join(first.view.player("p4"), "waiting"))  # p4 twice at once, both ways
    calls.append(join(second.view.player("p4"), "waiting"))
    answers = await asyncio.gather(*calls, return_exceptions=True)
    seated = [a for a in answers if not isinstance(a, BaseException)]
    for error in (a for a in answers if isinstance(a, BaseException)):
        assert isinstance(error, grpc.aio.AioRpcError)
        assert error.code() is grpc.StatusCode.ALREADY_EXISTS, error.details()
    places: dict[str, set[tuple[str, int]]] = {}
    for answer in seated:
        player = answer.table.seats[answer.seat].player_id
        places.setdefault(player, set()).add((answer.table.table_id, answer.seat))
    assert sorted(places) == players
    assert all(len(place) == 1 for place in places.values()), places
    at_tables: dict[str, set[str]] = {}
    for answer in seated:
        at_tables[answer.table.table_id] = {s.player_id for s in answer.table.seats}
    assert len(at_tables) == 3
    assert sorted(p for ps in at_tables.values() for p in ps) == players
    assert len(first.app.tables.all()) == 3 and not second.app.tables.all()


async def test_a_channel_to_every_instance_calls_the_active_one_and_follows_the_lease(
    tables: Tables,
) -> None:
    """A player's channel given every instance (``ddz up --scale table=2``) balances by
    the active instance's own health name: its calls skip the standby's hop, and after
    the lease moves they reach the new holder."""
    active, standby = await tables.start(), await tables.start()
    both = f"127.0.0.1:{standby.running.port},127.0.0.1:{active.running.port}"
    view = Suite(tables.suite.settings.with_addresses(table=both), tables.suite.bus, {})
    try:
        before = {name: forwarded(name) for name in ("JoinRoom", "GetView")}
        joined = await join(view.player("dee"), "classic")
        stub = view.table_as(joined.token)
        for _ in range(10):
            assert (await view_of(stub, joined.hand_id, joined.seat)).seat == joined.seat
        assert {name: forwarded(name) for name in before} == before  # nothing forwarded

        kv = await tables.suite.bus.js.key_value(BUCKET)
        await kv.delete(LEASE)  # the active one steps down; the standby takes over
        await eventually(when(lambda: standby.app.role is Role.ACTIVE), timeout=10 * TTL)
        await eventually(when(lambda: active.app.role is Role.STEPPED_DOWN), timeout=10 * TTL)
        view_now = await view_of(stub, joined.hand_id, joined.seat)  # waits for its health
        assert view_now.seat == joined.seat
        assert {name: forwarded(name) for name in before} == before
    finally:
        await view.close()


# --- the active instance killed --------------------------------------------------------------


@pytest.fixture
async def without_watchdog(
    bus: EventBus, nats_server: NatsServer, tmp_path: Path
) -> AsyncIterator[Tables]:
    """As ``tables``, the bot's stalled-hand watchdog out of reach (a seat handed to the
    bot is the table's turn clock's doing) and turns long enough to outlast a take-over."""
    settings = suite_settings(tmp_path, nats_server.url, turn_timeout=15.0)
    settings = replace(
        settings, bus=replace(settings.bus, lease_ttl=TTL),
        clocks=replace(settings.clocks, stall_margin=3600.0),
    )  # fmt: skip
    async with running_suite(BELOW_TABLE, settings, bus) as suite:
        pair = Tables(suite)
        try:
            yield pair
        finally:
            await pair.close()


async def test_the_active_killed_with_sigkill_its_standby_takes_over_and_the_hands_finish(
    without_watchdog: Tables, tmp_path: Path
) -> None:
    tables = without_watchdog
    suite = tables.suite
    port = free_port("127.0.0.1")
    process = suite.spawn(
        "table", tmp_path / "table.log", DDZ_TABLE_PORT=str(port), DDZ_TABLE_METRICS_PORT="0",
        DDZ_LEASE_TTL=str(int(TTL)),
    )  # fmt: skip
    try:
        process_view = Suite(
            suite.settings.with_addresses(table=f"127.0.0.1:{port}"), suite.bus, {}
        )
        try:
            holder = await eventually(lambda: lease_holder(suite.bus), timeout=WAIT)
            assert f"-{process.pid}-" in holder and holder.endswith(f"@127.0.0.1:{port}")
            await eventually(lambda: serving(process_view), timeout=WAIT)
        finally:
            await process_view.close()
        standby = await tables.start()
        assert standby.app.role is Role.STANDBY
        assert standby.app.forwarder.target == f"127.0.0.1:{port}"
        via = standby.view

        # Ann and Bea at two tables, through the standby; each on turn.
        ann = await join(via.player("ann"), "classic")
        bea = await join(via.player("bea"), "classic")
        assert ann.table.table_id != bea.table.table_id
        ann_stub, bea_stub = via.table_as(ann.token), via.table_as(bea.token)
        await my_turn(ann_stub, ann.hand_id, ann.seat)
        await my_turn(bea_stub, bea.hand_id, bea.seat)

        move = await hint(ann_stub, ann.hand_id, ann.seat)
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=10) == -signal.SIGKILL
        await asyncio.sleep(0.2)  # the standby's connection to it has seen it close
        # Ann's move, sent through the standby as the killed instance's tables change
        # hands, with her seat token issued by the killed one. Most often no instance
        # serves them yet: the move could not be sent on, so it waits for the take-over
        # (a dead holder of this host is replaced at once, so the take-over may also be
        # done already). Either way it is made by the new active instance, once: it must
        # not come back as a failure the player would have to repeat.
        answer = await act(ann_stub, ann.hand_id, ann.seat, move)
        assert answer.outcome.version > 0
        assert standby.app.role is Role.ACTIVE
        assert await lease_holder(suite.bus) == standby.app.holder
        assert {ann.table.table_id, bea.table.table_id} <= {
            t.table_id for t in standby.app.tables.all()
        }
        back = await join(via.player("ann"), "classic")  # the room knows her seat
        assert (back.table.table_id, back.seat, back.rejoined) == (
            ann.table.table_id, ann.seat, True)  # fmt: skip
        end = await drive(ann_stub, Watcher(ann_stub, ann.hand_id, ann.seat).start())
        assert end.phase == ENDED and ann.seat not in end.disconnected
        # Bea stays away: the new active instance's clock times her turns out, then
        # auto-play: the bot plays her seat to the end.
        bea_end = await ended(via.table, bea.hand_id, bea.seat)
        assert bea.seat in bea_end.auto_play
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


# --- an active instance that loses its lease -------------------------------------------------


async def test_an_active_that_loses_its_lease_stops_serving_and_the_standby_takes_over(
    tables: Tables,
) -> None:
    active, standby = await tables.start(), await tables.start()
    joined = await join(standby.view.player("cy"), "classic")
    kv = await tables.suite.bus.js.key_value(BUCKET)
    await kv.delete(LEASE)  # its next renewal is refused: the lease is lost
    await eventually(when(lambda: active.lost == ["lease lost"]), timeout=10 * TTL)
    assert active.app.role is Role.STEPPED_DOWN and active.app.clock is not None
    assert active.app.clock.running == 0
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await active.view.table_as(joined.token).GetView(
            table_pb2.GetViewRequest(hand_id=joined.hand_id, seat=joined.seat)
        )
    assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
    assert error_reason(refused.value) == "REASON_UNSPECIFIED"
    assert "stepped down" in str(refused.value.details())

    await eventually(when(lambda: standby.app.role is Role.ACTIVE), timeout=10 * TTL)
    view = await view_of(standby.view.table_as(joined.token), joined.hand_id, joined.seat)
    assert view.seat == joined.seat

    async def not_serving() -> bool:
        return not await serving(active.view)

    await eventually(not_serving, timeout=WAIT)  # out of the load balancer's choice
