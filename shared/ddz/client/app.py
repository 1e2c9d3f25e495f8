"""The ``ddz play`` loop: join a room, follow each hand on the seat's stream, send what
the player types, show the settlement, then another hand or quit.

Input is read line by line from the terminal without blocking the event loop (the
terminal stays in its normal line mode: typing, backspace and Enter work as
everywhere). The screen is redrawn on every stream update and after every command (a
move's answer is shown at once when the stream has not brought it yet).
A stream that breaks is opened again from the last position seen (the server sends
everything after it, once; ``Session.follow``); the table service takes that as the
player being back. A stream that cannot be had again is said on the status line.

While a turn's clock runs, a terminal's screen is redrawn every second (the countdown).
Leaving a hand in play is an escape: on a terminal, quitting (or Ctrl-D) asks first and
says what it costs in this room; with no terminal, the end of the input leaves the table
and says so on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import grpc
from rich.console import Console
from rich.text import Text

from ddz.application.errors import Refusal
from ddz.application.tasks import cancel_and_wait
from ddz.client.commands import HELP, Typed, hint_to_type, read
from ddz.client.leaving import escape_cost
from ddz.client.screen import PHASE_BIDDING, PHASE_ENDED, Scene, render
from ddz.client.session import Session, Unreachable, refusal
from ddz.domain.cards import format_counts, parse_ranks
from ddz.v1 import table_pb2

Outcome = Literal["next", "quit"]
TICK = 1.0
"""Seconds between redraws of a running turn clock on a terminal."""


class Quit(Exception):
    """The player is done (quit, end of input)."""


class EndOfInput(Quit):
    """The input ended (Ctrl-D on a terminal, or a closed pipe)."""


class Lines:
    """Lines typed on a file descriptor, as an asyncio queue (None at the end of input).

    A thread reads the descriptor, so a terminal, a pipe or /dev/null all work the same
    (the event loop's readers cannot watch every kind of file)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._thread: threading.Thread | None = None
        try:
            self.terminal = os.isatty(fd)
        except OSError:
            self.terminal = False

    def start(self) -> None:
        loop = asyncio.get_running_loop()

        def read() -> None:
            buffer = b""
            while True:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    loop.call_soon_threadsafe(self.queue.put_nowait, None)
                    if self.terminal:
                        continue  # Ctrl-D on a terminal: the player may still type
                    return
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", "replace").rstrip("\r")
                    loop.call_soon_threadsafe(self.queue.put_nowait, text)

        # A daemon: it may stay blocked in read() when the player quits.
        self._thread = threading.Thread(target=read, name="ddz-play-input", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Nothing to undo: the thread ends with the input or the process."""

    async def get(self) -> str:
        line = await self.queue.get()
        if line is None:
            raise EndOfInput()
        return line


class PlayApp:
    def __init__(
        self,
        session: Session,
        player: str,
        *,
        room_id: str | None = None,
        console: Console | None = None,
        input_fd: int = 0,
        errors: Console | None = None,
    ) -> None:
        self.session = session
        self.room_id = room_id
        self.console = console or Console(highlight=False)
        self.errors = errors or Console(stderr=True, highlight=False)
        self.lines = Lines(input_fd)
        self.scene = Scene(player)
        self.hand_id = ""
        self.position = 0
        self.last_hint: table_pb2.SuggestedMove | None = None
        self.leaving = False
        self.busy = False  # a typed command is being sent

    # -- the screen ------------------------------------------------------------------

    def redraw(self) -> None:
        if self.console.is_terminal:
            self.console.clear()
        self.console.print(render(self.scene))
        self.console.print(Text("> "), end="")
        self.console.file.flush()

    def say(self, message: str) -> None:
        self.scene.message = message
        self.redraw()

    # -- the whole session -------------------------------------------------------------

    async def run(self) -> int:
        self.lines.start()
        try:
            room = await self._room()
            await self._join(room)
            while True:
                if await self._hand() == "quit":
                    break
                await self._next(room)
        except Quit:
            pass
        finally:
            self.lines.stop()
        # Only a player who quits leaves the table; one whose terminal goes away (or who
        # presses Ctrl-C) has dropped: the bot plays on and `ddz play` brings them back.
        await self._leave()
        self.console.print()
        return 0

    async def _room(self) -> table_pb2.Room:
        listed = await self.session.rooms()
        rooms: dict[str, table_pb2.Room] = {room.room_id: room for room in listed.rooms}
        if self.room_id is not None:
            if self.room_id not in rooms:
                raise ValueError(f"no room {self.room_id!r} (rooms: {', '.join(rooms)})")
            return rooms[self.room_id]
        self.console.print("Rooms:")
        for number, room in enumerate(listed.rooms, start=1):
            minimum = f", at least {room.settings.min_balance}" if room.settings.min_balance else ""
            self.console.print(f"  {number}. {room.room_id}: {room.name}{minimum}")
        while True:
            self.console.print("room (number or name) > ", end="")
            answer = (await self.lines.get()).strip()
            if answer in rooms:
                return rooms[answer]
            if answer.isdigit() and 1 <= int(answer) <= len(rooms):
                return list(rooms.values())[int(answer) - 1]
            if answer in ("q", "quit"):
                raise Quit()
            self.console.print(f"no room {answer!r}")

    async def _join(self, room: table_pb2.Room) -> None:
        self.scene.room = room
        self.scene.view = None
        self.scene.status = (
            f"waiting for players in room {room.room_id} "
            f"(bots take empty seats after {room.bot_fill_wait_s:g} s)…"
        )
        self.redraw()
        try:
            joined = await self.session.join(room, on_cut=self._cut("joining again"))
        except grpc.aio.AioRpcError as exc:
            raise ValueError(f"cannot join room {room.room_id}: {refusal(exc)}") from None
        except Unreachable as exc:
            raise ValueError(f"cannot join room {room.room_id}: {exc}") from None
        self.scene.table_id = joined.table.table_id
        self.scene.seat = joined.seat
        self.scene.status = ""
        note = "back at your seat" if joined.rejoined else "seated"
        balance = f"; balance {joined.balance}" if joined.HasField("balance") else ""
        self.scene.message = f"{note}: seat {joined.seat} at table {joined.table.table_id}{balance}"
        self.hand_id = joined.hand_id

    async def _next(self, room: table_pb2.Room) -> None:
        self.scene.status = "waiting for the others at the table to want another hand…"
        self.redraw()
        try:
            self.hand_id = await self.session.next_hand(
                self.hand_id, on_cut=self._cut("asking again")
            )
        except grpc.aio.AioRpcError as exc:
            self.scene.message = f"{refusal(exc)} — joining room {room.room_id} again"
            await self._join(room)
        except Unreachable as exc:
            raise ValueError(str(exc)) from None
        self.scene.status = ""

    def _cut(self, then: str) -> Callable[[grpc.StatusCode], None]:
        """Say on the status line that a call was cut and is being made again."""

        def cut(code: grpc.StatusCode) -> None:
            self.scene.status = f"connection lost ({code.name}): {then}…"
            self.redraw()

        return cut

    async def _leave(self) -> None:
        if self.session.joined is None:
            return
        with contextlib.suppress(grpc.aio.AioRpcError):
            left = await self.session.leave()
            if left.escaped_hand_id:
                self.console.print(
                    f"you left during hand {left.escaped_hand_id}: that is an escape (§10); "
                    f"ddz audit {left.escaped_hand_id} shows it",
                    soft_wrap=True,
                )

    def _in_play(self) -> bool:
        """A hand is being played at the seat (also before its first view came)."""
        view = self.scene.view
        return bool(self.hand_id) and (view is None or view.phase != PHASE_ENDED)

    def _input_closed(self) -> bool:
        """The input ended mid-hand: True to leave. On a terminal (Ctrl-D) it is a quit
        to confirm; elsewhere nobody can answer: leave, and say so on stderr (the screen
        may be going to a file)."""
        if self.lines.terminal:
            if self.leaving:
                return True  # asked already: a second Ctrl-D confirms
            self._confirm_quit()
            return False
        self.errors.print(
            f"ddz play: the input closed during hand {self.hand_id}: leaving the table. "
            f"{escape_cost(self.scene.room, self.scene.view)}.",
            soft_wrap=True,
        )
        return True

    def _confirm_quit(self) -> None:
        self.leaving = True
        self.scene.message = (
            f"{escape_cost(self.scene.room, self.scene.view)}. Type quit again to leave"
        )

    # -- one hand ----------------------------------------------------------------------

    async def _hand(self) -> Outcome:
        self.position = 0
        self.scene.view = None
        self.scene.last.clear()
        self.scene.bot_note = ""
        self.last_hint = None
        watching = asyncio.create_task(self._watch(self.hand_id))
        ticking = asyncio.create_task(self._tick())
        try:
            self.redraw()
            while True:
                try:
                    line = await self.lines.get()
                except EndOfInput:
                    if not self._in_play():
                        raise  # between hands: leaving is no escape
                    if self._input_closed():
                        return "quit"
                    self.redraw()
                    continue
                self.busy = True  # no countdown redraw until the command's answer is shown
                try:
                    outcome = await self._command(line)
                finally:
                    self.busy = False
                if outcome is not None:
                    return outcome
                self.redraw()
        finally:
            await cancel_and_wait([watching, ticking])

    async def _tick(self) -> None:
        """Redraw once a second while a turn's clock runs (a terminal only: a file
        would fill with screens)."""
        if not self.console.is_terminal:
            return
        while True:
            await asyncio.sleep(TICK)
            if self.scene.seconds_left() is not None and not self.busy:
                self.redraw()

    async def _watch(self, hand_id: str) -> None:
        """Follow the seat's stream to the hand's end, resuming after any cut."""

        resuming = ""
        fresh = True  # a stream's first update: its clock is as of an event maybe long past

        def cut(code: grpc.StatusCode) -> None:
            nonlocal resuming, fresh
            self.scene.status = resuming = f"connection lost ({code.name}): resuming…"
            fresh = True
            self.redraw()

        try:
            async for update in self.session.follow(hand_id, self.position, on_cut=cut):
                self.position = update.position
                if resuming and self.scene.status == resuming:
                    self.scene.status = resuming = ""
                self.scene.follow(update)
                if fresh:
                    fresh = False
                    with contextlib.suppress(grpc.aio.AioRpcError):
                        self.scene.take_view(await self.session.view(hand_id))  # as of now
                self.redraw()
        except Refusal as refusal:
            self.scene.status = f"the hand's stream is lost: {refusal.message}"
            self.redraw()

    async def _command(self, line: str) -> Outcome | None:
        view = self.scene.view
        over = view is not None and view.phase == PHASE_ENDED
        bidding = view is not None and view.phase == PHASE_BIDDING
        typed = read(line, bidding=bidding, over=over)
        if typed is None:
            return None
        self.scene.message = ""
        match typed.kind:
            case "quit":
                if over or view is None or self.leaving:
                    return "quit"
                self._confirm_quit()
            case "next":
                if over:
                    return "next"
                self.scene.message = "the hand is still in play"
            case "help":
                self.scene.message = HELP
            case "error":
                self.scene.message = typed.error
            case "hint":
                await self._hint()
            case "resume":
                await self._resume()
            case "evidence":
                await self._evidence()
            case _:
                await self._move(typed)
        return None

    async def _resume(self) -> None:
        try:
            answer = await self.session.resume(self.hand_id)
        except grpc.aio.AioRpcError as exc:
            self.scene.message = f"✗ {refusal(exc)}"
            return
        self.leaving = False
        self.scene.follow_move(answer.outcome)
        self.scene.message = "auto-play is off: you play your own turns again"

    async def _evidence(self) -> None:
        """The hand's evidence file, saved in the current directory (the table gives it to
        the players who sat in the hand, once it has ended)."""
        try:
            found = await self.session.evidence(self.hand_id)
        except grpc.aio.AioRpcError as exc:
            self.scene.message = f"no evidence file: {refusal(exc)}"
            return
        path = Path(Path(found.file_name).name or f"hand-{self.hand_id}.ddz-evidence.json")
        try:
            path.write_bytes(found.file)
        except OSError as exc:
            self.scene.message = f"could not save {path}: {exc.strerror or exc}"
            return
        self.scene.message = f"saved {path}: check it with  ddz audit --bundle {path}"

    async def _hint(self) -> None:
        try:
            move = await self.session.hint(self.hand_id)
        except grpc.aio.AioRpcError as exc:
            self.scene.message = f"no hint: {refusal(exc)}"
            return
        self.last_hint = move
        self.scene.message = f'hint: type "{hint_to_type(move.text)}"  ({move.text})'

    async def _move(self, typed: Typed) -> None:
        hand_id = self.hand_id
        try:
            if typed.kind == "bid":
                answer = await self._bid(typed)
            elif typed.kind == "play":
                answer = await self.session.play(hand_id, typed.cards, self._declared(typed.cards))
            elif typed.kind == "pass":
                answer = await self.session.pass_(hand_id)
            elif typed.kind == "show":
                answer = await self.session.show(hand_id)
            else:
                return
        except grpc.aio.AioRpcError as exc:
            self.scene.message = f"✗ {refusal(exc)}"
            return
        self.leaving = False
        self.scene.follow_move(answer.outcome)

    async def _bid(self, typed: Typed) -> Any:
        action, score = typed.action, typed.score
        view = self.scene.view
        legal = list(view.legal_bids) if view is not None else []
        if action == "call" and not score and any(b.score for b in legal):
            score = min(b.score for b in legal if b.score)  # "call" in a call-score room
        return await self.session.bid(self.hand_id, action, score)

    def _declared(self, cards: str) -> Any:
        """The hint's declared reading when the player types the hinted cards (wildcard
        plays that read more than one way, §3)."""
        hint = self.last_hint
        if hint is None or hint.WhichOneof("move") != "play" or not hint.play.HasField("declared"):
            return None
        if format_counts(parse_ranks(hint.play.cards)) != cards:
            return None
        return hint.play.declared
