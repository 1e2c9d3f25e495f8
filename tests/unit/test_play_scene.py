"""What ``ddz play`` shows when the answer to the player's own move and the
seat's stream arrive in either order, and for a seat the bot plays (§10.2, 托管)."""

from __future__ import annotations

import io

from ddz.adapters import codec
from ddz.client.leaving import escape_cost
from ddz.client.screen import AWAY, PHASE_PLAYING, Scene, render
from ddz.domain.hand import events as ev
from ddz.domain.ruleset import ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.v1 import envelope_pb2, table_pb2
from rich.console import Console


def envelope(event: ev.Event) -> envelope_pb2.EventEnvelope:
    kind, version, payload = codec.encode_event(event)
    return envelope_pb2.EventEnvelope(type=kind, type_version=version, payload=payload)


def view(
    version: int, *, my_turn: bool, disconnected: tuple[int, ...] = ()
) -> table_pb2.PlayerView:
    shown = table_pb2.PlayerView(version=version, seat=0, phase=PHASE_PLAYING, my_turn=my_turn)
    shown.turn = 0 if my_turn else 1
    shown.seats.add(player_id="ann")
    shown.seats.add(player_id="ben")
    shown.seats.add(player_id="bot-t-2", is_bot=True)
    shown.card_counts.extend([17, 17, 17])
    shown.disconnected.extend(disconnected)
    return shown


def text(scene: Scene) -> str:
    out = io.StringIO()
    Console(file=out, width=150, color_system=None).print(render(scene))
    return out.getvalue()


def test_the_move_shows_at_once_and_a_late_stream_update_does_not_undo_it() -> None:
    scene = Scene("ann")
    scene.follow(table_pb2.WatchHandResponse(position=7, view=view(7, my_turn=True)))
    assert "→ your turn" in text(scene)
    # Ann passes; the answer (version 8) comes before the stream's update for it.
    outcome = table_pb2.MoveOutcome(
        version=8, view=view(8, my_turn=False), events=[envelope(ev.Passed(0))]
    )
    scene.follow_move(outcome)
    assert "your turn" not in text(scene) and "waiting for seat 1" in text(scene)
    assert scene.last[0] == "pass"
    # The stream then sends an update older than what is shown: the view stays.
    scene.follow(table_pb2.WatchHandResponse(position=7, view=view(7, my_turn=True)))
    assert scene.view is not None and scene.view.version == 8
    # An answer the stream has already overtaken changes nothing.
    scene.follow(table_pb2.WatchHandResponse(position=9, view=view(9, my_turn=False)))
    scene.follow_move(table_pb2.MoveOutcome(version=8, view=view(8, my_turn=True)))
    assert scene.view.version == 9


def test_a_seat_the_bot_plays_says_so_once() -> None:
    scene = Scene("ann")
    dropped = view(5, my_turn=False, disconnected=(1,))
    away = envelope(ev.PlayerDisconnected(1, True))
    scene.follow(table_pb2.WatchHandResponse(position=5, view=dropped, event=away))
    shown = text(scene)
    assert shown.count(AWAY) == 1, shown
    played = view(6, my_turn=False, disconnected=(1,))
    passed = envelope(ev.Passed(1))
    scene.follow(table_pb2.WatchHandResponse(position=6, view=played, event=passed))
    assert f"pass · {AWAY}" in text(scene)


def clocked(version: int, left: float, *, auto_play: bool = False) -> table_pb2.PlayerView:
    shown = view(version, my_turn=True)
    shown.hand_id = "9c2e4b1a" * 4
    shown.turn_deadline.FromSeconds(1_800_000_000)
    shown.turn_seconds, shown.turn_seconds_left = 20.0, left
    if auto_play:
        shown.auto_play.append(0)
    return shown


def test_the_clock_counts_down_here_and_turns_red_in_its_last_seconds() -> None:
    now = [100.0]
    scene = Scene("ann", now=lambda: now[0])
    scene.follow(table_pb2.WatchHandResponse(position=3, view=clocked(3, 14.2)))
    assert "⏱ your turn: 15 s left (of 20 s)" in text(scene)
    assert f"hand {'9c2e4b1a' * 4}  (to quote it: ddz audit {'9c2e4b1a' * 4})" in text(scene)
    now[0] += 10.0  # this machine's clock: no server time needed
    assert "⏱ your turn: 5 s left" in text(scene)
    out = io.StringIO()
    Console(file=out, width=150, color_system="standard", force_terminal=True).print(render(scene))
    assert "\x1b[1;31m⏱ your turn: 5 s left" in out.getvalue()  # red, bold
    now[0] += 60.0
    assert "⏱ your turn: 0 s left" in text(scene)
    scene.follow(table_pb2.WatchHandResponse(position=4, view=view(4, my_turn=False)))
    assert "⏱" not in text(scene)  # no clock in the view: none shown


def test_the_bot_playing_for_the_player_is_said_with_why_and_auto_play_how_to_end_it() -> None:
    scene = Scene("ann")
    scene.follow(table_pb2.WatchHandResponse(position=3, view=clocked(3, 1.0)))
    bot_pass = ev.Passed(0, ev.MoveBy.BOT_TURN_TIMEOUT)
    scene.follow(table_pb2.WatchHandResponse(position=4, event=envelope(bot_pass)))
    assert scene.bot_note == "the bot played for you: pass — your turn's clock ran out"
    assert scene.bot_note in text(scene)
    assert scene.last[0] == "pass (bot: time ran out)"
    scene.follow(table_pb2.WatchHandResponse(position=5, event=envelope(ev.AutoPlayStarted(0, 2))))
    assert "type resume" in scene.bot_note
    scene.follow(table_pb2.WatchHandResponse(position=6, view=clocked(6, 3.0, auto_play=True)))
    assert "→ auto-play" in text(scene) and "type resume" in text(scene)
    other = ev.Passed(1, ev.MoveBy.BOT_CONNECTION_LOST)
    scene.follow(table_pb2.WatchHandResponse(position=7, event=envelope(other)))
    assert scene.last[1] == "pass (bot: connection lost)" and "auto-play" in scene.bot_note


def test_leaving_says_what_it_costs_in_the_room() -> None:
    def room(variant: str, **settings: object) -> table_pb2.Room:
        rules = codec.ruleset_to_pb(ruleset_for(variant))
        return table_pb2.Room(room_id=variant, rules=rules,
                              settings=codec.room_to_pb(RoomSettings(**settings)))  # fmt: skip

    assert "escape penalty of 20 points" in escape_cost(room("ct", initial_multiplier=2), None)
    assert "no penalty in this room" in escape_cost(room("classic"), None)
    # laizi, N 100, initial 2, fee 10: as if 10x (farmer) / 20x (landlord), X x 1/4 (§10.3)
    beans = room("laizi", initial_multiplier=2, coefficient=100, fee=10)
    said = escape_cost(beans, None)
    assert "at least 500 beans (as a farmer; 2000 as the landlord), plus the fee of 10" in said
    landlord = view(5, my_turn=True)
    landlord.landlord = 0
    assert "at least 2000 beans" in escape_cost(beans, landlord)
