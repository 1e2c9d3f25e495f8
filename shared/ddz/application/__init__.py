"""The application layer: what the services do, as plain code over ports.

The use cases of each service live in its own folder, ``services/<name>/use_cases/``
(``handlers.py``, ``ports.py`` and the service's other use-case modules), apart from its
adapters (``services/<name>/adapters/``); they take their ports (the event bus, the
store, other services' clients, the clock) as arguments and import no adapter and no gRPC
(the import contracts of pyproject.toml). Only what the services' use cases share is here:
``errors``, the one error type a refused call raises, mapped to a gRPC status only in
``ddz.adapters.rpc.grpc_server``; ``tasks``, background tasks that are not lost;
``hand_fold``, a hand folded from its events; ``table_history``, where a table's stream
stands; ``room_tickets``, a player waiting in a room's queue; ``turns``, a running turn
clock; ``streams``, stream ids and their buckets (a hand's partition).
"""
