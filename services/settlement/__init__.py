"""The settlement service: applies each HandSettled ledger to the balances projection
and answers balance and ledger queries (SettlementService in
protos/ddz/v1/settlement.proto).

Its folder (docs/ARCHITECTURE.md "A service's folder"): ``app.py`` builds it whole,
``servicer.py`` is its entry point, ``use_cases/`` what it does and ``adapters/``
how that reaches the outside world."""
