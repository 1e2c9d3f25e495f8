"""A hand's evidence file for the players who sat in it (``GetHandEvidence``): the
recorder makes the file (``ddz.audit.evidence.file``); the table decides who may have it.

A player gets the evidence of a hand they held a seat in (their player token, or a seat
token of that table), and only once the hand has ended: before, the file would show
every seat's cards. An operator token may have any hand's."""

from __future__ import annotations

from ddz.access.seat_gate import Gate
from ddz.application.errors import Reason, Refusal

from .floor import Floor
from .ports import EvidenceFile, EvidenceFiles


class HandEvidence:
    def __init__(self, floor: Floor, gate: Gate, files: EvidenceFiles) -> None:
        self.floor = floor
        self.gate = gate
        self.files = files

    async def evidence(self, token: str | None, hand_id: str) -> EvidenceFile:
        caller = self.gate.caller(token)
        fold = await self.floor.hand(hand_id)
        if not caller.operator:
            held = {s.player_id for s in fold.state.seats if not s.is_bot}
            table = self.floor.tables.table_of(hand_id)
            other_table = caller.kind == "seat" and (
                table is None or caller.table_id != table.table_id
            )
            if caller.player_id not in held or other_table:
                raise Refusal.denied(f"{caller.player_id} did not sit in hand {hand_id}")
        if not fold.over:
            raise Refusal.precondition(
                Reason.WRONG_PHASE,
                f"hand {hand_id} is still in play: its evidence is ready once it has ended",
            )
        return await self.files.evidence(hand_id)
