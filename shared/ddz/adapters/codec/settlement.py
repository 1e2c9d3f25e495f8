"""The settlement projection's rows -> protobuf: balances and settled hands."""

from __future__ import annotations

from ddz.domain.balances import Balance, SettledHand
from ddz.v1 import hand_events_pb2, settlement_pb2


def balance_to_pb(balance: Balance) -> settlement_pb2.GetBalanceResponse:
    return settlement_pb2.GetBalanceResponse(
        player_id=balance.player_id, balance=balance.balance, hands=balance.hands
    )


def settled_hand_to_pb(hand: SettledHand) -> settlement_pb2.SettledHand:
    """A settled hand with its ledger and multiplier as published (the stored
    ``HandSettled`` payload, not a re-encoding)."""
    settled = hand_events_pb2.HandSettled.FromString(hand.payload)
    return settlement_pb2.SettledHand(
        hand_id=hand.hand_id,
        players=list(hand.players),
        landlord=hand.landlord,
        base=hand.base,
        ledger=settled.ledger,
        multiplier=settled.multiplier,
        event_id=hand.event_id,
    )


def player_ledger_to_pb(hand: SettledHand, player_id: str) -> settlement_pb2.PlayerLedger:
    """``hand`` as one of ``player_id``'s ledgers: their seat and what it won or lost."""
    seat = hand.players.index(player_id)
    return settlement_pb2.PlayerLedger(
        hand=settled_hand_to_pb(hand), seat=seat, delta=hand.deltas[seat]
    )
