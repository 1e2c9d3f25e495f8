"""The settlement service: applies each HandSettled ledger to the balances projection
and answers balance and ledger queries (SettlementService in
protos/ddz/v1/settlement.proto)."""
