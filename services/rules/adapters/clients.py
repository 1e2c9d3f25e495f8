"""``SeedSource`` over gRPC: a hand's seed from ``DealerService.GetSeed``."""

from __future__ import annotations

from ddz.adapters.rpc.grpc_client import ask
from ddz.v1 import dealer_pb2, dealer_pb2_grpc


class DealerSeeds:
    def __init__(self, dealer: dealer_pb2_grpc.DealerServiceStub) -> None:
        self.dealer = dealer

    async def seed(self, hand_id: str) -> bytes:
        request = dealer_pb2.GetSeedRequest(hand_id=hand_id)
        response = await ask("dealer", self.dealer.GetSeed, request)
        return bytes(response.seed)
