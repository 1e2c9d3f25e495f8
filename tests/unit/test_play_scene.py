"""What ``ddz play`` shows when the answer to the player's own move and the
seat's stream arrive in either order, and for a seat the bot plays (§10.2, 托管)."""

from __future__ import annotations

import io

from ddz.adapters import codec
from ddz.client.screen import AWAY, PHASE_PLAYING, Scene, render
from ddz.domain.hand import events as ev
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
